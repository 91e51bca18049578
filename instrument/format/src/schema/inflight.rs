//! What a rank was inside when it was told to dump (SIGUSR1) or found itself stalled: the
//! MPI call each of its threads was in, with what that call waits on. A hung run records
//! no completion for the calls it is stuck in, so without this the trace of a deadlock
//! ends at the last call that returned and says nothing about where the ranks hung.
//!
//! The stream carries a dump as an `InFlight` frame ([`crate::stream`]); a merged trace
//! carries each rank's last dump in its [`super::RankClock`], times on the run's timeline.
//!
//! Wire structs: a change means bumping `FORMAT_VERSION`.

use serde::{Deserialize, Serialize};

use super::Op;

/// Why a rank dumped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DumpReason {
    /// It was sent SIGUSR1 (by `overlap trace` on a signal, or by hand).
    Signal,
    /// No call completed on it for the hang timeout while a thread was inside a call.
    Stalled,
}

impl DumpReason {
    /// The word of the marker file and of reports.
    pub fn word(self) -> &'static str {
        match self {
            DumpReason::Signal => "signal",
            DumpReason::Stalled => "stalled",
        }
    }

    /// The byte in the stream.
    pub fn code(self) -> u8 {
        match self {
            DumpReason::Signal => 1,
            DumpReason::Stalled => 2,
        }
    }

    /// The reason of a stream byte.
    pub fn from_code(b: u8) -> Option<DumpReason> {
        match b {
            1 => Some(DumpReason::Signal),
            2 => Some(DumpReason::Stalled),
            _ => None,
        }
    }
}

/// One rank's dump.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InFlightDump {
    /// Why.
    pub reason: DumpReason,
    /// When, ns: since the rank's epoch as read from its file, since the run's start in
    /// a merged trace.
    pub at_ns: u64,
    /// When, ns since the Unix epoch (`CLOCK_REALTIME`).
    pub unix_ns: u64,
    /// Threads recording on the rank at the time (those not listed were not in MPI).
    pub threads: u32,
    /// The calls threads were inside, one per such thread.
    pub calls: Vec<InFlightCall>,
}

/// A call a thread was inside at a dump: what it was called with, as recorded calls
/// name it (world ranks, communicator ids).
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InFlightCall {
    /// The thread.
    pub tid: u32,
    /// The MPI function.
    #[serde(with = "op_name")]
    pub call: Op,
    /// When it was entered, on the same clock as `at_ns` (the start its record would
    /// have had).
    pub start_ns: u64,
    /// Where it was called from: a code address (preload) or a source site id (Rust
    /// layer), as a call's `site` argument.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<u64>,
    /// Communicator id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comm: Option<u32>,
    /// Destination of a send, source of a receive or probe (world rank; negative values
    /// are MPI's wildcards: `-2` is `MPI_ANY_SOURCE` in MPICH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<i32>,
    /// Its tag (negative: `MPI_ANY_TAG`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<i32>,
    /// Sendrecv only: the source of the receive half.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_peer: Option<i32>,
    /// Sendrecv only: the tag of the receive half.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_tag: Option<i32>,
    /// Rooted collectives: the root (world rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<i32>,
    /// Wait and Test calls: how many request handles the call was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u32>,
}

mod op_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::schema::Op;

    pub(super) fn serialize<S: Serializer>(op: &Op, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(op.mpi_name())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Op, D::Error> {
        let name = String::deserialize(d)?;
        Op::from_mpi_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown MPI call {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_round_trips_through_json_with_the_call_by_name() {
        let dump = InFlightDump {
            reason: DumpReason::Stalled,
            at_ns: 2_000,
            unix_ns: 1_700_000_000_000_000_000,
            threads: 1,
            calls: vec![InFlightCall {
                tid: 0,
                call: Op::Recv,
                start_ns: 1_000,
                site: Some(0x401000),
                comm: Some(0),
                peer: Some(1),
                tag: Some(7),
                recv_peer: None,
                recv_tag: None,
                root: None,
                requests: None,
            }],
        };
        let json = serde_json::to_string(&dump).expect("serializes");
        assert!(json.contains("\"call\":\"MPI_Recv\""), "{json}");
        assert!(json.contains("\"reason\":\"stalled\""), "{json}");
        assert!(
            !json.contains("recv_peer"),
            "absent fields are left out: {json}"
        );
        let back: InFlightDump = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back, dump);
        let bad = json.replace("MPI_Recv", "MPI_Nope");
        assert!(serde_json::from_str::<InFlightDump>(&bad).is_err());
    }
}
