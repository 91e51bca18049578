//! Which send went to which receive (MPI's non-overtaking order), and which call
//! completed each request.

use std::collections::{BTreeMap, HashMap};

use overlap_instrument::schema::{Event, Nanos, Op, SuspectMessage};

use super::{event_at, AlignedRank, EventRef, Message, RequestLife};

/// A receive, as matching needs it.
pub(super) struct Receive {
    post: EventRef,
    completion: Option<EventRef>,
    source: Option<i32>,
    tag: Option<i32>,
    comm: u32,
}

pub(super) fn requests_and_receives(ranks: &[AlignedRank]) -> (Vec<RequestLife>, Vec<Receive>) {
    let mut lives = Vec::new();
    let mut receives = Vec::new();
    for a in ranks {
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

/// Messages matched, and what was left over.
pub(super) struct Matched {
    pub(super) messages: Vec<Message>,
    pub(super) unmatched_sends: u64,
    pub(super) unmatched_receives: u64,
}

pub(super) fn match_messages(ranks: &[AlignedRank], receives: &[Receive]) -> Matched {
    // Sends per key, in post order (events are sorted by start within a rank).
    let mut sends: BTreeMap<MatchKey, Vec<(EventRef, u64)>> = BTreeMap::new();
    for a in ranks {
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
        list.sort_by_key(|r| (start_of(ranks, r.post), r.post.index));
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
                .is_some_and(|c| end_of(ranks, c) < start_of(ranks, *send));
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
    messages.sort_by_key(|m| (start_of(ranks, m.send), m.send.rank, m.send.index));
    for (i, m) in messages.iter_mut().enumerate() {
        m.id = i as u64 + 1;
    }
    Matched {
        messages,
        unmatched_sends,
        unmatched_receives,
    }
}

fn start_of(ranks: &[AlignedRank], r: EventRef) -> Nanos {
    event_at(ranks, r).map_or(Nanos::ZERO, Event::start)
}

fn end_of(ranks: &[AlignedRank], r: EventRef) -> Nanos {
    event_at(ranks, r).map_or(Nanos::ZERO, Event::end)
}

/// The record of a clock-suspect message (`None` when its receive never completed).
pub(crate) fn suspect_record(ranks: &[AlignedRank], m: &Message) -> Option<SuspectMessage> {
    let completion = m.completion?;
    let send_ns = start_of(ranks, m.send).0;
    let recv_complete_ns = end_of(ranks, completion).0;
    Some(SuspectMessage {
        send_rank: m.send.rank,
        recv_rank: completion.rank,
        tag: m.tag,
        send_ns,
        recv_complete_ns,
        backwards_ns: send_ns.saturating_sub(recv_complete_ns),
    })
}
