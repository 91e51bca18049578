//! The replay engine on a generated program of about a million operations (the issue's
//! target: well under a second). `cargo bench --bench replay [-- OPS]`.
//!
//! The program: 64 ranks in a ring, each iteration `Irecv(left), Irecv(right),
//! Isend(left), Isend(right), compute, Wait × 4, Allreduce` (10 operations), with
//! jittered compute; messages of 64 KiB and 1 MiB alternate, so half are rendezvous.
//! Replayed twice: in-MPI progress on a fitted-like network, and the ideal network.
//! Generation is not timed.

use std::time::Instant;

use overlap_analyzer::ops::{
    CollectiveOp, MessageOp, OpKind, Operation, Program, RankProgram, RequestOp, RequestRole,
};
use overlap_analyzer::replay::{measured_orders, replay, Network, ProgressMode, ReplayConfig};
use overlap_format::schema::Op;

const RANKS: u32 = 64;
const PER_ITERATION: usize = 10;

fn op(kind: OpKind, cost_ns: u64, call: Option<Op>) -> Operation {
    Operation {
        kind,
        cost_ns,
        lead_in_ns: 50,
        measured_start_ns: 0,
        measured_end_ns: 0,
        span: 0,
        call,
    }
}

fn program(ops: usize) -> Program {
    let iterations = ops / (PER_ITERATION * RANKS as usize);
    let mut p = Program {
        ranks: (0..RANKS)
            .map(|rank| RankProgram {
                rank,
                complete: true,
                ..RankProgram::default()
            })
            .collect(),
        names: vec!["work".into()],
        ..Program::default()
    };
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    // Requests of each rank in the iteration: recv from left, recv from right, send to
    // left, send to right.
    for it in 0..iterations {
        let bytes = if it % 2 == 0 { 64 << 10 } else { 1 << 20 };
        let mut reqs = vec![[0usize; 4]; RANKS as usize];
        for r in 0..RANKS {
            let left = (r + RANKS - 1) % RANKS;
            let right = (r + 1) % RANKS;
            let base = p.ranks[r as usize].ops.len();
            for (k, (role, peer, call)) in [
                (RequestRole::Recv, left, Op::Irecv),
                (RequestRole::Recv, right, Op::Irecv),
                (RequestRole::Send, left, Op::Isend),
                (RequestRole::Send, right, Op::Isend),
            ]
            .into_iter()
            .enumerate()
            {
                let request = p.requests.len();
                reqs[r as usize][k] = request;
                let mut q = RequestOp::new(r, role, base + k);
                q.set_peer_and_tag(Some(peer as i32), Some(0));
                q.bytes = bytes;
                q.set_complete(base + 5 + k);
                p.requests.push(q);
                p.ranks[r as usize]
                    .ops
                    .push(op(OpKind::Post { request }, 300, Some(call)));
            }
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let compute = OpKind::Compute {
                name: 0,
                inferred: false,
                access: None,
                until_span: None,
            };
            p.ranks[r as usize]
                .ops
                .push(op(compute, 200_000 + seed % 50_000, None));
            for request in reqs[r as usize] {
                p.ranks[r as usize]
                    .ops
                    .push(op(OpKind::Complete { request }, 200, Some(Op::Wait)));
            }
        }
        // Sends to the right meet the right neighbour's receive from its left.
        for r in 0..RANKS as usize {
            let right = (r + 1) % RANKS as usize;
            let left = (r + RANKS as usize - 1) % RANKS as usize;
            for (send, recv) in [(reqs[r][3], reqs[right][0]), (reqs[r][2], reqs[left][1])] {
                let m = p.messages.len();
                let (s, q) = (&p.requests[send], &p.requests[recv]);
                p.messages.push(MessageOp::new(
                    (s.rank, s.post()),
                    (q.rank, q.post()),
                    bytes,
                    0,
                    Some(Op::Isend),
                ));
                p.requests[send].set_message(m);
                p.requests[recv].set_message(m);
            }
        }
        let instance = p.collectives.len();
        let mut members = vec![];
        for r in 0..RANKS {
            let ops = &mut p.ranks[r as usize].ops;
            ops.push(op(
                OpKind::Collective { instance, comm: 0 },
                5_000,
                Some(Op::Allreduce),
            ));
            members.push((r, ops.len() - 1));
        }
        p.collectives.push(CollectiveOp {
            op: Op::Allreduce,
            bytes: 8,
            members,
            cost_ns: Some(5_000),
        });
    }
    p
}

fn main() {
    let ops: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let p = program(ops);
    let total: usize = p.ranks.iter().map(|r| r.ops.len()).sum();
    let orders = measured_orders(&p);
    let network = Network {
        latency_ns: 1500.0,
        ns_per_byte: 0.1,
        eager_limit: 64 << 10,
        classes: None,
    };
    for (name, cfg) in [
        ("in-mpi", ReplayConfig::on(network, ProgressMode::InMpi)),
        ("ideal", ReplayConfig::ideal()),
    ] {
        let t = Instant::now();
        let out = replay(&p, &orders, &cfg).expect("the generated program replays");
        let s = t.elapsed().as_secs_f64();
        println!(
            "{name}: {total} operations, {} messages replayed in {:.3} s ({:.1} M ops/s); \
             makespan {:.3} ms",
            p.messages.len(),
            s,
            total as f64 / s / 1e6,
            out.makespan_ns as f64 / 1e6
        );
    }
}
