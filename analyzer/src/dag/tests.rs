//! The DAG on hand-built programs: essential edges, the consensus, the seed's Figure 1.

use overlap_format::schema::Op;

use super::*;
use crate::model::{Access, Buffer, NamedBuffer};
use crate::ops::{CompactIndex, Operation, RequestOp, RequestRole};

/// A one-rank program builder.
struct Build {
    program: Program,
    ops: Vec<Operation>,
    accesses: Vec<Access>,
}

/// Hand-built programs name no call site.
fn no_sites(_: u32, _: &Operation) -> Option<std::num::NonZeroU64> {
    None
}

fn buf(addr: u64) -> Buffer {
    Buffer { addr, len: 64 }
}

impl Build {
    fn new() -> Build {
        Build {
            program: Program::default(),
            ops: Vec::new(),
            accesses: Vec::new(),
        }
    }

    fn push(&mut self, kind: OpKind, call: Option<Op>) -> usize {
        let at = self.ops.len() as u64 * 10;
        self.ops.push(Operation {
            kind,
            cost_ns: 10,
            lead_in_ns: 0,
            measured_start_ns: at,
            measured_end_ns: at + 10,
            span: self.ops.len() as u32,
            call,
        });
        self.ops.len() - 1
    }

    fn compute(&mut self, name: &str, reads: &[u64], writes: &[u64]) -> usize {
        let id = self.program.names.len() as u32;
        self.program.names.push(name.into());
        let named = |a: &u64| NamedBuffer {
            name: format!("b{a}"),
            buf: buf(*a),
        };
        self.accesses.push(Access {
            reads: reads.iter().map(named).collect(),
            writes: writes.iter().map(named).collect(),
        });
        self.push(
            OpKind::Compute {
                name: id,
                inferred: false,
                access: Some(CompactIndex::new(self.accesses.len() - 1)),
                until_span: None,
            },
            None,
        )
    }

    /// A request (posted at `post`, completed at `complete`: op positions to come).
    fn request(&mut self, role: RequestRole, peer: i32, tag: i32, b: u64) -> usize {
        // Posted at 0 until `post` places it.
        let mut q = RequestOp::new(0, role, 0);
        q.set_peer_and_tag(Some(peer), Some(tag));
        q.bytes = 64;
        q.set_buffer(Some(buf(b)));
        self.program.requests.push(q);
        self.program.requests.len() - 1
    }

    fn post(&mut self, r: usize) -> usize {
        let call = match self.program.requests[r].role {
            RequestRole::Send => Op::Isend,
            _ => Op::Irecv,
        };
        let i = self.push(OpKind::Post { request: r }, Some(call));
        self.program.requests[r].set_post(i);
        i
    }

    fn complete(&mut self, r: usize) -> usize {
        let i = self.push(OpKind::Complete { request: r }, Some(Op::Wait));
        self.program.requests[r].set_complete(i);
        i
    }

    fn finish(mut self) -> Program {
        self.program.ranks.push(RankProgram {
            rank: 0,
            ops: std::mem::take(&mut self.ops),
            accesses: std::mem::take(&mut self.accesses),
            complete: true,
            ..RankProgram::default()
        });
        self.program
    }
}

/// The seed's Figure 1, in its order 1: `R1 RW1 R2 RW2 *2 +5 dot solve S1 SW1`.
/// `*2` reads what R2 received and writes what S1 sends; `+5` reads what R1 received;
/// `dot` reads both results; `solve` reads dot's.
fn figure_1() -> (Program, [usize; 10]) {
    let mut b = Build::new();
    let r1 = b.request(RequestRole::Recv, 1, 1, 0x100);
    let r2 = b.request(RequestRole::Recv, 2, 2, 0x200);
    let s1 = b.request(RequestRole::Send, 1, 3, 0x300);
    let ops = [
        b.post(r1),
        b.complete(r1),
        b.post(r2),
        b.complete(r2),
        b.compute("*2", &[0x200], &[0x300]),
        b.compute("+5", &[0x100], &[0x400]),
        b.compute("dot", &[0x300, 0x400], &[0x500]),
        b.compute("solve", &[0x500], &[0x600]),
        b.post(s1),
        b.complete(s1),
    ];
    (b.finish(), ops)
}

fn names(program: &Program, order: &[usize]) -> Vec<&'static str> {
    const NAMES: [&str; 10] = [
        "R1", "RW1", "R2", "RW2", "*2", "+5", "dot", "solve", "S1", "SW1",
    ];
    let _ = program;
    order.iter().map(|&i| NAMES[i]).collect()
}

