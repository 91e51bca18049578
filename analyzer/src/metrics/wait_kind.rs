//! The kinds of wait state (Scalasca's catalogue, [`WaitKind`]), what one pattern finds
//! of them ([`Candidate`]) and the instances kept ([`WaitInstance`]): the leaf that the
//! patterns (point-to-point in [`super::wait_states`], [`super::collective_waits`],
//! [`super::one_sided`]), the pass that keeps the longest wait per call and the readers
//! of its instances ([`super::descheduled`], the profile, the report) share.

use overlap_format::schema::Nanos;
use serde::Serialize;

use crate::model::EventRef;

/// The kinds of wait state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WaitKind {
    /// A receive waited for its message to be sent.
    LateSender,
    /// A send's completion waited for the receive to be posted.
    LateReceiver,
    /// A barrier waited for the last rank to arrive.
    WaitAtBarrier,
    /// An all-to-all collective waited for the last rank to arrive.
    WaitAtNxN,
    /// A one-to-all collective (Bcast, Scatter) waited for its root to arrive.
    LateBroadcast,
    /// The root of an all-to-one collective (Reduce, Gather) waited for the last rank.
    EarlyReduce,
    /// A Scan or Exscan waited for the last of the lower ranks to arrive.
    EarlyScan,
    /// A Win_fence waited for the last rank of the window to arrive.
    WaitAtFence,
    /// A window creation (Win_create, Win_allocate...) waited for the last rank.
    WaitAtCreate,
    /// A Win_free waited for the last rank of the window.
    WaitAtFree,
    /// An origin's Win_start, first operation or Win_complete waited for the target's
    /// Win_post.
    LatePost,
    /// A target's Win_wait waited for the last origin to enter Win_complete, up to that
    /// origin's last operation.
    EarlyWait,
    /// The rest of that Win_wait: the last origin had finished its operations but had
    /// not yet called Win_complete.
    LateComplete,
}

impl WaitKind {
    /// Every kind, in report order.
    pub const ALL: [WaitKind; 13] = [
        WaitKind::LateSender,
        WaitKind::LateReceiver,
        WaitKind::WaitAtBarrier,
        WaitKind::WaitAtNxN,
        WaitKind::LateBroadcast,
        WaitKind::EarlyReduce,
        WaitKind::EarlyScan,
        WaitKind::WaitAtFence,
        WaitKind::WaitAtCreate,
        WaitKind::WaitAtFree,
        WaitKind::LatePost,
        WaitKind::EarlyWait,
        WaitKind::LateComplete,
    ];

    /// The name in reports.
    pub fn title(self) -> &'static str {
        match self {
            WaitKind::LateSender => "Late Sender",
            WaitKind::LateReceiver => "Late Receiver",
            WaitKind::WaitAtBarrier => "Wait at Barrier",
            WaitKind::WaitAtNxN => "Wait at NxN",
            WaitKind::LateBroadcast => "Late Broadcast",
            WaitKind::EarlyReduce => "Early Reduce",
            WaitKind::EarlyScan => "Early Scan",
            WaitKind::WaitAtFence => "Wait at Fence",
            WaitKind::WaitAtCreate => "Wait at Create",
            WaitKind::WaitAtFree => "Wait at Free",
            WaitKind::LatePost => "Late Post",
            WaitKind::EarlyWait => "Early Wait",
            WaitKind::LateComplete => "Late Complete",
        }
    }

    /// The key in JSON and tables.
    pub fn key(self) -> &'static str {
        match self {
            WaitKind::LateSender => "late_sender",
            WaitKind::LateReceiver => "late_receiver",
            WaitKind::WaitAtBarrier => "wait_at_barrier",
            WaitKind::WaitAtNxN => "wait_at_nxn",
            WaitKind::LateBroadcast => "late_broadcast",
            WaitKind::EarlyReduce => "early_reduce",
            WaitKind::EarlyScan => "early_scan",
            WaitKind::WaitAtFence => "wait_at_fence",
            WaitKind::WaitAtCreate => "wait_at_create",
            WaitKind::WaitAtFree => "wait_at_free",
            WaitKind::LatePost => "late_post",
            WaitKind::EarlyWait => "early_wait",
            WaitKind::LateComplete => "late_complete",
        }
    }
}

/// A kind is written as its [`WaitKind::key`] (report version 3; version 2 wrote
/// `wait_at_nx_n` for [`WaitKind::WaitAtNxN`], where the tables and the gate's figures
/// said `wait_at_nxn`).
impl Serialize for WaitKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.key())
    }
}

/// A kind is read back from its [`WaitKind::key`].
impl<'de> serde::Deserialize<'de> for WaitKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let key = String::deserialize(d)?;
        (WaitKind::ALL.into_iter())
            .find(|k| k.key() == key)
            .ok_or_else(|| serde::de::Error::custom(format!("no wait kind is called {key}")))
    }
}

/// A wait found by one pattern: the interval `[from, to)` of call `at`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Candidate {
    pub(super) kind: WaitKind,
    pub(crate) at: EventRef,
    /// The call it waited for (its rank is the peer).
    pub(crate) cause: EventRef,
    pub(super) from: Nanos,
    pub(super) to: Nanos,
    pub(super) suspect: bool,
}

impl Candidate {
    pub(crate) fn new(
        kind: WaitKind,
        at: EventRef,
        cause: EventRef,
        from: Nanos,
        to: Nanos,
        suspect: bool,
    ) -> Candidate {
        Candidate {
            kind,
            at,
            cause,
            from,
            to: to.max(from),
            suspect,
        }
    }

    pub(super) fn amount(&self) -> Nanos {
        self.to - self.from
    }
}

/// One wait.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct WaitInstance {
    /// Kind.
    pub kind: WaitKind,
    /// The rank that waited.
    pub rank: u32,
    /// The call it waited in: index among the rank's events.
    pub index: usize,
    /// That call's MPI function.
    #[serde(deserialize_with = "crate::static_names::read")]
    pub call: crate::static_names::StaticName,
    /// When it entered the call, ns since the run's start.
    pub start_ns: u64,
    /// The rank it waited for (the sender, the receiver, or the last to arrive).
    pub peer: Option<u32>,
    /// The call of `peer` it waited for, as an index among that rank's events: the late
    /// send, the late receive's post, the last member's call of the collective (its
    /// post, for a non-blocking one), the target's Win_post, the origin's last
    /// operation or its Win_complete.
    pub peer_index: Option<usize>,
    /// How long it waited, ns.
    pub amount_ns: u64,
    /// The clock error bound of the ranks involved, ns.
    pub error_bound_ns: u64,
    /// True when `amount_ns` is within the error bound: counted apart.
    pub indeterminate: bool,
    /// True when the peer spent most of it in descheduled time, on a host with more
    /// ranks than CPUs ([`super::descheduled`]): the scheduler's wait, counted apart.
    pub descheduled: bool,
    /// True when the remote time fell after the local exit and was clipped.
    pub clock_suspect: bool,
    /// When another wait of the rank covered some of the same time (a wait of another
    /// kind on the same call, or another thread's wait): this instance's amount before
    /// the split (section 3.4 of docs/metrics.md).
    pub split_from_ns: Option<u64>,
}
