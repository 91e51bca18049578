//! Which MPI functions the program calls that overlap does not record, so that
//! `overlap trace` can say so: the time inside them counts as the program's own.
//!
//! A call into MPI from the program (or from a library it loaded, such as PETSc) goes
//! through a dynamic symbol the calling object imports. At `MPI_Init` the preload reads
//! the undefined dynamic symbols (`.dynsym`) of the executable and of every shared
//! object mapped into the process but MPI's own libraries (whose Fortran bindings import
//! every C entry point) and the preload; it keeps the `MPI_*` names, and the Fortran
//! ones (`mpi_send_` is `MPI_Send`), and takes away those it records ([`Op`]) and those
//! whose time is negligible by design ([`negligible_mpi_call`]). What
//! is left is listed in the rank's header as `unrecorded_calls`.
//!
//! Not seen: calls through `PMPI_` names, through libraries opened with `dlopen` after
//! `MPI_Init`, or into an MPI linked statically.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use overlap_instrument::schema::{negligible_mpi_call, Op};

/// True when overlap records `name` or its time is negligible (the handle conversions
/// between C and Fortran, `MPI_Comm_f2c` and the like, are too).
#[cfg(test)]
fn accounted(name: &str) -> bool {
    accounted_as(name, name)
}

/// [`accounted`], for a call the program makes through `symbol` (its C name `name`).
fn accounted_as(name: &str, symbol: &str) -> bool {
    recorded_through(name, symbol) || negligible_mpi_call(name)
}

/// Whether a call through `symbol` reaches a wrapper that records it:
/// - C names reach the C wrappers;
/// - MPICH's Fortran bindings call the C entry points, but its `mpi_f08` ones only for
///   calls with a buffer (`_f08ts`; their `_large` forms call the large-count `_c`
///   entry points): the others call `PMPI_*` and are recorded where [`crate::f08`]
///   wraps them;
/// - Open MPI's Fortran bindings, `mpi_f08` included, call `PMPI_*`: recorded where
///   [`crate::fortran`] wraps them.
fn recorded_through(name: &str, symbol: &str) -> bool {
    // The large-count forms (`MPI_Isend_c`) are recorded as their classic op: the
    // exports say which the preload wraps.
    let recorded_in_c =
        Op::from_mpi_name(name).is_some() || crate::exported::EXPORTS.contains(&name);
    match Binding::of(symbol) {
        Some(Binding::C) | None => recorded_in_c,
        #[cfg(openmpi)]
        Some(Binding::Fortran | Binding::FortranF08) => {
            recorded_in_c && exported(crate::fortran::EXPORTS, name, "_")
        }
        #[cfg(not(openmpi))]
        Some(Binding::Fortran) => recorded_in_c,
        #[cfg(not(openmpi))]
        Some(Binding::FortranF08) => {
            let lower = symbol.to_ascii_lowercase();
            if lower.ends_with("_f08ts_large_") {
                crate::exported::EXPORTS.contains(&format!("{name}_c").as_str())
            } else if lower.ends_with("_f08ts_") {
                recorded_in_c
            } else {
                recorded_in_c && exported(crate::f08::EXPORTS, name, "_f08_")
            }
        }
    }
}

/// Whether `exports` holds the Fortran name of the C call `name` with `suffix`
/// (`MPI_Isend`, `_f08_`: `mpi_isend_f08_`).
fn exported(exports: &[&str], name: &str, suffix: &str) -> bool {
    let Some(rest) = name.strip_prefix("MPI_") else {
        return false;
    };
    let fortran = format!("mpi_{}{suffix}", rest.to_ascii_lowercase());
    exports.contains(&fortran.as_str())
}

/// The language bindings of MPI a program calls through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Binding {
    /// `MPI_Send`.
    C,
    /// `mpi_send_` (`mpif.h`, `use mpi`).
    Fortran,
    /// `mpi_send_f08_`, `mpi_send_f08ts_` (`use mpi_f08`).
    FortranF08,
}

impl Binding {
    /// How the header names it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Binding::C => "C",
            Binding::Fortran => "Fortran mpif.h/mpi",
            Binding::FortranF08 => "Fortran mpi_f08",
        }
    }

    /// The binding an imported symbol belongs to, if it is an MPI call.
    fn of(symbol: &str) -> Option<Binding> {
        if symbol.starts_with("MPI_") && symbol[4..].chars().any(|c| c.is_ascii_lowercase()) {
            Some(Binding::C)
        } else if !symbol.to_ascii_lowercase().starts_with("mpi_") {
            None
        } else if symbol.contains("_f08") {
            Some(Binding::FortranF08)
        } else {
            Some(Binding::Fortran)
        }
    }
}

