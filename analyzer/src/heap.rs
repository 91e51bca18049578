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
//! with the fixed thresholds it ran 18 % to 30 % slower for 35 % to 40 % less memory
//! (docs/scale.md §0). So the thresholds are set where a run is loaded for analysis.

/// The fixed mmap threshold: blocks of this size and more get mappings of their own.
pub const MMAP_THRESHOLD: usize = 256 << 10;

/// The free memory at the heap's top that is kept rather than given back.
pub const TRIM_THRESHOLD: usize = 16 << 20;

/// Sets glibc's mmap and trim thresholds to [`MMAP_THRESHOLD`] and [`TRIM_THRESHOLD`]
/// (see the module's text), for the allocations that follow. Nothing elsewhere than
/// Linux with glibc.
pub fn set_thresholds() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes two integers and only changes malloc's parameters, under
    // its own lock; it touches no memory of ours.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int);
    }
}
