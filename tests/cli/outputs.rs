//! Nothing overwritten, nothing lost: a run's directory is held by that run alone (a
//! second run on the same `--out` is refused, naming the first, whose files are left
//! alone), a link planted where the ranks' files go is refused rather than followed,
//! and an interrupted merge leaves no temporary file and says how to merge again.

use std::process::{Command, Stdio};
use std::time::Duration;

use overlap_analyzer::import::read_merged;
use overlap_instrument::schema::Op;

use crate::launcher::{
    eventually, output, running, send, start_trace, unique_copy, wait_for, wait_until_recorded,
};
use crate::trace::program;
use crate::traces::counts;
use crate::util::{mpi_lock, overlap, overlap_bin};

#[test]
fn a_second_run_on_the_same_out_is_refused_and_the_first_keeps_its_files() {
    let _guard = mpi_lock();
    let dir = tempfile::tempdir().expect("temp dir");
    let spin = unique_copy(&program("spin"), dir.path(), "spin-held");
    let spin_arg = spin.to_str().expect("utf-8 temp path");
    let out = dir.path().join("run.json");
    let out_arg = out.to_str().expect("utf-8 temp path");
    let mut first = start_trace(dir.path(), &out, &[], &["mpiexec", "-n", "2", spin_arg]);
    let ranks_dir = out.with_extension("ranks");
    wait_until_recorded(&first, &ranks_dir, dir.path());
    let inode = |r: u32| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(ranks_dir.join(format!("rank-{r}.ovlp"))).map(|m| m.ino())
    };
    let before = (
        inode(0).expect("rank 0's file"),
        inode(1).expect("rank 1's file"),
    );

    let second = overlap(&[
        "trace", "--out", out_arg, "--", "mpiexec", "-n", "2", "true",
    ]);
    assert_eq!(
        second.output.status.code(),
        Some(1),
        "{}",
        second.describe()
    );
    second.assert_stderr_has("is in use by another run (pid ");
    second.assert_stderr_has(&format!("overlap trace -- mpiexec -n 2 {spin_arg}"));
    assert_eq!(
        (
            inode(0).expect("rank 0's file"),
            inode(1).expect("rank 1's file")
        ),
        before,
        "the first run's files are its own still"
    );

    send(&first, libc::SIGTERM);
    let status = wait_for(&mut first, Duration::from_secs(60), dir.path());
    let text = output(dir.path());
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{text}");
    assert!(
        eventually(Duration::from_secs(10), || !running(spin_arg)),
        "ranks of the run are left:\n{text}"
    );
    let trace = read_merged(&out).expect("the first run's merged trace reads back");
    for (rank, per) in counts(&trace) {
        assert!(
            per.get(&Op::Allreduce).copied().unwrap_or(0) > 0,
            "rank {rank} kept its calls:\n{text}"
        );
    }
}

#[test]
fn a_link_planted_where_the_ranks_files_go_is_refused_not_followed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let target = dir.path().join("precious");
    std::fs::create_dir(&target).expect("target dir");
    std::fs::write(target.join("rank-0.ovlp"), "not ours").expect("a file");
    let out = dir.path().join("t.json");
    std::os::unix::fs::symlink(&target, out.with_extension("ranks")).expect("planted link");
    let run = overlap(&[
        "trace",
        "--out",
        out.to_str().expect("utf-8"),
        "--",
        "mpiexec",
        "-n",
        "1",
        "true",
    ]);
    assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
    run.assert_stderr_has("t.ranks is a symbolic link");
    assert_eq!(
        std::fs::read_to_string(target.join("rank-0.ovlp")).expect("still there"),
        "not ours"
    );
}