/// What the process's objects import from MPI.
pub(crate) struct Imports {
    /// The MPI functions imported that overlap does not account for, sorted.
    pub(crate) unrecorded: Vec<String>,
    /// Of those, the ones imported through a binding that bypasses the C entry points,
    /// whose calls [`crate::counting`] therefore cannot count, sorted.
    pub(crate) uncounted: Vec<String>,
    /// The bindings they are called through, sorted.
    pub(crate) bindings: Vec<Binding>,
}

/// Whether a call through `symbol` reaches the C entry points, where the calls of the
/// functions not recorded are counted: C names do, and MPICH's Fortran bindings but
/// those of `mpi_f08` without a buffer (which call `PMPI_*`); Open MPI's Fortran
/// bindings call `PMPI_*`.
fn counted_through(symbol: &str) -> bool {
    match Binding::of(symbol) {
        Some(Binding::C) | None => true,
        #[cfg(openmpi)]
        Some(Binding::Fortran | Binding::FortranF08) => false,
        #[cfg(not(openmpi))]
        Some(Binding::Fortran) => true,
        #[cfg(not(openmpi))]
        Some(Binding::FortranF08) => symbol.to_ascii_lowercase().contains("_f08ts_"),
    }
}

/// Reads the process's objects' imports; `None` when none of them imports anything from
/// MPI (an MPI linked statically, or opened with `dlopen`): what the program calls is
/// then unknown, not "nothing".
pub(crate) fn scan() -> Option<Imports> {
    let mut names = BTreeSet::new();
    let mut uncounted = BTreeSet::new();
    let mut bindings = BTreeSet::new();
    for object in objects() {
        // An object that cannot be read (gone, not ELF) imports nothing we can know.
        let Some(symbols) = undefined_dynamic_symbols(&object) else {
            continue;
        };
        for s in &symbols {
            let Some(binding) = Binding::of(s) else {
                continue;
            };
            bindings.insert(binding);
            if let Some(name) = mpi_name(s).filter(|n| !accounted_as(n, s)) {
                if !counted_through(s) {
                    uncounted.insert(name.clone());
                }
                names.insert(name);
            }
        }
    }
    (!bindings.is_empty()).then(|| Imports {
        unrecorded: names.into_iter().collect(),
        uncounted: uncounted.into_iter().collect(),
        bindings: bindings.into_iter().collect(),
    })
}

/// The executable and the shared objects mapped into this process, but MPI's own
/// libraries and the preload.
fn objects() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("/proc/self/exe")];
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut seen = BTreeSet::new();
    let exe = std::fs::read_link("/proc/self/exe").ok();
    for line in maps.lines() {
        let Some(path) = line.split_whitespace().nth(5) else {
            continue;
        };
        let path = Path::new(path);
        if !path.is_absolute() || exe.as_deref() == Some(path) || is_mpi_own(path) {
            continue;
        }
        if seen.insert(path.to_path_buf()) {
            out.push(path.to_path_buf());
        }
    }
    out
}

