//! Which rank files make one run. A trace directory that is reused holds the files of
//! several runs (another program, another world size, or just an earlier run with more
//! ranks); merging them would give a timeline of nothing real ("5 of 4 ranks"). So the
//! files must agree on their run id (16 hex digits rank 0 chose and broadcast at
//! `MPI_Init`; empty in files older than format version 5, which are compared by program
//! and world size only), program and world size; no rank may come twice, and none may
//! be at or above the world size. Anything else is refused, naming the files.

use std::collections::BTreeMap;
use std::path::Path;

use crate::model::RankTrace;
use crate::{Error, Result};

/// What the files of one run share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Identity<'a> {
    run_id: &'a str,
    program: &'a str,
    size: u32,
}

impl<'a> Identity<'a> {
    fn of<S>(t: &'a RankTrace<S>) -> Identity<'a> {
        Identity {
            run_id: &t.header.run_id,
            program: &t.header.program,
            size: t.header.size,
        }
    }

    fn describe(&self) -> String {
        let run = if self.run_id.is_empty() {
            "no run id (written before format version 5)".to_string()
        } else {
            format!("run {}", self.run_id)
        };
        format!(
            "{run}, program {:?}, world of {} rank(s)",
            self.program, self.size
        )
    }
}

/// Checks that `traces`, read from `dir`, are the files of one run.
pub(crate) fn check_one_run<S>(dir: &Path, traces: &[RankTrace<S>]) -> Result<()> {
    let refuse = |reason: String| {
        Err(Error::NotOneRun {
            dir: dir.to_path_buf(),
            reason,
        })
    };
    let mut runs: BTreeMap<Identity<'_>, Vec<&RankTrace<S>>> = BTreeMap::new();
    for t in traces {
        runs.entry(Identity::of(t)).or_default().push(t);
    }
    if runs.len() > 1 {
        return refuse(mixed_runs(&runs));
    }
    let mut by_rank: BTreeMap<u32, Vec<&RankTrace<S>>> = BTreeMap::new();
    for t in traces {
        by_rank.entry(t.rank()).or_default().push(t);
    }
    if let Some((rank, files)) = by_rank.iter().find(|(_, f)| f.len() > 1) {
        return refuse(format!(
            "rank {rank} comes from {} files ({}): a reused trace directory? remove the old \
             files",
            files.len(),
            names(files)
        ));
    }
    let beyond: Vec<&RankTrace<S>> = traces
        .iter()
        .filter(|t| t.rank() >= t.header.size)
        .collect();
    if let Some(first) = beyond.first() {
        let ranks = match first.header.size {
            0 => String::new(),
            n => format!(" (ranks are 0 to {})", n - 1),
        };
        return refuse(format!(
            "{} say(s) rank {} of a world of {} rank(s){ranks}: the header's rank or world \
             size is wrong",
            names(&beyond),
            first.rank(),
            first.header.size,
        ));
    }
    Ok(())
}

/// The message for files of several runs: each run with its files, then what differs.
fn mixed_runs<S>(runs: &BTreeMap<Identity<'_>, Vec<&RankTrace<S>>>) -> String {
    let mut groups: Vec<(&Identity<'_>, &Vec<&RankTrace<S>>)> = runs.iter().collect();
    // The odd ones out first.
    groups.sort_by_key(|(id, files)| (files.len(), **id));
    let parts: Vec<String> = groups
        .iter()
        .map(|(id, files)| format!("{} from {}", names(files), id.describe()))
        .collect();
    let ids: Vec<&Identity<'_>> = runs.keys().collect();
    let differs = |f: &dyn Fn(&Identity<'_>) -> String| {
        ids.iter()
            .map(|i| f(i))
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            > 1
    };
    let mut what = Vec::new();
    if differs(&|i| i.run_id.to_string()) {
        what.push("run id");
    }
    if differs(&|i| i.program.to_string()) {
        what.push("program");
    }
    if differs(&|i| i.size.to_string()) {
        what.push("world size");
    }
    format!(
        "the rank files are not from one run (they differ in {}): {}: a reused trace \
         directory? remove the old files (or trace into a fresh directory)",
        what.join(", "),
        parts.join("; ")
    )
}

/// The files' names (without the directory): all of them when few, else the first and
/// the last with the count.
fn names<S>(files: &[&RankTrace<S>]) -> String {
    let name = |t: &RankTrace<S>| {
        t.path.file_name().map_or_else(
            || t.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let mut sorted: Vec<&RankTrace<S>> = files.to_vec();
    sorted.sort_by_key(|t| t.rank());
    match sorted.as_slice() {
        [] => String::new(),
        few if few.len() <= 4 => few.iter().map(|t| name(t)).collect::<Vec<_>>().join(", "),
        many => format!(
            "{} .. {} ({} files)",
            name(many[0]),
            name(many[many.len() - 1]),
            many.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use overlap_format::schema::{Event, Header, Params, FORMAT_NAME, FORMAT_VERSION};
    use std::path::PathBuf;

    fn trace(rank: u32, size: u32, run_id: &str, program: &str, ext: &str) -> RankTrace {
        RankTrace {
            path: PathBuf::from(format!("/d/rank-{rank}.{ext}")),
            header: Header {
                format: FORMAT_NAME.into(),
                format_version: FORMAT_VERSION,
                rank,
                size,
                host: "h".into(),
                os_pid: 1,
                epoch_ns: 0,
                clock_domain: String::new(),
                program: program.into(),
                params: Params::new(),
                run_id: run_id.into(),
                start_unix_ns: 0,
            },
            threads: Default::default(),
            syncs: Vec::new(),
            sites: Vec::new(),
            events: Vec::<Event>::new(),
            footer: None,
            problems: Vec::new(),
            in_flight: Vec::new(),
            damaged: false,
            call_counts: None,
            call_paths: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn refusal(traces: &[RankTrace]) -> String {
        match check_one_run(Path::new("/d"), traces) {
            Err(e) => e.to_string(),
            Ok(()) => panic!("accepted"),
        }
    }

    #[test]
    fn one_run_passes_and_old_files_compare_by_program_and_size() {
        let run: Vec<RankTrace> = (0..3).map(|r| trace(r, 3, "1c", "./b", "ovlp")).collect();
        assert!(check_one_run(Path::new("/d"), &run).is_ok());
        let old: Vec<RankTrace> = (0..2).map(|r| trace(r, 2, "", "./b", "json")).collect();
        assert!(check_one_run(Path::new("/d"), &old).is_ok());
    }

    #[test]
    fn another_run_names_the_files_and_what_differs() {
        let mut run: Vec<RankTrace> = (0..3).map(|r| trace(r, 4, "1c", "./b", "ovlp")).collect();
        run.push(trace(3, 4, "8f", "./a", "ovlp"));
        let m = refusal(&run);
        assert!(
            m.contains(
                "differ in run id, program): rank-3.ovlp from run 8f, program \"./a\", world \
                 of 4 rank(s); rank-0.ovlp, rank-1.ovlp, rank-2.ovlp from run 1c, program \
                 \"./b\""
            ),
            "{m}"
        );
        assert!(m.contains("a reused trace directory?"), "{m}");
    }

    #[test]
    fn an_old_file_among_new_ones_is_another_run() {
        let run = vec![
            trace(0, 2, "1c", "./b", "ovlp"),
            trace(1, 2, "", "./b", "json"),
        ];
        let m = refusal(&run);
        assert!(m.contains("rank-1.json from no run id"), "{m}");
    }

    #[test]
    fn duplicates_and_ranks_beyond_the_world_are_refused() {
        let run = vec![
            trace(0, 2, "", "p", "json"),
            trace(0, 2, "", "p", "ovlp"),
            trace(1, 2, "", "p", "ovlp"),
        ];
        let m = refusal(&run);
        assert!(
            m.contains("rank 0 comes from 2 files (rank-0.json, rank-0.ovlp)"),
            "{m}"
        );
        let run: Vec<RankTrace> = (0..5).map(|r| trace(r, 4, "", "p", "ovlp")).collect();
        let m = refusal(&run);
        assert!(
            m.contains("rank-4.ovlp say(s) rank 4 of a world of 4 rank(s)"),
            "{m}"
        );
    }
}
