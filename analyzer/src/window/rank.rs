//! One rank cut to a window: its spans that overlap the window, cut to it where they
//! cross an edge; the collective calls outside it that must stay (see [`super`]) as
//! instants at the edge; its GPU work, learned buffer uses, unwatched completions and
//! `MPI_Pcontrol` marks in the window. The spans keep their order (cutting to the
//! window maps every time monotonically), and where each went is kept in a map that
//! also says, for a span left out, on which side of the window it lies.

use overlap_format::schema::Nanos;

use super::{rank_window, Bounds, Clipped, Edge};
use crate::model::{EventRef, Span, Timeline, What};

/// Where a span of the run lies against the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// It overlaps the window; the edges it crosses, if any.
    Inside(Option<Edge>),
    /// Wholly before it.
    Before,
    /// Wholly after it.
    After,
}

/// Where `[start, end]` lies against the window: an interval overlaps it when it shares
/// time with it (touching an edge is not enough); an instant when it is within it.
pub(crate) fn place(start: Nanos, end: Nanos, b: &Bounds) -> Place {
    if start == end {
        return if start < b.from {
            Place::Before
        } else if start > b.to {
            Place::After
        } else {
            Place::Inside(None)
        };
    }
    if end <= b.from {
        return Place::Before;
    }
    if start >= b.to {
        return Place::After;
    }
    Place::Inside(match (start < b.from, end > b.to) {
        (false, false) => None,
        (true, false) => Some(Edge::Start),
        (false, true) => Some(Edge::End),
        (true, true) => Some(Edge::Both),
    })
}

/// A span left out, in a rank's map of old to new indices.
pub(crate) const BEFORE: u32 = u32::MAX - 1;
/// A span left out after the window.
pub(crate) const AFTER: u32 = u32::MAX;

/// A rank cut to the window.
pub(crate) struct RankCut {
    /// Its timeline in the window.
    pub(crate) timeline: Timeline,
    /// By index in the run: the span's index in the cut, or [`BEFORE`] / [`AFTER`].
    pub(crate) map: Vec<u32>,
    /// Its spans cut at an edge (their new indices).
    pub(crate) clipped: Vec<Clipped>,
}

/// Cuts `t` to the window `b`; `marks` (indices, sorted) are collective calls to keep
/// as instants at the edge they lie beyond.
pub(crate) fn cut_rank(mut t: Timeline, b: &Bounds, marks: &[usize]) -> RankCut {
    let window = rank_window(&t, b);
    let spans = std::mem::take(&mut t.spans);
    let mut map = Vec::with_capacity(spans.len());
    let mut kept: Vec<Span> = Vec::new();
    let mut clipped = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        let (new, edge) = match place(s.start, s.end, b) {
            Place::Inside(edge) => (
                Span {
                    start: s.start.max(b.from),
                    end: s.end.min(b.to),
                    ..*s
                },
                edge,
            ),
            outside if marks.binary_search(&i).is_ok() => {
                let at = if outside == Place::Before {
                    b.from
                } else {
                    b.to
                };
                let instant = Span {
                    start: at,
                    end: at,
                    ..*s
                };
                (instant, Some(Edge::Outside))
            }
            Place::Before => {
                map.push(BEFORE);
                continue;
            }
            Place::After => {
                map.push(AFTER);
                continue;
            }
        };
        let index = kept.len();
        map.push(index as u32);
        if edge == Some(Edge::Outside) {
            t.edge_marks.push(index as u32);
        }
        if let Some(edge) = edge {
            clipped.push(Clipped {
                at: EventRef {
                    rank: t.rank,
                    index,
                },
                edge,
                start: s.start,
                end: s.end,
            });
        }
        kept.push(new);
    }
    drop(spans);
    t.spans = kept;
    t.spans.shrink_to_fit();
    t.gpu.retain_mut(|g| match place(g.start, g.end, b) {
        Place::Inside(_) => {
            (g.start, g.end) = (g.start.max(b.from), g.end.min(b.to));
            true
        }
        _ => false,
    });
    let inside = |at: Nanos| b.from <= at && at <= b.to;
    t.learned.retain(|l| inside(l.from));
    t.unwatched.retain(|u| inside(u.at));
    t.pcontrol
        .retain(|m| matches!(place(m.start, m.end, b), Place::Inside(_)));
    for m in &mut t.pcontrol {
        (m.start, m.end) = (m.start.max(b.from), m.end.min(b.to));
    }
    t.window = Some(window);
    RankCut {
        timeline: t,
        map,
        clipped,
    }
}

/// True when the span is a compute span.
pub(crate) fn is_compute(s: &Span) -> bool {
    matches!(s.what, What::Compute(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(from: u64, to: u64) -> Bounds {
        Bounds {
            from: Nanos(from),
            to: Nanos(to),
            ranks: None,
        }
    }

    /// ```text
    ///  window          10 |==========| 20
    ///  [2, 10]   Before   ---|
    ///  [5, 12]   Start     ----|--
    ///  [12, 15]  inside          |--|
    ///  [18, 25]  End                  --|--
    ///  [5, 25]   Both      ---|----------|---
    ///  [20, 30]  After                   |---
    ///  instants  at 10 and 20 inside, at 9 before, at 21 after
    /// ```
    #[test]
    fn a_span_lies_before_across_inside_or_after_the_window() {
        let w = b(10, 20);
        let p = |s, e| place(Nanos(s), Nanos(e), &w);
        assert_eq!(p(2, 10), Place::Before);
        assert_eq!(p(5, 12), Place::Inside(Some(Edge::Start)));
        assert_eq!(p(12, 15), Place::Inside(None));
        assert_eq!(p(18, 25), Place::Inside(Some(Edge::End)));
        assert_eq!(p(5, 25), Place::Inside(Some(Edge::Both)));
        assert_eq!(p(20, 30), Place::After);
        assert_eq!(p(10, 10), Place::Inside(None));
        assert_eq!(p(20, 20), Place::Inside(None));
        assert_eq!(p(9, 9), Place::Before);
        assert_eq!(p(21, 21), Place::After);
    }
}
