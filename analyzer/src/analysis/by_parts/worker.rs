//! The second pass at a worker of a job but worker 0: the view of the run's columns
//! worker 0 sends it ([`super::view`]), its block's parts read again and folded over it
//! and over the block's requests it kept, as one process folds them, the folds sent back
//! to worker 0, and the parts' rows handed on to worker 0 when it writes tables; then
//! the block's requests, which worker 0's program reads.

use std::path::Path;

use super::folds::{Folds, Partial};
use super::parts::{blocks_of, PartSize, Parts};
use super::view::{Block, Task, TaskRead, TaskWritten, View};
use crate::analysis::{Rows, Written};
use crate::exchange::wire::chunked::column;
use crate::exchange::wire::Bytes;
use crate::exchange::{gather, gather_each, scatter, Exchange, Values};
use crate::import::Reading;
use crate::merge::RunFiles;
use crate::metrics::digest_share::{Kept, RequestColumn};
use crate::metrics::options::Options;
use crate::metrics::requests::RequestPass;
use crate::model::compute::RankCompute;
use crate::model::{MessagesByRank, RequestLife, RequestsByPost};
use crate::{Error, Result};

/// The second pass of the block of `files` this worker (not worker 0) answers for,
/// whose ranks' compute and requests it kept from the first (`kept`): the view of the
/// run's columns worker 0 gives it, the block's parts (at least `at_least` each,
/// `None`: as the run's size gives) read again and folded over it, and the folds sent to
/// worker 0; then the parts' rows given to `rows` when worker 0 writes tables, sent to
/// worker 0 as `rows` wrote them; then the block's requests ([`send_requests`]).
pub(super) fn figures_of_block(
    dir: &Path,
    opts: &Options,
    exchange: &dyn Exchange,
    (files, mut kept): (RunFiles, Kept),
    (reading, at_least): (&Reading<'_>, Option<PartSize>),
    mut sink: Rows<'_>,
) -> Result<()> {
    let block = blocks_of(&files, exchange.workers()).swap_remove(exchange.worker());
    // Requests that cannot be read back are this worker's error, sent where its folds
    // would be and where its requests would be.
    let (mut requests, unread) = match kept.read_requests() {
        Ok(requests) => (requests, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let unread_error = |reason: &String| Error::Worker {
        worker: exchange.worker(),
        workers: exchange.workers(),
        reason: reason.clone(),
    };
    let compute = kept.compute;
    // A view that cannot be read is this worker's error, sent where its folds would be.
    let view = scatter::<TaskWritten, TaskRead>(exchange, None);
    let (folded, rows) = match (view, &unread) {
        (Err(e), _) => (Err(e), false),
        (Ok(_), Some(reason)) => (Err(unread_error(reason)), false),
        (Ok(Task::NoFiles), None) => (Ok(None), false),
        (Ok(Task::Fold { view, rows }), None) => {
            let folded = match (rows, sink.as_deref_mut()) {
                (true, None) => Err(Error::Table {
                    reason: "this worker was started without the tables worker 0 writes \
                             (--csv, --parquet)"
                        .into(),
                }),
                (rows, sink) => {
                    let sink = sink.filter(|_| rows);
                    let job = (reading, at_least);
                    let block = (&block, compute, &mut requests);
                    fold_view(dir, opts, files, block, *view, job, sink).map(Some)
                }
            };
            (folded, rows)
        }
    };
    let sent = gather::<Option<Partial>>(exchange, folded);
    // The rows, once the folds are sent: none when they failed (their error is sent).
    let handed = match (&sent, sink) {
        (Ok(_), Some(sink)) if rows => sink.written().and_then(written),
        _ => Ok(Values::Kept(Vec::new())),
    };
    let handed = gather_each::<Bytes>(exchange, handed, &mut |_| {});
    let requests = match &unread {
        Some(reason) => Err(unread_error(reason)),
        None => Ok(requests),
    };
    let requests = send_requests(exchange, requests);
    sent?;
    handed?;
    requests
}

/// How many requests a value of [`send_requests`] holds at most (28 MB of them).
const REQUESTS_A_VALUE: usize = 1 << 20;

/// This worker's block's requests (or why it has none) sent to worker 0, whose program
/// reads every rank's, each value a [`RequestColumn`]; at worker 0
/// ([`super::take_requests`]) they come in worker order, after its own. They are freed
/// once written, before they are sent.
fn send_requests(exchange: &dyn Exchange, requests: Result<Vec<RequestLife>>) -> Result<()> {
    let _s = tracing::info_span!("requests sent").entered();
    let written = requests.and_then(|requests| {
        let values = requests.chunks(REQUESTS_A_VALUE);
        (values.map(|r| Values::write(&column(r))))
            .collect::<Result<Vec<_>>>()
            .map(Values::Written)
    });
    gather_each::<RequestColumn>(exchange, written, &mut |_| {})
}

/// The pieces a sink wrote ([`crate::analysis::RowSink::written`]), as the values of a
/// gather, each read as it is sent.
fn written(written: Written) -> Result<Values<Bytes>> {
    Ok(Values::read(written.lengths, written.pieces))
}

/// The folds of the parts of `block` of the run of `files` (its ranks' compute
/// `compute` and requests `requests`, given back however the folds end), over the run's
/// columns as `view` gives them, renumbered as the run's; the parts' rows given to
/// `sink`.
fn fold_view(
    dir: &Path,
    opts: &Options,
    files: RunFiles,
    (block, compute, requests): (&Block, Vec<RankCompute>, &mut Vec<RequestLife>),
    view: View,
    (reading, at_least): (&Reading<'_>, Option<PartSize>),
    mut sink: Rows<'_>,
) -> Result<Partial> {
    let at_least = Parts::sized(&files, at_least);
    let View {
        info,
        messages,
        global,
        ends,
        last_posts,
        shared,
        descheduled,
        models,
        sites,
    } = view;
    let index = MessagesByRank::of(&messages);
    let columns = (info, messages, std::mem::take(requests));
    let first = block.files.start;
    let mut parts = Parts::new((dir, reading), columns, compute, (first, files));
    let (model, collective_model) = (&models.transfers, &models.collectives);
    let pass = {
        let _s = tracing::info_span!("request pass").entered();
        let run = parts.columns();
        let by_post = RequestsByPost::new(&run.requests);
        let ends = (&ends, &by_post, &last_posts);
        RequestPass::of_ends(run, ends, model, collective_model, opts)
    };
    let columns = (&ends, &index);
    let mut folds = Folds::new(opts, &models, &sites, &pass, &shared, columns, &descheduled);
    let each = parts.each(block, at_least, &mut |part, bounds| {
        folds.add(part, bounds, sink.as_deref_mut())
    });
    *requests = std::mem::take(&mut parts.run.requests);
    each?;
    let mut folded = folds.into_partial();
    folded.renumber(&global);
    Ok(folded)
}
