//! The property safe moves rest on, over random rank programs (posts, completions,
//! compute with random declared buffers or none, blocking calls, random learned uses):
//!
//! - no order, proven or permissive, moves a post or completion across an operation that
//!   uses its buffer in a conflicting way (a declared span, a learned touch, an MPI call
//!   naming an overlapping buffer: a blocking call's, a collective's);
//! - every compute a proven order moves a post or completion across is proven to leave
//!   its buffer alone (by a learned watch, or by declaring other buffers).
//!
//! ```text
//!  random   Post(q0) c[w 0x100] Blocking(0x200) Post(q1) Complete(q0) c[?] ...
//!  learned  q0: ops after its completion free until op k (touched there, or not)
//!  checked  each (request, operation) pair: program order kept where it must be
//! ```

use std::num::NonZeroU64;

use proptest::prelude::*;

use super::{order_rank, Mode, Options};
use crate::dependence::{self, Effect};
use crate::model::{Access, Buffer, NamedBuffer};
use crate::ops::{
    Knowledge, LearnedEnd, LearnedOp, OpKind, Operation, Program, RankProgram, RequestOp,
    RequestRole, Touch, Transfers,
};

/// The buffers a program may use: the first and the last overlap.
const BUFFERS: [Buffer; 4] = [
    Buffer {
        addr: 0x100,
        len: 64,
    },
    Buffer {
        addr: 0x200,
        len: 64,
    },
    Buffer {
        addr: 0x300,
        len: 64,
    },
    Buffer {
        addr: 0x120,
        len: 64,
    },
];

/// One request: sends or receives, its buffer (none: not recorded), where its post and
/// completion fall among the other operations, and what its watch learned: how many
/// operations after its completion it lasted and whether a touch (read, write) ended it.
#[derive(Clone, Debug)]
struct Req {
    send: bool,
    buffer: Option<usize>,
    post_key: u16,
    lasts: u16,
    learned: Option<(u8, Option<bool>)>,
}

/// A compute (declared reads and writes as masks of [`BUFFERS`], or nothing declared),
/// a blocking call using a buffer (a receive writes it), or another call naming one (a
/// collective's).
#[derive(Clone, Debug)]
enum Other {
    Compute(Option<(u8, u8)>),
    Blocking { buffer: usize, receives: bool },
    Call { buffer: usize },
}

fn req() -> impl Strategy<Value = Req> {
    (
        any::<bool>(),
        prop::option::weighted(0.9, 0..BUFFERS.len()),
        any::<u16>(),
        1..400u16,
        prop::option::of((0..12u8, prop::option::of(any::<bool>()))),
    )
        .prop_map(|(send, buffer, post_key, lasts, learned)| Req {
            send,
            buffer,
            post_key,
            lasts,
            learned,
        })
}

fn other() -> impl Strategy<Value = (u16, Other)> {
    let compute = prop::option::weighted(0.5, (0..16u8, 0..16u8)).prop_map(Other::Compute);
    let blocking = (0..BUFFERS.len(), any::<bool>())
        .prop_map(|(buffer, receives)| Other::Blocking { buffer, receives });
    let call = (0..BUFFERS.len()).prop_map(|buffer| Other::Call { buffer });
    (
        any::<u16>(),
        prop_oneof![4 => compute, 1 => blocking, 1 => call],
    )
}

