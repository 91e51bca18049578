//! One rank on the run's timeline in compact form ([`Timeline`]): its calls and compute
//! spans as fixed-size spans with their arguments in side tables, and its GPU work apart.

use std::collections::BTreeMap;

use overlap_format::schema::{Event, GpuEvent, LearnedUse, Nanos, Op, Started, Unwatched};

use super::access::AccessTable;
use super::compact::{index_u32, MAX_RECORDS};
use super::{Access, Buffer, CallExtra, CallInfo, Done, RecvHalf, Span, What};

/// One rank on the run's timeline, in compact form.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// The rank.
    pub rank: u32,
    /// Its host.
    pub host: String,
    /// Its operating-system process id (0 when unknown).
    pub os_pid: u32,
    /// Thread names by tid.
    pub threads: BTreeMap<u32, String>,
    /// False when the rank's file was cut short.
    pub complete: bool,
    /// Calls and compute spans, sorted by start.
    pub spans: Vec<Span>,
    /// Arguments of the calls.
    pub calls: Vec<CallInfo>,
    /// Completions of the calls.
    pub done: Vec<Done>,
    /// Requests started by Start / Startall calls.
    pub starts: Vec<Started>,
    /// Groups of Win_start / Win_post calls (world ranks).
    pub groups: Vec<i32>,
    /// The arguments few calls have (Sendrecv's receive half, a Start's requests, a
    /// group), by [`CallInfo`]'s entry.
    extras: Vec<CallExtra>,
    /// Compute span names.
    pub names: Vec<String>,
    name_ids: crate::fxhash::FxHashMap<String, u32>,
    /// The buffers compute spans declared, each distinct list once.
    accesses: AccessTable,
    /// GPU work (copies, kernels, host waits), sorted by start. Kept apart from `spans`,
    /// whose indexes are the rank's [`EventRef`]s.
    pub gpu: Vec<GpuEvent>,
    /// What the program did with its requests' buffers after they completed, learned
    /// while it ran (`overlap trace --buffers`), sorted by `from`; empty when not
    /// recorded.
    pub learned: Vec<LearnedUse>,
    /// The completed requests whose buffers were not watched, and why, sorted by `at`.
    pub unwatched: Vec<Unwatched>,
    /// Its `MPI_Pcontrol` calls (also among `spans`), with their levels and region
    /// names, sorted by start ([`crate::regions`]).
    pub pcontrol: Vec<super::RegionMark>,
    /// The part of the run this timeline was cut to ([`crate::window`]): the rank's
    /// analysed part of the whole run within the window, which [`Timeline::extent`]
    /// then is. `None` for a whole run.
    pub window: Option<(Nanos, Nanos)>,
    /// Of a timeline cut to a window: the spans (indices, ascending) that are instants at
    /// its edge standing for calls outside it (a collective's member, a persistent
    /// request's init), kept so that what links calls still pairs up; they are not calls
    /// made in the window, and the profile does not count them.
    pub edge_marks: Vec<u32>,
    /// What this rank has more of than 32-bit indices can name (events, completions,
    /// started requests, group members), once it has: nothing more was taken. The
    /// importer turns it into an error naming the file.
    overflow: Option<&'static str>,
    /// [`MAX_RECORDS`] when 0; smaller only in tests.
    limit: usize,
}

/// Puts GPU work's times (enqueue, start, end) on the run's timeline with `align`.
pub fn align_gpu(g: &mut GpuEvent, align: impl Fn(Nanos) -> Nanos) {
    g.issued = align(g.issued);
    g.start = align(g.start);
    g.end = align(g.end).max(g.start);
}

/// The most events between a call and a later one that [`Timeline::outside_mpi`] walks.
pub const MAX_EVENTS_BETWEEN: usize = 64;

impl Timeline {
    /// The time the thread of call `from` spent outside MPI calls between leaving `from`
    /// and entering call `to`; none when `to` is not after `from` or more than
    /// [`MAX_EVENTS_BETWEEN`] events lie between them (the rank was doing other things).
    pub fn outside_mpi(&self, from: usize, to: usize) -> Option<Nanos> {
        if to <= from || to - from > MAX_EVENTS_BETWEEN {
            return None;
        }
        let (first, last) = (self.spans.get(from)?, self.spans.get(to)?);
        let mut cursor = first.end;
        let mut outside = Nanos::ZERO;
        for s in &self.spans[from + 1..to] {
            if s.tid != first.tid || s.op().is_none() {
                continue;
            }
            outside = outside + s.start.saturating_sub(cursor);
            cursor = cursor.max(s.end);
        }
        Some(outside + last.start.saturating_sub(cursor))
    }

