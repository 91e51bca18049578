//! `overlap trace` on Python programs. tests/programs/python_sites.py, under mpi4py
//! built against MPICH: every call the program makes is recorded as often as it makes
//! it, each placed on the program's own line and function (`python_sites.py:34
//! (exchange)`, a source site the preload found on the Python frame), not on a line of
//! mpi4py's generated C; the pickled calls (`comm.allreduce`, `comm.send`, `comm.recv`)
//! too; messages match. Its interpreter is the venv that `scripts/bootstrap.sh
//! --mpi4py` builds in target/mpi4py-venv (`make test` does). tests/programs/
//! python_ctypes.py needs no mpi4py: MPI through ctypes, with the GIL held or released.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use overlap_analyzer::import::read_merged;
use overlap_analyzer::sites::{Resolution, SiteTable};
use overlap_instrument::schema::{Op, SourceSite};

use crate::preload_calls::never_completed;
use crate::trace::{program_line, trace_with};
use crate::traces::calls;
use crate::util::{mpi_lock, output_within, overlap_bin, Run, LAUNCH_LIMIT};

/// Set by `make test`: the Python tests must run.
const REQUIRE_MPI4PY_ENV: &str = "OVERLAP_REQUIRE_MPI4PY";
/// Another Python with mpi4py (built for MPICH) and numpy, instead of the venv's.
const PYTHON_ENV: &str = "OVERLAP_MPI4PY_PYTHON";

const PROGRAM: &str = "python_sites.py";

