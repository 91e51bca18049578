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

use super::Nanos;

/// How the program touched a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Touch {
    /// It read it.
    Read,
    /// It wrote it.
    Write,
}

/// A byte range of the program's memory, `[addr, addr + len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ByteRange {
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
}

/// The watch set on one completed request's buffer.
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
        /// The instruction that touched it (a code address, symbolized as call sites
        /// are), or the call site of the system call that did; none when not known.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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

/// A completed request whose buffer was not watched, and why: what the program did with
/// it afterwards is unknown.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnwatchedReason {
    /// The request names no buffer (or one whose extent is unknown).
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
}