    /// An empty timeline for `rank`.
    pub fn new(rank: u32) -> Self {
        Timeline {
            rank,
            complete: true,
            ..Timeline::default()
        }
    }

    /// Appends an event (times as they are; sort with [`Timeline::sort`] afterwards).
    /// An event that would take a list past [`MAX_RECORDS`] is not taken, and neither
    /// is any after it ([`Timeline::overflow`]).
    pub fn push(&mut self, e: &Event) {
        if self.overflow.is_some() {
            return;
        }
        if let Some(what) = self.would_overflow(e) {
            self.overflow = Some(what);
            return;
        }
        match e {
            Event::Gpu(g) => self.gpu.push(g.clone()),
            Event::Compute(c) => {
                let id = match self.name_ids.get(c.name.as_str()) {
                    Some(id) => *id,
                    None => {
                        let id = self.names.len() as u32;
                        self.names.push(c.name.clone());
                        self.name_ids.insert(c.name.clone(), id);
                        id
                    }
                };
                let access = c.buffers.as_deref().map(|b| self.accesses.intern(b));
                self.spans.push(Span {
                    start: c.start,
                    end: c.end.max(c.start),
                    tid: c.tid,
                    access,
                    what: What::Compute(id),
                });
            }
            Event::Call(c) => {
                let a = &c.args;
                if c.op == Op::Pcontrol {
                    self.pcontrol.push(super::RegionMark {
                        start: c.start,
                        end: c.end.max(c.start),
                        level: a.level.unwrap_or(0),
                        name: a.region.clone(),
                    });
                }
                let completed = (index_u32(self.done.len()), index_u32(a.completed.len()));
                self.done.extend(a.completed.iter().map(Done::from));
                let buffer = |addr: Option<u64>, len: Option<u64>| {
                    addr.map(|addr| Buffer {
                        addr,
                        len: len.unwrap_or(0),
                    })
                };
                let recv = (a.recv_peer.is_some() || a.recv_tag.is_some() || a.recv_buf.is_some())
                    .then(|| RecvHalf {
                        peer: a.recv_peer,
                        tag: a.recv_tag,
                        buf: buffer(a.recv_buf, a.recv_buf_len),
                    });
                // Only a call with one of the rare arguments takes a side-table entry.
                let rare = recv.is_some() || !a.started.is_empty() || !a.group.is_empty();
                let extra = rare.then(|| {
                    let extra = CallExtra {
                        recv,
                        started: (index_u32(self.starts.len()), index_u32(a.started.len())),
                        group: (index_u32(self.groups.len()), index_u32(a.group.len())),
                    };
                    self.starts.extend_from_slice(&a.started);
                    self.groups.extend_from_slice(&a.group);
                    self.extras.push(extra);
                    index_u32(self.extras.len() - 1)
                });
                let id = index_u32(self.calls.len());
                let buf = buffer(a.buf, a.buf_len);
                self.calls.push(CallInfo::new(a, buf, completed, extra));
                self.spans.push(Span {
                    start: c.start,
                    end: c.end.max(c.start),
                    tid: c.tid,
                    access: None,
                    what: What::Call(c.op, id),
                });
            }
        }
    }

    /// Sorts the spans by start (then thread), as every analysis expects. Stable: spans
    /// that start together keep their recording order.
    pub fn sort(&mut self) {
        self.spans.sort_by_key(|s| (s.start, s.tid));
        self.gpu.sort_by_key(|g| (g.start, g.stream, g.issued));
        self.learned.sort_by_key(|l| (l.from, l.request));
        self.unwatched.sort_by_key(|u| (u.at, u.request));
        self.pcontrol.sort_by_key(|m| m.start);
    }

    /// Gives back what its vectors hold beyond their events (growing by doubling leaves
    /// up to half of each unused): for runs of tens of millions of events, once read.
    pub fn shrink_to_fit(&mut self) {
        self.spans.shrink_to_fit();
        self.calls.shrink_to_fit();
        self.done.shrink_to_fit();
        self.starts.shrink_to_fit();
        self.groups.shrink_to_fit();
        self.extras.shrink_to_fit();
        self.gpu.shrink_to_fit();
    }

