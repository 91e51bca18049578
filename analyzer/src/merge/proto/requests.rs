//! A rank's requests in the protobuf trace: each request's lifetime as a slice on a
//! lane, a child track of the rank's process named `requests`, and two counters, the
//! requests in flight and the bytes they carry, whose values ride on the requests'
//! begins and ends (no packet of their own).
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
/// counters of requests and bytes in flight: their values go with each request's
/// begin and end (`extra_counter_values`), the times they change.
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
        .collect();
    if slices.is_empty() {
        return Ok(());
    }
    slices.sort_by_key(|r| r.start);
    let in_flight = InFlight::of(&slices);
    slices.retain(|r| window.clip(r.start, r.end.max(r.start)).is_some());
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
    let counters = [out.uuid(), out.uuid()];
    for (uuid, name, unit, order) in [
        (counters[0], "requests in flight", CounterUnit::Count, 0),
        (counters[1], "bytes in flight", CounterUnit::Bytes, 1),
    ] {
        out.track(&Track::Counter {
            uuid,
            parent: process,
            name,
            unit,
            order: AFTER_THREADS * 2 + order,
        })?;
    }
    let mut seq = out.sequence().with_counters(&counters);
    for (r, lane) in slices.iter().zip(&lane_of) {
        let Some((start, end, _)) = window.clip(r.start, r.end.max(r.start)) else {
            continue;
        };
        let (at_start, at_end) = (in_flight.at(start), in_flight.at(end));
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
            counters: (&at_start, &at_end),
        };
        write_slice(&mut seq, window, &slice).map_err(io_error)?;
        if seq.pending() >= DRAIN_AT {
            out.drain(&mut seq)?;
        }
    }
    out.finish_sequence(&mut seq)
}

/// The requests in flight and the bytes they carry, after every time either changes.
struct InFlight {
    times: Vec<Nanos>,
    /// After the changes at `times[i]`: requests, bytes.
    values: Vec<[i64; 2]>,
}

impl InFlight {
    fn of(slices: &[RequestSlice]) -> InFlight {
        let mut changes: Vec<(Nanos, i64, i64)> = Vec::with_capacity(slices.len() * 2);
        for r in slices {
            let bytes = i64::try_from(r.args.bytes).unwrap_or(i64::MAX);
            changes.push((r.start, 1, bytes));
            changes.push((r.end.max(r.start), -1, -bytes));
        }
        changes.sort_by_key(|c| c.0);
        let (mut times, mut values) = (Vec::new(), Vec::<[i64; 2]>::new());
        let mut now = [0i64; 2];
        for (at, n, b) in changes {
            now = [now[0] + n, now[1].saturating_add(b)];
            if times.last() == Some(&at) {
                *values.last_mut().expect("a value per time") = now;
            } else {
                times.push(at);
                values.push(now);
            }
        }
        InFlight { times, values }
    }

    /// The values at `t`, once every change at `t` is made.
    fn at(&self, t: Nanos) -> [i64; 2] {
        match self.times.partition_point(|x| *x <= t) {
            0 => [0, 0],
            i => self.values[i - 1],
        }
    }
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
    fn in_flight_counts_every_change_at_a_time() {
        let f = InFlight::of(&[r(0, 10), r(2, 5), r(5, 10)]);
        assert_eq!(f.at(Nanos(0))[0], 1);
        assert_eq!(f.at(Nanos(4))[0], 2);
        // At 5 one ends and one starts; at 10 both end.
        assert_eq!(f.at(Nanos(5))[0], 2);
        assert_eq!(f.at(Nanos(10))[0], 0);
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
