//! The payload of an `InFlight` frame: what a rank's threads were inside when it dumped.
//! The recorder's writer builds it from the threads' in-flight slots; the reader turns
//! it into a [`crate::schema::InFlightDump`] (stamps converted like the events').
//!
//! ```text
//! payload := at u64 | unix_ns u64 | reason u8 | 0 u8 | 0 u16 | threads u32 | call*
//! call    := tid u32 | op u16 | fields u16 | start u64 | site u64 | comm u32
//!            | peer i32 | tag i32 | recv_peer i32 | recv_tag i32 | root i32
//!            | requests u32 | 0 u32                                   (56 bytes)
//! ```
//!
//! Little-endian. `at` and `start` are stamps in the file's clock; `reason` is 1 (signal)
//! or 2 (stalled); `op` is the call's op code (as in event records); `fields` says which
//! of the optional values are meaningful ([`fields`]); `site` 0 is unknown.

use super::{le_u32, le_u64};
use crate::schema::{DumpReason, InFlightCall, InFlightDump, Op};

/// Bytes before the calls.
pub const DUMP_HEADER_LEN: usize = 24;

/// Bytes of one call.
pub const CALL_LEN: usize = 56;

/// Bits of a call's `fields`: which values it holds.
pub mod fields {
    /// `comm`.
    pub const COMM: u16 = 1;
    /// `peer` and `tag`.
    pub const PEER: u16 = 2;
    /// `recv_peer` and `recv_tag`.
    pub const RECV: u16 = 4;
    /// `root`.
    pub const ROOT: u16 = 8;
    /// `requests`.
    pub const REQUESTS: u16 = 16;
}

/// A call in flight as the recorder snapshots it (stamps not converted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawCall {
    /// The thread.
    pub tid: u32,
    /// The op code.
    pub op: u16,
    /// Which values below hold something ([`fields`]).
    pub fields: u16,
    /// The stamp taken when the call was entered.
    pub start: u64,
    /// The site word (0: unknown).
    pub site: u64,
    /// Communicator id.
    pub comm: u32,
    /// Peer (world rank) and tag.
    pub peer: i32,
    /// Tag.
    pub tag: i32,
    /// Sendrecv's receive half: source.
    pub recv_peer: i32,
    /// Sendrecv's receive half: tag.
    pub recv_tag: i32,
    /// Root of a rooted collective.
    pub root: i32,
    /// Request handles given to a Wait or Test.
    pub requests: u32,
}

/// A dump as the frame holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawDump {
    /// Why.
    pub reason: DumpReason,
    /// When (a stamp in the file's clock).
    pub at: u64,
    /// When, ns since the Unix epoch.
    pub unix_ns: u64,
    /// Threads recording then.
    pub threads: u32,
    /// The calls in flight.
    pub calls: Vec<RawCall>,
}

/// The payload of an `InFlight` frame.
pub fn payload(dump: &RawDump) -> Vec<u8> {
    let mut out = Vec::with_capacity(DUMP_HEADER_LEN + dump.calls.len() * CALL_LEN);
    out.extend_from_slice(&dump.at.to_le_bytes());
    out.extend_from_slice(&dump.unix_ns.to_le_bytes());
    out.extend_from_slice(&[dump.reason.code(), 0, 0, 0]);
    out.extend_from_slice(&dump.threads.to_le_bytes());
    for c in &dump.calls {
        out.extend_from_slice(&c.tid.to_le_bytes());
        out.extend_from_slice(&c.op.to_le_bytes());
        out.extend_from_slice(&c.fields.to_le_bytes());
        out.extend_from_slice(&c.start.to_le_bytes());
        out.extend_from_slice(&c.site.to_le_bytes());
        out.extend_from_slice(&c.comm.to_le_bytes());
        for v in [c.peer, c.tag, c.recv_peer, c.recv_tag, c.root] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&c.requests.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
    }
    out
}

