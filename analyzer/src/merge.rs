//! Per-rank files into one timeline: clock alignment, message matching, and the merged
//! Perfetto trace.
//!
//! Alignment: each rank's times are mapped onto rank 0's clock with the rank's
//! [`ClockModel`] (offsets measured at init and finalize, interpolated linearly), then
//! made relative to the run's start (the earliest aligned epoch).
//!
//! Matching follows MPI's non-overtaking rule: between one sender and one receiver, on
//! one communicator and tag, messages are received in the order they were sent, by
//! receives in the order they were posted. So the i-th send from `s` to `d` with tag `t`
//! matches the i-th receive posted on `d` whose message came from `s` with tag `t`
//! (its status says so; a receive without a status is matched on what it asked for).
//!
//! ```text
//!  rank 0  |Isend(to 1, t=5)|...............................
//!              \__________ message 1 __________
//!  rank 1  |Irecv(from 0, t=5)|....compute....|Waitall|     the flow ends in the call
//!                                                          that completed the receive
//! ```
//!
//! A message whose receive completed before its send was posted (after alignment) can
//! only come from clock error: it is flagged as clock-suspect and drawn as an instant on
//! the receiver, not as an arrow going back in time.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use overlap_instrument::clock::ClockModel;
use overlap_instrument::schema::wire::{
    event_to_wire, Category, FlowBinding, InstantScope, MetaName, Micros, NameArgs, ObjectWriter,
    Phase, SortIndexArgs, WireEvent,
};
use overlap_instrument::schema::{
    CallEvent, Event, IncompleteRank, MergedInfo, Nanos, Op, RankClock, RequestArgs,
    SuspectMessage, FORMAT_NAME, FORMAT_VERSION,
};

use crate::import::{rank_files, read_rank_file};
use crate::model::RankTrace;
use crate::{Error, Result};

/// One rank's events on the run's timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct AlignedRank {
    /// The rank.
    pub rank: u32,
    /// Its host.
    pub host: String,
    /// Its operating-system process id.
    pub os_pid: u32,
    /// Thread names by tid.
    pub threads: BTreeMap<u32, String>,
    /// Calls and compute spans, ns since the run's start, sorted by start.
    pub events: Vec<Event>,
    /// False when the rank's file was cut short.
    pub complete: bool,
}

/// An event of a rank: `ranks[rank].events[index]` of a [`Merged`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventRef {
    /// Rank.
    pub rank: u32,
    /// Index in that rank's events.
    pub index: usize,
}

/// A message matched from its send to its receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// Id, from 1, in order of matching.
    pub id: u64,
    /// The call that sent it.
    pub send: EventRef,
    /// The call that posted the receive.
    pub recv_post: EventRef,
    /// The call that completed the receive, when one did.
    pub completion: Option<EventRef>,
    /// Tag.
    pub tag: i32,
    /// Bytes sent.
    pub bytes: u64,
    /// True when the receive completed before the send was posted.
    pub clock_suspect: bool,
}

/// A non-blocking request from its post to its completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLife {
    /// Rank.
    pub rank: u32,
    /// Request id on that rank.
    pub request: u64,
    /// The post (Isend, Irecv).
    pub post: usize,
    /// The completing call, when there was one.
    pub completion: Option<usize>,
}

/// The merged run.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    /// What goes into `otherData`.
    pub info: MergedInfo,
    /// Ranks in order.
    pub ranks: Vec<AlignedRank>,
    /// Matched messages.
    pub messages: Vec<Message>,
    /// Request lifetimes.
    pub requests: Vec<RequestLife>,
}

impl Merged {
    /// The event behind a reference.
    pub fn event(&self, r: EventRef) -> Option<&Event> {
        self.ranks
            .iter()
            .find(|a| a.rank == r.rank)?
            .events
            .get(r.index)
    }

    fn call(&self, r: EventRef) -> Option<&CallEvent> {
        match self.event(r)? {
            Event::Call(c) => Some(c),
            Event::Compute(_) => None,
        }
    }
}

/// A file of the directory that could not be used at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// What merging a directory produced.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeOutcome {
    /// The merged run.
    pub merged: Merged,
    /// Files that could not be used.
    pub unreadable: Vec<Unreadable>,
}

