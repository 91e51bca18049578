//! The consensus on a large iteration: one rank whose loop body is 10 000 operations
//! (2 000 exchanges of `Irecv, Isend, compute, Wait(recv), Wait(send)`, each at its own
//! call site, with buffers named so data dependence has edges), three iterations. Timed:
//! finding the period, the essential graph, merging the built-in policies (posts-early,
//! lower-tag-first: sort keys through hub chains), the topological sort, and the moves.
//! `cargo bench --bench consensus [-- OPS_PER_ITERATION]`.

use std::num::NonZeroU64;
use std::time::Instant;

use overlap_analyzer::dag::{self, Options};
use overlap_analyzer::model::{Access, Buffer, NamedBuffer};
use overlap_analyzer::ops::{
    CompactIndex, OpKind, Operation, Program, RankProgram, RequestOp, RequestRole,
};
use overlap_format::schema::Op;

/// An operation whose call site is `site`: kept as its span (no trace behind it), read
/// back by [`site_of`].
fn op(kind: OpKind, call: Option<Op>, site: u64) -> Operation {
    Operation {
        kind,
        cost_ns: 100,
        lead_in_ns: 0,
        measured_start_ns: 0,
        measured_end_ns: 0,
        span: site as u32,
        call,
    }
}

/// The call site [`op`] gave an operation.
fn site_of(_: u32, op: &Operation) -> Option<NonZeroU64> {
    NonZeroU64::new(u64::from(op.span))
}

fn program(per_iteration: usize, iterations: usize) -> Program {
    let mut p = Program {
        names: vec!["work".into()],
        ..Program::default()
    };
    let mut ops = Vec::new();
    let mut accesses = Vec::new();
    let exchanges = per_iteration / 5;
    for _ in 0..iterations {
        for e in 0..exchanges {
            let site = |k: usize| (e * 5 + k + 1) as u64;
            let (rbuf, sbuf) = (0x10_0000 + e as u64 * 0x1000, 0x80_0000 + e as u64 * 0x1000);
            let mut request = |role, buf, post| {
                let mut q = RequestOp::new(0, role, post);
                q.set_peer_and_tag(Some(1), Some((e % 7) as i32));
                q.bytes = 4096;
                q.set_buffer(Some(Buffer {
                    addr: buf,
                    len: 4096,
                }));
                q.set_complete(post + 2 + usize::from(role == RequestRole::Send));
                p.requests.push(q);
                p.requests.len() - 1
            };
            let base = ops.len();
            let r = request(RequestRole::Recv, rbuf, base);
            let s = request(RequestRole::Send, sbuf, base + 1);
            let named = |name: &str, addr| NamedBuffer {
                name: name.into(),
                buf: Buffer { addr, len: 4096 },
            };
            ops.push(op(OpKind::Post { request: r }, Some(Op::Irecv), site(0)));
            ops.push(op(OpKind::Post { request: s }, Some(Op::Isend), site(1)));
            ops.push(op(
                OpKind::Compute {
                    name: 0,
                    inferred: false,
                    // Reads the previous exchange's receive, writes this one's send.
                    access: {
                        accesses.push(Access {
                            reads: vec![named("in", rbuf.saturating_sub(0x1000))],
                            writes: vec![named("out", sbuf + 0x1000)],
                        });
                        Some(CompactIndex::new(accesses.len() - 1))
                    },
                    until_span: None,
                },
                None,
                site(2),
            ));
            ops.push(op(OpKind::Complete { request: r }, Some(Op::Wait), site(3)));
            ops.push(op(OpKind::Complete { request: s }, Some(Op::Wait), site(4)));
        }
    }
    p.ranks.push(RankProgram {
        rank: 0,
        ops,
        accesses,
        complete: true,
        ..RankProgram::default()
    });
    p
}

fn main() {
    let per_iteration: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000);
    let p = program(per_iteration, 3);
    let rank = &p.ranks[0];
    let t = Instant::now();
    let period = dag::rank_period(&p, &site_of, rank);
    let period_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let graph = dag::essential::essential(&p, rank, dag::Mode::Proven);
    let essential_s = t.elapsed().as_secs_f64();
    let essential_edges = graph.edge_count();
    let t = Instant::now();
    let order = dag::order_rank(&p, &site_of, rank, &Options::default());
    let consensus_s = t.elapsed().as_secs_f64();
    let moved = order
        .consensus
        .order
        .iter()
        .enumerate()
        .filter(|(k, i)| *k != **i)
        .count();
    println!(
        "consensus: {} operations per iteration, {} in all; period {:?}",
        per_iteration,
        rank.ops.len(),
        period.map(|p| (p.length, p.iterations))
    );
    println!(
        "  period {:.1} ms; essential + policies + sort {:.1} ms ({:.0} ns per operation); {} edges, {} operations placed elsewhere",
        period_s * 1e3,
        consensus_s * 1e3,
        consensus_s * 1e9 / rank.ops.len() as f64,
        order.consensus.edges,
        moved
    );
    println!(
        "  of which the essential graph {:.1} ms ({} edges)",
        essential_s * 1e3,
        essential_edges
    );
    for p in &order.consensus.policies {
        println!("  {}: {} edges offered, {} kept", p.name, p.offered, p.kept);
    }
}