/// Reads an `InFlight` payload; on a malformed one, why.
pub fn decode(p: &[u8]) -> Result<RawDump, String> {
    if p.len() < DUMP_HEADER_LEN || !(p.len() - DUMP_HEADER_LEN).is_multiple_of(CALL_LEN) {
        return Err(format!(
            "an in-flight dump of {} bytes (24, plus 56 per call, expected)",
            p.len()
        ));
    }
    let reason = DumpReason::from_code(p[16])
        .ok_or_else(|| format!("an in-flight dump with reason byte {}", p[16]))?;
    let calls = p[DUMP_HEADER_LEN..]
        .chunks_exact(CALL_LEN)
        .map(|c| {
            let i32_at = |at| le_u32(c, at) as i32;
            RawCall {
                tid: le_u32(c, 0),
                op: u16::from_le_bytes([c[4], c[5]]),
                fields: u16::from_le_bytes([c[6], c[7]]),
                start: le_u64(c, 8),
                site: le_u64(c, 16),
                comm: le_u32(c, 24),
                peer: i32_at(28),
                tag: i32_at(32),
                recv_peer: i32_at(36),
                recv_tag: i32_at(40),
                root: i32_at(44),
                requests: le_u32(c, 48),
            }
        })
        .collect();
    Ok(RawDump {
        reason,
        at: le_u64(p, 0),
        unix_ns: le_u64(p, 8),
        threads: le_u32(p, 20),
        calls,
    })
}

/// The dump with stamps made ns (`nanos`) and site words made sites (`site`); calls of
/// an op this build does not know are left out, and said in the second value.
pub(super) fn convert(
    raw: RawDump,
    nanos: impl Fn(u64) -> u64,
    mut site: impl FnMut(u64) -> Option<u64>,
) -> (InFlightDump, Vec<String>) {
    let mut unknown = Vec::new();
    let calls = raw
        .calls
        .iter()
        .filter_map(|c| {
            let Some(op) = Op::from_code(c.op) else {
                unknown.push(format!(
                    "thread {}: an in-flight call of unknown op code {}, left out",
                    c.tid, c.op
                ));
                return None;
            };
            let has = |bit: u16| c.fields & bit != 0;
            Some(InFlightCall {
                tid: c.tid,
                call: op,
                start_ns: nanos(c.start),
                site: site(c.site),
                comm: has(fields::COMM).then_some(c.comm),
                peer: has(fields::PEER).then_some(c.peer),
                tag: has(fields::PEER).then_some(c.tag),
                recv_peer: has(fields::RECV).then_some(c.recv_peer),
                recv_tag: has(fields::RECV).then_some(c.recv_tag),
                root: has(fields::ROOT).then_some(c.root),
                requests: has(fields::REQUESTS).then_some(c.requests),
            })
        })
        .collect();
    let dump = InFlightDump {
        reason: raw.reason,
        at_ns: nanos(raw.at),
        unix_ns: raw.unix_ns,
        threads: raw.threads,
        calls,
    };
    (dump, unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_reads_back_and_a_cut_one_is_refused() {
        let dump = RawDump {
            reason: DumpReason::Signal,
            at: 123,
            unix_ns: 456,
            threads: 2,
            calls: vec![RawCall {
                tid: 1,
                op: 8,
                fields: fields::COMM | fields::PEER,
                start: 100,
                site: 0x40_1000,
                comm: 3,
                peer: -2,
                tag: 7,
                ..RawCall::default()
            }],
        };
        let p = payload(&dump);
        assert_eq!(p.len(), DUMP_HEADER_LEN + CALL_LEN);
        assert_eq!(decode(&p), Ok(dump));
        assert!(decode(&p[..p.len() - 1]).is_err());
        let mut bad = p.clone();
        bad[16] = 9;
        assert!(decode(&bad)
            .expect_err("a bad reason")
            .contains("reason byte 9"));
    }
}
