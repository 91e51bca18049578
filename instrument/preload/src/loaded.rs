//! Which of the files loaded into the process are the program's own, so that a GPU
//! runtime the program uses can be told from one its MPI loaded: MPICH 4.0's hardware
//! locality component (hwloc) opens its OpenCL plugin, and with it `libOpenCL.so`, in
//! every MPI program, inside `MPI_Init`.
//!
//! The rule, written once into the header as `program_objects`
//! ([`overlap_instrument::schema::PROGRAM_OBJECTS_PARAM`]):
//! - only what was mapped when `MPI_Init` was entered counts, read before `PMPI_Init`
//!   runs: what MPI opens while it starts up is MPI's;
//! - of that, the program's own are the files reached through the dynamic section's
//!   `DT_NEEDED` entries from its roots, never through MPI's own libraries
//!   ([`crate::imports::is_mpi_own`]: `libmpi*`, Open MPI's `libopen-*`, and the preload):
//!   a library only MPI needs (hwloc, UCX) is MPI's;
//! - the roots are the executable and each file it does not reach whose name no other
//!   mapped file needs: what the program opened with `dlopen` before `MPI_Init` (a CUDA
//!   runtime, a Python extension).
//!
//! Not seen: what the program opens after `MPI_Init`, and a library both MPI and a file
//! the program opened need but the executable does not (it counts as MPI's).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::imports::{is_mpi_own, read, u32_at, u64_at, Sections, MAX_TABLE};

/// The files mapped executable into this process now, each once, in address order.
pub(crate) fn mapped_now() -> Vec<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut seen = BTreeSet::new();
    maps.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let perms = f.nth(1)?;
            let path = f.nth(3)?;
            (perms.contains('x') && path.starts_with('/')).then(|| PathBuf::from(path))
        })
        .filter(|p| seen.insert(p.clone()))
        .collect()
}

/// What an ELF file's dynamic section says of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Dynamic {
    /// Its `DT_NEEDED` names.
    pub(crate) needed: Vec<String>,
    /// Its `DT_SONAME`, when it has one.
    pub(crate) soname: Option<String>,
}

/// The dynamic section of a 64-bit little-endian ELF file, read from its section
/// headers; `None` when it cannot be read or is not such a file (a static executable
/// has an empty one).
pub(crate) fn dynamic(path: &Path) -> Option<Dynamic> {
    let elf = Sections::read(path)?;
    const SHT_DYNAMIC: u32 = 6;
    let Some(dynsec) = elf.find(SHT_DYNAMIC) else {
        return Some(Dynamic::default());
    };
    let (f, section) = (&elf.file, |i| elf.get(i));
    let strtab = section(u64::from(u32_at(dynsec, 40)))?;
    let (dyn_off, dyn_size) = (u64_at(dynsec, 24), u64_at(dynsec, 32));
    let (str_off, str_size) = (u64_at(strtab, 24), u64_at(strtab, 32));
    if dyn_size > MAX_TABLE || str_size > MAX_TABLE {
        return None;
    }
    let entries = read(f, dyn_off, dyn_size)?;
    let strings = read(f, str_off, str_size)?;
    let text = |at: u64| -> Option<String> {
        let tail = strings.get(usize::try_from(at).ok()?..)?;
        let end = tail.iter().position(|b| *b == 0).unwrap_or(tail.len());
        std::str::from_utf8(&tail[..end]).ok().map(str::to_string)
    };
    const DT_NULL: u64 = 0;
    const DT_NEEDED: u64 = 1;
    const DT_SONAME: u64 = 14;
    let mut out = Dynamic::default();
    for e in entries.chunks_exact(16) {
        match u64_at(e, 0) {
            DT_NULL => break,
            DT_NEEDED => out.needed.extend(text(u64_at(e, 8))),
            DT_SONAME => out.soname = text(u64_at(e, 8)),
            _ => {}
        }
    }
    Some(out)
}

