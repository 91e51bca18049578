//! A program kept only for replays of its measured order (T_ideal, the self check: every
//! replay `overlap analyze` runs): what links the ranks as [`Program`] keeps it, each
//! request as the 12 bytes a replay reads of its 64 ([`ReplayRequest`]), and each rank's
//! operations encoded in program order, a few bytes each, instead of an [`Operation`] of
//! 56 (a program holds about one and a half per event of the trace).
//!
//! A replay in measured order reads each rank's operations once, front to back, and of
//! each only what [`ReplayOp`] holds; reordering ([`crate::dag`], [`crate::suggest`])
//! needs the whole [`Program`]. What only reordering reads (each rank's declared
//! accesses, learned touches, cuts, GPU uses and call buffers) is left out.
//!
//! Each operation is a head byte (its kind, whether a call and a lead-in follow), its
//! call's code, its cost, its lead-in, then its request or instance as the difference
//! from the rank's previous one (LEB128, zigzag for differences):
//!
//! ```text
//!  Post(request 40) 120 ns, call Isend   -> head 0x11 | Isend | 120 | +1 (from 39)
//!  Compute 5 000 ns after a 30 ns lead-in -> head 0x08 | 5000 | 30
//! ```

use overlap_format::schema::Op;
use overlap_format::stream::varint::{DecodeError, Reader, RecordOut};

use super::{
    InstanceId, MessageId, OpKind, Operation, Program, RankProgram, RequestIndex, RequestOp,
    RequestRole,
};
use crate::model::compact::{index_u32, some_index, NO_INDEX};

/// What a replay reads of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayOp {
    /// What it does.
    pub kind: ReplayKind,
    /// [`Operation::cost_ns`].
    pub cost_ns: u64,
    /// [`Operation::lead_in_ns`].
    pub lead_in_ns: u64,
    /// [`Operation::call`].
    pub call: Option<Op>,
}

/// An operation's kind, as a replay reads it ([`OpKind`] without what only reordering
/// reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayKind {
    /// [`OpKind::Compute`].
    Compute,
    /// [`OpKind::Post`] of this request.
    Post(RequestIndex),
    /// [`OpKind::Complete`] of this request.
    Complete(RequestIndex),
    /// [`OpKind::Blocking`], with its halves to or from `MPI_PROC_NULL`.
    Blocking {
        /// Halves with no message by design.
        null_peers: u8,
    },
    /// [`OpKind::Collective`] of this instance.
    Collective(InstanceId),
    /// [`OpKind::Local`].
    Local,
}

impl ReplayOp {
    /// What a replay reads of `op`.
    pub fn of(op: &Operation) -> ReplayOp {
        let kind = match &op.kind {
            OpKind::Compute { .. } => ReplayKind::Compute,
            OpKind::Post { request } => ReplayKind::Post(*request),
            OpKind::Complete { request } => ReplayKind::Complete(*request),
            OpKind::Blocking { null_peers, .. } => ReplayKind::Blocking {
                null_peers: *null_peers,
            },
            OpKind::Collective { instance, .. } => ReplayKind::Collective(*instance),
            OpKind::Local => ReplayKind::Local,
        };
        ReplayOp {
            kind,
            cost_ns: op.cost_ns,
            lead_in_ns: op.lead_in_ns,
            call: op.call,
        }
    }
}

/// A program for replays of its measured order: [`Program`]'s links (messages,
/// collective instances, each rank's start, tail and blocking calls' messages; its
/// ranks' `ops` and its `requests` empty), what a replay reads of each request, and
/// each rank's operations encoded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeasuredProgram {
    /// The program without its ranks' operations and its requests.
    pub links: Program,
    /// What a replay reads of each of the program's requests, by index.
    pub requests: Vec<ReplayRequest>,
    /// Each rank's operations, by rank slot.
    pub ops: Vec<EncodedOps>,
}

impl MeasuredProgram {
    /// `program` kept for replays of its measured order: its ranks' operations encoded,
    /// its requests taken from it and what a replay reads of each kept.
    pub fn of(mut program: Program) -> MeasuredProgram {
        let ops = program.ranks.iter_mut().map(encode_rank).collect();
        let requests = program.requests.iter().map(ReplayRequest::of).collect();
        program.requests = Vec::new();
        MeasuredProgram {
            links: program,
            requests,
            ops,
        }
    }
}

/// What a replay reads of a request ([`RequestOp`]), in 12 bytes instead of 64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayRequest {
    message: u32,
    instance: u32,
    /// What it does.
    pub role: RequestRole,
    /// To or from `MPI_PROC_NULL`.
    pub proc_null: bool,
}