/// MPI's own libraries (MPICH: libmpi, libmpich, libmpifort...; Open MPI: libmpi,
/// libmpi_mpifh, libopen-pal...) and the preload.
pub(crate) fn is_mpi_own(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    [
        "libmpi",
        "libpmpi",
        "libopen-pal",
        "libopen-rte",
        "liboverlap_preload",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// The C name of an imported MPI symbol: `MPI_Send` as is, the Fortran `mpi_send_` (or
/// `mpi_send__`, `MPI_SEND`) and the `mpi_f08` ones (`mpi_send_f08ts_`, `mpi_send_f08_`)
/// as `MPI_Send`; `None` for anything else (including `PMPI_` names and the `MPIX_`
/// extensions).
fn mpi_name(symbol: &str) -> Option<String> {
    if symbol.starts_with("MPI_") && symbol[4..].chars().any(|c| c.is_ascii_lowercase()) {
        return Some(symbol.to_string());
    }
    let lower = symbol.to_ascii_lowercase();
    let mut rest = lower.strip_prefix("mpi_")?.trim_end_matches('_');
    // mpi_f08's names: `mpi_isend_f08ts_`, `mpi_isend_f08ts_large_` (MPICH),
    // `mpi_isend_f08_` (Open MPI).
    rest = rest.strip_suffix("_large").unwrap_or(rest);
    for suffix in ["_f08ts", "_f08"] {
        rest = rest.strip_suffix(suffix).unwrap_or(rest);
    }
    if rest.is_empty()
        || rest.contains("f08")
        || !rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    let mut name = String::from("MPI_");
    let mut chars = rest.chars();
    name.extend(chars.next().map(|c| c.to_ascii_uppercase()));
    name.extend(chars);
    Some(name)
}

/// Tables larger than this are not read (no real `.dynsym` comes near).
pub(crate) const MAX_TABLE: u64 = 64 << 20;

/// The names of the undefined symbols of a 64-bit little-endian ELF file's dynamic
/// symbol table but its data (the functions it imports), read from its section headers;
/// `None` when the file cannot be read or is not such a file.
pub(crate) fn undefined_dynamic_symbols(path: &Path) -> Option<Vec<String>> {
    let elf = Sections::read(path)?;
    const SHT_DYNSYM: u32 = 11;
    let Some(dynsym) = elf.find(SHT_DYNSYM) else {
        return Some(Vec::new()); // statically linked: imports nothing
    };
    let (f, section) = (&elf.file, |i| elf.get(i));
    let strtab = section(u64::from(u32_at(dynsym, 40)))?;
    let (sym_off, sym_size, entsize) = (u64_at(dynsym, 24), u64_at(dynsym, 32), u64_at(dynsym, 56));
    let (str_off, str_size) = (u64_at(strtab, 24), u64_at(strtab, 32));
    if entsize < 24 || sym_size > MAX_TABLE || str_size > MAX_TABLE {
        return None;
    }
    let symbols = read(f, sym_off, sym_size)?;
    let strings = read(f, str_off, str_size)?;
    let entsize = usize::try_from(entsize).ok()?;
    let mut out = Vec::new();
    for sym in symbols.chunks_exact(entsize) {
        let (name, shndx) = (u32_at(sym, 0) as usize, u16_at(sym, 6));
        // Data is not a call: Open MPI's Fortran sentinels (`mpi_fortran_bottom_`...) are
        // variables a Fortran library imports.
        const STT_OBJECT: u8 = 1;
        if shndx != 0 || name == 0 || sym[4] & 0xf == STT_OBJECT {
            continue;
        }
        let Some(tail) = strings.get(name..) else {
            continue;
        };
        let end = tail.iter().position(|b| *b == 0).unwrap_or(tail.len());
        if let Ok(s) = std::str::from_utf8(&tail[..end]) {
            out.push(s.to_string());
        }
    }
    Some(out)
}

/// The section headers of a 64-bit little-endian ELF file, read once.
pub(crate) struct Sections {
    /// The file, for the sections' contents.
    pub(crate) file: File,
    table: Vec<u8>,
    entsize: u64,
    count: u64,
}

impl Sections {
    /// The section headers of `path`; `None` when it cannot be read or is not a 64-bit
    /// little-endian ELF file.
    pub(crate) fn read(path: &Path) -> Option<Sections> {
        let file = File::open(path).ok()?;
        let mut header = [0u8; 64];
        file.read_exact_at(&mut header, 0).ok()?;
        if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
            return None;
        }
        let shoff = u64_at(&header, 0x28);
        let entsize = u64::from(u16_at(&header, 0x3a));
        let count = u64::from(u16_at(&header, 0x3c));
        if entsize < 64 || count == 0 || count * entsize > MAX_TABLE {
            return None;
        }
        let table = read(&file, shoff, count * entsize)?;
        Some(Sections {
            file,
            table,
            entsize,
            count,
        })
    }

    /// The `i`-th section header.
    pub(crate) fn get(&self, i: u64) -> Option<&[u8]> {
        let at = usize::try_from(i * self.entsize).ok()?;
        self.table.get(at..at + 64)
    }

    /// The first section header of type `kind` (`sh_type`).
    pub(crate) fn find(&self, kind: u32) -> Option<&[u8]> {
        (0..self.count)
            .filter_map(|i| self.get(i))
            .find(|s| u32_at(s, 4) == kind)
    }
}

pub(crate) fn read(f: &File, offset: u64, len: u64) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; usize::try_from(len).ok()?];
    f.read_exact_at(&mut buf, offset).ok()?;
    Some(buf)
}

