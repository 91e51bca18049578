//! Builds the C shim that declares the preload's per-thread words in initial-exec TLS
//! (see `src/thread.c`), and asks the MPI the preload is built against (the `mpicc` that
//! `mpi-sys` uses: `$MPICC`, else `mpicc`) what it is:
//! - `cfg(mpi4)` when its `mpi.h` declares MPI 4 (persistent collectives, sessions):
//!   Open MPI 4 is MPI 3.1 and lacks them, so their wrappers are left out there;
//! - `cfg(openmpi)` for Open MPI, whose Fortran bindings call `PMPI_*` directly: the
//!   preload then wraps the Fortran entry points too (`src/fortran`);
//! - `OVERLAP_PRELOAD_MPI`, the MPI family (`mpich` or `openmpi`) and version, which the
//!   library carries in a marker that `overlap trace` reads to pick the preload that
//!   matches the program's MPI (`src/built_for.rs`);
//! - the counting entry points of every other MPI function its `mpi.h` declares
//!   (`build_counted.rs`, `src/counting.rs`);
//! - `fortran_sites.rs` in `OUT_DIR`: the Fortran binding names that get a site-only
//!   trampoline (`src/fortran_sites`), by rule from the C entry points `src/lib.rs` lists.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

#[path = "build_counted.rs"]
mod counted;
#[path = "src/fortran_sites/names.rs"]
#[allow(dead_code)]
mod names;

fn main() {
    println!("cargo:rerun-if-changed=src/thread.c");
    println!("cargo:rerun-if-changed=src/lib.rs");
    println!("cargo:rerun-if-changed=build_counted.rs");
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo:rustc-check-cfg=cfg(mpi4)");
    println!("cargo:rustc-check-cfg=cfg(openmpi)");
    cc::Build::new()
        .file("src/thread.c")
        .flag_if_supported("-ftls-model=initial-exec")
        .compile("overlap_preload_thread");

    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let probe = Path::new(&out).join("mpi_probe.c");
    std::fs::write(&probe, PROBE).expect("writing the MPI probe");
    let output = Command::new(&mpicc)
        .args(["-E", "-P"])
        .arg(&probe)
        .output()
        .unwrap_or_else(|e| panic!("running {mpicc} (the MPI compiler wrapper): {e}"));
    assert!(
        output.status.success(),
        "{mpicc} -E could not read mpi.h: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let answer = |name: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(|v| v.trim().trim_matches('"').to_string())
            .unwrap_or_default()
    };
    let version: u32 = answer("overlap_mpi_version=").parse().unwrap_or(0);
    if version >= 4 {
        println!("cargo:rustc-cfg=mpi4");
    }
    let family = answer("overlap_mpi_family=");
    let family_version = answer("overlap_mpi_family_version=").replace(['"', ' '], "");
    assert!(
        family == "mpich" || family == "openmpi",
        "{mpicc} names an MPI that is neither MPICH (or a derivative) nor Open MPI (its \
         mpi.h, preprocessed, said: {:?}): the preload knows the handles of those two only",
        text.lines().rev().take(4).collect::<Vec<_>>()
    );
    if family == "openmpi" {
        println!("cargo:rustc-cfg=openmpi");
    }
    println!("cargo:rustc-env=OVERLAP_PRELOAD_MPI={family} {family_version}");

    // The counting entry points: every function the header declares that the preload
    // does not wrap.
    let lib_rs = std::fs::read_to_string("src/lib.rs").expect("reading src/lib.rs");
    let wrapped = counted::wrapped(&lib_rs);
    let names: Vec<String> = counted::declared(&text)
        .into_iter()
        .filter(|n| !wrapped.contains(n))
        .collect();
    std::fs::write(Path::new(&out).join("counted.rs"), counted::source(&names))
        .expect("writing the counting entry points");
    write_fortran_sites(Path::new(&out), family == "openmpi");
}

/// Writes the `site_only!` invocation of `src/fortran_sites`: every Fortran binding name
/// of a C call `src/lib.rs` records, less those the preload already defines.
fn write_fortran_sites(out: &Path, openmpi: bool) {
    let read = |p: &str| {
        println!("cargo:rerun-if-changed={p}");
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("reading {p}: {e}"))
    };
    // The preload built for Open MPI compiles `src/fortran`; for MPICH, `src/f08`.
    let mut taken = names::defined(&read(if openmpi {
        "src/fortran/exports.rs"
    } else {
        "src/f08/calls.rs"
    }));
    // The preload built for MPICH wraps MPI_PCONTROL's `mpif.h` names itself.
    if !openmpi {
        taken.extend(names::defined(&read("src/pcontrol/fortran.rs")));
    }
    let mut text = String::from("site_only! {\n");
    let mut index = 0usize;
    for (cfg, c_name) in names::c_entries(&read("src/lib.rs")) {
        for name in names::fortran_names(&c_name, openmpi, &taken) {
            if let Some(cfg) = &cfg {
                let _ = write!(text, "    #[cfg({cfg})] ");
            } else {
                text.push_str("    ");
            }
            let _ = writeln!(text, "{index} {name};");
            index += 1;
        }
    }
    text.push_str("}\n");
    std::fs::write(out.join("fortran_sites.rs"), text).expect("writing fortran_sites.rs");
}

/// What the C preprocessor answers about `mpi.h`, one `name=value` line each.
const PROBE: &str = r#"#include <mpi.h>
overlap_mpi_version=MPI_VERSION
#if defined(OPEN_MPI)
overlap_mpi_family=openmpi
overlap_mpi_family_version=OMPI_MAJOR_VERSION.OMPI_MINOR_VERSION.OMPI_RELEASE_VERSION
#elif defined(MPICH_VERSION)
overlap_mpi_family=mpich
overlap_mpi_family_version=MPICH_VERSION
#else
overlap_mpi_family=unknown
#endif
"#;
