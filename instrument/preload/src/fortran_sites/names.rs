//! Which Fortran binding names get a site-only trampoline, by rule from the C entry
//! points the preload records. Shared by `build.rs`, which writes the trampolines out
//! (a `macro_rules!` cannot change a name's case, and the list follows `lib.rs` by
//! itself), and by the module's tests.
//!
//! The rule follows the names the MPIs export (checked with `nm -D` on MPICH 4.0.2's
//! `libmpichfort.so.12` and Open MPI 4.1.4's `libmpi_usempif08.so.40`):
//! - MPICH, `mpif.h` and `use mpi`: `mpi_isend_` and its other manglings (`mpi_isend`,
//!   `mpi_isend__`, `MPI_ISEND`) and their `pmpi_` twins, which are the same code and
//!   call `MPI_Isend` too; `use mpi_f08` with a buffer: `mpi_isend_f08ts_` and
//!   `pmpir_isend_f08ts_` (its PMPI form, which also calls `MPI_Isend`); the large-count
//!   `mpi_isend_f08ts_large_` for a C entry point `MPI_Isend_c` (`mpi_win_allocate_f08_large_`
//!   for `MPI_Win_allocate_c`, whose other form is `mpi_win_allocate_f08_`). MPICH's other `mpi_f08` names (`mpi_wait_f08_`) call `PMPI_*`: the
//!   preload wraps those itself (`src/f08`).
//! - Open MPI: `mpif.h` and `use mpi` are wrapped by the preload itself (`src/fortran`);
//!   its `mpi_f08` (`mpi_isend_f08_`, `pmpi_isend_f08_`) calls those wrappers' internal
//!   names (`ompi_isend_f`), from inside its own library.

/// The C entry points listed in `lib.rs`'s `entry!` block, with the `cfg` attribute
/// that applies to each (`None` when always built), in order.
pub(crate) fn c_entries(lib_rs: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    let mut inside = false;
    let mut attr: Option<String> = None;
    for line in lib_rs.lines() {
        let line = line.trim();
        if line.starts_with("crate::entry::entry!") {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if line == "}" {
            break;
        }
        if let Some(cfg) = line
            .strip_prefix("#[cfg(")
            .and_then(|l| l.strip_suffix(")]"))
        {
            attr = Some(cfg.to_string());
            continue;
        }
        if let Some((name, _)) = line.split_once("=>") {
            let name = name.trim();
            if name.starts_with("MPI_") {
                out.push((attr.take(), name.to_string()));
            }
        }
    }
    out
}

/// Calls the preload wraps in C but does not record: their Fortran bindings need no site.
const NOT_RECORDED: &[&str] = &["MPI_Type_free"];

/// The Fortran names of the C entry point `c_name` (`MPI_Isend`) that get a site-only
/// trampoline in the preload built for `openmpi` or MPICH, less the names in `taken`
/// (those the preload defines itself): a call MPICH's `mpi_f08` makes without a buffer
/// (`mpi_wait_f08_`, in `taken`) has no buffer form (`mpi_wait_f08ts_`) either.
pub(crate) fn fortran_names(c_name: &str, openmpi: bool, taken: &[String]) -> Vec<String> {
    if NOT_RECORDED.contains(&c_name) {
        return Vec::new();
    }
    let Some(base) = c_name.strip_prefix("MPI_") else {
        return Vec::new();
    };
    let lower = base.to_ascii_lowercase();
    let mut names = Vec::new();
    if openmpi {
        if !lower.ends_with("_c") {
            names.push(format!("mpi_{lower}_f08_"));
            names.push(format!("pmpi_{lower}_f08_"));
        }
    } else if let Some(large) = lower.strip_suffix("_c") {
        // The large form has the shape of the call's other form: with a buffer
        // (`f08ts`) unless src/f08 wraps the call's `_f08_` form.
        let form = if taken.contains(&format!("mpi_{large}_f08_")) {
            "f08_large"
        } else {
            "f08ts_large"
        };
        names.push(format!("mpi_{large}_{form}_"));
        names.push(format!("pmpir_{large}_{form}_"));
    } else {
        let upper = base.to_ascii_uppercase();
        for prefix in ["mpi", "pmpi"] {
            names.push(format!("{prefix}_{lower}"));
            names.push(format!("{prefix}_{lower}_"));
            names.push(format!("{prefix}_{lower}__"));
            names.push(format!("{}_{upper}", prefix.to_ascii_uppercase()));
        }
        if !taken.contains(&format!("mpi_{lower}_f08_")) {
            names.push(format!("mpi_{lower}_f08ts_"));
            names.push(format!("pmpir_{lower}_f08ts_"));
        }
    }
    names.retain(|n| !taken.contains(n));
    names
}

/// The names the preload already defines in one of its `entry!` blocks (`src/fortran`,
/// `src/f08`): their callers are the program itself, whose site the trampoline keeps.
pub(crate) fn defined(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|l| l.trim().split_once("=>"))
        .map(|(name, _)| name.trim())
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(str::to_string)
        .collect()
}
