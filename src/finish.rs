//! What is told once per-rank files are merged, and once a supervised run is over:
//! `overlap trace` and `overlap run` end their runs the same way, whatever launched them.
//!
//! After a run, what the ranks recorded is merged and the merge reported; a run that did
//! not end well (it failed, or `overlap` stopped it) gets the summary of what was merged
//! and its hang section, then how it ended, and `overlap` exits with that failure's
//! status.

use std::fmt;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use overlap_analyzer::load::load_dir;
use overlap_analyzer::merge::{Output, TraceFormat, Unreadable};
use overlap_analyzer::summary::RunSummary;

/// What merging a directory into a file did, and the run's summary.
type Written = overlap_analyzer::merge::Written<RunSummary>;
use overlap_analyzer::model::Trace;
use overlap_instrument::schema::MergedInfo;

use crate::output::sayln;
use crate::supervise::Ending;

/// Merges the rank files in `dir` into `out`; a signal meanwhile ends `overlap` saying
/// that nothing was written and the rank files are intact. `strict`: a run with a rank
/// missing, cut short or unreadable is said and refused before anything is written.
pub(crate) fn merge(
    dir: &Path,
    out: &Path,
    output: &Output,
    strict: bool,
) -> overlap_analyzer::Result<Written> {
    let _doing = crate::interrupt::Doing::start(&crate::interrupt::merging(dir, out));
    overlap_analyzer::summary::merge_to_file_if(dir, out, output, |info, unreadable, size| {
        // Said before the file is written: it may take a while, and not open in the UI.
        if let Some(advice) = size.advice(dir, out) {
            sayln!("warning: {advice}");
        }
        let problems = unreadable.len() + info.missing_ranks.len() + info.incomplete.len();
        if !strict || problems == 0 {
            return Ok(());
        }
        warn_incomplete(unreadable, info, |_| {
            format!("no trace file in {}", dir.display())
        });
        Err(format!(
            "--strict: {problems} rank file(s) missing, cut short or unreadable: nothing \
             written to {}",
            out.display()
        ))
    })
}

/// What to do with a merged trace `out` written in `format` from `ranks_dir`: open it
/// in Perfetto and analyze the rank directory (protobuf), or analyze it (JSON).
pub(crate) fn what_next(out: &Path, format: TraceFormat, ranks_dir: &Path) -> String {
    match format {
        TraceFormat::Json => format!("analyze it with `overlap analyze {}`", out.display()),
        TraceFormat::Pftrace => format!(
            "open it at https://ui.perfetto.dev; analyze the run with `overlap analyze {}`",
            ranks_dir.display()
        ),
    }
}

/// True when `e` is an output that found no room (a full disk, a quota, a file-size
/// limit).
fn out_of_room(e: &overlap_analyzer::Error) -> bool {
    use overlap_analyzer::output::OutputError;
    let overlap_analyzer::Error::Output(OutputError::Io { cause, .. }) = e else {
        return false;
    };
    matches!(
        cause.raw_os_error(),
        Some(libc::ENOSPC | libc::EDQUOT | libc::EFBIG)
    )
}

/// Warns on stderr about what of a run could not be used: files `unreadable`, ranks cut
/// short, the merge's own warnings, and each missing rank as `missing` says it.
pub(crate) fn warn_incomplete(
    unreadable: &[Unreadable],
    info: &MergedInfo,
    missing: impl Fn(u32) -> String,
) {
    for u in unreadable {
        sayln!("warning: {}: skipped: {}", u.path.display(), u.reason);
    }
    for r in &info.missing_ranks {
        sayln!("warning: rank {r}: {}", missing(*r));
    }
    for inc in &info.incomplete {
        sayln!(
            "warning: rank {}: trace incomplete ({} events kept from {}): {}",
            inc.rank,
            inc.events_read,
            inc.file,
            inc.reason
        );
    }
    for w in overlap_analyzer::merge::warnings(info) {
        sayln!("warning: {w}");
    }
}

/// Reports on stderr what was missing from a merge written to `out`, and returns the
/// line saying what was merged.
pub(crate) fn report_merge(w: &Written, dir: &Path, out: &Path) -> String {
    let info = &w.info;
    warn_incomplete(&w.unreadable, info, |_| {
        format!(
            "no trace file in {} (the rank never started recording)",
            dir.display()
        )
    });
    for n in &w.notes {
        sayln!("warning: {n}");
    }
    if !info.incomplete.is_empty() {
        if let Some(full) = crate::disk::full_note(dir) {
            sayln!("warning: {full}: a rank cut short most likely ran out of room");
        }
    }
    if !info.clock_suspect.is_empty() {
        sayln!(
            "warning: {} message(s) complete before they were sent once clocks are aligned; \
             flagged as clock-suspect",
            info.clock_suspect.len()
        );
    }
    let size = std::fs::metadata(out).map(|md| md.len()).unwrap_or(0);
    // Events as `analyze` counts them (docs/metrics.md, "Events"); the file's own
    // entries (events, flows, tracks and metadata) are another count, named apart.
    let events: u64 = info.ranks.iter().map(|r| r.events).sum();
    format!(
        "merged {} rank(s): {events} events, {} messages ({} unmatched sends, {} unmatched \
         receives) into {} ({} trace-file entries, {:.1} KiB)",
        info.ranks.len(),
        info.messages,
        info.unmatched_sends,
        info.unmatched_receives,
        out.display(),
        w.events,
        size as f64 / 1024.0
    )
}