/// Reads every per-rank file (`rank-<N>.json`) of `dir` and merges what can be read.
/// Fails only when no file at all could be used.
pub fn merge_dir(dir: &Path) -> Result<MergeOutcome> {
    let mut traces: Vec<RankTrace> = Vec::new();
    let mut unreadable = Vec::new();
    for path in rank_files(dir)? {
        match read_rank_file(&path) {
            Ok(t) => {
                if let Some(first) = traces.iter().find(|o| o.rank() == t.rank()) {
                    unreadable.push(Unreadable {
                        reason: format!(
                            "rank {} already comes from {}",
                            t.rank(),
                            first.path.display()
                        ),
                        path,
                    });
                } else {
                    traces.push(t);
                }
            }
            Err(e) => unreadable.push(Unreadable {
                path,
                reason: e.to_string(),
            }),
        }
    }
    if traces.is_empty() {
        return Err(Error::NoRanks {
            dir: dir.to_path_buf(),
            problems: unreadable
                .iter()
                .map(|u| format!("{}: {}", u.path.display(), u.reason))
                .collect(),
        });
    }
    Ok(MergeOutcome {
        merged: merge(traces),
        unreadable,
    })
}

/// Aligns and matches the given per-rank traces (at least one).
pub fn merge(mut traces: Vec<RankTrace>) -> Merged {
    traces.sort_by_key(RankTrace::rank);
    // Offsets were measured against rank 0; ranks that read rank 0's very clock need no
    // correction at all. Without rank 0's file, its clock domain is unknown and every
    // rank keeps its measured offset (still consistent: all refer to rank 0's clock).
    let reference_domain = traces
        .iter()
        .find(|t| t.rank() == 0)
        .map(|t| t.header.clock_domain.clone())
        .unwrap_or_default();
    let shares_clock =
        |t: &RankTrace| !reference_domain.is_empty() && t.header.clock_domain == reference_domain;
    let measured: Vec<ClockModel> = traces.iter().map(RankTrace::clock_model).collect();
    let models: Vec<ClockModel> = traces
        .iter()
        .zip(&measured)
        .map(|(t, m)| {
            if shares_clock(t) {
                ClockModel::identity()
            } else {
                *m
            }
        })
        .collect();
    let run_start = traces
        .iter()
        .zip(&models)
        .map(|(t, m)| m.to_reference(t.header.epoch_ns, 0))
        .min()
        .unwrap_or(0);

    let ranks: Vec<AlignedRank> = traces
        .iter()
        .zip(&models)
        .map(|(t, m)| align_rank(t, m, run_start))
        .collect();

    let world_size = traces.iter().map(|t| t.header.size).max().unwrap_or(0);
    let present: Vec<u32> = traces.iter().map(RankTrace::rank).collect();
    let first = &traces[0];
    let mut info = MergedInfo {
        format: FORMAT_NAME.to_string(),
        format_version: FORMAT_VERSION,
        program: first.header.program.clone(),
        params: first.header.params.clone(),
        world_size,
        ranks: traces
            .iter()
            .zip(&measured)
            .map(|(t, m)| RankClock {
                rank: t.rank(),
                host: t.header.host.clone(),
                shared_clock: shares_clock(t),
                init_offset_ns: m.init().offset_ns,
                init_error_ns: m.init().error_ns,
                final_offset_ns: m.last().map(|l| l.offset_ns),
                final_error_ns: m.last().map(|l| l.error_ns),
                drift_ppb: m.drift_ppb(),
            })
            .collect(),
        max_clock_error_ns: models.iter().map(ClockModel::max_error).max().unwrap_or(0),
        messages: 0,
        unmatched_sends: 0,
        unmatched_receives: 0,
        clock_suspect: Vec::new(),
        incomplete: traces
            .iter()
            .filter_map(|t| {
                Some(IncompleteRank {
                    rank: t.rank(),
                    file: t.path.display().to_string(),
                    reason: t.incompleteness()?,
                    events_read: t.events.len() as u64,
                })
            })
            .collect(),
        missing_ranks: (0..world_size).filter(|r| !present.contains(r)).collect(),
    };

    let mut merged = Merged {
        info: info.clone(),
        ranks,
        messages: Vec::new(),
        requests: Vec::new(),
    };
    let (requests, receives) = requests_and_receives(&merged);
    let (messages, unmatched_sends, unmatched_receives) = match_messages(&merged, &receives);
    info.messages = messages.len() as u64;
    info.unmatched_sends = unmatched_sends;
    info.unmatched_receives = unmatched_receives;
    merged.messages = messages;
    merged.requests = requests;
    info.clock_suspect = merged
        .messages
        .iter()
        .filter(|m| m.clock_suspect)
        .filter_map(|m| suspect_record(&merged, m))
        .collect();
    merged.info = info;
    merged
}

