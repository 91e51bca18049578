//! How the process's heap should serve analysis, for the binaries that run it (the
//! command line and the benchmark) to set up before they load a run for analysis.
//!
//! glibc's `malloc` serves a block of at least its mmap threshold (128 KiB at start)
//! from a mapping of its own, returned to the system when freed and grown in place by
//! `mremap`. But each time such a block is freed, glibc raises the threshold to its size
//! (up to 32 MiB): after the first large vectors of a run are freed, vectors of up to
//! 32 MiB come from the heap instead. Analysis builds and frees many of those (each
//! rank's columns while it is read, its request lifetimes, the per-request rows of a
//! part), and what they leave in the heap is held by the process, fragmented, and
//! copied when a vector grows. A fixed threshold keeps them in mappings of their own:
//! measured on the generated runs of 10 M events (`overlap analyze`, one thread), peak
//! memory fell by 12 % (16 ranks: 2 034 to 1 787 MB; 1 024 ranks: 2 118 to 1 862 MB).
//! A larger fixed threshold did worse (1 MiB: 2 852 MB at 1 024 ranks), the per-rank
//! vectors of many ranks then filling the heap.
//!
//! Fixing the threshold also fixes the trim threshold (how much free memory at the
//! heap's top is kept rather than given back) at 128 KiB, where glibc would have raised
//! it too; [`TRIM_THRESHOLD`] keeps more. The merge is left with glibc's defaults: it
//! holds one rank at a time, frees and builds the same large vectors rank after rank
//! and block after block, and glibc's heap reuses them without faulting pages in again;
//! with the fixed thresholds the same merge ran 18 % slower (25.5 and 30.0 s, 1 024
//! ranks, one thread) for no gain in memory (35 and 33 MiB). So the thresholds are set
//! where a run is loaded for analysis (docs/scale.md §0).
//!
//! Each block served by a mapping of its own is a mapping of the process, and the
//! kernel allows about 65 000 (`vm.max_map_count`): glibc stops making them at
//! [`MMAP_MAX`], and serves larger blocks from the heap past it, well before a
//! mapping could fail (a run of thousands of ranks holds a few per rank).

/// Whether a vector served by a mapping of its own shrinks in place, its end given back
/// without a copy (glibc's `realloc` of such a block is an `mremap`): elsewhere a shrink
/// may copy what it keeps, and a column shrunk step by step is better kept whole.
pub const SHRINKS_IN_PLACE: bool = cfg!(all(target_os = "linux", target_env = "gnu"));

/// Gives back the room past `column`'s end where that costs no copy
/// ([`SHRINKS_IN_PLACE`]): for a column taken from its end (or cut off it) while
/// another grows, so that the two are never both whole. Elsewhere it keeps its room.
pub fn shrink_behind<T>(column: &mut Vec<T>) {
    if SHRINKS_IN_PLACE {
        column.shrink_to_fit();
    }
}

/// The fixed mmap threshold: blocks of this size and more get mappings of their own.
pub const MMAP_THRESHOLD: usize = 256 << 10;

/// The free memory at the heap's top that is kept rather than given back.
pub const TRIM_THRESHOLD: usize = 16 << 20;

/// The most blocks served by mappings of their own at once.
pub const MMAP_MAX: usize = 32 << 10;

/// Sets glibc's mmap and trim thresholds to [`MMAP_THRESHOLD`] and [`TRIM_THRESHOLD`],
/// and its most mappings to [`MMAP_MAX`] (see the module's text), for the allocations
/// that follow. Nothing elsewhere than Linux with glibc.
pub fn set_thresholds() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes two integers and only changes malloc's parameters; it
    // touches no memory of ours. It may be called with other threads alive (glibc locks
    // its main arena; a thread allocating meanwhile may read a threshold's old value,
    // which serves that one block as before).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int);
        libc::mallopt(libc::M_MMAP_MAX, MMAP_MAX as libc::c_int);
    }
}

/// Gives the heap's free memory back to the system, wherever it lies (glibc's
/// `malloc_trim`, which also releases the free pages between blocks still in use), for
/// a caller that has just freed many small blocks while keeping others after them: a
/// pass that gathers each rank's vectors (each below the mmap threshold when ranks are
/// many) into the run's, whose freed blocks the heap would otherwise keep. Nothing
/// elsewhere than Linux with glibc.
pub fn release_free() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of malloc's own to the system; it
    // touches no block in use and may be called with other threads alive (it locks each
    // arena it trims).
    unsafe {
        libc::malloc_trim(0);
    }
}