/// The merged run in full, read again from its rank files in `ranks_dir`, as the
/// merged file `out`.
pub(crate) fn load_run(ranks_dir: &Path, out: &Path) -> Result<Trace> {
    overlap_analyzer::heap::set_thresholds();
    let loaded = load_dir(ranks_dir, &mut |_, _| {})
        .with_context(|| format!("reading {} again", ranks_dir.display()))?;
    let mut trace = loaded.trace;
    trace.source = out.to_path_buf();
    Ok(trace)
}

/// How a run that `overlap` stopped ended, for the user.
pub(crate) fn stopped(ending: &Ending) -> String {
    match ending {
        Ending::Finished(status) => format!("the run ended ({status})"),
        Ending::Interrupted { signal, status } => format!(
            "interrupted by {}: the run was stopped (the launcher ended with {status})",
            crate::supervise::signal_name(*signal)
        ),
        Ending::Hung { status } => {
            format!("the run was hung: it was stopped (the launcher ended with {status})")
        }
    }
}

/// A run that did not end well: what to tell, and `overlap`'s exit status.
pub(crate) struct Failure {
    /// What happened: its first line names it, more lines may follow.
    pub message: String,
    pub code: u8,
}

/// A supervised run that is over.
pub(crate) struct RunEnd<'a> {
    /// Where the ranks wrote their files.
    pub ranks_dir: &'a Path,
    /// The merged trace to write.
    pub out: &'a Path,
    /// Where the merge line, the summary and the hang section go: stdout for `overlap
    /// run`, stderr for `overlap trace` (whose stdout is the program's).
    pub print: fn(fmt::Arguments<'_>),
}

impl RunEnd<'_> {
    /// Merges into `out` what `merged` (the ranks' files, merged) holds and says so.
    /// `failure` tells how the run failed or was stopped, `None` for a clean run, whose
    /// merge is handed back for the caller to show. A failed or stopped run gets the
    /// summary and the hang section of what was merged, then its failure on stderr; its
    /// exit status is handed back, merged or not. When a clean run's merge fails, that
    /// is the error: `no_trace` its context when no rank left a readable file on a disk
    /// with room, the full disk named when there is none.
    pub(crate) fn finish(
        &self,
        merged: overlap_analyzer::Result<Written>,
        failure: Option<Failure>,
        no_trace: String,
    ) -> Result<std::result::Result<Written, ExitCode>> {
        let m = match merged {
            Ok(m) => m,
            Err(e) => return self.merge_failed(e, failure, no_trace),
        };
        let line = report_merge(&m, self.ranks_dir, self.out);
        (self.print)(format_args!("{line}\n"));
        let Some(f) = failure else {
            return Ok(Ok(m));
        };
        self.summary(&m)?;
        sayln!(
            "overlap: {}\nwhat the ranks recorded is merged in {}",
            f.message,
            self.out.display()
        );
        Ok(Err(ExitCode::from(f.code)))
    }

    /// The merge failed: see [`RunEnd::finish`].
    fn merge_failed(
        &self,
        e: overlap_analyzer::Error,
        failure: Option<Failure>,
        no_trace: String,
    ) -> Result<std::result::Result<Written, ExitCode>> {
        let full = [self.ranks_dir, self.out]
            .into_iter()
            .find_map(crate::disk::full_note);
        let intact = format!(
            "the rank files in {dir} are kept: merge them with `overlap merge {dir} --out {out}`{room}",
            dir = self.ranks_dir.display(),
            out = self.out.display(),
            room = if full.is_some() || out_of_room(&e) { " once there is room" } else { "" },
        );
        let full_line = full.map(|f| format!("\n{f}")).unwrap_or_default();
        let nothing_recorded = matches!(e, overlap_analyzer::Error::NoRanks { .. });
        if let Some(f) = failure {
            let again = if nothing_recorded {
                String::new()
            } else {
                format!("\n{intact}")
            };
            sayln!(
                "overlap: {}\nnothing the ranks recorded could be merged from {}: \
                 {}{full_line}{again}",
                f.message,
                self.ranks_dir.display(),
                crate::error_chain(&anyhow::Error::new(e))
            );
            return Ok(Err(ExitCode::from(f.code)));
        }
        if nothing_recorded && full_line.is_empty() {
            return Err(anyhow::Error::new(e).context(no_trace));
        }
        let cause = e.to_string();
        Err(anyhow::Error::new(e).context(format!("{cause}{full_line}\n{intact}")))
    }

    /// The summary table of the merged run, the MPI functions it calls that are not
    /// recorded, and where its ranks hung (when they did).
    /// Only a run whose ranks dumped the calls they were in is read again whole: the hang
    /// section needs every rank's calls.
    pub(crate) fn summary(&self, w: &Written) -> Result<()> {
        (self.print)(format_args!("{}", w.summary.to_table()));
        let cpus = overlap_analyzer::metrics::oversubscription::Oversubscription::of(&w.info);
        if let Some(line) = cpus.warning() {
            (self.print)(format_args!("{line}\n"));
        }
        if let Some(note) = crate::trace::unrecorded_note(&w.info) {
            (self.print)(format_args!("{note}\n"));
        }
        for unseen in overlap_analyzer::unrecorded::unseen_requests(&w.info) {
            (self.print)(format_args!("warning: {unseen}\n"));
        }
        if w.info.ranks.iter().any(|r| r.in_flight.is_some()) {
            let trace = load_run(self.ranks_dir, self.out)?;
            if let Some(hang) = overlap_analyzer::report::hang::section_of(&trace) {
                (self.print)(format_args!("{hang}"));
            }
        }
        Ok(())
    }
}
