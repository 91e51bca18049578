//! The engine on hand-built programs (no MPI), each with its timeline and its answer
//! worked by hand. Unless a test says otherwise the network has latency 1000 ns, 1 ns
//! per byte (1 GB/s) and an eager limit of 100 bytes, and MPI calls cost nothing.
#![allow(clippy::unwrap_used)]

use overlap_format::schema::Op;

use super::*;
use crate::ops::{
    CollectiveOp, MessageOp, OpKind, Operation, Program, RankProgram, RequestOp, RequestRole,
};

/// Builds programs operation by operation.
struct B {
    p: Program,
}

impl B {
    fn new(ranks: u32) -> B {
        B {
            p: Program {
                ranks: (0..ranks)
                    .map(|rank| RankProgram {
                        rank,
                        complete: true,
                        ..RankProgram::default()
                    })
                    .collect(),
                names: vec!["work".into()],
                ..Program::default()
            },
        }
    }

    fn op(&mut self, r: u32, kind: OpKind, cost_ns: u64, call: Option<Op>) -> usize {
        let ops = &mut self.p.ranks[r as usize].ops;
        ops.push(Operation {
            kind,
            cost_ns,
            lead_in_ns: 0,
            measured_start_ns: 0,
            measured_end_ns: 0,
            span: 0,
            call,
        });
        ops.len() - 1
    }

    fn compute(&mut self, r: u32, ns: u64) -> usize {
        let kind = OpKind::Compute {
            name: 0,
            inferred: false,
            access: None,
            until_span: None,
        };
        self.op(r, kind, ns, None)
    }

    /// A post of `role` to or from `peer`; returns the request.
    fn post(&mut self, r: u32, role: RequestRole, peer: u32, bytes: u64) -> usize {
        let request = self.p.requests.len();
        let call = match role {
            RequestRole::Send => Op::Isend,
            RequestRole::Recv => Op::Irecv,
            _ => Op::Iallreduce,
        };
        let post = self.op(r, OpKind::Post { request }, 0, Some(call));
        let mut q = RequestOp::new(r, role, post);
        q.set_peer_and_tag(Some(peer as i32), Some(0));
        q.bytes = bytes;
        self.p.requests.push(q);
        request
    }

    fn wait(&mut self, r: u32, request: usize) -> usize {
        let i = self.op(r, OpKind::Complete { request }, 0, Some(Op::Wait));
        self.p.requests[request].set_complete(i);
        i
    }

    /// Matches send request `s` with receive request `r`.
    fn link(&mut self, s: usize, r: usize) {
        let m = self.p.messages.len();
        let (a, b) = (&self.p.requests[s], &self.p.requests[r]);
        let call = self.p.ranks[a.rank as usize].ops[a.post()].call;
        self.p.messages.push(MessageOp::new(
            (a.rank, a.post()),
            (b.rank, b.post()),
            a.bytes,
            0,
            call,
        ));
        self.p.requests[s].set_message(m);
        self.p.requests[r].set_message(m);
    }

    /// A blocking call sending and receiving the given messages (linked later).
    fn blocking(&mut self, r: u32, call: Op) -> usize {
        let kind = OpKind::Blocking {
            transfers: Box::default(),
            comm: 0,
            null_peers: 0,
        };
        self.op(r, kind, 0, Some(call))
    }

    /// A message from blocking op `(r0, i0)` to blocking op `(r1, i1)`.
    fn blocking_msg(&mut self, (r0, i0): (u32, usize), (r1, i1): (u32, usize), bytes: u64) {
        let m = self.p.messages.len();
        let call = self.p.ranks[r0 as usize].ops[i0].call;
        self.p
            .messages
            .push(MessageOp::new((r0, i0), (r1, i1), bytes, 0, call));
        self.p.ranks[r0 as usize].blocking.add(i0, m, true);
        self.p.ranks[r1 as usize].blocking.add(i1, m, false);
    }

    /// A blocking collective with one member per rank (`cost` after the last entry).
    fn collective(&mut self, cost_ns: Option<u64>) {
        let instance = self.p.collectives.len();
        let mut members = vec![];
        for r in 0..self.p.ranks.len() as u32 {
            let kind = OpKind::Collective { instance, comm: 0 };
            members.push((r, self.op(r, kind, 0, Some(Op::Allreduce))));
        }
        self.p.collectives.push(CollectiveOp {
            op: Op::Allreduce,
            bytes: 8,
            members,
            cost_ns,
        });
    }

