//! `overlap trace` loads the preload built for the program's MPI: the Open MPI program
//! gets the library built for Open MPI without being told, a library of the other MPI
//! given by hand is refused before anything runs, and a missing one is named with what
//! was found instead.

use std::process::Command;

use crate::mpis::{open_mpi, program_in, Mpi};
use crate::util::{overlap_bin, Run};

#[test]
fn a_preload_built_for_another_mpi_is_refused() {
    let Some(mpi) = open_mpi() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let mpich_preload = overlap_bin().with_file_name("liboverlap_preload.so");
    let program = program_in(mpi, "calls");
    let output = Command::new(overlap_bin())
        .arg("trace")
        .arg("--preload")
        .arg(&mpich_preload)
        .arg("--out")
        .arg(dir.path().join("x.json"))
        .args(["--", mpi.launcher(), "-n", "2"])
        .arg(&program)
        .envs(mpi.env().iter().copied())
        .output()
        .expect("overlap runs");
    let run = Run { output };
    assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
    run.assert_stderr_has("was built for MPICH");
    run.assert_stderr_has(&format!(
        "but {} is linked with Open MPI",
        program.display()
    ));
    assert!(
        !dir.path().join("x.ranks").exists(),
        "refused before the launch"
    );
}

#[test]
fn a_missing_preload_for_the_programs_mpi_is_named_with_what_was_found() {
    let Some(mpi) = open_mpi() else { return };
    // `overlap` alone in a directory with only the default (MPICH) preload beside it.
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = dir.path().join("overlap");
    let link = |from: &std::path::Path, to: &std::path::Path| {
        std::fs::hard_link(from, to)
            .or_else(|_| std::fs::copy(from, to).map(|_| ()))
            .expect("overlap and its preload are put in place");
    };
    link(&overlap_bin(), &bin);
    let preload = overlap_bin().with_file_name("liboverlap_preload.so");
    link(&preload, &dir.path().join("liboverlap_preload.so"));
    let output = Command::new(&bin)
        .arg("trace")
        .arg("--out")
        .arg(dir.path().join("x.json"))
        .args(["--", mpi.launcher(), "-n", "2"])
        .arg(program_in(mpi, "calls"))
        .envs(mpi.env().iter().copied())
        .env_remove("OVERLAP_PRELOAD")
        .output()
        .expect("overlap runs");
    let run = Run { output };
    assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
    run.assert_stderr_has("no preload built for Open MPI was found in");
    run.assert_stderr_has("liboverlap_preload.so (MPICH ");
    run.assert_stderr_has("scripts/build-preloads.sh");
}

#[test]
fn the_default_mpi_gets_the_default_preload() {
    // MPICH's program under hydra: cargo's own library, whose marker says MPICH.
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("ring.json");
    let run = crate::mpis::trace_in(
        Mpi::Default,
        2,
        &program_in(Mpi::Default, "ring"),
        &[],
        &[],
        &out,
    );
    assert!(run.success(), "{}", run.describe());
    let t = overlap_analyzer::import::read_merged(&out).expect("reads back");
    let built_for = t
        .info
        .params
        .get(overlap_instrument::schema::PRELOAD_BUILT_FOR_PARAM);
    assert!(
        matches!(built_for, Some(overlap_instrument::schema::ParamValue::Text(b)) if b.starts_with("MPICH ")),
        "{built_for:?}"
    );
}
