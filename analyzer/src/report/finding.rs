//! A false-overlap finding in words: the wait, what it lost, the work after it that did
//! not need it, and where it can move: its proven point, or only a possible one with
//! what that needs.
//!
//! ```text
//!   rank 0: MPI_Waitall at 1.203 ms (a.c:53) lost 5.00 ms on Isend req 2 to rank 1 (1.0 MiB)
//!       move the wait before the compute between a.c:49 (main) and a.c:53 (main), which
//!       first writes the send buffer at a.c:51 (main), i.e. right after MPI_Allreduce
//!       at 1.4 ms (a.c:49 (main)): 3.0 ms of compute in 1 interval(s) did not need it,
//!       up to 3.0 ms hidden (proven)
//!   (a touch known to an instant inside the gap: "move the wait before a.c:51 (main),
//!   which first writes the send buffer, i.e. right after MPI_Allreduce ...")
//! ```

use std::fmt::Write as _;

use super::calls::place;
use crate::metrics::false_overlap::{ComputeRef, FirstUse, Limit, WaitMove};
use crate::metrics::{CallRef, Finding};
use crate::units::{bytes, duration};

/// Said once under the findings when some of what they could hide is not proven.
pub(super) const UNPROVEN: &str = "a move past compute whose effect on the buffer is unknown \
is only possible: `overlap trace --buffers` learns what the program does with its buffers, \
and a compute span can declare them";

/// A call, short: its source line when known, else its name.
fn short(c: &CallRef) -> String {
    c.site.clone().unwrap_or_else(|| c.call.to_string())
}

/// A learned first touch, short: its line (or a library's function), else its address.
fn touch(u: &FirstUse) -> String {
    match (&u.site, u.ip) {
        (Some(s), _) => s.clone(),
        (None, Some(ip)) => format!("{ip:#x}"),
        (None, None) => "an unrecorded instruction".to_string(),
    }
}

/// Compute in words: a span by its name, a gap by the calls around it (by the touches
/// that cut it, for a part of one).
fn compute(c: &ComputeRef) -> String {
    let until = match (&c.to_touch, &c.until) {
        (Some(t), _) => Some(touch(t)),
        (None, Some(u)) => Some(short(u)),
        (None, None) => None,
    };
    match (&c.name, &c.from_touch, &c.after, until) {
        (Some(n), ..) => format!("compute \"{n}\""),
        (None, Some(f), _, Some(u)) => format!("the compute from {} to {u}", touch(f)),
        (None, Some(f), _, None) => format!("the compute from {}", touch(f)),
        (None, None, Some(a), Some(u)) => format!("the compute between {} and {u}", short(a)),
        (None, None, Some(a), None) => format!("the compute after {}", short(a)),
        (None, None, None, _) => "the compute after the wait".to_string(),
    }
}

/// Where a move goes, and what stops it there.
fn point(m: &WaitMove, buffer: &str) -> String {
    let mut text = match (&m.before_compute, &m.move_before) {
        // A part of a gap from the touch that stops it: the touch itself.
        (Some(c), _) if c.name.is_none() && c.from_touch.is_some() && m.first_use.is_some() => {
            format!(
                "before {}",
                c.from_touch.as_ref().map(touch).unwrap_or_default()
            )
        }
        (Some(c), _) => format!("before {}", compute(c)),
        (None, Some(c)) => format!("before {}", place(c)),
        (None, None) => "to the end of the rank's work".to_string(),
    };
    match (m.limit, &m.first_use) {
        (Limit::LearnedUse, Some(u)) => {
            let verb = match u.touch {
                crate::dependence::Touch::Read => "reads",
                crate::dependence::Touch::Write => "writes",
            };
            let inside = (m.before_compute.as_ref()).is_some_and(|c| c.from_touch.is_some());
            let at = match (&u.site, u.ip) {
                _ if inside => String::new(),
                (Some(s), _) => format!(" at {s}"),
                (None, Some(ip)) => format!(" at {ip:#x}"),
                (None, None) => String::new(),
            };
            let _ = write!(text, ", which first {verb} {buffer}{at}");
        }
        (Limit::DeclaredUse, _) => {
            let _ = write!(text, ", which declares it uses {buffer}");
        }
        (Limit::BufferReuse, _) => text.push_str(", the next use of the buffer"),
        (Limit::SamePeerAndTag, _) => text.push_str(", the next send to that peer and tag"),
        _ => {}
    }
    if let Some(c) = &m.move_after {
        let _ = write!(text, ", i.e. right after {}", place(c));
    }
    let kind = if m.independent_names.is_empty() {
        "interval(s)".to_string()
    } else {
        format!("span(s) ({})", m.independent_names.join(", "))
    };
    let _ = write!(
        text,
        ": {} of compute in {} {kind} did not need it, up to {} hidden",
        duration(m.independent_work_ns),
        m.independent_spans,
        duration(m.hideable_ns)
    );
    text
}

/// One finding, three or four lines.
pub(super) fn finding(o: &mut String, f: &Finding) {
    let req = f
        .requests
        .iter()
        .map(|q| {
            format!(
                "{} req {} {} rank {} ({})",
                q.post.call.trim_start_matches("MPI_"),
                q.request,
                if q.post.call.contains("recv") {
                    "from"
                } else {
                    "to"
                },
                q.peer.map_or("?".into(), |p| p.to_string()),
                bytes(q.bytes)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(
        o,
        "  rank {}: {} lost {} on {}",
        f.rank,
        place(&f.wait),
        duration(f.lost_ns),
        req
    );
    let buffer = match f.requests.first() {
        Some(q) if q.post.call.contains("recv") => "the receive buffer",
        _ => "the send buffer",
    };
    match &f.proven {
        Some(p) => {
            let _ = writeln!(o, "      move the wait {} (proven)", point(p, buffer));
        }
        None => {
            let _ = writeln!(
                o,
                "      no move is proven (what the compute after it does to {buffer} is unknown)"
            );
        }
    }
    if let Some(n) = &f.needs {
        let range = match (n.addr, n.len) {
            (Some(a), Some(l)) => format!(" [{a:#x}, +{})", bytes(l)),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "      possible if {} does not {} {}{range}: move it {}",
            compute(&n.compute),
            n.must_not,
            n.buffer,
            point(&f.possible, buffer)
        );
    }
}
