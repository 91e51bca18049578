//! How the process's heap should serve analysis, for the binaries that run it (the
//! command line and the benchmark) to set up once, at start.
//!
//! glibc's `malloc` serves a block of at least its mmap threshold (128 KiB at start)
//! from a mapping of its own, returned to the system when freed and grown in place by
//! `mremap`. But each time such a block is freed, glibc raises the threshold to its size
//! (up to 32 MiB): after the first large vectors of a run are freed, vectors of up to
//! 32 MiB come from the heap instead. Analysis builds and frees many of those (each
//! rank's columns while it is read, its request lifetimes, the per-request rows of a
//! part), and what they leave in the heap is held by the process, fragmented, and
//! copied when a vector grows. A fixed threshold keeps them in mappings of their own:
//! measured on the generated runs of 10 M events (`overlap analyze`), peak memory fell
//! by 12 % (16 ranks: 2 034 to 1 787 MB; 1 024 ranks: 2 118 to 1 862 MB) for about the
//! same time (docs/scale.md §0). A larger fixed threshold did worse (1 MiB: 2 852 MB at
//! 1 024 ranks), the small per-rank vectors of many ranks then filling the heap.

/// The fixed mmap threshold: blocks of this size and more get mappings of their own.
pub const MMAP_THRESHOLD: usize = 256 << 10;

/// Fixes glibc's mmap threshold at [`MMAP_THRESHOLD`] (see the module's text). Nothing
/// elsewhere than Linux with glibc. To call at start, before threads allocate.
pub fn fix_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes two integers and only changes malloc's parameters; called
    // at start-up, before other threads allocate.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
    }
}