const _: () = assert!(std::mem::size_of::<ReplayRequest>() == 12);

impl ReplayRequest {
    /// What a replay reads of `r`.
    pub fn of(r: &RequestOp) -> ReplayRequest {
        ReplayRequest {
            message: r.message().map_or(NO_INDEX, index_u32),
            instance: r.instance().map_or(NO_INDEX, index_u32),
            role: r.role,
            proc_null: r.proc_null,
        }
    }

    /// [`RequestOp::message`].
    pub fn message(&self) -> Option<MessageId> {
        some_index(self.message)
    }

    /// [`RequestOp::set_message`].
    pub(crate) fn set_message(&mut self, m: MessageId) {
        self.message = index_u32(m);
    }

    /// [`RequestOp::instance`].
    pub fn instance(&self) -> Option<InstanceId> {
        some_index(self.instance)
    }
}

/// Encodes `rank`'s operations and leaves the rank with what a replay (and the self
/// check's refusal of a rank cut short) reads besides: its rank, start, tail,
/// completeness and blocking calls' messages.
pub(super) fn encode_rank(rank: &mut RankProgram) -> EncodedOps {
    let ops = EncodedOps::encode(&rank.ops);
    *rank = RankProgram {
        rank: rank.rank,
        start_ns: rank.start_ns,
        complete: rank.complete,
        tail_ns: rank.tail_ns,
        blocking: std::mem::take(&mut rank.blocking),
        ..RankProgram::default()
    };
    ops
}

/// One rank's operations in program order, encoded (see the module's drawing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EncodedOps {
    bytes: Vec<u8>,
    len: usize,
}

/// Kinds, in a head byte's low three bits.
const COMPUTE: u8 = 0;
const POST: u8 = 1;
const COMPLETE: u8 = 2;
const BLOCKING: u8 = 3;
const COLLECTIVE: u8 = 4;
const LOCAL: u8 = 5;
/// A lead-in follows the cost.
const HAS_LEAD_IN: u8 = 1 << 3;
/// A call's code follows the head.
const HAS_CALL: u8 = 1 << 4;

struct Bytes<'a>(&'a mut Vec<u8>);

impl RecordOut for Bytes<'_> {
    #[inline(always)]
    fn put_u8(&mut self, b: u8) {
        self.0.push(b);
    }
}

impl EncodedOps {
    /// `ops`, encoded.
    pub fn encode(ops: &[Operation]) -> EncodedOps {
        let mut bytes = Vec::with_capacity(ops.len() * 6);
        let mut out = Bytes(&mut bytes);
        let (mut request, mut instance) = (0u64, 0u64);
        for op in ops {
            let op = ReplayOp::of(op);
            let kind = match op.kind {
                ReplayKind::Compute => COMPUTE,
                ReplayKind::Post(_) => POST,
                ReplayKind::Complete(_) => COMPLETE,
                ReplayKind::Blocking { .. } => BLOCKING,
                ReplayKind::Collective(_) => COLLECTIVE,
                ReplayKind::Local => LOCAL,
            };
            let lead = if op.lead_in_ns > 0 { HAS_LEAD_IN } else { 0 };
            let call = if op.call.is_some() { HAS_CALL } else { 0 };
            out.put_u8(kind | lead | call);
            if let Some(c) = op.call {
                out.put_var(u64::from(c.code()));
            }
            out.put_var(op.cost_ns);
            if op.lead_in_ns > 0 {
                out.put_var(op.lead_in_ns);
            }
            match op.kind {
                ReplayKind::Post(r) | ReplayKind::Complete(r) => {
                    out.put_delta(r as u64, request);
                    request = r as u64;
                }
                ReplayKind::Collective(i) => {
                    out.put_delta(i as u64, instance);
                    instance = i as u64;
                }
                ReplayKind::Blocking { null_peers } => out.put_u8(null_peers),
                ReplayKind::Compute | ReplayKind::Local => {}
            }
        }
        bytes.shrink_to_fit();
        EncodedOps {
            bytes,
            len: ops.len(),
        }
    }

    /// How many operations.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A reader at the first operation.
    pub fn reader(&self) -> OpReader<'_> {
        OpReader {
            bytes: Reader::new(&self.bytes),
            request: 0,
            instance: 0,
        }
    }
}

/// Reads a rank's [`EncodedOps`] front to back.
#[derive(Clone, Debug)]
pub struct OpReader<'a> {
    bytes: Reader<'a>,
    request: u64,
    instance: u64,
}