/// The program's own files among `mapped` (what was mapped when `MPI_Init` was
/// entered; `exe` among them or not), by the rule of this module, in `mapped`'s order
/// after `exe`. `mpi_own` tells MPI's libraries; `dynamic` reads a file's section.
pub(crate) fn program_objects(
    exe: &Path,
    mapped: &[PathBuf],
    mpi_own: impl Fn(&Path) -> bool,
    dynamic: impl Fn(&Path) -> Option<Dynamic>,
) -> Vec<PathBuf> {
    let mut files: Vec<&Path> = vec![exe];
    files.extend(mapped.iter().map(PathBuf::as_path).filter(|p| *p != exe));
    let sections: Vec<Dynamic> = files
        .iter()
        .map(|p| dynamic(p).unwrap_or_default())
        .collect();
    // A needed name resolves to the mapped file of that soname or file name.
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    for (i, (p, d)) in files.iter().zip(&sections).enumerate() {
        if let Some(name) = p.file_name().and_then(|n| n.to_str()) {
            by_name.entry(name).or_insert(i);
        }
        if let Some(soname) = &d.soname {
            by_name.entry(soname.as_str()).or_insert(i);
        }
    }
    let needs: Vec<Vec<usize>> = sections
        .iter()
        .map(|d| {
            let found = d.needed.iter().filter_map(|n| by_name.get(n.as_str()));
            found.copied().collect()
        })
        .collect();
    // Everything from `roots`, through MPI's libraries or not.
    let reach = |roots: &[usize], through_mpi: bool| -> BTreeSet<usize> {
        let mut seen = BTreeSet::new();
        let mut todo = roots.to_vec();
        while let Some(i) = todo.pop() {
            if !through_mpi && mpi_own(files[i]) {
                continue;
            }
            if seen.insert(i) {
                todo.extend(&needs[i]);
            }
        }
        seen
    };
    let from_exe = reach(&[0], true);
    let needed: BTreeSet<usize> = needs.iter().flatten().copied().collect();
    let roots: Vec<usize> = (0..files.len())
        .filter(|i| *i == 0 || (!from_exe.contains(i) && !needed.contains(i)))
        .collect();
    reach(&roots, false)
        .into_iter()
        .map(|i| files[i].to_path_buf())
        .collect()
}

/// [`program_objects`] of this process, from what was `mapped` at `MPI_Init`'s entry,
/// one path a line, as the header's `program_objects`.
pub(crate) fn program_objects_param(mapped: &[PathBuf]) -> String {
    let exe = std::fs::read_link("/proc/self/exe").unwrap_or_else(|_| "/proc/self/exe".into());
    program_objects(&exe, mapped, is_mpi_own, dynamic)
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    /// A program linking libcudart and MPICH; MPICH needs hwloc; the program opened
    /// libze_loader with dlopen before MPI_Init (no one needs it); the preload is mapped.
    /// hwloc's OpenCL plugin is not there: it comes inside MPI_Init.
    ///
    /// ```text
    ///  app ── libcudart.so.12 ── libc.so.6
    ///   │└── libmpich.so.12 ── libhwloc.so.15 ── libudev.so.1
    ///   └── libc.so.6
    ///  libze_loader.so.1 (dlopened) ── libc.so.6      liboverlap_preload.so ── libc.so.6
    /// ```
    #[test]
    fn the_program_owns_what_it_needs_and_opens_not_what_only_mpi_needs() {
        let graph: HashMap<&str, (&[&str], Option<&str>)> = HashMap::from([
            (
                "/a/app",
                (
                    &["libcudart.so.12", "libmpich.so.12", "libc.so.6"][..],
                    None,
                ),
            ),
            (
                "/l/libcudart.so.12.4",
                (&["libc.so.6"][..], Some("libcudart.so.12")),
            ),
            (
                "/l/libmpich.so.12.2",
                (&["libhwloc.so.15", "libc.so.6"][..], Some("libmpich.so.12")),
            ),
            ("/l/libhwloc.so.15", (&["libudev.so.1"][..], None)),
            ("/l/libudev.so.1", (&[][..], None)),
            ("/l/libc.so.6", (&[][..], None)),
            ("/l/libze_loader.so.1", (&["libc.so.6"][..], None)),
            ("/o/liboverlap_preload.so", (&["libc.so.6"][..], None)),
        ]);
        let dynamic = |path: &Path| {
            let (needed, soname) = graph.get(path.to_str()?)?;
            Some(Dynamic {
                needed: needed.iter().map(|n| n.to_string()).collect(),
                soname: soname.map(str::to_string),
            })
        };
        let mapped: Vec<PathBuf> = [
            "/a/app",
            "/o/liboverlap_preload.so",
            "/l/libcudart.so.12.4",
            "/l/libmpich.so.12.2",
            "/l/libhwloc.so.15",
            "/l/libudev.so.1",
            "/l/libc.so.6",
            "/l/libze_loader.so.1",
        ]
        .map(p)
        .to_vec();
        let own = program_objects(&p("/a/app"), &mapped, is_mpi_own, dynamic);
        let own: BTreeSet<PathBuf> = own.into_iter().collect();
        let want: BTreeSet<PathBuf> = [
            "/a/app",
            "/l/libcudart.so.12.4",
            "/l/libc.so.6",
            "/l/libze_loader.so.1",
        ]
        .map(p)
        .into();
        assert_eq!(own, want);
    }

    /// This test binary needs libc, found by its soname among the mapped files.
    #[test]
    fn the_test_binary_needs_libc_and_owns_it() {
        let exe = std::fs::read_link("/proc/self/exe").expect("exe");
        let d = dynamic(&exe).expect("an ELF file");
        assert!(d.needed.iter().any(|n| n.starts_with("libc.so")), "{d:?}");
        let mapped = mapped_now();
        assert!(mapped.contains(&exe), "{mapped:?}");
        let own = program_objects_param(&mapped);
        assert!(own.lines().any(|l| l.contains("/libc.so")), "{own}");
        assert_eq!(dynamic(Path::new("/no/such/file")), None);
    }
}
