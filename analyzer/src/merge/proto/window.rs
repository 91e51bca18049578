//! A window of the run in the protobuf trace: `overlap merge --from T --to T --ranks
//! LIST` writes only the ranks listed and the time between `from` and `to` (on the run's
//! timeline, ns from its start), so that a run too large for the Perfetto UI can be
//! opened a part at a time.
//!
//! Nothing that crosses an edge disappears without a mark: a slice (call, compute span,
//! request, GPU work, call in flight) that crosses `from` or `to` is cut to the window
//! and its args say so (`cut`: `start`, `end` or `both`, with its uncut times); a
//! message whose send or completion is outside the window or on a rank left out loses
//! its arrow, and the end that is in the window gets an instant, `message cut by the
//! window`, saying where the other end is. Counters start at the window with the value
//! they had there.
//!
//! ```text
//!  run      |----[Isend]------[Wait]-----|-------[Isend]-----[Wait]----|
//!  window            from |=========================| to
//!  written                |--[Wait]------|-------[Isen]  (cut: end)
//! ```

use serde::Serialize;

use overlap_format::pftrace::{AnnotationError, Sequence, Slice};
use overlap_format::schema::Nanos;

/// What part of the run is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    from: Nanos,
    to: Nanos,
    /// The ranks written, sorted (`None`: all).
    ranks: Option<Vec<u32>>,
}

impl Default for Window {
    fn default() -> Self {
        Window::all()
    }
}

impl Window {
    /// The whole run.
    pub fn all() -> Window {
        Window {
            from: Nanos(0),
            to: Nanos(u64::MAX),
            ranks: None,
        }
    }

    /// From `from` (default: the run's start) to `to` (default: its end), ns from the
    /// run's start, on `ranks` (default: all). Fails when `to` is before `from` or the
    /// list of ranks is empty.
    pub fn new(
        from: Option<Nanos>,
        to: Option<Nanos>,
        ranks: Option<Vec<u32>>,
    ) -> Result<Window, String> {
        let (from, to) = (from.unwrap_or(Nanos(0)), to.unwrap_or(Nanos(u64::MAX)));
        if to < from {
            return Err(format!(
                "the window ends ({} ns) before it starts ({} ns)",
                to.0, from.0
            ));
        }
        let ranks = match ranks {
            Some(r) if r.is_empty() => return Err("no rank in the list".into()),
            Some(mut r) => {
                r.sort_unstable();
                r.dedup();
                Some(r)
            }
            None => None,
        };
        Ok(Window { from, to, ranks })
    }

    /// True for the whole run.
    pub fn is_all(&self) -> bool {
        *self == Window::all()
    }

    /// Its start.
    pub fn from(&self) -> Nanos {
        self.from
    }

    /// Its end (`u64::MAX` ns: the run's end).
    pub fn to(&self) -> Nanos {
        self.to
    }

    /// The ranks written (`None`: all).
    pub fn ranks(&self) -> Option<&[u32]> {
        self.ranks.as_deref()
    }

    /// True when rank `r` is written.
    pub fn has_rank(&self, r: u32) -> bool {
        self.ranks
            .as_ref()
            .is_none_or(|list| list.binary_search(&r).is_ok())
    }

    /// True when time `t` is in the window.
    pub fn holds(&self, t: Nanos) -> bool {
        self.from <= t && t <= self.to
    }

    /// A slice from `start` to `end` as the window has it: `None` when it is outside,
    /// else its times cut to the window and which edges were cut.
    pub fn clip(&self, start: Nanos, end: Nanos) -> Option<(Nanos, Nanos, Option<Cut>)> {
        if end < self.from || start > self.to {
            return None;
        }
        let cut = match (start < self.from, end > self.to) {
            (false, false) => None,
            (true, false) => Some(Cut::Start),
            (false, true) => Some(Cut::End),
            (true, true) => Some(Cut::Both),
        };
        Some((start.max(self.from), end.min(self.to), cut))
    }
}

/// Which edges of a slice the window cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cut {
    /// It started before the window.
    Start,
    /// It ended after the window.
    End,
    /// Both.
    Both,
}

/// A cut slice's args: its own, and what was cut.
#[derive(Serialize)]
pub(crate) struct Clipped<'a, A: Serialize + ?Sized> {
    #[serde(flatten)]
    pub(crate) args: Option<&'a A>,
    pub(crate) cut: Cut,
    pub(crate) uncut_start_ns: u64,
    pub(crate) uncut_end_ns: u64,
}

/// Where a message the window cut has its other end.
#[derive(Serialize)]
pub(crate) struct CutMessage {
    /// The message's id (the flow id it would have had).
    pub(crate) message: u64,
    /// The rank at the other end.
    pub(crate) peer: u32,
    /// Whether that rank is written.
    pub(crate) peer_written: bool,
    /// When it was sent (the send's start), ns from the run's start.
    pub(crate) sent_ns: u64,
    /// When its receive completed (the completing call's end).
    pub(crate) completed_ns: u64,
}

/// Writes `s` as the window has it: cut to it, with `Clipped` args when it crosses an
/// edge; nothing when it is outside. Returns whether it was written.
pub(crate) fn write_slice<A: Serialize + ?Sized>(
    seq: &mut Sequence,
    window: &Window,
    s: &Slice<'_, A>,
) -> Result<bool, AnnotationError> {
    let Some((start, end, cut)) = window.clip(s.start, s.end) else {
        return Ok(false);
    };
    let Some(cut) = cut else {
        seq.slice(s)?;
        return Ok(true);
    };
    let args = Clipped {
        args: s.args,
        cut,
        uncut_start_ns: s.start.0,
        uncut_end_ns: s.end.0,
    };
    seq.slice(&Slice {
        track: s.track,
        name: s.name,
        category: s.category,
        start,
        end,
        args: Some(&args),
        source: s.source,
        flows_out: s.flows_out,
        flows_in: s.flows_in,
        skip_args: s.skip_args,
        counters: s.counters,
    })?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_cut_to_the_window_and_say_so() {
        let w =
            Window::new(Some(Nanos(100)), Some(Nanos(200)), Some(vec![3, 1, 1])).expect("a window");
        assert_eq!(w.clip(Nanos(10), Nanos(50)), None);
        assert_eq!(w.clip(Nanos(250), Nanos(300)), None);
        assert_eq!(
            w.clip(Nanos(120), Nanos(150)),
            Some((Nanos(120), Nanos(150), None))
        );
        assert_eq!(
            w.clip(Nanos(50), Nanos(150)),
            Some((Nanos(100), Nanos(150), Some(Cut::Start)))
        );
        assert_eq!(
            w.clip(Nanos(50), Nanos(250)),
            Some((Nanos(100), Nanos(200), Some(Cut::Both)))
        );
        assert!(w.has_rank(1) && w.has_rank(3) && !w.has_rank(2));
        assert_eq!(w.ranks(), Some(&[1, 3][..]));
        assert!(Window::new(Some(Nanos(5)), Some(Nanos(4)), None).is_err());
        assert!(Window::new(None, None, Some(vec![])).is_err());
        assert!(Window::new(None, None, None).expect("all").is_all());
    }
}