pub(crate) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_binary_imports_from_libc() {
        let got = undefined_dynamic_symbols(Path::new("/proc/self/exe")).expect("reads");
        assert!(got.iter().any(|s| s == "malloc" || s == "write"), "{got:?}");
    }

    #[test]
    fn a_file_that_is_not_elf_is_refused() {
        let dir = std::env::temp_dir().join(format!("overlap-imports-{}", std::process::id()));
        std::fs::write(&dir, [b'#'; 100]).expect("writes");
        let got = undefined_dynamic_symbols(&dir);
        let _ = std::fs::remove_file(&dir);
        assert_eq!(got, None);
        assert_eq!(undefined_dynamic_symbols(Path::new("/no/such/file")), None);
    }

    #[test]
    fn fortran_names_become_c_names() {
        assert_eq!(mpi_name("MPI_Put").as_deref(), Some("MPI_Put"));
        assert_eq!(mpi_name("mpi_put_").as_deref(), Some("MPI_Put"));
        assert_eq!(
            mpi_name("mpi_comm_rank__").as_deref(),
            Some("MPI_Comm_rank")
        );
        assert_eq!(mpi_name("MPI_FILE_OPEN").as_deref(), Some("MPI_File_open"));
        assert_eq!(mpi_name("PMPI_Send"), None);
        assert_eq!(mpi_name("MPIX_Query_cuda_support"), None);
        assert_eq!(mpi_name("mpi_send_f08_").as_deref(), Some("MPI_Send"));
        assert_eq!(mpi_name("mpi_isend_f08ts_").as_deref(), Some("MPI_Isend"));
        assert_eq!(
            mpi_name("mpi_isend_f08ts_large_").as_deref(),
            Some("MPI_Isend")
        );
        assert_eq!(mpi_name("malloc"), None);
    }

    #[test]
    #[cfg(not(openmpi))]
    fn mpich_f08_calls_are_recorded_where_they_reach_a_wrapper() {
        // Through the C entry point, through the preload's own wrapper, or neither.
        assert!(accounted_as("MPI_Isend", "mpi_isend_f08ts_"));
        assert!(accounted_as("MPI_Waitall", "mpi_waitall_f08_"));
        assert!(accounted_as("MPI_Isend", "mpi_isend_f08ts_large_"));
        assert!(accounted_as("MPI_Barrier_init", "mpi_barrier_init_f08_"));
        assert!(!accounted_as(
            "MPI_File_write_all",
            "mpi_file_write_all_f08ts_"
        ));
        assert!(accounted_as("MPI_Isend", "mpi_isend_"));
    }

    #[test]
    #[cfg(openmpi)]
    fn open_mpi_fortran_calls_are_recorded_where_wrapped() {
        assert!(accounted_as("MPI_Isend", "mpi_isend_"));
        assert!(accounted_as("MPI_Isend", "mpi_isend_f08_"));
        assert!(accounted_as("MPI_Put", "mpi_put_"));
        assert!(!accounted_as("MPI_File_write_all", "mpi_file_write_all_"));
        // Every call the C entry points record has its Fortran twin, under both names.
        for c in crate::exported::EXPORTS {
            if Op::from_mpi_name(c).is_some() {
                assert!(exported(crate::fortran::EXPORTS, c, "_"), "{c}");
                let ompi = format!("ompi_{}_f", c["MPI_".len()..].to_ascii_lowercase());
                assert!(crate::fortran::EXPORTS.contains(&ompi.as_str()), "{ompi}");
            }
        }
    }

    #[test]
    fn bindings_are_told_by_the_names_imported() {
        assert_eq!(Binding::of("MPI_Isend"), Some(Binding::C));
        assert_eq!(Binding::of("mpi_isend_"), Some(Binding::Fortran));
        assert_eq!(Binding::of("MPI_ISEND"), Some(Binding::Fortran));
        assert_eq!(Binding::of("mpi_isend_f08ts_"), Some(Binding::FortranF08));
        assert_eq!(Binding::of("mpi_isend_f08_"), Some(Binding::FortranF08));
        assert_eq!(Binding::of("PMPI_Isend"), None);
        assert_eq!(Binding::of("memcpy"), None);
    }

    #[test]
    fn recorded_and_negligible_calls_are_accounted_for() {
        assert!(accounted("MPI_Put") && accounted("MPI_Ibcast"));
        assert!(accounted("MPI_Comm_rank") && accounted("MPI_Type_commit"));
        assert!(accounted("MPI_Comm_f2c"));
        assert!(!accounted("MPI_File_write_all"));
        assert!(accounted("MPI_Comm_split"), "recorded");
        assert!(
            !accounted("MPI_Intercomm_create"),
            "collective: its time is not negligible"
        );
        assert!(!accounted("MPI_Request_get_status"), "it polls");
    }
}
