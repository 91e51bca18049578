//! A rank's requests in the protobuf trace: each request's lifetime as a slice on a
//! lane, a child track of the rank's process named `requests`, and two counters, the
//! requests in flight and the bytes they carry.
//!
//! Slices on one track must nest, and requests overlap without nesting (an Isend posted
//! before an Irecv may complete after it). So each request takes the lowest lane free at
//! its post: a lane is free once its last request has ended. A rank needs as many lanes
//! as it ever had requests in flight at once; Perfetto shows lanes with the same name
//! under one parent as one expandable group.
//!
//! ```text
//!  requests   lane 0  [Isend → 1 .............]   [Isend → 1 ....]
//!             lane 1       [Irecv ← 1 ....]  [Irecv ← 1 ..........]
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;

use overlap_format::pftrace::{CounterUnit, Slice, Track};
use overlap_format::schema::wire::Category;
use overlap_format::schema::Nanos;

use super::window::{write_slice, Window};
use super::{io_error, ProtoOut, DRAIN_AT};
use crate::merge::links::{request_slice, RequestSlice};
use crate::model::{RequestLife, Timeline};

/// Where the lanes and counters go among a process's tracks: after its threads and
/// GPU streams (whose places are their thread ids).
const AFTER_THREADS: i64 = 1 << 32;

/// The lane of each of `slices` (taken in order of post): the lowest free at its post.
fn lanes(slices: &[RequestSlice]) -> (Vec<usize>, usize) {
    let mut free: BinaryHeap<Reverse<usize>> = BinaryHeap::new();
    let mut busy: BinaryHeap<Reverse<(Nanos, usize)>> = BinaryHeap::new();
    let mut count = 0;
    let mut lane_of = Vec::with_capacity(slices.len());
    for r in slices {
        while let Some(Reverse((end, lane))) = busy.peek().copied() {
            if end > r.start {
                break;
            }
            busy.pop();
            free.push(Reverse(lane));
        }
        let lane = match free.pop() {
            Some(Reverse(l)) => l,
            None => {
                count += 1;
                count - 1
            }
        };
        busy.push(Reverse((r.end.max(r.start), lane)));
        lane_of.push(lane);
    }
    (lane_of, count)
}

/// Writes rank `t`'s `requests` (in post order) on lanes under `process`, and the
/// counters of requests and bytes in flight.
pub(crate) fn write_requests<W: Write>(
    t: &Timeline,
    requests: &[RequestLife],
    process: u64,
    window: &Window,
    out: &mut ProtoOut<W>,
) -> std::io::Result<()> {
    // Where a request that never completed ends: its rank's last moment.
    let rank_end = t.spans.iter().map(|s| s.end).max().unwrap_or_default();
    let mut slices: Vec<RequestSlice> = requests
        .iter()
        .filter_map(|life| request_slice(t, life, rank_end))
        .filter(|r| window.clip(r.start, r.end.max(r.start)).is_some())
        .collect();
    if slices.is_empty() {
        return Ok(());
    }
    slices.sort_by_key(|r| r.start);
    let (lane_of, count) = lanes(&slices);
    let mut tracks = Vec::with_capacity(count);
    for lane in 0..count {
        let uuid = out.uuid();
        out.track(&Track::Named {
            uuid,
            parent: Some(process),
            name: "requests",
            order: AFTER_THREADS + lane as i64,
        })?;
        tracks.push(uuid);
    }
    let mut seq = out.sequence();
    for (r, lane) in slices.iter().zip(&lane_of) {
        let slice = Slice {
            track: tracks[*lane],
            name: &r.name,
            category: Category::Request,
            start: r.start,
            end: r.end.max(r.start),
            args: Some(&r.args),
            source: None,
            flows_out: &[],
            flows_in: &[],
            skip_args: &[],
        };
        write_slice(&mut seq, window, &slice).map_err(io_error)?;
        if seq.pending() >= DRAIN_AT {
            out.drain(&mut seq)?;
        }
    }
    out.finish_sequence(&mut seq)?;
    write_counters(&slices, process, window, out)
}

/// The counters of requests in flight and of the bytes they carry, a value at every
/// time either changes in the window (and the value they had at its start).
fn write_counters<W: Write>(
    slices: &[RequestSlice],
    process: u64,
    window: &Window,
    out: &mut ProtoOut<W>,
) -> std::io::Result<()> {
    let mut changes: Vec<(Nanos, i64, i64)> = Vec::with_capacity(slices.len() * 2);
    for r in slices {
        let bytes = i64::try_from(r.args.bytes).unwrap_or(i64::MAX);
        changes.push((r.start, 1, bytes));
        changes.push((r.end.max(r.start), -1, -bytes));
    }
    // Ends before posts at the same time: a lane freed and taken again is not two.
    changes.sort_by_key(|c| (c.0, c.1));
    let requests = out.uuid();
    let bytes = out.uuid();
    for (uuid, name, unit, order) in [
        (requests, "requests in flight", CounterUnit::Count, 0),
        (bytes, "bytes in flight", CounterUnit::Bytes, 1),
    ] {
        out.track(&Track::Counter {
            uuid,
            parent: process,
            name,
            unit,
            order: AFTER_THREADS * 2 + order,
        })?;
    }
    let mut seq = out.sequence();
    let (mut n, mut b) = (0i64, 0i64);
    let mut i = 0;
    // Changes before the window add up to its first value, at its start.
    let mut before = false;
    while i < changes.len() {
        let at = changes[i].0;
        if at > window.to() {
            break;
        }
        while i < changes.len() && changes[i].0 == at {
            n += changes[i].1;
            b = b.saturating_add(changes[i].2);
            i += 1;
        }
        if at < window.from() {
            before = true;
            continue;
        }
        if std::mem::take(&mut before) && at > window.from() {
            seq.counter(requests, window.from(), n - delta_at(&changes, at).0);
            seq.counter(bytes, window.from(), b - delta_at(&changes, at).1);
        }
        seq.counter(requests, at, n);
        seq.counter(bytes, at, b);
        if seq.pending() >= DRAIN_AT {
            out.drain(&mut seq)?;
        }
    }
    if before {
        // Nothing changed in the window: the values it starts with.
        seq.counter(requests, window.from(), n);
        seq.counter(bytes, window.from(), b);
    }
    out.finish_sequence(&mut seq)
}

/// The changes of the counters at time `at` (sorted `changes`), added up.
fn delta_at(changes: &[(Nanos, i64, i64)], at: Nanos) -> (i64, i64) {
    let from = changes.partition_point(|c| c.0 < at);
    changes[from..]
        .iter()
        .take_while(|c| c.0 == at)
        .fold((0, 0), |(n, b), c| (n + c.1, b.saturating_add(c.2)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use overlap_format::schema::RequestArgs;

    fn r(start: u64, end: u64) -> RequestSlice {
        RequestSlice {
            name: String::new(),
            tid: 0,
            start: Nanos(start),
            end: Nanos(end),
            args: RequestArgs {
                request: 0,
                peer: 0,
                tag: 0,
                bytes: 0,
                completed_by: None,
            },
        }
    }

    #[test]
    fn overlapping_requests_take_lanes_and_free_them() {
        //  lane 0  [0 ...... 10]  [10 .. 12]
        //  lane 1     [2 .. 5]  [6 .. 20]
        let slices = [r(0, 10), r(2, 5), r(6, 20), r(10, 12)];
        let (lanes, count) = lanes(&slices);
        assert_eq!(lanes, vec![0, 1, 1, 0]);
        assert_eq!(count, 2);
    }
}