    fn run(&self, cfg: &ReplayConfig) -> Result<Replay, ReplayError> {
        let r = replay(&self.p, &measured_orders(&self.p), cfg);
        // The replay that keeps only the run time, of the operations encoded, agrees,
        // and fails where this fails.
        let encoded = MeasuredProgram::of(self.p.clone());
        assert_eq!(
            measured_makespan(&encoded, cfg).ok(),
            r.as_ref().ok().map(|r| r.makespan_ns)
        );
        r
    }
}

fn net() -> ReplayConfig {
    let network = Network::line(1000.0, 1.0, 100);
    ReplayConfig {
        mpi_costs: false,
        ..ReplayConfig::on(network, ProgressMode::InMpi)
    }
}

fn end(r: &Replay, rank: usize, op: usize) -> u64 {
    r.ranks[rank].ops[op].end_ns
}

/// One Isend -> Irecv pair; rank 1 computes 500 first.
fn pair(bytes: u64) -> B {
    let mut b = B::new(2);
    let s = b.post(0, RequestRole::Send, 1, bytes);
    b.wait(0, s);
    b.compute(1, 500);
    let r = b.post(1, RequestRole::Recv, 0, bytes);
    b.wait(1, r);
    b.link(s, r);
    b
}

#[test]
fn eager_and_rendezvous() {
    // Eager, 50 B: the send completes at its post; data lands at 0 + 1000 + 50.
    //  r0 |Isend 0|Wait 0|                       r0 ends 0
    //  r1 |c 0-500|Irecv 500|Wait 500 --- 1050|  r1 ends 1050
    let r = pair(50).run(&net()).unwrap();
    assert_eq!((r.ranks[0].end_ns, r.ranks[1].end_ns), (0, 1050));
    assert_eq!(r.makespan_ns, 1050);
    // Rendezvous, 5000 B: handshake once both are posted (500 + 1000), then 5000 ns of
    // transfer; rank 0 sits in its Wait, inside MPI, so it progresses.
    //  r0 |Isend 0|Wait 0 ------------------------- 6500|
    //  r1 |c 0-500|Irecv 500|Wait 500 ------------- 6500|
    let r = pair(5000).run(&net()).unwrap();
    assert_eq!((end(&r, 0, 1), end(&r, 1, 2)), (6500, 6500));
    assert_eq!(r.makespan_ns, 6500);
    assert_eq!(r.assumed, Assumed::default());
}

/// The send's call decides the protocol, read from the message (which keeps it), never
/// from the sender's operations.
#[test]
fn the_sends_call_kept_by_its_message_decides_the_protocol() {
    let with = |call: Op, bytes: u64| {
        let mut b = B::new(2);
        let s = b.post(0, RequestRole::Send, 1, bytes);
        b.p.ranks[0].ops[0].call = Some(call);
        b.wait(0, s);
        b.compute(1, 500);
        let r = b.post(1, RequestRole::Recv, 0, bytes);
        b.wait(1, r);
        b.link(s, r);
        b
    };
    // Synchronous, 50 B: the data leaves at 0 and lands at 1050; the send completes
    // with the receive.
    //  r0 |Issend 0|Wait 0 ------------------ 1050|
    //  r1 |c 0-500|Irecv 500|Wait 500 ------- 1050|
    let r = with(Op::Issend, 50).run(&net()).unwrap();
    assert_eq!((r.ranks[0].end_ns, r.ranks[1].end_ns), (1050, 1050));
    // Buffered, 5000 B (past the eager limit): the send completes at its post, the data
    // lands at 0 + 1000 + 5000.
    //  r0 |Ibsend 0|Wait 0|
    //  r1 |c 0-500|Irecv 500|Wait 500 ------- 6000|
    let r = with(Op::Ibsend, 5000).run(&net()).unwrap();
    assert_eq!((r.ranks[0].end_ns, r.ranks[1].end_ns), (0, 6000));
    // An Isend whose message says Issend replays as the message says.
    let mut b = with(Op::Isend, 50);
    assert_eq!(b.p.messages[0].send_call, Some(Op::Isend));
    assert_eq!(b.run(&net()).unwrap().ranks[0].end_ns, 0);
    b.p.messages[0].send_call = Some(Op::Issend);
    assert_eq!(b.run(&net()).unwrap().ranks[0].end_ns, 1050);
}