#[test]
fn an_interrupted_merge_leaves_nothing_and_says_how_to_merge_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("many.json");
    // 2 × 100 000 calls: a merge of a second or more in a debug build, interrupted as
    // soon as it catches SIGTERM.
    let run = crate::trace::trace_with(2, &program("many"), &["100000"], &[], &out);
    assert!(run.success(), "{}", run.describe());
    let ranks = out.with_extension("ranks");
    let merged = dir.path().join("merged.json");
    let merge = Command::new(overlap_bin())
        .args(["merge", ranks.to_str().expect("utf-8"), "--out"])
        .arg(&merged)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("overlap merge starts");
    let caught = eventually(Duration::from_secs(60), || {
        catches(merge.id(), libc::SIGTERM)
    });
    assert!(
        caught,
        "overlap merge did not catch SIGTERM within a minute"
    );
    // SAFETY: plain kill(2) on a child of this test.
    assert_eq!(
        unsafe { libc::kill(merge.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let done = merge.wait_with_output().expect("overlap merge ends");
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(128 + libc::SIGTERM), "{err}");
    assert!(
        err.contains(&format!(
            "interrupted by SIGTERM while merging into {}: nothing was written to it; the \
             rank files in {} are intact: merge them with `overlap merge",
            merged.display(),
            ranks.display()
        )),
        "{err}"
    );
    assert_eq!(
        names_in(dir.path()),
        ["many.json", "many.ranks"],
        "nothing half-written is left"
    );
    let again = merge_into(&ranks, &merged);
    assert!(again.success(), "{}", again.describe());
}

/// `overlap ARGS` with writes limited to `limit` bytes a file (`ulimit -f`): a write
/// beyond fails with EFBIG, as on a full disk.
fn overlap_limited(args: &[&str], limit: u64) -> crate::util::Run {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(overlap_bin());
    cmd.args(args);
    // SAFETY: setrlimit(2) in the child before exec: async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let l = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &l) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    crate::util::Run {
        output: cmd.output().expect("overlap runs"),
    }
}

/// `overlap merge RANKS --out OUT`.
fn merge_into(ranks: &std::path::Path, out: &std::path::Path) -> crate::util::Run {
    overlap(&[
        "merge",
        ranks.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ])
}

/// True once process `pid` catches `signal`: its handler is installed (the `SigCgt`
/// mask of /proc/PID/status).
fn catches(pid: u32, signal: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok());
    mask.is_some_and(|m| m & (1 << (signal - 1)) != 0)
}

fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("listing")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn outputs_refused_for_room_leave_nothing_and_exit_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("t.json");
    let run = crate::util::run_false_overlap(2, "naive", 3, &trace, &[]);
    assert!(run.success(), "{}", run.describe());
    let t = trace.to_str().expect("utf-8");
    let out = tempfile::tempdir().expect("temp dir");
    let o = |name: &str| out.path().join(name).to_str().expect("utf-8").to_string();

    let baseline = overlap_limited(&["baseline", t, "--out", &o("gate.json")], 64);
    assert_eq!(
        baseline.output.status.code(),
        Some(2),
        "{}",
        baseline.describe()
    );
    baseline.assert_stderr_has(&format!("writing {}: File too large", o("gate.json")));

    let tables = overlap_limited(&["analyze", t, "--csv", &o("tables")], 64);
    assert_eq!(
        tables.output.status.code(),
        Some(2),
        "{}",
        tables.describe()
    );

    // In parts the large tables are written as the parts are analysed: refused on the
    // way, they leave nothing either (nor the directories made for them).
    let ranks = trace.with_extension("ranks");
    let r = ranks.to_str().expect("utf-8");
    let (csv, parquet) = (o("parts.csv"), o("parts.pq"));
    let args = [
        "analyze",
        r,
        "--hold",
        "parts",
        "--csv",
        &csv,
        "--parquet",
        &parquet,
    ];
    let tables = overlap_limited(&args, 64);
    assert_eq!(
        tables.output.status.code(),
        Some(2),
        "{}",
        tables.describe()
    );
    tables.assert_stderr_has("File too large");

    let merged = overlap_limited(
        &[
            "merge",
            ranks.to_str().expect("utf-8"),
            "--out",
            &o("m.json"),
        ],
        4096,
    );
    assert_eq!(
        merged.output.status.code(),
        Some(2),
        "{}",
        merged.describe()
    );
    merged.assert_stderr_has("File too large");
    assert_eq!(
        names_in(out.path()),
        Vec::<String>::new(),
        "nothing half-written is left"
    );
}