    /// Puts every time of the rank on the run's timeline with `align` (the rank's clock
    /// alignment): its spans, its GPU work's enqueue, start and end, and what it learned
    /// of its buffers.
    pub fn align(&mut self, align: impl Fn(Nanos) -> Nanos) {
        for s in &mut self.spans {
            s.start = align(s.start);
            s.end = align(s.end).max(s.start);
        }
        for g in &mut self.gpu {
            align_gpu(g, &align);
        }
        let learned = std::mem::take(&mut self.learned);
        self.learned = learned.into_iter().map(|l| l.map_times(&align)).collect();
        let unwatched = std::mem::take(&mut self.unwatched);
        self.unwatched = unwatched.into_iter().map(|u| u.map_times(&align)).collect();
        for m in &mut self.pcontrol {
            m.start = align(m.start);
            m.end = align(m.end).max(m.start);
        }
    }

    /// Every event the rank has: calls, compute spans and GPU work.
    pub fn event_count(&self) -> usize {
        self.spans.len() + self.gpu.len()
    }

    /// What this rank has more of than the analysis can index, if anything: its events
    /// were taken only up to there.
    pub fn overflow(&self) -> Option<&'static str> {
        self.overflow
    }

    fn would_overflow(&self, e: &Event) -> Option<&'static str> {
        let limit = if self.limit == 0 {
            MAX_RECORDS
        } else {
            self.limit
        };
        let past = |have: usize, more: usize| have.saturating_add(more) > limit;
        match e {
            Event::Gpu(_) => None,
            Event::Compute(_) => past(self.spans.len(), 1).then_some("events"),
            Event::Call(c) => {
                let a = &c.args;
                if past(self.spans.len(), 1) {
                    Some("events")
                } else if past(self.done.len(), a.completed.len()) {
                    Some("completions")
                } else if past(self.starts.len(), a.started.len()) {
                    Some("started requests")
                } else if past(self.groups.len(), a.group.len()) {
                    Some("group members")
                } else {
                    None
                }
            }
        }
    }

    /// The call behind a span, if it is one.
    pub fn call(&self, index: usize) -> Option<(Op, &CallInfo)> {
        match self.spans.get(index)?.what {
            What::Call(op, id) => Some((op, self.calls.get(id as usize)?)),
            What::Compute(_) => None,
        }
    }

    /// The completions a call recorded.
    pub fn completions(&self, call: &CallInfo) -> &[Done] {
        listed(&self.done, call.completed)
    }

    fn extra(&self, call: &CallInfo) -> Option<&CallExtra> {
        self.extras.get(call.extra()?)
    }

    /// The requests a Start or Startall started.
    pub fn started(&self, call: &CallInfo) -> &[Started] {
        self.extra(call)
            .map_or(&[], |e| listed(&self.starts, e.started))
    }

    /// The group of a Win_start or Win_post (world ranks).
    pub fn group(&self, call: &CallInfo) -> &[i32] {
        self.extra(call)
            .map_or(&[], |e| listed(&self.groups, e.group))
    }

    /// Sendrecv's receive half.
    pub fn recv_half(&self, call: &CallInfo) -> Option<&RecvHalf> {
        self.extra(call)?.recv.as_ref()
    }

    /// The buffers a compute span declared it reads and writes. `None` when it declared
    /// nothing (they are unknown), or named a buffer the program never bound (the
    /// reader says so), or when the span is not a compute span.
    pub fn access(&self, span: usize) -> Option<&Access> {
        self.accesses.get(self.spans.get(span)?.access?)
    }

    /// True when span `index` is an instant at the edge of the window the timeline was
    /// cut to, standing for a call outside it ([`Timeline::edge_marks`]).
    pub fn is_edge_mark(&self, index: usize) -> bool {
        u32::try_from(index).is_ok_and(|i| self.edge_marks.binary_search(&i).is_ok())
    }

    /// The name of a compute span.
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("?", String::as_str)
    }

    /// The part of the run analysed: first start to last end, except that a recorded
    /// `MPI_Init` (or `MPI_Init_thread`) moves the start to its end and a recorded
    /// `MPI_Finalize` moves the end to its start, so that setting MPI up and down (and
    /// the tracer's clock alignment inside them) counts as neither useful nor waiting.
    /// A timeline cut to a window has the extent the cut gave it, events or not.
    pub fn extent(&self) -> Option<(Nanos, Nanos)> {
        if let Some(window) = self.window {
            return Some(window);
        }
        let mut start = self.spans.first()?.start;
        let mut end = self.spans.iter().map(|s| s.end).max()?;
        for s in &self.spans {
            match s.op() {
                Some(Op::Init | Op::InitThread) => start = start.max(s.end),
                Some(Op::Finalize) => end = end.min(s.start),
                _ => {}
            }
        }
        Some((start, end.max(start)))
    }
}