/// An eager receive completes at the later of its post and its data's arrival,
/// whichever side was posted first; a synchronous send completes with it.
#[test]
fn an_eager_receive_completes_at_the_later_of_its_post_and_the_arrival() {
    let with = |call: Op, sender_computes: u64, receiver_computes: u64| {
        let mut b = B::new(2);
        b.compute(0, sender_computes);
        let s = b.post(0, RequestRole::Send, 1, 50);
        let at = b.p.ranks[0].ops.len() - 1;
        b.p.ranks[0].ops[at].call = Some(call);
        b.wait(0, s);
        b.compute(1, receiver_computes);
        let r = b.post(1, RequestRole::Recv, 0, 50);
        b.wait(1, r);
        b.link(s, r);
        b.run(&net()).unwrap()
    };
    let ends = |r: Replay| (r.ranks[0].end_ns, r.ranks[1].end_ns);
    // The receive posted first, the data there at 500 + 1000 + 50:
    //  r0 |c 0-500|Isend 500|Wait 500|              r0 ends 500
    //  r1 |Irecv 0|Wait 0 ------------------ 1550|  r1 ends 1550
    assert_eq!(ends(with(Op::Isend, 500, 0)), (500, 1550));
    //  r0 |c 0-500|Issend 500|Wait 500 ----- 1550|  the send completes with it
    assert_eq!(ends(with(Op::Issend, 500, 0)), (1550, 1550));
    // The send posted first, the data there at 1050, the receive posted at 2000:
    //  r0 |Isend 0|Wait 0|                          r0 ends 0
    //  r1 |c 0-2000|Irecv 2000|Wait 2000|           r1 ends 2000
    assert_eq!(ends(with(Op::Isend, 0, 2000)), (0, 2000));
    //  r0 |Issend 0|Wait 0 ---------------- 2000|
    assert_eq!(ends(with(Op::Issend, 0, 2000)), (2000, 2000));
    // Both posted at 0: the data lands at 1050.
    assert_eq!(ends(with(Op::Issend, 0, 0)), (1050, 1050));
}

#[test]
fn rendezvous_stalls_outside_mpi_unless_progress_is_async() {
    // Both post at 0, then compute 10 000; the handshake ends at 1000.
    //  r0 |Isend|c 0 ----- 10000|Wait|     async:  transfer 1000-6000, Waits end 10000
    //  r1 |Irecv|c 0 ----- 10000|Wait|     in-mpi: nobody in MPI until 10000:
    //                                              transfer 10000-15000
    let mut b = B::new(2);
    let s = b.post(0, RequestRole::Send, 1, 5000);
    b.compute(0, 10_000);
    b.wait(0, s);
    let r = b.post(1, RequestRole::Recv, 0, 5000);
    b.compute(1, 10_000);
    b.wait(1, r);
    b.link(s, r);
    let in_mpi = b.run(&net()).unwrap();
    assert_eq!(in_mpi.makespan_ns, 15_000);
    let cfg = ReplayConfig {
        progress: ProgressMode::Async,
        ..net()
    };
    assert_eq!(b.run(&cfg).unwrap().makespan_ns, 10_000);

    // The receiver waits at once instead (Irecv; Wait; compute 10 000): it is inside
    // MPI from 0, so the transfer runs 1000-6000 and it computes 6000-16000. The sender
    // is outside MPI all the while but one party inside suffices.
    let mut b = B::new(2);
    let s = b.post(0, RequestRole::Send, 1, 5000);
    b.compute(0, 10_000);
    b.wait(0, s);
    let r = b.post(1, RequestRole::Recv, 0, 5000);
    b.wait(1, r);
    b.compute(1, 10_000);
    b.link(s, r);
    let out = b.run(&net()).unwrap();
    assert_eq!((out.ranks[0].end_ns, out.ranks[1].end_ns), (10_000, 16_000));
}

