//! probe
use overlap_analyzer::dag::{essential::essential, Mode};
use overlap_analyzer::model::Buffer;
use overlap_analyzer::ops::{OpKind, Operation, Program, RankProgram, RequestOp, RequestRole};
use std::time::Instant;
fn op(kind: OpKind, t: u64) -> Operation {
    Operation {
        kind,
        cost_ns: 1,
        lead_in_ns: 0,
        measured_start_ns: t,
        measured_end_ns: t + 1,
        span: 0,
        call: None,
    }
}
fn main() {
    for n in [10_000usize, 100_000] {
        for same_buffer in [false, true] {
            let mut p = Program {
                names: vec!["c".into()],
                ..Program::default()
            };
            let mut ops = Vec::new();
            for i in 0..n {
                let mut q = RequestOp::new(0, RequestRole::Send, ops.len());
                q.set_peer_and_tag(Some(1), Some((i % 7) as i32));
                q.bytes = 64;
                let addr = if same_buffer {
                    0x1000
                } else {
                    0x1000 + 64 * i as u64
                };
                q.set_buffer(Some(Buffer { addr, len: 64 }));
                p.requests.push(q);
                ops.push(op(OpKind::Post { request: i }, ops.len() as u64));
                ops.push(op(
                    OpKind::Compute {
                        name: 0,
                        inferred: true,
                        access: None,
                        until_span: None,
                    },
                    ops.len() as u64,
                ));
            }
            for i in 0..n {
                p.requests[i].set_complete(ops.len());
                ops.push(op(OpKind::Complete { request: i }, ops.len() as u64));
            }
            p.ranks.push(RankProgram {
                ops,
                complete: true,
                ..RankProgram::default()
            });
            for mode in [Mode::Proven, Mode::Permissive] {
                let t = Instant::now();
                let g = essential(&p, &p.ranks[0], mode);
                println!(
                    "n {n} same_buffer {same_buffer} {mode:?}: {:.3} s, {} edges",
                    t.elapsed().as_secs_f64(),
                    g.edge_count()
                );
            }
        }
    }
}