/// The Python of the mpi4py venv, when it imports mpi4py and numpy; `None`, said on
/// stderr, when not (the test is then skipped), but under `make test`, where its
/// absence is a failure.
fn mpi4py_python() -> Option<PathBuf> {
    let python = match std::env::var_os(PYTHON_ENV) {
        Some(p) => PathBuf::from(p),
        None => (overlap_bin().parent().and_then(Path::parent))
            .expect("the target directory")
            .join("mpi4py-venv/bin/python"),
    };
    let imports = Command::new(&python)
        .args(["-c", "import mpi4py, numpy"])
        .output();
    let why = match imports {
        Ok(o) if o.status.success() => return Some(python),
        Ok(o) => format!(
            "{} cannot import mpi4py and numpy: {}",
            python.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => format!("{} does not run: {e}", python.display()),
    };
    assert!(
        std::env::var_os(REQUIRE_MPI4PY_ENV).is_none(),
        "{why}, and {REQUIRE_MPI4PY_ENV} is set: `scripts/bootstrap.sh --mpi4py` builds the \
         venv (it needs PyPI once)"
    );
    eprintln!(
        "skipped: {why}: run `scripts/bootstrap.sh --mpi4py` (make test does), or name a \
         Python with mpi4py for MPICH in {PYTHON_ENV}"
    );
    None
}

/// `mpiexec -n RANKS PYTHON PROGRAM`, untraced.
fn untraced(python: &Path, ranks: u32, program: &Path) -> Run {
    let _guard = mpi_lock();
    let mut cmd = Command::new("mpiexec");
    cmd.args(["-n", &ranks.to_string()])
        .arg(python)
        .arg(program);
    Run {
        output: output_within(&mut cmd, LAUNCH_LIMIT),
    }
}

/// What each rank printed it issued: `rank=R Irecv=3 ... total=T`, by rank.
fn issued(run: &Run) -> BTreeMap<u32, BTreeMap<String, usize>> {
    run.stdout()
        .lines()
        .filter_map(|l| l.strip_prefix("rank="))
        .map(|l| {
            let mut words = l.split_whitespace();
            let rank = words.next().and_then(|r| r.parse().ok()).expect("a rank");
            let counts = words
                .filter_map(|w| w.split_once('='))
                .filter(|(k, _)| *k != "total")
                .map(|(k, v)| (k.to_string(), v.parse().expect("a count")))
                .collect();
            (rank, counts)
        })
        .collect()
}

/// The program's line marked `# site: NAME`, in `function`.
fn marked(name: &str, function: &str) -> (u32, String) {
    (
        program_line(PROGRAM, &format!("# site: {name}")),
        function.to_string(),
    )
}

#[test]
fn python_calls_are_placed_on_their_python_lines() {
    let Some(python) = mpi4py_python() else {
        return;
    };
    let ranks = 2;
    let program = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(PROGRAM);
    let plain = untraced(&python, ranks, &program);
    assert!(plain.success(), "{}", plain.describe());
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("python.json");
    let arg = program.to_str().expect("a UTF-8 path");
    let run = trace_with(ranks, &python, &[arg], &[], &out);
    assert!(run.success(), "{}", run.describe());
    let issued = issued(&run);
    assert_eq!(
        issued,
        self::issued(&plain),
        "the program issues the same calls traced or not\n{}",
        run.describe()
    );
    assert_eq!(issued.len(), ranks as usize, "{}", run.describe());
    let t = read_merged(&out).expect("merged trace reads back");

    let init = (
        program_line(PROGRAM, "from mpi4py import MPI"),
        "<module>".to_string(),
    );
    // The calls each marked line makes: exactly one MPI call per call of the program,
    // but for the pickled collective (mpi4py's own messages, on its own communicator,
    // whose duplication the first such call makes).
    let direct = [
        (Op::Irecv, "Irecv", marked("Irecv", "exchange")),
        (Op::Isend, "Isend", marked("Isend", "exchange")),
        (Op::Waitall, "Waitall", marked("Waitall", "exchange")),
        (Op::Barrier, "Barrier", marked("Barrier", "main")),
    ];
    let allreduce = marked("allreduce", "reduce_all");
    let send = marked("send", "pass_dict");
    let recv = marked("recv", "pass_dict");
    // pkl5's calls are made by its own Python code, inside mpi4py's package: passed over.
    let pkl5_send = marked("pkl5 send", "pass_dict_pkl5");
    let pkl5_recv = marked("pkl5 recv", "pass_dict_pkl5");
    for r in &t.info.ranks {
        let rank = r.rank;
        let mine = &issued[&rank];
        let sites: BTreeMap<u64, &SourceSite> = r.source_sites.iter().map(|s| (s.id, s)).collect();
        let mut at: BTreeMap<(u32, String), Vec<Op>> = BTreeMap::new();
        for c in calls(&t, rank) {
            let site = c.args.site.and_then(|s| sites.get(&s));
            match (c.op, site) {
                // mpi4py finalizes MPI (freeing its communicators first) once the
                // interpreter is torn down: no Python frame, the native site stays.
                (Op::Finalize | Op::CommFree, None) => {}
                (op, None) => panic!("rank {rank}: {op:?} has no Python site: {c:?}"),
                (op, Some(s)) => {
                    assert!(s.file.ends_with(PROGRAM), "rank {rank}: {op:?} at {s:?}");
                    let function = s.function.clone().expect("a function");
                    at.entry((s.line, function)).or_default().push(op);
                }
            }
        }
        let expect_at = |site: &(u32, String)| at.get(site).cloned().unwrap_or_default();
        assert_eq!(expect_at(&init), [Op::InitThread], "rank {rank}: {at:?}");
        for (op, name, site) in &direct {
            assert_eq!(
                expect_at(site),
                vec![*op; mine[*name]],
                "rank {rank}: {name} at {site:?}"
            );
        }
        let reduced = expect_at(&allreduce);
        assert!(
            !reduced.is_empty(),
            "rank {rank}: the pickled allreduce: {at:?}"
        );
        let (pkl5_line, pkl5_ops) = match rank {
            0 => (&pkl5_send, "sends"),
            _ => (&pkl5_recv, "receives"),
        };
        assert!(
            !expect_at(pkl5_line).is_empty(),
            "rank {rank}: pkl5 {pkl5_ops} on the program's line: {at:?}"
        );
        match rank {
            0 => assert_eq!(expect_at(&send), [Op::Send], "rank 0: {at:?}"),
            // mpi4py receives a pickle of unknown size with a matched probe.
            _ => assert_eq!(expect_at(&recv), [Op::Mprobe, Op::Mrecv], "rank 1: {at:?}"),
        }
        let lines: BTreeSet<&(u32, String)> = at.keys().collect();
        let known: BTreeSet<&(u32, String)> =
            [&init, &allreduce, &send, &recv, &pkl5_send, &pkl5_recv]
                .into_iter()
                .chain(direct.iter().map(|(_, _, s)| s))
                .collect();
        assert!(lines.is_subset(&known), "rank {rank}: {lines:?}");
    }
    // The ring's messages, the dict and the allreduce's, all matched and completed.
    assert!(
        t.info.messages > u64::from(3 * ranks),
        "{}",
        t.info.messages
    );
    assert_eq!((t.info.unmatched_sends, t.info.unmatched_receives), (0, 0));
    assert_eq!(never_completed(&out), BTreeMap::new(), "all completed");

    // The analyzer names them by the recorded line and function.
    let trace = overlap_analyzer::load::load(&out, &mut |_, _| {})
        .expect("loads")
        .trace;
    let table = SiteTable::build(&trace);
    let (isend, _) = marked("Isend", "exchange");
    let want = format!("{PROGRAM}:{isend} (exchange)");
    for tr in &trace.ranks {
        let labels: Vec<(String, Resolution)> = (0..tr.spans.len())
            .filter(|&i| tr.call(i).is_some_and(|(op, _)| op == Op::Isend))
            .map(|i| {
                let s = table.of_call(&trace, tr.rank, i).expect("a site");
                (s.label.clone(), s.resolution)
            })
            .collect();
        assert_eq!(labels, vec![(want.clone(), Resolution::Recorded); 3]);
    }
    // And `overlap analyze --json` lists them among the run's sites, as recorded.
    let json = Run {
        output: Command::new(overlap_bin())
            .args(["analyze", "--json"])
            .arg(&out)
            .output()
            .expect("overlap analyze runs"),
    };
    assert!(json.success(), "{}", json.describe());
    let report: serde_json::Value = serde_json::from_str(&json.stdout()).expect("JSON");
    let listed: BTreeMap<&str, &str> = report["by_site"]["sites"]
        .as_array()
        .expect("by_site.sites")
        .iter()
        .filter_map(|s| Some((s["label"].as_str()?, s["resolution"].as_str()?)))
        .collect();
    for (_, _, (line, function)) in &direct {
        let label = format!("{PROGRAM}:{line} ({function})");
        assert_eq!(
            listed.get(label.as_str()),
            Some(&"recorded"),
            "{label} among {listed:?}"
        );
    }
}

/// The calls of tests/programs/python_ctypes.py on `rank`, in order: (op, thread,
/// Python site as (line, function), when the call has one).
type Placed = Vec<(Op, u32, Option<(u32, String)>)>;

fn placed(out: &Path, rank: u32) -> Placed {
    let t = read_merged(out).expect("merged trace reads back");
    let info = t
        .info
        .ranks
        .iter()
        .find(|r| r.rank == rank)
        .expect("the rank");
    let sites: BTreeMap<u64, &SourceSite> = info.source_sites.iter().map(|s| (s.id, s)).collect();
    calls(&t, rank)
        .into_iter()
        .map(|c| {
            let site = c.args.site.and_then(|s| sites.get(&s)).map(|s| {
                assert!(s.file.ends_with("python_ctypes.py"), "{s:?}");
                (s.line, s.function.clone().expect("a function"))
            });
            (c.op, c.tid, site)
        })
        .collect()
}

/// Python without mpi4py (the interpreter `python3` names, MPI through ctypes): each
/// call is placed on its line whether the GIL is released around it or held, on the
/// main thread or another, and MPI_Finalize at module level; with
/// `OVERLAP_PYTHON_SITES=0` every site stays the native return address.
#[test]
fn python_calls_through_ctypes_are_placed_with_or_without_the_gil() {
    let python = PathBuf::from("python3");
    if !Command::new(&python)
        .args(["-c", "import ctypes"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("skipped: no python3 with ctypes");
        return;
    }
    let file = "python_ctypes.py";
    let program = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(file);
    let arg = program.to_str().expect("a UTF-8 path");
    let dir = tempfile::tempdir().expect("temp dir");
    let at = |marker: &str, function: &str| {
        Some((
            program_line(file, &format!("# site: {marker}")),
            function.to_string(),
        ))
    };
    let out = dir.path().join("ctypes.json");
    let run = trace_with(2, &python, &[arg], &[], &out);
    assert!(run.success(), "{}", run.describe());
    for rank in 0..2 {
        let want: Placed = vec![
            (Op::Init, 0, at("Init", "init")),
            (Op::Barrier, 0, at("Barrier, GIL released", "barrier")),
            (
                Op::Barrier,
                0,
                at("Barrier, GIL held", "barrier_holding_the_gil"),
            ),
            (Op::Barrier, 1, at("Barrier, GIL released", "barrier")),
            (Op::Finalize, 0, at("Finalize", "<module>")),
        ];
        assert_eq!(placed(&out, rank), want, "rank {rank}");
    }
    let out = dir.path().join("native.json");
    let run = trace_with(2, &python, &[arg], &[("OVERLAP_PYTHON_SITES", "0")], &out);
    assert!(run.success(), "{}", run.describe());
    for rank in 0..2 {
        let got = placed(&out, rank);
        assert_eq!(got.len(), 5, "rank {rank}: {got:?}");
        assert!(
            got.iter().all(|(_, _, s)| s.is_none()),
            "rank {rank}: {got:?}"
        );
    }
}