#[test]
fn figure_1_essential_edges() {
    let (program, [r1, rw1, r2, rw2, times2, plus5, dot, solve, s1, sw1]) = figure_1();
    // Every compute declared its buffers: both modes know the same.
    for mode in [Mode::Proven, Mode::Permissive] {
        let g = essential::essential(&program, &program.ranks[0], mode);
        // Post before completion; reader after the receive; sender after the writer;
        // compute in program order.
        for (a, b) in [
            (r1, rw1),
            (r2, rw2),
            (rw2, times2),
            (rw1, plus5),
            (times2, s1),
            (s1, sw1),
            (times2, plus5),
            (plus5, dot),
            (dot, solve),
        ] {
            assert!(g.has_edge(a, b), "{a} -> {b}");
        }
        // Nothing ties S1 to solve, or RW1 to R2.
        assert!(!g.has_edge(solve, s1));
        assert!(!g.has_edge(rw1, r2));
    }
}

#[test]
fn figure_1_order_overlaps_the_send() {
    // Order 1 -> R1 R2 RW2 *2 S1 RW1 +5 dot solve SW1: S1 and SW1 are separated by
    // RW1, +5, dot and solve (the seed's order 2, up to R1/R2 which the tags order).
    let (program, _) = figure_1();
    let order = order_rank(&program, &no_sites, &program.ranks[0], &Options::default());
    assert_eq!(order.period, None);
    assert_eq!(
        names(&program, &order.consensus.order),
        ["R1", "R2", "RW2", "*2", "S1", "RW1", "+5", "dot", "solve", "SW1"]
    );
    // Program order alone changes nothing.
    let none = Options {
        policies: Vec::new(),
        mode: Mode::Proven,
    };
    let order = order_rank(&program, &no_sites, &program.ranks[0], &none);
    assert_eq!(order.consensus.order, (0..10).collect::<Vec<_>>());
}

#[test]
fn a_policy_that_contradicts_data_dependence_loses() {
    // "Sends first" wants S1 before everything, but S1 sends what *2 writes: the edge
    // *2 -> S1 stays, the policy's S1 -> *2 is refused (and S1 -> R2, S1 -> RW2, which
    // *2 depends on); S1 goes right after *2, before R1 and RW1 which it may precede.
    let (program, _) = figure_1();
    let sends_first = Policy::comparator("sends-first", |a: &OpView, b: &OpView| {
        let send =
            |v: &OpView| v.is_post() && v.request().is_some_and(|r| r.role == RequestRole::Send);
        match (send(a), send(b)) {
            (true, false) => std::cmp::Ordering::Less,
            (false, true) => std::cmp::Ordering::Greater,
            _ => std::cmp::Ordering::Equal,
        }
    });
    let options = Options {
        policies: vec![sends_first],
        mode: Mode::Proven,
    };
    let order = order_rank(&program, &no_sites, &program.ranks[0], &options);
    assert_eq!(
        names(&program, &order.consensus.order),
        ["R2", "RW2", "*2", "S1", "R1", "RW1", "+5", "dot", "solve", "SW1"]
    );
    // S1 against the 9 others: 9 offered, 3 refused (*2, R2, RW2).
    let p = &order.consensus.policies[0];
    assert_eq!((p.offered, p.kept), (9, 6));
}

#[test]
fn unknown_compute_holds_the_send_only_when_proven() {
    //  Isend(buf A) | compute (unknown buffers) | Wait | next (writes A)
    // permissive: no edge between the compute and the send; proven (the default): the
    // compute may write A, so it stays between the post and the wait.
    let mut b = Build::new();
    let s = b.request(RequestRole::Send, 1, 0, 0xA00);
    let post = b.post(s);
    let id = b.program.names.len() as u32;
    b.program.names.push("compute".into());
    let work = b.push(
        OpKind::Compute {
            name: id,
            inferred: true,
            access: None,
            until_span: None,
        },
        None,
    );
    let wait = b.complete(s);
    let next = b.compute("next", &[], &[0xA00]);
    let program = b.finish();
    let loose = essential::essential(&program, &program.ranks[0], Mode::Permissive);
    assert!(!loose.has_edge(post, work));
    assert!(loose.has_edge(wait, next));
    let strict = essential::essential(&program, &program.ranks[0], Mode::Proven);
    assert!(strict.has_edge(post, work) && strict.has_edge(work, wait));
}

#[test]
fn matching_order_keeps_sends_to_one_peer_and_tag() {
    // Isend(1, tag 5) Isend(1, tag 5) Isend(2, tag 5): the first two keep their order.
    let mut b = Build::new();
    let a = b.request(RequestRole::Send, 1, 5, 0x1000);
    let c = b.request(RequestRole::Send, 1, 5, 0x2000);
    let d = b.request(RequestRole::Send, 2, 5, 0x3000);
    let (pa, pc, pd) = (b.post(a), b.post(c), b.post(d));
    let program = b.finish();
    let g = essential::essential(&program, &program.ranks[0], Mode::Permissive);
    assert!(g.has_edge(pa, pc));
    assert!(!g.has_edge(pa, pd) && !g.has_edge(pc, pd));
}