impl OpReader<'_> {
    /// The next operation; `None` after the last.
    pub fn next_op(&mut self) -> Option<ReplayOp> {
        if self.bytes.is_empty() {
            return None;
        }
        let head = self.bytes.u8().unwrap_or_else(corrupt);
        let call = if head & HAS_CALL != 0 {
            let code = self.bytes.var().unwrap_or_else(corrupt);
            u16::try_from(code).ok().and_then(Op::from_code)
        } else {
            None
        };
        let cost_ns = self.bytes.var().unwrap_or_else(corrupt);
        let lead_in_ns = if head & HAS_LEAD_IN != 0 {
            self.bytes.var().unwrap_or_else(corrupt)
        } else {
            0
        };
        let kind = match head & 7 {
            COMPUTE => ReplayKind::Compute,
            POST | COMPLETE => {
                self.request = self.bytes.delta(self.request).unwrap_or_else(corrupt);
                let r = self.request as usize;
                if head & 7 == POST {
                    ReplayKind::Post(r)
                } else {
                    ReplayKind::Complete(r)
                }
            }
            BLOCKING => ReplayKind::Blocking {
                null_peers: self.bytes.u8().unwrap_or_else(corrupt),
            },
            COLLECTIVE => {
                self.instance = self.bytes.delta(self.instance).unwrap_or_else(corrupt);
                ReplayKind::Collective(self.instance as usize)
            }
            _ => ReplayKind::Local,
        };
        Some(ReplayOp {
            kind,
            cost_ns,
            lead_in_ns,
            call,
        })
    }
}

/// What a decoding error would mean: the bytes are [`EncodedOps::encode`]'s own, and
/// always decode.
fn corrupt<T>(e: DecodeError) -> T {
    unreachable!("operations encoded by EncodedOps::encode do not decode: {e:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Transfers;

    fn op(kind: OpKind, cost_ns: u64, lead_in_ns: u64, call: Option<Op>) -> Operation {
        Operation {
            kind,
            cost_ns,
            lead_in_ns,
            measured_start_ns: 7,
            measured_end_ns: 9,
            span: 3,
            call,
        }
    }

    /// Every kind, with and without a call and a lead-in, requests and instances going
    /// down as well as up, and the widest values: each reads back as
    /// [`ReplayOp::of`] gives it, then nothing.
    #[test]
    fn every_kind_reads_back() {
        let ops = vec![
            op(
                OpKind::Compute {
                    name: 4,
                    inferred: true,
                    access: None,
                    until_span: None,
                },
                5_000,
                30,
                None,
            ),
            op(OpKind::Post { request: 40 }, 120, 0, Some(Op::Isend)),
            op(OpKind::Post { request: 41 }, 0, 0, Some(Op::Irecv)),
            op(OpKind::Complete { request: 3 }, 9, 0, Some(Op::Waitall)),
            op(
                OpKind::Blocking {
                    transfers: Box::new(Transfers::default()),
                    comm: 2,
                    null_peers: 2,
                },
                u64::MAX,
                u64::MAX,
                Some(Op::Sendrecv),
            ),
            op(
                OpKind::Collective {
                    instance: 1 << 31,
                    comm: 0,
                },
                1,
                0,
                Some(Op::Allreduce),
            ),
            op(
                OpKind::Collective {
                    instance: 0,
                    comm: 0,
                },
                1,
                0,
                Some(Op::Barrier),
            ),
            op(OpKind::Local, 0, 1, Op::ALL.last().copied()),
        ];
        let encoded = EncodedOps::encode(&ops);
        assert_eq!(encoded.len(), ops.len());
        let mut reader = encoded.reader();
        for o in &ops {
            assert_eq!(reader.next_op(), Some(ReplayOp::of(o)));
        }
        assert_eq!(reader.next_op(), None);
        assert!(EncodedOps::encode(&[]).reader().next_op().is_none());
    }

    /// A request's message, instance, role and `MPI_PROC_NULL` read back from what a
    /// replay keeps of it, set or not.
    #[test]
    fn what_a_replay_keeps_of_a_request() {
        let mut send = RequestOp::new(0, RequestRole::Send, 4);
        send.set_message(1 << 30);
        let mut coll = RequestOp::new(2, RequestRole::Collective, 0);
        coll.set_instance(Some(7));
        let mut null = RequestOp::new(1, RequestRole::Recv, 9);
        null.proc_null = true;
        for r in [send, coll, null] {
            let kept = ReplayRequest::of(&r);
            assert_eq!(
                (kept.message(), kept.instance(), kept.role, kept.proc_null),
                (r.message(), r.instance(), r.role, r.proc_null)
            );
        }
    }
}
