//! The analysis of a directory of rank files that never holds the run whole. The first
//! pass ([`crate::metrics::digest`]) reads each rank once and keeps what crosses ranks
//! and what the run keeps of each rank (messages, requests, compute, budgets, sites,
//! the message ends and collective members), each timeline dropped once digested. The
//! second pass, here, reads the ranks again a part of whole ranks at a time
//! ([`Parts`]), makes every figure that needs a rank's events from that part beside the
//! first pass's columns ([`folds`]), and drops the part; a third reading builds the
//! replays' program a part at a time, once what the figures held is dropped:
//!
//! ```text
//!  first pass   every rank once ─► columns (messages, requests, compute, ends, ...)
//!  columns      models | scheduler's time | partner times | shared wait candidates
//!  second pass  part 1 (ranks 0..k) ─► waits | flagged | by site | profile | facts
//!                                      | request rows ─► summary fold ∥ findings
//!               part 2 ...            (each part's timelines dropped before the next)
//!  then         wait summary, the folds finished | ends, partner times dropped
//!  third pass   part 1 ─► operations, encoded | part 2 ... | messages linked
//!  then         columns dropped | ideal ∥ self-check replay
//! ```
//!
//! Each figure is the one function the analysis of a whole trace calls, given a part
//! trace ([`crate::model::Trace::part`]): only the fold differs, and a test holds the
//! report equal to the whole trace's on every kept run, cut into parts of every size.
//! A part finds its messages by rank ([`MessagesByRank`]), so that its time is its own,
//! not the run's. The rows behind the figures (each call, request, wait-state instance
//! and finding; then the messages) are handed to a [`super::RowSink`] as each part is
//! folded, when one is given (the tables of `--csv`/`--parquet`), and never held.
//!
//! In a job of several workers, each digests the block of ranks whose figures it makes
//! and keeps their compute and requests; worker 0 makes the other columns and sends each
//! other worker the view of its block ([`view`]); each folds its block's parts over it
//! ([`worker`]) and sends the folds and rows back, then its requests, which the program
//! reads once the figures' columns are dropped. [`parts`] reads the parts, here and at
//! the workers.

mod folds;
mod parts;
#[cfg(test)]
mod tests;
mod view;
mod worker;

use std::ops::Range;
use std::path::Path;

use overlap_format::schema::MergedInfo;

use super::of_trace::OfTrace;
use super::pass_order::{self, Measured, Models};
use super::rows::Rows;
use super::Report;
use crate::exchange::wire::Bytes;
use crate::exchange::{gather, gather_each, scatter, Alone, Exchange, Values};
use crate::import::{rank_files, Reading};
use crate::merge::{file_size, Unreadable};
use crate::metrics::budget::{RankBudget, RunBudget};
use crate::metrics::collectives::CallInstances;
use crate::metrics::cross_rank::CrossRank;
use crate::metrics::descheduled::DescheduledTime;
use crate::metrics::digest::{digest_dir, Digested};
use crate::metrics::digest_share::{digest_dir_shared, RequestColumn, Shared};
use crate::metrics::options::Options;
use crate::metrics::oversubscription::Oversubscription;
use crate::metrics::requests::{LastPosts, RequestPass};
use crate::metrics::wait_states;
use crate::model::{MessagesByRank, RankWork, RequestLife};
use crate::ops::{Builder, ExtractError, Keep, MeasuredProgram, Run, RunMessages};
use crate::regions::RunRegions;
use crate::sites::SiteTable;
use crate::Result;
use folds::{Folds, Partial};
use parts::{blocks_of, PartSize, Parts};
use view::{Block, RunColumns, Task, TaskRead, TaskWritten, ViewOf};
use worker::figures_of_block;

/// What the analysis of a directory of rank files gives: the report, the regions, and
/// what of the directory could not be used.
pub struct DirAnalysis {
    /// The report, figure for figure the one of the run loaded whole.
    pub report: Report,
    /// The run's regions.
    pub regions: RunRegions,
    /// The run's description, as the merge gives it.
    pub info: MergedInfo,
    /// Files of the directory that could not be used at all.
    pub unreadable: Vec<Unreadable>,
    /// What was read but could not be used in full, one line each naming its file.
    pub notes: Vec<String>,
    /// The work of each rank read, in rank order.
    pub work: Vec<RankWork>,
    /// The ranks read whose data ends early, in rank order.
    pub ends_early: Vec<u32>,
}

