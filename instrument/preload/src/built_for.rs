//! The marker naming the MPI this library was built for
//! ([`overlap_instrument::mpi_family`]): `overlap trace` reads it in the library's bytes
//! to load the preload that matches the program's MPI. The family and version come from
//! the `mpi.h` the build compiled against (`build.rs`).

// The bindings must be the family's the marker names: a build with another `$MPICC`
// in the same target directory re-runs build.rs but keeps `mpi-sys`'s bindings (its
// build script does not watch `MPICC`). Open MPI's handles are pointers, MPICH's ints.
#[cfg(openmpi)]
const _: () = assert!(
    std::mem::size_of::<mpi_sys::MPI_Comm>() == std::mem::size_of::<usize>(),
    "built for Open MPI over MPICH's bindings: build it in a target directory of its own \
     (scripts/build-preloads.sh)"
);
#[cfg(not(openmpi))]
const _: () = assert!(
    std::mem::size_of::<mpi_sys::MPI_Comm>() == std::mem::size_of::<std::ffi::c_int>(),
    "built for MPICH over Open MPI's bindings: build it in a target directory of its own \
     (scripts/build-preloads.sh)"
);

/// The marker's text, NUL-terminated.
const TEXT: &str = concat!(
    "overlap-preload-built-for:",
    env!("OVERLAP_PRELOAD_MPI"),
    "\0"
);

/// The marker as bytes kept in the library (`#[used]`: nothing reads it at run time).
#[used]
static MARKER: [u8; TEXT.len()] = {
    let mut out = [0u8; TEXT.len()];
    let bytes = TEXT.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        out[i] = bytes[i];
        i += 1;
    }
    out
};

/// The MPI this library was built for, as the header says it (`Open MPI 4.1.4`).
pub(crate) fn described() -> String {
    overlap_instrument::mpi_family::built_for(&MARKER).map_or_else(
        || env!("OVERLAP_PRELOAD_MPI").to_string(),
        |b| b.to_string(),
    )
}

#[cfg(test)]
mod tests {
    use overlap_instrument::mpi_family::{built_for, BUILT_FOR_PREFIX};

    #[test]
    fn the_marker_reads_back_as_the_mpi_built_against() {
        assert!(super::TEXT.starts_with(BUILT_FOR_PREFIX));
        let got = built_for(&super::MARKER).expect("a marker");
        assert!(!got.version.is_empty());
        assert_eq!(super::described(), got.to_string());
    }
}