fn align_rank(t: &RankTrace, model: &ClockModel, run_start: i128) -> AlignedRank {
    let epoch = t.header.epoch_ns;
    let align = |n: Nanos| Nanos((model.to_reference(epoch, n.0) - run_start).max(0) as u64);
    let mut events: Vec<Event> = t
        .events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            match &mut e {
                Event::Call(c) => {
                    c.start = align(c.start);
                    c.end = align(c.end).max(c.start);
                }
                Event::Compute(c) => {
                    c.start = align(c.start);
                    c.end = align(c.end).max(c.start);
                }
            }
            e
        })
        .collect();
    events.sort_by_key(|e| (e.start(), e.tid()));
    AlignedRank {
        rank: t.rank(),
        host: t.header.host.clone(),
        os_pid: t.header.os_pid,
        threads: t.threads.clone(),
        events,
        complete: t.is_complete(),
    }
}

/// A receive, as matching needs it.
struct Receive {
    post: EventRef,
    completion: Option<EventRef>,
    source: Option<i32>,
    tag: Option<i32>,
    comm: u32,
}

fn requests_and_receives(merged: &Merged) -> (Vec<RequestLife>, Vec<Receive>) {
    let mut lives = Vec::new();
    let mut receives = Vec::new();
    for a in &merged.ranks {
        // request id -> (index of the completing call, its status)
        let mut completed: HashMap<u64, (usize, Option<i32>, Option<i32>)> = HashMap::new();
        for (i, e) in a.events.iter().enumerate() {
            if let Event::Call(c) = e {
                for done in &c.args.completed {
                    if let Some(r) = done.request {
                        completed.entry(r).or_insert((i, done.source, done.tag));
                    }
                }
            }
        }
        let at = |index| EventRef {
            rank: a.rank,
            index,
        };
        let requested = |v: Option<i32>| v.filter(|x| *x >= 0);
        for (i, e) in a.events.iter().enumerate() {
            let Event::Call(c) = e else { continue };
            let comm = c.args.comm.unwrap_or(0);
            match c.op {
                Op::Isend | Op::Irecv => {
                    let Some(request) = c.args.request else {
                        continue;
                    };
                    let done = completed.get(&request).copied();
                    lives.push(RequestLife {
                        rank: a.rank,
                        request,
                        post: i,
                        completion: done.map(|d| d.0),
                    });
                    if c.op == Op::Irecv {
                        receives.push(Receive {
                            post: at(i),
                            completion: done.map(|d| at(d.0)),
                            source: done.and_then(|d| d.1).or(requested(c.args.peer)),
                            tag: done.and_then(|d| d.2).or(requested(c.args.tag)),
                            comm,
                        });
                    }
                }
                Op::Recv | Op::Sendrecv => {
                    let status = c.args.completed.first();
                    let (peer, tag) = if c.op == Op::Recv {
                        (c.args.peer, c.args.tag)
                    } else {
                        (c.args.recv_peer, c.args.recv_tag)
                    };
                    receives.push(Receive {
                        post: at(i),
                        completion: Some(at(i)),
                        source: status.and_then(|s| s.source).or(requested(peer)),
                        tag: status.and_then(|s| s.tag).or(requested(tag)),
                        comm,
                    });
                }
                _ => {}
            }
        }
    }
    (lives, receives)
}

type MatchKey = (u32, u32, i32, u32); // (source, destination, tag, comm)