/// The report of the run whose rank files are in `dir` (what [`super::analyze_owned`]
/// makes of it loaded whole), its files read three times and the run never held whole:
/// at most a part of its ranks' events at a time beside the columns of the first pass.
pub fn analyze_dir(dir: &Path, opts: &Options) -> Result<DirAnalysis> {
    let run = analyze_in_parts(dir, opts, None, &Alone, &|_, _| {}, None)?;
    Ok(run.expect("one process is worker 0"))
}

/// [`analyze_dir`] made by the workers of `exchange`: each reads its share of the
/// rank files for the first pass ([`crate::metrics::digest_share`]) and folds its block
/// of ranks for the figures ([`worker`]), and worker 0 makes the rest of the report,
/// which it alone returns (`None` at the others). `tell` is
/// told of the readings of this worker; `rows` takes the figures' rows of the parts this
/// worker analyses (worker 0 those of every worker: the others' sinks write theirs for
/// it, [`super::RowSink::written`]).
pub fn analyze_dir_shared(
    dir: &Path,
    opts: &Options,
    exchange: &dyn Exchange,
    tell: &(dyn Fn(u64, u64) + Sync),
    rows: Rows<'_>,
) -> Result<Option<DirAnalysis>> {
    analyze_in_parts(dir, opts, None, exchange, tell, rows)
}

/// [`analyze_dir_shared`] by the workers of `exchange`, in parts of at least `events`
/// events (whole ranks), each worker's rows given to its `rows`: what the tables' tests
/// cut the kept runs into.
#[cfg(test)]
pub(crate) fn analyze_dir_in_parts_of(
    dir: &Path,
    opts: &Options,
    events: u64,
    exchange: &dyn Exchange,
    rows: Rows<'_>,
) -> Result<Option<DirAnalysis>> {
    let at_least = Some(PartSize::of_events(events));
    analyze_in_parts(dir, opts, at_least, exchange, &|_, _| {}, rows)
}

/// [`analyze_dir_shared`], each part at least `at_least` (`None`: [`PartSize::of_run`]).
fn analyze_in_parts(
    dir: &Path,
    opts: &Options,
    at_least: Option<PartSize>,
    exchange: &dyn Exchange,
    tell: &(dyn Fn(u64, u64) + Sync),
    mut rows: Rows<'_>,
) -> Result<Option<DirAnalysis>> {
    let _span = tracing::info_span!("metrics").entered();
    // Every file is read through once, then each usable one three times (the first
    // pass, the figures, the program): the total is known once the first is done.
    let listed: u64 = rank_files(dir)?.iter().map(|f| file_size(f)).sum();
    let reading = Reading::new(4 * listed, tell);
    let mut digested = match exchange.workers() {
        1 => digest_dir(dir, &reading)?,
        _ => match digest_dir_shared(dir, &reading, exchange)? {
            Shared::Joined(digested) => *digested,
            Shared::Own(files, kept) => {
                let block = (*files, kept);
                figures_of_block(dir, opts, exchange, block, (&reading, at_least), rows)?;
                return Ok(None);
            }
        },
    };
    let (unreadable, notes) = (
        std::mem::take(&mut digested.unreadable),
        std::mem::take(&mut digested.notes),
    );
    let (work, ends_early) = (
        std::mem::take(&mut digested.work),
        std::mem::take(&mut digested.ends_early),
    );
    let Digested {
        info,
        messages,
        requests,
        request_starts,
        compute,
        budgets,
        sites,
        cross,
        instances,
        by_rank,
        files,
        ..
    } = digested;
    let at_least = Parts::sized(&files, at_least);
    let blocks = blocks_of(&files, exchange.workers());
    // Past the first pass, this worker reads its block's usable files for the figures
    // and every usable one for the program: in one process, every one twice more.
    let usable: u64 = (0..files.metas.len()).map(|i| files.bytes(i)).sum();
    let own: u64 = blocks[0].files.clone().map(|i| files.bytes(i)).sum();
    reading.set_total(reading.done() + own + usable);
    let columns = (info, messages, requests);
    let mut parts = Parts::new((dir, &reading), columns, compute, (0, files));
    let models = Models::fit(parts.columns(), &cross);
    // What the program reads of the collectives, kept beside the figures (little).
    let nonblocking: Vec<Vec<usize>> = (cross.collectives.nonblocking.iter())
        .map(|members| members.iter().map(|r| r.request).collect())
        .collect();
    let columns = (cross, by_rank, sites, budgets);
    let sink = rows.as_deref_mut();
    let job = (exchange, blocks, request_starts);
    let measured = measured(&mut parts, columns, &models, opts, (at_least, sink), &job);
    // The other blocks' requests, which their workers kept for their figures, come back
    // for the program once the figures' columns are dropped (whether they were made:
    // every worker sends its own).
    let theirs = match exchange.workers() {
        1 => Ok(()),
        _ => take_requests(exchange, &mut parts.run.requests, &job.2),
    };
    let (measured, of_trace, regions) = measured?;
    theirs?;
    let program = program(&mut parts, instances, &nonblocking, &models, at_least)?;
    // The columns go before the replays.
    let info = parts.run.info.clone();
    drop(parts);
    crate::heap::release_free();
    let replays = pass_order::replay(program.as_ref(), &models);
    drop(program);
    let (report, details) = super::assemble(of_trace, measured, replays);
    if let Some(rows) = rows {
        rows.chains(&details.chains);
    }
    Ok(Some(DirAnalysis {
        report,
        regions,
        info,
        unreadable,
        notes,
        work,
        ends_early,
    }))
}