/// The program the random parts make (one rank), each operation 10 ns.
fn program(reqs: &[Req], others: &[(u16, Other)]) -> Program {
    // (key, order among equal keys, what): posts, then others, then completions.
    enum At {
        Post(usize),
        Complete(usize),
        Other(usize),
    }
    let mut at: Vec<(u32, u8, At)> = Vec::new();
    for (k, r) in reqs.iter().enumerate() {
        let post = u32::from(r.post_key);
        at.push((post, 0, At::Post(k)));
        at.push((post + u32::from(r.lasts), 2, At::Complete(k)));
    }
    for (k, (key, _)) in others.iter().enumerate() {
        at.push((u32::from(*key), 1, At::Other(k)));
    }
    at.sort_by_key(|a| (a.0, a.1));
    let mut program = Program {
        names: vec!["compute".into()],
        ..Program::default()
    };
    let mut rank = RankProgram {
        complete: true,
        ..RankProgram::default()
    };
    program.requests = (reqs.iter().enumerate())
        .map(|(k, r)| {
            let role = if r.send {
                RequestRole::Send
            } else {
                RequestRole::Recv
            };
            let mut q = RequestOp::new(0, role, 0);
            q.set_peer_and_tag(Some(1), Some(k as i32 % 2));
            q.bytes = 64;
            q.set_buffer(r.buffer.map(|b| BUFFERS[b]));
            q
        })
        .collect();
    let named = |mask: u8| -> Vec<NamedBuffer> {
        (0..BUFFERS.len())
            .filter(|b| mask & (1 << b) != 0)
            .map(|b| NamedBuffer {
                name: format!("b{b}"),
                buf: BUFFERS[b],
            })
            .collect()
    };
    for (i, (_, _, what)) in at.iter().enumerate() {
        let kind = match *what {
            At::Post(k) => {
                program.requests[k].set_post(i);
                OpKind::Post { request: k }
            }
            At::Complete(k) => {
                program.requests[k].set_complete(i);
                OpKind::Complete { request: k }
            }
            At::Other(k) => match others[k].1 {
                Other::Compute(declared) => OpKind::Compute {
                    name: 0,
                    inferred: declared.is_none(),
                    access: declared.map(|(reads, writes)| {
                        rank.add_access(Access {
                            reads: named(reads),
                            writes: named(writes),
                        })
                    }),
                    until_span: None,
                },
                Other::Call { buffer } => {
                    rank.call_buffers.push((i as u32, BUFFERS[buffer]));
                    OpKind::Local
                }
                Other::Blocking { buffer, receives } => OpKind::Blocking {
                    transfers: Box::new(Transfers {
                        buffers: vec![(
                            BUFFERS[buffer],
                            if receives { Touch::Write } else { Touch::Read },
                        )],
                    }),
                    comm: 0,
                    null_peers: 0,
                },
            },
        };
        let t = i as u64 * 10;
        rank.ops.push(Operation {
            kind,
            cost_ns: 10,
            lead_in_ns: 0,
            measured_start_ns: t,
            measured_end_ns: t + 10,
            span: i as u32,
            call: None,
        });
    }
    // The learned uses, placed as a trace's are: a touch in a compute or call.
    let n = rank.ops.len();
    for (k, r) in reqs.iter().enumerate() {
        let (Some((lasts, touch)), Some(b), Some(c)) =
            (r.learned, r.buffer, program.requests[k].complete())
        else {
            continue;
        };
        let mut until = c + 1 + usize::from(lasts);
        let end = match touch {
            Some(read) => {
                while until < n && !rank.ops[until].kind.is_anchor() {
                    until += 1;
                }
                LearnedEnd::Touched(if read { Touch::Read } else { Touch::Write })
            }
            None => LearnedEnd::Untouched(dependence::WatchEnd::RunEnded),
        };
        let end = if until >= n {
            LearnedEnd::Untouched(dependence::WatchEnd::RunEnded)
        } else {
            end
        };
        let watched = Some(BUFFERS[b]);
        let reads = (!r.send).then_some(BUFFERS[b]);
        rank.learned.push(LearnedOp::new(
            k,
            (until < n).then_some(until),
            (reads, watched),
            end,
            NonZeroU64::new(1),
        ));
    }
    program.ranks.push(rank);
    program
}

/// Whether operation `x` uses `q`'s buffer in a way that conflicts: a declared span, a
/// learned touch, or an MPI call naming an overlapping buffer (handed to MPI again).
fn conflicts(program: &Program, x: usize, q: &RequestOp) -> bool {
    let rank = &program.ranks[0];
    let (guard, op) = (q.guard(), &rank.ops[x]);
    let Some(buf) = q.buffer() else {
        return false;
    };
    let declared = rank
        .access(op)
        .is_some_and(|a| dependence::declared(a, Some(buf), guard) != Effect::Free);
    let learned = rank.learned.iter().any(|l| {
        l.until() == Some(x)
            && l.touched()
                .is_some_and(|(b, t)| guard.conflicts(t) && b.overlaps(&buf))
    });
    let mpi = match &op.kind {
        OpKind::Blocking { transfers, .. } => {
            transfers.buffers.iter().any(|(b, _)| b.overlaps(&buf))
        }
        _ => false,
    };
    let named = (rank.call_buffers.iter()).any(|&(at, b)| at as usize == x && b.overlaps(&buf));
    declared || learned || mpi || named
}

/// Checks an order of `program`'s rank: `proven` adds the second property.
fn check(program: &Program, order: &[usize], proven: bool) -> Result<(), TestCaseError> {
    let rank = &program.ranks[0];
    let mut position = vec![0; order.len()];
    for (p, &i) in order.iter().enumerate() {
        position[i] = p;
    }
    let mut knowledge = Knowledge::new(program, rank);
    for (i, op) in rank.ops.iter().enumerate() {
        let OpKind::Post { request } = op.kind else {
            continue;
        };
        let q = &program.requests[request];
        let ends = [Some(i), q.complete()];
        for x in (0..rank.ops.len()).filter(|&x| rank.ops[x].kind.is_anchor()) {
            for m in ends.iter().flatten().copied() {
                let crossed = (x < m) != (position[x] < position[m]);
                if !crossed {
                    continue;
                }
                prop_assert!(
                    !conflicts(program, x, q),
                    "{m} crossed {x}, which uses its buffer: {order:?}"
                );
                let compute = matches!(rank.ops[x].kind, OpKind::Compute { .. });
                if proven && compute && q.moves_data() {
                    let free = knowledge.effect(x, q) == Effect::Free;
                    prop_assert!(free, "{m} crossed {x}, not proven free: {order:?}");
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn no_move_crosses_a_use_of_its_buffer(
        reqs in prop::collection::vec(req(), 1..6),
        others in prop::collection::vec(other(), 0..14),
    ) {
        let program = program(&reqs, &others);
        let rank = &program.ranks[0];
        let no_sites = |_: u32, _: &Operation| None;
        for mode in [Mode::Proven, Mode::Permissive] {
            let options = Options { mode, ..Options::default() };
            let order = order_rank(&program, &no_sites, rank, &options).consensus.order;
            check(&program, &order, mode == Mode::Proven)?;
        }
        // The waits-late policy defers every completion as far as it may go.
        let late = Options {
            policies: vec![super::BuiltIn::WaitsLate.policy()],
            mode: Mode::Proven,
        };
        let order = order_rank(&program, &no_sites, rank, &late).consensus.order;
        check(&program, &order, true)?;
    }
}