fn match_messages(merged: &Merged, receives: &[Receive]) -> (Vec<Message>, u64, u64) {
    // Sends per key, in post order (events are sorted by start within a rank).
    let mut sends: BTreeMap<MatchKey, Vec<(EventRef, u64)>> = BTreeMap::new();
    for a in &merged.ranks {
        for (index, e) in a.events.iter().enumerate() {
            let Event::Call(c) = e else { continue };
            if !c.op.sends() {
                continue;
            }
            let (Some(peer), Some(tag)) = (c.args.peer, c.args.tag) else {
                continue;
            };
            let Ok(dest) = u32::try_from(peer) else {
                continue;
            };
            let key = (a.rank, dest, tag, c.args.comm.unwrap_or(0));
            sends.entry(key).or_default().push((
                EventRef {
                    rank: a.rank,
                    index,
                },
                c.args.bytes.unwrap_or(0),
            ));
        }
    }
    let mut recvs: BTreeMap<MatchKey, Vec<&Receive>> = BTreeMap::new();
    let mut unmatched_receives = 0u64;
    for r in receives {
        match (r.source.and_then(|s| u32::try_from(s).ok()), r.tag) {
            (Some(src), Some(tag)) => recvs
                .entry((src, r.post.rank, tag, r.comm))
                .or_default()
                .push(r),
            _ => unmatched_receives += 1,
        }
    }
    for list in recvs.values_mut() {
        list.sort_by_key(|r| (start_of(merged, r.post), r.post.index));
    }
    let mut messages = Vec::new();
    let mut unmatched_sends = 0u64;
    for (key, list) in &sends {
        let rlist = recvs.get(key).map(Vec::as_slice).unwrap_or(&[]);
        for (i, (send, bytes)) in list.iter().enumerate() {
            let Some(r) = rlist.get(i) else {
                unmatched_sends += 1;
                continue;
            };
            let suspect = r
                .completion
                .is_some_and(|c| end_of(merged, c) < start_of(merged, *send));
            messages.push(Message {
                id: 0,
                send: *send,
                recv_post: r.post,
                completion: r.completion,
                tag: key.2,
                bytes: *bytes,
                clock_suspect: suspect,
            });
        }
        unmatched_receives += rlist.len().saturating_sub(list.len()) as u64;
    }
    for (key, rlist) in &recvs {
        if !sends.contains_key(key) {
            unmatched_receives += rlist.len() as u64;
        }
    }
    messages.sort_by_key(|m| (start_of(merged, m.send), m.send.rank, m.send.index));
    for (i, m) in messages.iter_mut().enumerate() {
        m.id = i as u64 + 1;
    }
    (messages, unmatched_sends, unmatched_receives)
}

fn start_of(merged: &Merged, r: EventRef) -> Nanos {
    merged.event(r).map_or(Nanos::ZERO, Event::start)
}

fn end_of(merged: &Merged, r: EventRef) -> Nanos {
    merged.event(r).map_or(Nanos::ZERO, Event::end)
}

fn suspect_record(merged: &Merged, m: &Message) -> Option<SuspectMessage> {
    let completion = m.completion?;
    let send_ns = start_of(merged, m.send).0;
    let recv_complete_ns = end_of(merged, completion).0;
    Some(SuspectMessage {
        send_rank: m.send.rank,
        recv_rank: completion.rank,
        tag: m.tag,
        send_ns,
        recv_complete_ns,
        backwards_ns: send_ns.saturating_sub(recv_complete_ns),
    })
}

/// Where a flow leaves a slice: just inside its start, so that an arrow from a send to
/// a completion that ended after it never points backwards.
fn flow_out_point(e: &Event) -> Nanos {
    Nanos(e.start().0 + (e.end().0 - e.start().0).min(1))
}

/// Where a flow enters a slice: just inside its end (the moment the receive was known
/// to be complete).
fn flow_in_point(e: &Event) -> Nanos {
    Nanos(e.end().0 - (e.end().0 - e.start().0).min(1))
}

/// Writes the merged trace; returns the number of events written.
pub fn write_merged(merged: &Merged, path: &Path) -> Result<u64> {
    let io_err = |source| Error::Io {
        what: "writing",
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io_err)?;
    }
    let file = File::create(path).map_err(io_err)?;
    let mut w =
        ObjectWriter::new(BufWriter::with_capacity(1 << 16, file), &merged.info).map_err(io_err)?;
    write_events(merged, &mut w).map_err(io_err)?;
    let n = w.written();
    w.finish().map_err(io_err)?;
    Ok(n)
}

