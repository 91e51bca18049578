//! The top room of the analyzer: the report's types ([`report`]), and [`analyze`], which
//! runs every analysis on a [`Trace`] in the order [`pass_order`] gives and assembles
//! the [`Report`]; [`analyze_dir`] makes the same report of a directory of rank files
//! without ever holding the run ([`by_parts`]). The rooms below it (metrics, sites, gpu, hang, profile, ops, replay)
//! each compute a part and know nothing of the whole; the printers above it
//! ([`crate::report`], `check`, the terminal UI) read the report it makes.

mod by_parts;
mod of_trace;
mod pass_order;
pub mod report;
mod rows;

use crate::metrics::options::Options;
use crate::metrics::pop;
use crate::model::Trace;

#[cfg(test)]
pub(crate) use by_parts::analyze_dir_in_parts_of;
pub use by_parts::{analyze_dir, analyze_dir_shared, DirAnalysis};
use of_trace::OfTrace;
pub use report::{ClockReport, Details, RankClockReport, Report, RunInfo, REPORT_VERSION};
pub use rows::{RowSink, Rows, Written};

/// Runs every analysis on `trace`, each step beside those whose memory it can share
/// ([`pass_order`] says in what order and why).
pub fn analyze(trace: &Trace, opts: &Options) -> (Report, Details) {
    let _span = tracing::info_span!("metrics").entered();
    let (replays, m) = pass_order::figures(trace, opts);
    let of_trace = OfTrace::of(trace, &m);
    assemble(of_trace, m, replays)
}

/// [`analyze`]'s report, of a trace that nothing needs afterwards: it is dropped while
/// the replays' program is built, and the per-instance figures behind the report (its
/// [`Details`]) are not kept, so that analysis peaks lower ([`pass_order`]). The report is
/// [`analyze`]'s, figure for figure.
pub fn analyze_owned(trace: Trace, opts: &Options) -> Report {
    analyze_owned_in_parts(trace, opts, pass_order::PART)
}

/// [`analyze_owned`], the requests' rows made `part` requests (whole ranks) at a time.
fn analyze_owned_in_parts(trace: Trace, opts: &Options, part: usize) -> Report {
    let _span = tracing::info_span!("metrics").entered();
    let (replays, m, of_trace) = pass_order::figures_owned(trace, opts, part, OfTrace::of);
    assemble(of_trace, m, replays).0
}

/// The report of the measured figures `m`, the parts read from the trace and the
/// replays, and the per-instance figures behind it.
fn assemble(
    of_trace: OfTrace,
    m: pass_order::Measured,
    replays: pass_order::Replays,
) -> (Report, Details) {
    let pop = pop::efficiencies(
        &m.ranks,
        &m.totals,
        &m.wait_states.per_rank_ns,
        replays.ideal,
    );
    let report = Report {
        report: "overlap-report",
        version: REPORT_VERSION,
        run: of_trace.run,
        ranks: m.ranks,
        totals: m.totals,
        wait_states: m.wait_states,
        requests: m.request_summary,
        false_overlap: m.false_overlap,
        pop,
        clock: of_trace.clock,
        by_site: m.by_site,
        hang: of_trace.hang,
        replay: replays.self_check.as_ref().ok().copied(),
        replay_unknown: replays.self_check.err(),
        gpu: of_trace.gpu,
        profile: m.profile,
    };
    let details = Details {
        waits: m.waits,
        requests: m.requests,
        findings: m.findings,
        sites: m.sites,
        chains: of_trace.chains,
    };
    (report, details)
}

#[cfg(test)]
mod tests {
    use super::{analyze, analyze_owned_in_parts, pass_order, Options};
    use crate::model::Trace;

    use crate::load::kept_runs;

    /// The analysis given the trace reports what the one that keeps it does, however
    /// the requests' rows are cut into parts of whole ranks: a rank at a time, a few,
    /// or all in one (the kept runs hold fewer requests than a part).
    #[test]
    fn the_report_does_not_depend_on_the_parts() {
        let opts = Options::default();
        for trace in kept_runs() {
            let kept = analyze(&trace, &opts).0;
            for part in [1, 7, pass_order::PART] {
                let given = analyze_owned_in_parts(trace.clone(), &opts, part);
                assert!(given == kept, "{}: parts of {part}", trace.source.display());
            }
        }
    }

    /// However few findings the report lists, it counts, sums and groups them all: its
    /// list is the first of the one that lists every finding, on either path and in
    /// parts of any size (some kept runs have more findings than listed here).
    #[test]
    fn the_findings_listed_are_the_worst_of_all() {
        let mut cut = 0;
        for trace in kept_runs() {
            let every = Options {
                findings: usize::MAX,
                ..Options::default()
            };
            let all = analyze(&trace, &every).0;
            let whole = &all.false_overlap;
            assert_eq!(whole.count, whole.worst.len() as u64);
            for listed in [0, 1, 2] {
                let opts = Options {
                    findings: listed,
                    ..Options::default()
                };
                let kept = analyze(&trace, &opts).0;
                let fo = &kept.false_overlap;
                let name = trace.source.display();
                assert_eq!(
                    (fo.count, fo.lost_ns, fo.hideable_ns),
                    (whole.count, whole.lost_ns, whole.hideable_ns),
                    "{name}"
                );
                assert_eq!(fo.worst[..], whole.worst[..listed.min(whole.worst.len())]);
                assert!(kept.by_site == all.by_site, "{name}");
                cut += usize::from(whole.worst.len() > listed);
                for part in [1, 7] {
                    let given = analyze_owned_in_parts(trace.clone(), &opts, part);
                    assert!(given == kept, "{name}: {listed} listed, parts of {part}");
                }
            }
        }
        // Fewer since a finding must hide more than its transfer's uncertainty (issue
        // 36): c-reorder, c-threads and false-overlap have three or more.
        assert!(cut >= 9, "runs with more findings than listed: {cut}");
    }

    /// Requests given out of rank order (as a trace built by hand may give them) are put
    /// back in it, each rank's kept in its order: the analysis is the one of the
    /// ordered trace, on either path, and does not fail.
    #[test]
    fn requests_out_of_rank_order_are_put_in_it() {
        let opts = Options::default();
        for trace in kept_runs() {
            let mut reversed = trace.requests.clone();
            reversed.sort_by_key(|r| std::cmp::Reverse(r.rank));
            let t = &trace;
            let again = Trace::new(
                t.source.clone(),
                t.info.clone(),
                t.ranks.clone(),
                t.messages.clone(),
                reversed,
            );
            assert!(again.requests == trace.requests, "{}", t.source.display());
            let kept = analyze(&trace, &opts).0;
            assert!(analyze(&again, &opts).0 == kept, "{}", t.source.display());
            let given = analyze_owned_in_parts(again, &opts, 1);
            assert!(given == kept, "{}", t.source.display());
        }
    }
}