/// What the first pass found that the second reads beside each part: what crosses
/// ranks, the messages by rank, the site table and the budgets.
type Columns = (
    CrossRank,
    MessagesByRank,
    SiteTable,
    (Vec<RankBudget>, RunBudget),
);

/// The measured figures, the parts of the report read from the ranks, and the regions,
/// of the run `parts` reads (the second pass), beside the first pass's columns: what
/// crosses ranks, the site table and the budgets; the rows of each part, and then the
/// run's messages, given to `rows`. Each rank's compute is dropped afterwards: nothing
/// after reads it.
fn measured(
    parts: &mut Parts<'_>,
    (cross, index, sites, (ranks, totals)): Columns,
    models: &Models,
    opts: &Options,
    (at_least, mut rows): (PartSize, Rows<'_>),
    (exchange, blocks, starts): &Job<'_>,
) -> Result<(Measured, OfTrace, RunRegions)> {
    let columns = tracing::info_span!("columns").entered();
    let run = parts.columns();
    let (model, collective_model) = (&models.transfers, &models.collectives);
    let hosts = Oversubscription::of(&run.info);
    let descheduled = {
        let _s = tracing::info_span!("scheduler's time").entered();
        DescheduledTime::of(run, &cross.messages, &hosts, model)
    };
    let pass = {
        let _s = tracing::info_span!("request pass").entered();
        RequestPass::new(run, &cross, model, collective_model, opts)
    };
    let shared = wait_states::shared_candidates(&cross);
    // What each block's requests read of their non-blocking collectives, for the views.
    let last_posts: Vec<LastPosts> = match exchange.workers() {
        1 => Vec::new(),
        _ => {
            let requests = |b: &Block| starts[b.files.start]..starts[b.files.end];
            let requests: Vec<Range<usize>> = blocks.iter().map(requests).collect();
            LastPosts::of_blocks(&cross.collectives.nonblocking, &requests)
        }
    };
    // Of what crosses ranks, only the messages' ends are read by the parts: the rest is
    // dropped now.
    let CrossRank {
        messages: ends,
        collectives,
        requests_by_post,
        one_sided,
    } = cross;
    drop((collectives, requests_by_post, one_sided));
    drop(columns);
    let columns = (&ends, &index);
    let mut folds = Folds::new(opts, models, &sites, &pass, &shared, columns, &descheduled);
    let mut sink = rows.as_deref_mut();
    let whole = Block::whole(parts.files.metas.len());
    if exchange.workers() == 1 {
        parts.each(&whole, at_least, &mut |part, bounds| {
            folds.add(part, bounds, sink.as_deref_mut())
        })?;
    } else {
        // Each other worker is given its block's view, one at a time, and folds its
        // block's parts, making their rows when tables are written; worker 0 folds its
        // own, its rows written as they come, then merges theirs in worker order and
        // takes their rows likewise.
        let c = RunColumns {
            run: parts.columns(),
            ends: &ends,
            shared: &shared,
            descheduled: &descheduled,
            models,
            sites: &sites,
        };
        let rows = sink.is_some();
        let view_for = |w: usize| {
            let b = &blocks[w];
            Ok(match w > 0 && !b.files.is_empty() {
                true => Task::Fold {
                    view: ViewOf {
                        block: b,
                        last_posts: &last_posts[w],
                        columns: &c,
                    },
                    rows,
                },
                false => Task::NoFiles,
            })
        };
        let sent = tracing::info_span!("views sent").entered();
        scatter::<TaskWritten, TaskRead>(*exchange, Some(&view_for))?;
        drop(sent);
        let own = parts.each(&blocks[0], at_least, &mut |part, bounds| {
            folds.add(part, bounds, sink.as_deref_mut())
        });
        let theirs = gather::<Option<Partial>>(*exchange, Ok(None));
        let mut take = |piece: Bytes| {
            if let Some(sink) = sink.as_deref_mut() {
                sink.take_written(&piece.0);
            }
        };
        let handed = gather_each::<Bytes>(*exchange, Ok(Values::Kept(Vec::new())), &mut take);
        own?;
        let theirs = theirs?.unwrap_or_default();
        handed?;
        for partial in theirs.into_iter().flatten() {
            folds.merge(partial);
        }
    }
    let folded = folds.finish();
    if let Some(rows) = rows {
        rows.messages(parts.columns(), &ends);
    }
    // The report keeps none of the instances (as the analysis given a trace drops them):
    // the folds kept only each kind's worst.
    let measured = Measured {
        ranks,
        totals,
        waits: Vec::new(),
        wait_states: folded.wait_states,
        request_summary: folded.request_summary,
        requests: Vec::new(),
        false_overlap: folded.false_overlap,
        findings: Vec::new(),
        sites,
        by_site: folded.by_site,
        profile: folded.profile,
    };
    let of_trace = folded.of_trace.finish(parts.columns(), &measured, &ends);
    let regions = RunRegions::of_marks(parts.columns(), &folded.marks);
    parts.compute = Vec::new();
    Ok((measured, of_trace, regions))
}

/// The replays' program of the run `parts` reads (a third reading, once the figures
/// are made and what they held dropped), each part's operations built and encoded as
/// it is read: the blocking collectives' instances being `instances` and the
/// non-blocking ones' members `nonblocking`.
fn program(
    parts: &mut Parts<'_>,
    instances: CallInstances,
    nonblocking: &[Vec<usize>],
    models: &Models,
    at_least: PartSize,
) -> Result<std::result::Result<MeasuredProgram, ExtractError>> {
    let _s = tracing::info_span!("operations").entered();
    crate::heap::release_free();
    let ranks: Vec<u32> = parts.files.metas.iter().map(|m| m.rank()).collect();
    let run = parts.columns();
    let model = models.collectives.clone();
    let run = Run::of_columns(&ranks, &run.requests, instances, nonblocking, model);
    let mut program = Builder::new(run, Keep::Encoded);
    // Each part's requests are freed once its operations are built: the program's
    // requests (twice their size) grow in their place.
    let mut shares = parts.requests_by_part(at_least).into_iter();
    let whole = Block::whole(parts.files.metas.len());
    parts.each(&whole, at_least, &mut |part, _| {
        let share = shares.next().unwrap_or_default();
        let own = |t: &crate::model::Timeline| &share[rank_requests(&share, t.rank)];
        program.add(part.ranks.iter().map(|t| (t, own(t))).collect());
        // What the part's ranks held below the mmap threshold (many ranks' smaller
        // vectors) is given back, not kept in the heap beside the program that grows.
        crate::heap::release_free();
    })?;
    // The last part's ranks, dropped after it.
    crate::heap::release_free();
    // The run's messages are given up to the linking, which frees them as it reads them.
    let messages = RunMessages::Owned(std::mem::take(&mut parts.run.messages));
    Ok(program.finish_measured(messages, &parts.run.source))
}

/// The workers of an analysis, the block of the run's files each folds the parts of,
/// and where each file's rank's requests start among the run's (then their number).
type Job<'e> = (&'e dyn Exchange, Vec<Block>, Vec<usize>);

/// The requests of the blocks of worker 0's job but its own (`requests`), which their
/// workers kept for their figures, appended to `requests` in worker order, each value
/// as it comes (a [`RequestColumn`]): every rank's requests, in rank order, which
/// `starts` (where each rank's start, then their number) counts.
fn take_requests(
    exchange: &dyn Exchange,
    requests: &mut Vec<RequestLife>,
    starts: &[usize],
) -> Result<()> {
    let _s = tracing::info_span!("requests taken").entered();
    let all = starts.last().copied().unwrap_or(0);
    requests.reserve_exact(all.saturating_sub(requests.len()));
    let mut take = |sent: RequestColumn| requests.extend(sent.0);
    gather_each::<RequestColumn>(exchange, Ok(Values::Kept(Vec::new())), &mut take)?;
    debug_assert_eq!(requests.len(), all, "every block's requests");
    Ok(())
}

/// Where the requests of rank `rank` are among `requests` (in rank order).
fn rank_requests(requests: &[RequestLife], rank: u32) -> Range<usize> {
    requests.partition_point(|r| r.rank < rank)..requests.partition_point(|r| r.rank <= rank)
}