fn write_events<W: std::io::Write>(
    merged: &Merged,
    w: &mut ObjectWriter<W>,
) -> std::io::Result<()> {
    for a in &merged.ranks {
        let pid = a.rank;
        let name = NameArgs {
            name: format!("rank {} ({})", a.rank, a.host),
        };
        w.write(&WireEvent::meta(MetaName::ProcessName, pid, 0, name))?;
        let sort = SortIndexArgs {
            sort_index: i64::from(pid),
        };
        w.write(&WireEvent::meta(MetaName::ProcessSortIndex, pid, 0, sort))?;
        for (tid, tname) in &a.threads {
            let n = NameArgs {
                name: tname.clone(),
            };
            w.write(&WireEvent::meta(MetaName::ThreadName, pid, *tid, n))?;
            let s = SortIndexArgs {
                sort_index: i64::from(*tid),
            };
            w.write(&WireEvent::meta(MetaName::ThreadSortIndex, pid, *tid, s))?;
        }
        for e in &a.events {
            w.write(&event_to_wire(pid, e))?;
        }
    }
    for (index, life) in merged.requests.iter().enumerate() {
        write_request(merged, life, index as u64 + 1, w)?;
    }
    for m in &merged.messages {
        let (Some(send), Some(done)) = (merged.event(m.send), m.completion) else {
            continue;
        };
        let Some(done_ev) = merged.event(done) else {
            continue;
        };
        if m.clock_suspect {
            let Some(args) = suspect_record(merged, m) else {
                continue;
            };
            let mut ev = WireEvent::new(
                "clock-suspect message",
                Phase::Instant,
                done.rank,
                done_ev.tid(),
            );
            ev.cat = Some(Category::Clock);
            ev.ts = Some(Micros(done_ev.end()));
            ev.s = Some(InstantScope::Thread);
            ev.args = Some(args);
            w.write(&ev)?;
            continue;
        }
        let mut s: WireEvent<'_, ()> =
            WireEvent::new("message", Phase::FlowStart, m.send.rank, send.tid());
        s.cat = Some(Category::Message);
        s.id = Some(m.id);
        s.ts = Some(Micros(flow_out_point(send)));
        w.write(&s)?;
        let mut f: WireEvent<'_, ()> =
            WireEvent::new("message", Phase::FlowEnd, done.rank, done_ev.tid());
        f.cat = Some(Category::Message);
        f.id = Some(m.id);
        f.bp = Some(FlowBinding::Enclosing);
        f.ts = Some(Micros(flow_in_point(done_ev)));
        w.write(&f)?;
    }
    Ok(())
}

fn write_request<W: std::io::Write>(
    merged: &Merged,
    life: &RequestLife,
    id: u64,
    w: &mut ObjectWriter<W>,
) -> std::io::Result<()> {
    let post_ref = EventRef {
        rank: life.rank,
        index: life.post,
    };
    let Some(post) = merged.call(post_ref) else {
        return Ok(());
    };
    let peer = post.args.peer.unwrap_or(-1);
    let mut name = match post.op {
        Op::Isend => format!("Isend → {peer}"),
        _ => format!("Irecv ← {peer}"),
    };
    let completion = life.completion.and_then(|i| {
        merged.call(EventRef {
            rank: life.rank,
            index: i,
        })
    });
    let end = match completion {
        Some(c) => c.end,
        None => {
            name.push_str(" (never completed)");
            merged
                .ranks
                .iter()
                .find(|a| a.rank == life.rank)
                .and_then(|a| a.events.iter().map(Event::end).max())
                .unwrap_or(post.end)
        }
    };
    let args = RequestArgs {
        request: life.request,
        peer,
        tag: post.args.tag.unwrap_or(-1),
        bytes: post.args.bytes.unwrap_or(0),
        completed_by: completion.map(|c| c.op.mpi_name().to_string()),
    };
    let mut b = WireEvent::new(name.as_str(), Phase::AsyncBegin, life.rank, post.tid);
    b.cat = Some(Category::Request);
    b.id = Some(id);
    b.ts = Some(Micros(post.start));
    b.args = Some(args);
    w.write(&b)?;
    let mut e: WireEvent<'_, ()> =
        WireEvent::new(name.as_str(), Phase::AsyncEnd, life.rank, post.tid);
    e.cat = Some(Category::Request);
    e.id = Some(id);
    e.ts = Some(Micros(end));
    w.write(&e)
}
