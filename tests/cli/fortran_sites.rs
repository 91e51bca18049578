//! Call sites of Fortran programs: every call is placed on the Fortran line that made
//! it, under MPICH (whose `mpif.h` and `use mpi` bindings, and `mpi_f08` calls with a
//! buffer, reach the preload through its C entry points, from inside libmpichfort) and
//! Open MPI (whose `mpi_f08` reaches it through its `mpif.h` bindings' internal names),
//! for `mpif.h` (mixed.f90, which also calls MPI from C between its Fortran calls: those
//! keep their lines of mixed.c), `use mpi` (ring.f90, and threads_f.f90, whose two
//! OpenMP threads call MPI at once, each its own functions) and `use mpi_f08`
//! (ring_f08.f90, and large_f08.f90's MPI-4 large counts under MPICH).

use std::collections::BTreeMap;
use std::path::Path;

use overlap_analyzer::sites::SiteTable;
use overlap_instrument::schema::Op;

use crate::mpis::{open_mpi, untraced_then_traced, Launch, Mpi};

/// The lines of tests/programs/FILE.
fn source(file: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(file);
    let text = std::fs::read_to_string(path).expect("the program's source reads");
    text.lines().map(str::to_string).collect()
}

/// Traces tests/programs/NAME.f90 (whose `program` is `program`) on 2 ranks under `mpi`
/// and checks every recorded call's site: a line of NAME.f90 that calls that MPI
/// function, in `program` or one of `procedures` (inlined or not), or a line of NAME.c
/// in `c_exchange` that does. Returns how many calls each file's lines made, over all
/// ranks.
fn check_sites(
    mpi: Mpi,
    name: &str,
    program: &str,
    procedures: &[&str],
) -> BTreeMap<String, usize> {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join(format!("{name}.json"));
    let (_, run) = untraced_then_traced(&Launch::of(mpi), 2, name, &out);
    run.assert_records_every_call();
    let trace = overlap_analyzer::load::load(&out, &mut |_, _| {})
        .expect("loads")
        .trace;
    let table = SiteTable::build(&trace);
    assert!(
        !table.notes().iter().any(|n| n.contains("site unknown")),
        "{mpi:?} {name}: {:?}",
        table.notes()
    );
    let f90 = format!("{name}.f90");
    let c = format!("{name}.c");
    let lines: BTreeMap<&str, Vec<String>> = [(f90.as_str(), source(&f90))]
        .into_iter()
        .chain(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/programs")
                .join(&c)
                .is_file()
                .then(|| (c.as_str(), source(&c))),
        )
        .collect();
    let mut per_file: BTreeMap<String, usize> = BTreeMap::new();
    for t in &trace.ranks {
        for i in 0..t.spans.len() {
            let Some((op, _)) = t.call(i) else { continue };
            let label = table.label_of_call(&trace, t.rank, i).unwrap_or_else(|| {
                panic!(
                    "{mpi:?} {name}: rank {} call {i} ({op:?}) has no site",
                    t.rank
                )
            });
            // "file:line (function)"
            let parsed = label.split_once(':').and_then(|(file, rest)| {
                let (line, function) = rest.split_once(' ')?;
                let function = function.strip_prefix('(')?.strip_suffix(')')?;
                Some((file, line.parse::<usize>().ok()?, function))
            });
            let Some((file, line, function)) = parsed else {
                panic!(
                    "{mpi:?} {name}: {} of rank {} at {label:?}, not a line",
                    op.mpi_name(),
                    t.rank
                );
            };
            let text = lines
                .get(file)
                .and_then(|l| l.get(line.wrapping_sub(1)))
                .unwrap_or_else(|| panic!("{mpi:?} {name}: {label} is not a line of the program"));
            let (call, functions) = if file == f90 {
                let mut functions = vec![program];
                functions.extend_from_slice(procedures);
                (format!("call {}(", op.mpi_name()), functions)
            } else {
                (format!("{}(", op.mpi_name()), vec!["c_exchange"])
            };
            let in_function = functions
                .iter()
                .any(|f| function == *f || function.starts_with(&format!("{f}, inlined in ")));
            // gfortran -O1 may give the program's first and last calls (Init, Finalize)
            // no line row of their own: the prologue's and epilogue's, the `program`
            // statement, cover them (Open MPI's mpif90 on ring.f90). Still the program's.
            let prologue = matches!(op, Op::Init | Op::Finalize)
                && text.trim() == format!("program {program}");
            assert!(
                (text.contains(&call) || prologue) && in_function,
                "{mpi:?} {name}: {} of rank {} placed at {label}: {text:?}",
                op.mpi_name(),
                t.rank
            );
            *per_file.entry(file.to_string()).or_default() += 1;
        }
    }
    per_file
}

/// The three bindings, and two threads, under `mpi`; mixed.f90 makes 3 Fortran and 3 C ring turns (Irecv,
/// Isend, Waitall each; the C turn and a Barrier), Init, Allreduce, Barrier, Finalize.
fn check_all(mpi: Mpi) {
    let mixed = check_sites(mpi, "mixed", "mixed", &[]);
    let want: BTreeMap<String, usize> = [
        ("mixed.f90".to_string(), 2 * (4 + 3 * 3)),
        ("mixed.c".to_string(), 2 * 3 * 4),
    ]
    .into_iter()
    .collect();
    assert_eq!(mixed, want, "{mpi:?}");
    let ring = check_sites(mpi, "ring", "ring", &[]);
    assert_eq!(ring.keys().collect::<Vec<_>>(), ["ring.f90"]);
    let f08 = check_sites(mpi, "ring_f08", "ring_f08", &[]);
    assert_eq!(f08.keys().collect::<Vec<_>>(), ["ring_f08.f90"]);
    // Init_thread, Barrier, Finalize; 20 turns of Irecv, Isend, Waitall on one thread,
    // of Sendrecv and Iprobe on the other; on 2 ranks.
    let threads = check_sites(mpi, "threads_f", "threads_f", &["posts", "blocking"]);
    let want: BTreeMap<String, usize> = [("threads_f.f90".to_string(), 2 * (3 + 20 * 5))]
        .into_iter()
        .collect();
    assert_eq!(threads, want, "{mpi:?}");
}

#[test]
fn fortran_calls_are_placed_on_their_lines_under_mpich() {
    check_all(Mpi::Default);
    // MPI-4 large counts (Open MPI 4 is MPI 3.1): Init, Irecv, Isend, Waitall, Finalize.
    let large = check_sites(Mpi::Default, "large_f08", "large_f08", &[]);
    let want: BTreeMap<String, usize> =
        [("large_f08.f90".to_string(), 2 * 5)].into_iter().collect();
    assert_eq!(large, want);
}

#[test]
fn fortran_calls_are_placed_on_their_lines_under_open_mpi() {
    let Some(mpi) = open_mpi() else { return };
    check_all(mpi);
}
