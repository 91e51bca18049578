//! The whole analysis, pinned: for each real run kept under `tests/data/reports/` (the
//! kernels and the preload's C and Fortran test programs, recorded once), the full JSON
//! report and every per-instance figure behind it, from the per-rank files and from the
//! merged file, and the merged file itself, compared with what they were when the run
//! was recorded. A change to how runs are read, merged or held in memory must leave
//! every figure as it was; one that means to change a figure re-blesses the files with
//! `OVERLAP_BLESS=1 cargo test -p overlap-analyzer --test reports` and says why.

use std::path::{Path, PathBuf};

use overlap_analyzer::analysis::{analyze, analyze_owned};
use overlap_analyzer::load::{load_dir, load_merged};
use overlap_analyzer::merge::{merge_dir, write_merged};
use overlap_analyzer::metrics::{Finding, Options};
use overlap_analyzer::model::Trace;
use overlap_analyzer::ops::{extract, extract_measured, extract_owned, MeasuredProgram};
use overlap_analyzer::summary::merge_to_file;
use overlap_analyzer::summary::summarize;

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reports");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/data/reports")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("ranks").is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 10, "the runs under {}", root.display());
    dirs
}

/// A pool of one thread, where what runs on rayon's threads takes its one-thread path.
fn one_thread() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a thread pool")
}

/// The report and the per-instance figures of a trace, as text, with the paths the
/// test ran from replaced by `SOURCE`.
fn figures(trace: &Trace, source: &Path) -> (String, String) {
    let (report, details) = analyze(trace, &Options::default());
    let json = serde_json::to_string_pretty(&report).expect("report as JSON");
    // The analysis that is given the trace (it drops it while the replays' program is
    // built, and folds the requests' rows a rank at a time) reports the same, and
    // builds the same program, a rank at a time or all at once: the whole program's,
    // encoded for the replays of the measured order.
    let owned = analyze_owned(trace.clone(), &Options::default());
    assert!(
        owned == report,
        "{}: analyze_owned differs",
        source.display()
    );
    let kept = extract(trace).ok().map(MeasuredProgram::of);
    let one_thread = one_thread();
    for pool in [None, Some(&one_thread)] {
        let given = trace.clone();
        let (owned, measured) = match pool {
            Some(p) => p.install(|| (extract_owned(given), extract_measured(trace))),
            None => (extract_owned(given), extract_measured(trace)),
        };
        let threads = pool.map_or(rayon::current_num_threads(), |p| p.current_num_threads());
        let name = source.display();
        assert!(
            owned.ok() == kept,
            "{name}: extract_owned differs ({threads} threads)"
        );
        assert!(
            measured.ok() == kept,
            "{name}: extract_measured differs ({threads} threads)"
        );
    }
    // Every finding is behind the report, in its order; these runs have fewer than it
    // lists, so it lists each (its call sites named).
    let place = |f: &Finding| (f.rank, f.wait.index, f.lost_ns, f.possible.hideable_ns);
    let listed = report.false_overlap.worst.iter().map(place);
    assert!(
        details.findings.iter().map(place).eq(listed),
        "{}: the findings behind the report",
        source.display()
    );
    // One line per instance, so that a difference names the instance.
    let mut lines: Vec<String> = Vec::new();
    lines.extend(details.waits.iter().map(|w| format!("{w:?}")));
    // A request's figures in the report's form (its calls named and timed), as they
    // were pinned when analysis kept every request in that form.
    for r in &details.requests {
        let m = r
            .metrics(trace)
            .expect("a request's post is a call of the trace");
        lines.push(format!("{m:?}"));
    }
    lines.extend(details.chains.iter().map(|c| format!("{c:?}")));
    lines.push(format!("{:?}", details.sites));
    let details = lines.join("\n") + "\n";
    let at = source.display().to_string();
    (json.replace(&at, "SOURCE"), details.replace(&at, "SOURCE"))
}

/// Compares `got` with the file `name` of `dir` (writes it under OVERLAP_BLESS).
fn expect(dir: &Path, name: &str, got: &[u8]) {
    let path = dir.join(name);
    if std::env::var_os("OVERLAP_BLESS").is_some() {
        std::fs::write(&path, got).expect("bless");
        return;
    }
    let want = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if want != got {
        let (want, got) = (String::from_utf8_lossy(&want), String::from_utf8_lossy(got));
        let line = want
            .lines()
            .zip(got.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(got.lines().count()));
        panic!(
            "{}: differs from line {}:\n  was: {:?}\n  now: {:?}",
            path.display(),
            line + 1,
            want.lines().nth(line).unwrap_or("(end)"),
            got.lines().nth(line).unwrap_or("(end)")
        );
    }
}

/// Points the symbolizer at the programs kept beside the C runs (`objects/`): they ran
/// from `/tmp/gp`, which a fresh machine does not have, and their call sites are read
/// from these copies wherever the test runs.
fn search_the_kept_programs(cases: &[PathBuf]) {
    let folders = cases
        .iter()
        .map(|c| c.join("objects"))
        .filter(|f| f.is_dir());
    let path = std::env::join_paths(folders).expect("folders without ':'");
    std::env::set_var(overlap_analyzer::sites::symbolize::SYMBOL_PATH_VAR, path);
}

#[test]
fn every_figure_of_the_kept_runs_is_unchanged() {
    let cases = cases();
    // Set before any thread of the analysis reads the environment (the only test here).
    search_the_kept_programs(&cases);
    for case in cases {
        let ranks = case.join("ranks");
        let loaded = load_dir(&ranks, &mut |_, _| {}).expect("load the rank files");
        let (report, details) = figures(&loaded.trace, &ranks);
        expect(&case, "report.json", report.as_bytes());
        expect(&case, "details.txt", details.as_bytes());

        let tmp = tempfile::tempdir().expect("tempdir");
        let merged_path = tmp.path().join("run.json");
        let outcome = merge_dir(&ranks).expect("merge");
        write_merged(&outcome.merged, &merged_path).expect("write the merged file");
        let merged = std::fs::read(&merged_path).expect("read it back");
        expect(&case, "merged.json", &merged);

        // The merge that holds one rank at a time writes the same file, and tells the
        // same about the run.
        let streamed_path = tmp.path().join("streamed.json");
        let written = merge_to_file(&ranks, &streamed_path).expect("merge one rank at a time");
        let streamed = std::fs::read(&streamed_path).expect("read it back");
        assert!(
            streamed == merged,
            "{}: the two merges differ",
            case.display()
        );
        // On one thread it reads each rank after writing the one before, not beside it.
        let alone_path = tmp.path().join("one-thread.json");
        let alone = one_thread()
            .install(|| merge_to_file(&ranks, &alone_path))
            .expect("merge on one thread");
        let alone_bytes = std::fs::read(&alone_path).expect("read it back");
        assert!(
            alone_bytes == merged,
            "{}: the merge on one thread differs",
            case.display()
        );
        assert_eq!(alone.info, written.info, "{}", case.display());
        assert_eq!(written.info, outcome.merged.info, "{}", case.display());
        assert_eq!(written.notes, outcome.notes, "{}", case.display());
        let in_memory = outcome.merged.to_trace(&merged_path);
        assert_eq!(written.summary, summarize(&in_memory), "{}", case.display());

        let loaded = load_merged(&merged_path, &mut |_, _| {}).expect("load the merged file");
        let (report, details) = figures(&loaded.trace, &merged_path);
        expect(&case, "report-merged.json", report.as_bytes());
        expect(&case, "details-merged.txt", details.as_bytes());
    }
}
