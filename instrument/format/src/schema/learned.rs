//! What a program did with a request's buffer after the request completed, learned
//! while it ran (`overlap trace --buffers`): the first time the program itself read or
//! wrote the buffer, with the time and the instruction, until the buffer was next
//! handed to MPI. A trace without it knows a buffer only where an MPI call names it;
//! with it, the analysis can prove that the compute between a completion and that first
//! use leaves the buffer alone, which is what moving a wait later or a post earlier
//! needs.
//!
//! Only what was provably safe to watch is watched: what was not is said, per request,
//! with the reason ([`Unwatched`]), and is unknown, never "untouched".
//!
//! ```text
//!  rank 0  |Isend s|Waitall s|.... compute ....|pack: writes s|Isend s|
//!                           ^ watch armed      ^ first write: Used { at, Write, ip }
//!          the compute in between is proven not to write s
//! ```
//!
//! Wire structs here: a change means bumping `FORMAT_VERSION`.

use std::num::NonZeroU64;

use serde::{Deserialize, Serialize};

use super::Nanos;

/// How the program touched a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Touch {
    /// It read it.
    Read,
    /// It wrote it.
    Write,
}

/// A byte range of the program's memory, `[addr, addr + len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ByteRange {
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
}

/// The watch set on one completed request's buffer. A request has one per buffer, all
/// or none of them: a send or a receive one; a non-blocking collective two (its send
/// buffer's, `reads` none, and its receive buffer's), one when in place. Several
/// requests of the same bytes completed together (a buffer sent to several peers) share
/// one watch: each has the same use but for `request`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LearnedUse {
    /// The request, by the id its post was recorded under on this rank.
    pub request: u64,
    /// When the watch began (the end of the call that completed the request).
    pub from: Nanos,
    /// The bytes whose reads were watched: none for a send buffer (a send's buffer may
    /// be read while it is in flight, so only writes matter).
    pub reads: Option<ByteRange>,
    /// The bytes whose writes were watched.
    pub writes: Option<ByteRange>,
    /// What ended the watch.
    pub outcome: Outcome,
}

/// How a watch ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The program touched the watched bytes. The touch happened in
    /// `[earliest, latest]`: one instant when a fault or a system call caught it, an
    /// interval when it was found later (a changed byte found at the next MPI call).
    Used {
        /// The earliest it can have happened.
        earliest: Nanos,
        /// The latest it can have happened.
        latest: Nanos,
        /// Read or write.
        touch: Touch,
        /// The address touched.
        addr: u64,
        /// An address inside the instruction that touched it: the faulting instruction's
        /// own address, or for a system call (`read(2)` into the buffer), the last byte
        /// of the call instruction that called it (its return address minus one); none
        /// when not known (a changed byte found later). Not a return address: name it
        /// with `SiteTable::touch`, which does not step back a byte as call sites do.
        ip: Option<NonZeroU64>,
    },
    /// Nothing touched the watched bytes until `until`, when the watch ended for
    /// `why`.
    Untouched {
        /// When the watch ended.
        until: Nanos,
        /// Why it ended.
        why: WatchEnd,
    },
}

/// Why a watch ended without a touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchEnd {
    /// An MPI call named an overlapping buffer: the buffer was handed to MPI again.
    HandedToMpi,
    /// The program freed, unmapped or re-protected the memory.
    Released,
    /// The program changed how it handles or blocks SIGSEGV in a way the watch cannot
    /// live with, or forked: every watch ended.
    Signals,
    /// The run ended (MPI_Finalize, exit) with the watch still set.
    RunEnded,
    /// The recording stopped (its buffers full, or an internal error).
    Stopped,
}

/// A completed request whose buffers were not watched, and why: what the program did with
/// them afterwards is unknown. A request is either unwatched or has a [`LearnedUse`] for
/// each of its buffers, never both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unwatched {
    /// The request.
    pub request: u64,
    /// When it completed.
    pub at: Nanos,
    /// Why it was not watched.
    pub why: UnwatchedReason,
}

/// Why a buffer was not watched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnwatchedReason {
    /// The request names no buffer (`MPI_Ibarrier`, a one-sided access), or one whose
    /// extent is unknown (a `v` or `w` collective's).
    NoBuffer,
    /// The buffer holds no whole page: protecting its pages would protect other data.
    SmallerThanPage,
    /// The buffer is on a thread's stack.
    OnStack,
    /// Its pages hold the buffer of a request still in flight (MPI, or another process
    /// through cross-memory attach, may touch them).
    SharedWithActive,
    /// Its pages are not private writable memory the program owns (a window, shared
    /// memory, a read-only or file mapping).
    NotPrivateMemory,
    /// Too many watches at once.
    Limit,
    /// Watching was off at the time (not asked for, or ended for the rest of the run).
    Disabled,
    /// Its pages are already watched for another completed request's buffer that
    /// overlaps it without being the same bytes (the same bytes share that watch).
    SharedWithWatched,
}