/// The `(first, count)` part of one of a timeline's lists (empty when out of range).
fn listed<T>(list: &[T], (first, n): (u32, u32)) -> &[T] {
    let first = first as usize;
    list.get(first..first + n as usize).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use overlap_format::schema::{CallArgs, CallEvent, Completion, Nanos, Op, Started};

    use super::*;

    fn call(t: &mut Timeline, at: u64, op: Op, args: CallArgs) {
        t.push(&Event::Call(CallEvent {
            tid: 0,
            start: Nanos(at),
            end: Nanos(at + 1),
            op,
            args,
        }));
    }

    /// A timeline that can hold `limit` records of each kind: what one of 4 G does.
    fn small(limit: usize) -> Timeline {
        Timeline {
            limit,
            ..Timeline::new(0)
        }
    }

    fn completing(n: u64) -> CallArgs {
        CallArgs {
            completed: (0..n)
                .map(|r| Completion {
                    request: Some(r),
                    source: None,
                    tag: None,
                    bytes: None,
                })
                .collect(),
            ..CallArgs::default()
        }
    }

    #[test]
    fn a_rank_past_its_indices_takes_nothing_more_and_says_what() {
        let mut t = small(3);
        for at in 0..5 {
            call(&mut t, at, Op::Barrier, CallArgs::default());
        }
        assert_eq!((t.spans.len(), t.overflow()), (3, Some("events")));
        // A Waitall whose completions would not fit: not taken, nor any call after it.
        let mut t = small(3);
        call(&mut t, 0, Op::Waitall, completing(2));
        call(&mut t, 2, Op::Waitall, completing(2));
        call(&mut t, 4, Op::Barrier, CallArgs::default());
        assert_eq!((t.spans.len(), t.done.len()), (1, 2));
        assert_eq!(t.overflow(), Some("completions"));
        assert_eq!(Timeline::new(0).overflow(), None);
    }

    /// ```text
    ///  0 Startall(#1 #2)  2 Isend(#3 -> 1, tag 7)  4 Waitall(#1 #2 #3)  6 Sendrecv(-> 1, <- 2)
    /// ```
    /// Only the Startall and the Sendrecv have rare arguments: the other calls take no
    /// side-table entry, even after the Startall's requests moved the list's end.
    #[test]
    fn rare_arguments_kept_apart_and_only_for_the_calls_that_have_them() {
        let mut t = Timeline::new(0);
        let started = vec![
            Started {
                request: 1,
                persistent: 10,
            },
            Started {
                request: 2,
                persistent: 11,
            },
        ];
        call(
            &mut t,
            0,
            Op::Startall,
            CallArgs {
                started: started.clone(),
                ..CallArgs::default()
            },
        );
        let isend = CallArgs {
            peer: Some(1),
            tag: Some(7),
            bytes: Some(64),
            request: Some(3),
            ..CallArgs::default()
        };
        call(&mut t, 2, Op::Isend, isend);
        let done = |r: u64| Completion {
            request: Some(r),
            source: None,
            tag: None,
            bytes: None,
        };
        let waitall = CallArgs {
            completed: vec![done(1), done(2), done(3)],
            ..CallArgs::default()
        };
        call(&mut t, 4, Op::Waitall, waitall);
        let sendrecv = CallArgs {
            peer: Some(1),
            recv_peer: Some(2),
            recv_tag: Some(5),
            ..CallArgs::default()
        };
        call(&mut t, 6, Op::Sendrecv, sendrecv);
        assert_eq!(t.extras.len(), 2, "the Startall's and the Sendrecv's");

        let (_, startall) = t.call(0).expect("a call");
        assert_eq!(t.started(startall), started.as_slice());
        let (_, isend) = t.call(1).expect("a call");
        assert_eq!(isend.extra(), None);
        assert!(t.started(isend).is_empty() && t.group(isend).is_empty());
        assert_eq!(
            (isend.peer(), isend.tag(), isend.bytes()),
            (Some(1), Some(7), Some(64))
        );
        assert_eq!(
            (isend.request(), isend.root(), isend.win()),
            (Some(3), None, None)
        );
        let (_, waitall) = t.call(2).expect("a call");
        let ids: Vec<Option<u64>> = t.completions(waitall).iter().map(|d| d.request()).collect();
        assert_eq!(ids, [Some(1), Some(2), Some(3)]);
        assert_eq!(t.completions(waitall)[0].source(), None);
        let (_, sendrecv) = t.call(3).expect("a call");
        let half = t.recv_half(sendrecv).expect("its receive half");
        assert_eq!((half.peer, half.tag), (Some(2), Some(5)));
        assert_eq!(t.recv_half(isend), None);
    }
}
