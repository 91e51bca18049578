//! Which MPI a preload library was built for. MPI's handles are not one type across
//! implementations (an `int` in MPICH and its derivatives, a pointer in Open MPI), so a
//! preload works only in programs of the MPI family it was compiled against. The
//! preload carries a marker naming that family and version; `overlap trace` reads it to
//! load the library that matches the program's MPI. This module is the one definition
//! of the families, the libraries' file names and the marker.

use std::fmt;

/// An MPI family: the implementations that share one binary interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MpiFamily {
    /// MPICH and the MPIs derived from it (Intel MPI, MVAPICH, Cray MPICH): integer
    /// handles.
    Mpich,
    /// Open MPI: handles are pointers to the library's objects.
    OpenMpi,
}

impl MpiFamily {
    /// Every family the preload can be built for.
    pub const ALL: [MpiFamily; 2] = [MpiFamily::Mpich, MpiFamily::OpenMpi];

    /// The short name used in file names and in the marker: `mpich`, `openmpi`.
    pub fn name(self) -> &'static str {
        match self {
            MpiFamily::Mpich => "mpich",
            MpiFamily::OpenMpi => "openmpi",
        }
    }

    /// The family named `name` ([`MpiFamily::name`]).
    pub fn from_name(name: &str) -> Option<MpiFamily> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The file name of the preload built for this family (`liboverlap_preload-openmpi.so`,
    /// by `scripts/build-preloads.sh`, which also names cargo's own build,
    /// `liboverlap_preload.so`, for the default `mpicc`'s family: a link). Each says its
    /// family in its marker too.
    pub fn preload_file(self) -> String {
        format!("liboverlap_preload-{}.so", self.name())
    }
}

impl fmt::Display for MpiFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MpiFamily::Mpich => "MPICH",
            MpiFamily::OpenMpi => "Open MPI",
        })
    }
}

/// Environment variable by which `overlap trace` tells the preload what launched the
/// run (recorded as the header's `launcher`).
pub const LAUNCHER_ENV: &str = "OVERLAP_LAUNCHER";

/// What starts the marker in a preload's bytes; the family's name, a space, the
/// version `mpi.h` declared, and a NUL follow (`overlap-preload-built-for:openmpi 4.1.4`).
pub const BUILT_FOR_PREFIX: &str = "overlap-preload-built-for:";

/// The longest marker read (family, version and all).
const MARKER_MAX: usize = 128;

/// What a preload says it was built for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuiltFor {
    /// The family, from its `mpi.h` (`OPEN_MPI` or `MPICH_VERSION`).
    pub family: MpiFamily,
    /// The MPI's own version, as its `mpi.h` declared it (`4.0.2`, `4.1.4`).
    pub version: String,
}

impl fmt::Display for BuiltFor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.family, self.version)
    }
}

/// The marker found in a library's bytes, if any (`None` for a library built before
/// markers, or not a preload). The prefix alone also stands in a preload's bytes (this
/// module is linked into it): every place it stands is tried until one is a marker.
pub fn built_for(library: &[u8]) -> Option<BuiltFor> {
    let prefix = BUILT_FOR_PREFIX.as_bytes();
    let mut from = 0;
    while let Some(found) = find(&library[from..], prefix) {
        let at = from + found + prefix.len();
        if let Some(b) = marker_at(&library[at..library.len().min(at + MARKER_MAX)]) {
            return Some(b);
        }
        from = at;
    }
    None
}

/// The family, a space, the version and a NUL at the start of `rest`, if they are.
fn marker_at(rest: &[u8]) -> Option<BuiltFor> {
    let text = std::str::from_utf8(&rest[..rest.iter().position(|&b| b == 0)?]).ok()?;
    let (family, version) = text.split_once(' ')?;
    Some(BuiltFor {
        family: MpiFamily::from_name(family)?,
        version: version.to_string(),
    })
}

/// The first position of `needle` in `haystack`.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let first = *needle.first()?;
    let mut from = 0;
    while let Some(i) = haystack[from..].iter().position(|&b| b == first) {
        let at = from + i;
        if haystack[at..].starts_with(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_is_found_among_other_bytes() {
        let mut lib = b"\x7fELF junk overlap-preload-built-fo junk ".to_vec();
        lib.extend_from_slice(BUILT_FOR_PREFIX.as_bytes());
        lib.extend_from_slice(b"openmpi 4.1.4\0more bytes");
        let got = built_for(&lib).expect("marker");
        assert_eq!(got.family, MpiFamily::OpenMpi);
        assert_eq!(got.version, "4.1.4");
        assert_eq!(got.to_string(), "Open MPI 4.1.4");
    }

    #[test]
    fn the_bare_prefix_before_the_marker_is_passed_over() {
        let mut lib = BUILT_FOR_PREFIX.as_bytes().to_vec();
        lib.extend_from_slice(b"there is no such thing as a release load");
        lib.extend_from_slice(BUILT_FOR_PREFIX.as_bytes());
        lib.extend_from_slice(b"mpich 4.0.2\0");
        let got = built_for(&lib).expect("the marker after the bare prefix");
        assert_eq!(
            (got.family, got.version.as_str()),
            (MpiFamily::Mpich, "4.0.2")
        );
    }

    #[test]
    fn no_marker_or_a_broken_one_is_none() {
        assert_eq!(built_for(b"\x7fELF nothing here"), None);
        let unknown = format!("{BUILT_FOR_PREFIX}lam 7.1\0");
        assert_eq!(built_for(unknown.as_bytes()), None);
        let unterminated = format!("{BUILT_FOR_PREFIX}mpich 4.0.2");
        assert_eq!(built_for(unterminated.as_bytes()), None);
    }

    #[test]
    fn names_round_trip() {
        for f in MpiFamily::ALL {
            assert_eq!(MpiFamily::from_name(f.name()), Some(f));
        }
        assert_eq!(
            MpiFamily::OpenMpi.preload_file(),
            "liboverlap_preload-openmpi.so"
        );
    }
}