impl LearnedUse {
    /// The same use with every time passed through `f` (a clock conversion, or the
    /// rank's alignment onto the run's timeline).
    pub fn map_times(self, f: impl Fn(Nanos) -> Nanos) -> LearnedUse {
        let outcome = match self.outcome {
            Outcome::Used {
                earliest,
                latest,
                touch,
                addr,
                ip,
            } => {
                let earliest = f(earliest);
                Outcome::Used {
                    earliest,
                    latest: f(latest).max(earliest),
                    touch,
                    addr,
                    ip,
                }
            }
            Outcome::Untouched { until, why } => Outcome::Untouched {
                until: f(until),
                why,
            },
        };
        LearnedUse {
            from: f(self.from),
            outcome,
            ..self
        }
    }

    /// When the watch ended: the latest the touch can have happened, or when it ended
    /// untouched.
    pub fn until(&self) -> Nanos {
        match self.outcome {
            Outcome::Used { latest, .. } => latest,
            Outcome::Untouched { until, .. } => until,
        }
    }
}

impl Unwatched {
    /// The same completion with its time passed through `f`.
    pub fn map_times(self, f: impl Fn(Nanos) -> Nanos) -> Unwatched {
        Unwatched {
            at: f(self.at),
            ..self
        }
    }
}

impl Touch {
    /// How reports and the merged trace name it.
    pub fn name(self) -> &'static str {
        match self {
            Touch::Read => "read",
            Touch::Write => "write",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<Touch> {
        [Touch::Read, Touch::Write]
            .into_iter()
            .find(|t| t.name() == name)
    }
}

impl WatchEnd {
    /// Every end, in wire-code order (a new end goes last).
    pub const ALL: [WatchEnd; 5] = [
        WatchEnd::HandedToMpi,
        WatchEnd::Released,
        WatchEnd::Signals,
        WatchEnd::RunEnded,
        WatchEnd::Stopped,
    ];

    /// How reports and the merged trace name it.
    pub fn name(self) -> &'static str {
        match self {
            WatchEnd::HandedToMpi => "handed_to_mpi",
            WatchEnd::Released => "released",
            WatchEnd::Signals => "signals",
            WatchEnd::RunEnded => "run_ended",
            WatchEnd::Stopped => "stopped",
        }
    }

    /// How a person reads it: "handed to MPI again".
    pub fn describe(self) -> &'static str {
        match self {
            WatchEnd::HandedToMpi => "handed to MPI again",
            WatchEnd::Released => "memory released",
            WatchEnd::Signals => "SIGSEGV handed back to the program",
            WatchEnd::RunEnded => "run ended",
            WatchEnd::Stopped => "recording stopped",
        }
    }

    /// The end named `name`.
    pub fn from_name(name: &str) -> Option<WatchEnd> {
        WatchEnd::ALL.into_iter().find(|w| w.name() == name)
    }
}

impl UnwatchedReason {
    /// Every reason, in wire-code order (a new reason goes last).
    pub const ALL: [UnwatchedReason; 8] = [
        UnwatchedReason::NoBuffer,
        UnwatchedReason::SmallerThanPage,
        UnwatchedReason::OnStack,
        UnwatchedReason::SharedWithActive,
        UnwatchedReason::NotPrivateMemory,
        UnwatchedReason::Limit,
        UnwatchedReason::Disabled,
        UnwatchedReason::SharedWithWatched,
    ];

    /// How reports and the merged trace name it.
    pub fn name(self) -> &'static str {
        match self {
            UnwatchedReason::NoBuffer => "no_buffer",
            UnwatchedReason::SmallerThanPage => "smaller_than_page",
            UnwatchedReason::OnStack => "on_stack",
            UnwatchedReason::SharedWithActive => "shared_with_active",
            UnwatchedReason::NotPrivateMemory => "not_private_memory",
            UnwatchedReason::Limit => "limit",
            UnwatchedReason::Disabled => "disabled",
            UnwatchedReason::SharedWithWatched => "shared_with_watched",
        }
    }

    /// How a person reads it: "smaller than a page".
    pub fn describe(self) -> &'static str {
        match self {
            UnwatchedReason::NoBuffer => "no buffer known",
            UnwatchedReason::SmallerThanPage => "smaller than a page",
            UnwatchedReason::OnStack => "on a stack",
            UnwatchedReason::SharedWithActive => "shares a page with a buffer in flight",
            UnwatchedReason::NotPrivateMemory => "not private memory",
            UnwatchedReason::Limit => "too many watches",
            UnwatchedReason::Disabled => "watching off",
            UnwatchedReason::SharedWithWatched => "shares a page with another watch",
        }
    }

    /// The reason named `name`.
    pub fn from_name(name: &str) -> Option<UnwatchedReason> {
        UnwatchedReason::ALL.into_iter().find(|r| r.name() == name)
    }
}