#[test]
fn a_transfer_pauses_and_resumes_with_its_ranks_mpi_time() {
    // Lead-ins are outside MPI too. 5000 B, handshake done at 1000.
    //  r0 |Isend 0|Wait? no: c 0-3000|Local 3000-5000 (in MPI)|c 5000-9000|Wait 9000-
    //  r1 |Irecv 0|c 0 ------------------------------------------ 20000|Wait|
    // Progress: 3000-5000 (2000 done, r0 in MPI), then from 9000 (r0's Wait): the last
    // 3000 end at 12000; rank 1 waits until nothing: its Wait at 20000 ends 20000.
    let mut b = B::new(2);
    let s = b.post(0, RequestRole::Send, 1, 5000);
    b.compute(0, 3000);
    b.op(0, OpKind::Local, 2000, Some(Op::Iprobe));
    b.compute(0, 4000);
    b.wait(0, s);
    let r = b.post(1, RequestRole::Recv, 0, 5000);
    b.compute(1, 20_000);
    b.wait(1, r);
    b.link(s, r);
    let cfg = ReplayConfig {
        mpi_costs: true,
        ..net()
    };
    let out = b.run(&cfg).unwrap();
    assert_eq!(end(&out, 0, 4), 12_000);
    assert_eq!(end(&out, 1, 2), 20_000);
    // A lead-in of 1000 before rank 0's Local delays it and the progress alike.
    b.p.ranks[0].ops[2].lead_in_ns = 1000;
    let out = b.run(&cfg).unwrap();
    // Local 4000-6000 (2000 done), compute 6000-10000, Wait from 10000: ends 13000.
    assert_eq!(out.ranks[0].ops[2].start_ns, 4000);
    assert_eq!(end(&out, 0, 4), 13_000);
}

#[test]
fn collectives_synchronize_and_cost() {
    // r0 |c 10|Allreduce 10 ----- 35|c 1|     last entry 30, cost 5: all leave at 35
    // r1 |c 30            |AR 30-35|c 1|
    // r2 |c 20       |AR 20 ---- 35|c 1|     ends 36
    let build = |cost| {
        let mut b = B::new(3);
        for (r, c) in [(0, 10), (1, 30), (2, 20)] {
            b.compute(r, c);
        }
        b.collective(cost);
        for r in 0..3 {
            b.compute(r, 1);
        }
        b
    };
    let out = build(Some(5)).run(&net()).unwrap();
    assert_eq!(out.makespan_ns, 36);
    assert!(out.ranks.iter().all(|r| r.ops[1].end_ns == 35));
    assert_eq!(out.assumed.collectives_without_cost, 0);
    // No observed cost: 0, and said.
    let out = build(None).run(&net()).unwrap();
    assert_eq!(out.makespan_ns, 31);
    assert_eq!(out.assumed.collectives_without_cost, 1);
    // The ideal configuration only synchronizes.
    let out = build(Some(5)).run(&ReplayConfig::ideal()).unwrap();
    assert_eq!(out.makespan_ns, 31);
    assert_eq!(out.assumed.collectives_without_cost, 0);
}

#[test]
fn nonblocking_collectives_complete_after_the_last_post() {
    // r0 |c 10|Iallreduce|c 5|Wait 15 ---- 35|    last post 30, cost 5: done 35
    // r1 |c 30                |Iallreduce|c 5|Wait 35|
    let mut b = B::new(2);
    let mut members = vec![];
    let mut reqs = vec![];
    for (r, c) in [(0, 10), (1, 30)] {
        b.compute(r, c);
        let q = b.post(r, RequestRole::Collective, r, 8);
        b.p.requests[q].set_instance(Some(0));
        members.push((r, b.p.requests[q].post()));
        reqs.push(q);
        b.compute(r, 5);
        b.wait(r, q);
    }
    b.p.collectives.push(CollectiveOp {
        op: Op::Iallreduce,
        bytes: 8,
        members,
        cost_ns: Some(5),
    });
    let out = b.run(&net()).unwrap();
    assert_eq!((end(&out, 0, 3), end(&out, 1, 3)), (35, 35));
    assert_eq!(out.ranks[0].ops[3].start_ns, 15);
}

#[test]
fn waits_before_the_partner_posts_deadlock() {
    // Each rank waits for its receive before posting its own send to the other:
    //  r0 |Irecv(1)|Wait(recv) ...|Isend(1)|Wait|
    //  r1 |Irecv(0)|Wait(recv) ...|Isend(0)|Wait|
    let mut b = B::new(2);
    let mut recvs = vec![];
    let mut sends = vec![];
    for (r, peer) in [(0, 1), (1, 0)] {
        let q = b.post(r, RequestRole::Recv, peer, 8);
        b.wait(r, q);
        let s = b.post(r, RequestRole::Send, peer, 8);
        b.wait(r, s);
        recvs.push(q);
        sends.push(s);
    }
    b.link(sends[0], recvs[1]);
    b.link(sends[1], recvs[0]);
    let err = b.run(&net()).unwrap_err();
    let ReplayError::Deadlock { blocked } = &err else {
        panic!("{err}")
    };
    assert_eq!(blocked.len(), 2);
    assert_eq!((blocked[0].rank, blocked[0].op), (0, 1));
    assert_eq!((blocked[1].rank, blocked[1].op), (1, 1));
    assert_eq!(
        err.to_string(),
        "deadlock: rank 0 in operation 1 (MPI_Wait), waiting for a message from rank 1; \
         rank 1 in operation 1 (MPI_Wait), waiting for a message from rank 0"
    );
    // Posting both sends first works (the measured order of a correct program):
    // order Isend, Irecv, Wait, Wait on both ranks.
    let orders = vec![vec![2, 0, 1, 3], vec![2, 0, 1, 3]];
    let out = replay(&b.p, &orders, &net()).unwrap();
    assert_eq!(out.makespan_ns, 1008);
}