/// A launcher that fails (exit 11, as MPICH's for a rank's SIGSEGV) after its rank left
/// a file that is no trace: nothing merges, and `overlap trace` still exits with the
/// launcher's status, saying both, never asking whether it was an MPI program.
#[test]
fn a_failed_run_keeps_its_exit_status_when_nothing_merges() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("crashed.json");
    let script = dir.path().join("crash-launcher.sh");
    std::fs::write(
        &script,
        "printf 'not a trace' > \"$OVERLAP_TRACE_DIR/rank-0.ovlp\"\nexit 11\n",
    )
    .expect("script");
    let run = overlap(&[
        "trace",
        "--out",
        out.to_str().expect("utf-8"),
        "--",
        "sh",
        script.to_str().expect("utf-8"),
    ]);
    assert_eq!(run.output.status.code(), Some(11), "{}", run.describe());
    run.assert_stderr_has("failed (exit status: 11)");
    run.assert_stderr_has("nothing the ranks recorded could be merged from");
    assert!(
        !run.stderr().contains("was it an MPI program"),
        "{}",
        run.describe()
    );
}

/// `bytes`, a rank file, with its clock readings cut to the first: as a rank cut short
/// before its second reading leaves it (with a build that took that reading late).
fn with_one_reading(bytes: &[u8]) -> Vec<u8> {
    use overlap_format::stream::checksum;
    let le = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let mut out = bytes[..16].to_vec();
    let mut at = 16;
    let mut readings = 0;
    while at + 16 <= bytes.len() {
        let len = le(at) as usize;
        let (kind, frame) = (bytes[at + 4], &bytes[at..at + 16 + len]);
        if kind == 5 {
            // A calibration frame: keep the very first reading only.
            if readings == 0 {
                let payload = &frame[16..32];
                out.extend_from_slice(&16u32.to_le_bytes());
                out.extend_from_slice(&frame[4..12]);
                out.extend_from_slice(&checksum(payload).to_le_bytes());
                out.extend_from_slice(payload);
            }
            readings += len / 16;
        } else {
            out.extend_from_slice(frame);
        }
        at += 16 + len;
    }
    assert!(readings >= 2, "the run had its readings");
    out
}

#[test]
fn a_rank_with_one_clock_reading_borrows_those_of_its_host() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("t.json");
    let run = crate::util::run_false_overlap(2, "naive", 3, &trace, &[]);
    assert!(run.success(), "{}", run.describe());
    let ranks = trace.with_extension("ranks");
    let rank1 = ranks.join("rank-1.ovlp");
    let bytes = std::fs::read(&rank1).expect("rank 1's file");
    std::fs::write(&rank1, with_one_reading(&bytes)).expect("rewritten");
    let merged = dir.path().join("m.json");
    let m = merge_into(&ranks, &merged);
    assert!(m.success(), "{}", m.describe());
    m.assert_stderr_has("too few calibration readings of its own: its stamps are converted with those of another rank of host");
    let before = read_merged(&trace).expect("the run's merge");
    let after = read_merged(&merged).expect("the merge with one reading");
    assert_eq!(after.events.len(), before.events.len(), "no event lost");
    assert_eq!(after.info.messages, before.info.messages);
}

/// A rank that ended before its first page of events (its file holds the header only):
/// read as a rank that recorded nothing, whose figures are said to be unknown, not 0.
#[test]
fn a_rank_that_recorded_nothing_is_unknown_not_zero() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("t.json");
    let run = crate::util::run_false_overlap(2, "naive", 3, &trace, &[]);
    assert!(run.success(), "{}", run.describe());
    let ranks = trace.with_extension("ranks");
    let rank1 = ranks.join("rank-1.ovlp");
    let bytes = std::fs::read(&rank1).expect("rank 1's file");
    // The 16-byte opening and the header frame (its length at byte 16).
    let header = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes")) as usize;
    std::fs::write(&rank1, &bytes[..32 + header]).expect("cut");
    let merged = dir.path().join("m.json");
    let m = merge_into(&ranks, &merged);
    assert!(m.success(), "{}", m.describe());
    let said = "unknown: nothing it recorded reached its file";
    assert!(
        m.stdout()
            .lines()
            .any(|l| l.contains(said) && l.trim_start().starts_with('1')),
        "{}",
        m.describe()
    );
    let a = overlap(&["analyze", merged.to_str().expect("utf-8")]);
    assert!(a.success(), "{}", a.describe());
    a.assert_stdout_has(said);
}