#[test]
fn blocking_sends_first_deadlock_when_rendezvous_or_synchronous() {
    //  r0 |Send(1)|Recv(1)|      both send first: fine while the sends are eager,
    //  r1 |Send(0)|Recv(0)|      a deadlock when they need their receive
    let build = |bytes| {
        let mut b = B::new(2);
        let (s0, r0) = (b.blocking(0, Op::Send), b.blocking(0, Op::Recv));
        let (s1, r1) = (b.blocking(1, Op::Send), b.blocking(1, Op::Recv));
        b.blocking_msg((0, s0), (1, r1), bytes);
        b.blocking_msg((1, s1), (0, r0), bytes);
        b
    };
    // Eager: sends return at once, receives end at 0 + 1000 + 8.
    assert_eq!(build(8).run(&net()).unwrap().makespan_ns, 1008);
    let err = build(5000).run(&net()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "deadlock: rank 0 in operation 0 (MPI_Send), waiting for the receive of rank 1; \
         rank 1 in operation 0 (MPI_Send), waiting for the receive of rank 0"
    );
    let sync = ReplayConfig {
        synchronous_sends: true,
        ..net()
    };
    assert!(matches!(
        build(8).run(&sync),
        Err(ReplayError::Deadlock { .. })
    ));
    // Sendrecv never deadlocks on itself: both halves are posted on entry.
    let mut b = B::new(2);
    let (a, c) = (b.blocking(0, Op::Sendrecv), b.blocking(1, Op::Sendrecv));
    b.blocking_msg((0, a), (1, c), 5000);
    b.blocking_msg((1, c), (0, a), 5000);
    // Handshake 0-1000, transfer 1000-6000, both ways at once.
    assert_eq!(b.run(&sync).unwrap().makespan_ns, 6000);
}

#[test]
fn unmatched_requests_complete_at_once_and_are_counted() {
    // r0 |c 10|Isend(no receiver)|Wait|c 5|   the Wait ends at 10: 15
    // r1 |Recv(no sender)|c 3|              the Recv ends at 0: 3
    let mut b = B::new(2);
    b.compute(0, 10);
    let s = b.post(0, RequestRole::Send, 7, 8);
    b.wait(0, s);
    b.compute(0, 5);
    b.blocking(1, Op::Recv);
    b.compute(1, 3);
    let out = b.run(&net()).unwrap();
    assert_eq!((out.ranks[0].end_ns, out.ranks[1].end_ns), (15, 3));
    assert_eq!(out.assumed.unmatched, 2);
}

#[test]
fn bad_orders_are_refused() {
    let b = pair(8);
    let err = replay(&b.p, &[vec![1, 0], vec![0, 1, 2]], &net()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "rank 0: bad order: operation 1 completes request 0 before it is posted"
    );
    let err = replay(&b.p, &[vec![0, 0], vec![0, 1, 2]], &net()).unwrap_err();
    assert!(err.to_string().contains("appears twice"), "{err}");
    let err = replay(&b.p, &[vec![0, 1]], &net()).unwrap_err();
    assert_eq!(err.to_string(), "1 orders for 2 ranks");
}

#[test]
fn ranks_start_when_they_started_and_self_error_compares_makespans() {
    // r1 starts at 100: compute 50 ends at 150; the run measured 200.
    let mut b = B::new(2);
    b.compute(0, 40);
    b.p.ranks[1].start_ns = 100;
    b.compute(1, 50);
    b.p.measured_ns = 200;
    let out = b.run(&net()).unwrap();
    assert_eq!((out.start_ns, out.end_ns, out.makespan_ns), (0, 150, 150));
    assert_eq!(out.self_error(&b.p), Some(-0.25));
}
