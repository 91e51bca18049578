//! Builds a [`Program`] from a [`Trace`]: each rank's operations in program order,
//! requests and messages linked, collective instances with their fitted cost.
//!
//! ```text
//!  timeline (thread without spans)  |Isend 2-3|....|Waitall 7-9|..|Barrier 10-11|
//!  operations   Post(s) 1ns, Compute "compute" 4ns (inferred), Complete(s) 2ns,
//!               Compute 1ns (inferred), Collective
//! ```

mod link;
mod posts;
mod rank;

use std::borrow::Borrow;

use overlap_format::schema::Op;
use rayon::prelude::*;

use crate::fxhash::FxHashMap;
use crate::metrics::collective_model::CollectiveModel;
use crate::metrics::collectives;
use crate::metrics::transfer::class_of;
use crate::model::{Message, RequestLife, Timeline, Trace};

use super::{
    CollectiveOp, EncodedOps, MeasuredProgram, OpKind, Program, RankProgram, RequestOp, RequestRole,
};
pub(crate) use link::RunMessages;
use link::{link_messages, KeptRequests, Linking};
use posts::{posts_by_rank, RankPosts};
pub use rank::INFERRED_NAME;
use rank::{RankPart, Scope, TraceInstance};

/// Why a trace cannot become a program.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// The trace has no events in any rank.
    #[error("{}: no rank has any event to replay", path.display())]
    Empty {
        /// The trace.
        path: std::path::PathBuf,
    },
}

/// The program of every rank of `trace`. Each rank's requests are counted first, so
/// that every rank writes its own in place into its share of the program's; ranks are
/// then built in parallel ([`rank::build`]), and what links them (names, collective
/// instances) numbered in rank order, as one pass over the ranks would; messages are
/// linked at the end.
pub fn extract(trace: &Trace) -> Result<Program, ExtractError> {
    let run = Run::of(trace);
    let ranks = borrowed_ranks(trace, &run);
    let all = ranks.len();
    build(run, ranks, all, Keep::Operations).finish(&trace.messages, &trace.source)
}

/// [`extract`]'s program kept for replays of its measured order (what `overlap
/// analyze` replays), each rank's operations encoded as soon as built: it never holds
/// more than a batch of ranks' [`super::Operation`]s.
pub fn extract_measured(trace: &Trace) -> Result<MeasuredProgram, ExtractError> {
    let run = Run::of(trace);
    let ranks = borrowed_ranks(trace, &run);
    let messages = RunMessages::Borrowed(&trace.messages);
    build(run, ranks, rayon::current_num_threads(), Keep::Encoded)
        .finish_measured(messages, &trace.source)
}

/// Each rank's timeline and requests, borrowed from `trace`.
fn borrowed_ranks<'t>(trace: &'t Trace, run: &Run) -> Vec<(&'t Timeline, &'t [RequestLife])> {
    (trace.ranks.iter().zip(&run.request_ranges))
        .map(|(t, range)| (t, &trace.requests[range.clone()]))
        .collect()
}

/// [`extract_measured`]'s program, built from a trace that is not needed afterwards:
/// each rank's timeline and request lifetimes are dropped once its operations are
/// built, so that the program does not grow beside the whole trace (only the run's
/// messages stay, until they are linked).
pub fn extract_owned(mut trace: Trace) -> Result<MeasuredProgram, ExtractError> {
    let run = Run::of(&trace);
    // Each rank's requests in a vector of its own, dropped with its timeline.
    let mut requests = std::mem::take(&mut trace.requests);
    let mut own: Vec<Vec<RequestLife>> = run
        .request_ranges
        .iter()
        .rev()
        .map(|range| requests.split_off(range.start))
        .collect();
    drop(requests);
    own.reverse();
    let ranks: Vec<(Timeline, Vec<RequestLife>)> = std::mem::take(&mut trace.ranks)
        .into_iter()
        .zip(own)
        .collect();
    trace.compute = Vec::new();
    let messages = RunMessages::Owned(std::mem::take(&mut trace.messages));
    // As many ranks at a time as there are threads: the timelines still held and the
    // operations already built grow no more than a batch apart.
    build(run, ranks, rayon::current_num_threads(), Keep::Encoded)
        .finish_measured(messages, &trace.source)
}

/// What the build keeps of each rank's operations.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// The operations ([`Program`]).
    Operations,
    /// Only what a replay of the measured order reads, encoded ([`MeasuredProgram`]).
    Encoded,
}

/// What the program's build reads of the whole run besides each rank's timeline and
/// requests, gathered before any rank is built.
pub(crate) struct Run {
    /// Per rank slot: where its requests are among the run's (which are in rank order).
    request_ranges: Vec<std::ops::Range<usize>>,
    /// Per rank slot: its requests by the call that posted them.
    posted_at: Vec<RankPosts>,
    blocking: collectives::CallInstances,
    /// Trace request index -> its non-blocking collective instance.
    nonblocking_of: FxHashMap<usize, usize>,
    /// The pure time of non-blocking collectives.
    nonblocking_model: CollectiveModel,
}

impl Run {
    fn of(trace: &Trace) -> Run {
        let ranks: Vec<u32> = trace.ranks.iter().map(|t| t.rank).collect();
        Run::of_columns(
            &ranks,
            &trace.requests,
            collectives::instances(trace).calls,
            &collectives::nonblocking(trace),
            CollectiveModel::fit(trace),
        )
    }

    /// What the build reads of the run whose ranks are `ranks` (sorted) and requests
    /// `requests` (in rank order), without its ranks' events: the instance of each
    /// blocking collective call, the members (run request indices) of each non-blocking
    /// instance, and the non-blocking collectives' model.
    pub(crate) fn of_columns(
        ranks: &[u32],
        requests: &[RequestLife],
        blocking: collectives::CallInstances,
        nonblocking: &[Vec<usize>],
        nonblocking_model: CollectiveModel,
    ) -> Run {
        let mut nonblocking_of: FxHashMap<usize, usize> = FxHashMap::default();
        for (k, members) in nonblocking.iter().enumerate() {
            for &m in members {
                nonblocking_of.insert(m, k);
            }
        }
        let of_rank = |&rank: &u32| {
            let from = requests.partition_point(|r| r.rank < rank);
            from..requests.partition_point(|r| r.rank <= rank)
        };
        Run {
            request_ranges: ranks.iter().map(of_rank).collect(),
            posted_at: posts_by_rank(ranks, requests),
            blocking,
            nonblocking_of,
            nonblocking_model,
        }
    }
}

/// The program of the ranks `ranks`, each with its requests (all of them, in its
/// order: borrowed, or owned and dropped one by one as they are built), built `batch`
/// ranks at a time, and each rank's operations encoded (its ranks' `ops` then empty)
/// when `keep` says so; its messages not linked yet.
fn build<T, R>(run: Run, ranks: Vec<(T, R)>, batch: usize, keep: Keep) -> Builder
where
    T: Borrow<Timeline> + Send + Sync,
    R: Borrow<[RequestLife]> + Send + Sync,
{
    let mut builder = Builder::new(run, keep);
    let mut ranks = ranks.into_iter();
    loop {
        let batch_ranks: Vec<(T, R)> = ranks.by_ref().take(batch.max(1)).collect();
        if batch_ranks.is_empty() {
            break;
        }
        builder.add(batch_ranks);
    }
    builder
}

/// A program built as its ranks come, a batch of whole ranks at a time in rank order
/// ([`Builder::add`]): from a trace held whole ([`extract`]), or from each part of a
/// run that is never held whole, as it is read. The messages are linked at the end
/// ([`Builder::finish`]).
pub(crate) struct Builder {
    run: Run,
    keep: Keep,
    /// The program; with [`Keep::Encoded`], its requests are those of the batch being
    /// built, what is kept of the others being in `kept`.
    program: Program,
    /// With [`Keep::Encoded`], what replays and linking read of the requests of the
    /// ranks built.
    kept: KeptRequests,
    numbering: Numbering,
    /// What linking the messages reads of each rank, once its operations are numbered.
    linking: Vec<Linking>,
    encoded: Vec<EncodedOps>,
    extent: Option<(u64, u64)>,
}

impl Builder {
    /// A program of no rank yet, of the run `run`, whose operations `keep` says what is
    /// kept of.
    pub(crate) fn new(run: Run, keep: Keep) -> Builder {
        let numbering = Numbering::new(run.nonblocking_model.clone());
        Builder {
            run,
            keep,
            program: Program::default(),
            kept: KeptRequests::default(),
            numbering,
            linking: Vec::new(),
            encoded: Vec::new(),
            extent: None,
        }
    }

    /// Builds the next ranks (in rank order, each with all its requests in its order),
    /// in parallel; each rank's requests are added to the program's, split into the
    /// ranks' shares, and each rank writes its own in place; then numbered in rank
    /// order, and encoded when only their replay in measured order is wanted. The
    /// program's requests grow with the ranks built, not ahead of them.
    pub(crate) fn add<T, R>(&mut self, ranks: Vec<(T, R)>)
    where
        T: Borrow<Timeline> + Send + Sync,
        R: Borrow<[RequestLife]> + Send + Sync,
    {
        let from = self.linking.len();
        let run = &self.run;
        let shared = rank::Shared {
            request_ranges: &run.request_ranges,
            posted_at: &run.posted_at,
            blocking: &run.blocking,
            nonblocking_of: &run.nonblocking_of,
        };
        let scopes: Vec<(Option<Scope>, usize)> = ranks
            .par_iter()
            .enumerate()
            .map(|(k, (t, _))| {
                let t = t.borrow();
                let scope = Scope::of(t);
                let n = scope
                    .as_ref()
                    .map_or(0, |s| rank::requests_in_program(&shared, from + k, t, s));
                (scope, n)
            })
            .collect();
        let program = &mut self.program;
        // Where the batch's requests go in the program's, and the first one's index in
        // the program (after those kept already, with `Keep::Encoded`).
        let (at, offset) = (program.requests.len(), self.kept.len());
        let n: usize = scopes.iter().map(|s| s.1).sum();
        program
            .requests
            .resize(at + n, RequestOp::new(0, RequestRole::Other, 0));
        let mut shares = Vec::with_capacity(scopes.len());
        let (mut rest, mut first) = (&mut program.requests[at..], offset + at);
        for (scope, n) in &scopes {
            let (share, after) = rest.split_at_mut(*n);
            shares.push((scope.as_ref(), share, first));
            (rest, first) = (after, first + n);
        }
        let mut built: Vec<RankPart> = ranks
            .into_par_iter()
            .zip(shares)
            .enumerate()
            .map(|(k, ((t, own), (scope, share, first)))| {
                // An owned timeline and its requests are dropped here, once its
                // operations are built.
                let rank = rank::Rank {
                    slot: from + k,
                    t: t.borrow(),
                    requests: own.borrow(),
                };
                rank::build(&shared, &rank, scope, share, first)
            })
            .collect();
        // What only building the batch's ranks read of their posts goes now.
        let batch = from..from + built.len();
        self.run.posted_at[batch]
            .iter_mut()
            .for_each(RankPosts::forget_requests);
        for part in &mut built {
            self.numbering.add(program, offset, part);
            if let Some((lo, hi)) = part.extent {
                let extent = self
                    .extent
                    .map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi)));
                self.extent = Some(extent);
            }
        }
        let keep = self.keep;
        if keep == Keep::Encoded {
            // The vector's memory serves the next batch.
            self.kept.extend(&program.requests);
            program.requests.clear();
        }
        let done: Vec<(Linking, RankProgram, Option<EncodedOps>)> = built
            .into_par_iter()
            .map(|mut part| {
                let link = Linking::take(&mut part);
                let mut program = part.program;
                let ops =
                    (keep == Keep::Encoded).then(|| super::measured::encode_rank(&mut program));
                (link, program, ops)
            })
            .collect();
        for (link, rank, ops) in done {
            self.linking.push(link);
            program.ranks.push(rank);
            self.encoded.extend(ops);
        }
    }

    /// [`Self::finish`]'s program, kept for replays of its measured order (the ranks'
    /// operations encoded and the requests kept narrow: built with [`Keep::Encoded`]).
    pub(crate) fn finish_measured(
        self,
        messages: RunMessages<'_>,
        source: &std::path::Path,
    ) -> Result<MeasuredProgram, ExtractError> {
        debug_assert!(self.keep == Keep::Encoded);
        let (links, kept, ops) = self.link(messages, source)?;
        Ok(MeasuredProgram {
            links,
            requests: kept.into_replay(),
            ops,
        })
    }

    /// The program, once every rank is added (built with [`Keep::Operations`]): see
    /// [`Self::link`].
    pub(crate) fn finish(
        self,
        messages: &[Message],
        source: &std::path::Path,
    ) -> Result<Program, ExtractError> {
        debug_assert!(self.keep == Keep::Operations);
        let messages = RunMessages::Borrowed(messages);
        self.link(messages, source).map(|(program, _, _)| program)
    }

    /// The program, once every rank is added: the run's `messages` linked to the
    /// operations that sent and received them (and to its requests, in the program or
    /// kept narrow beside it), and the blocking collectives' costs fitted; with what is
    /// kept of its requests and its ranks' encoded operations (with [`Keep::Encoded`]).
    /// An error naming `source` when no rank had an event.
    fn link(
        self,
        messages: RunMessages<'_>,
        source: &std::path::Path,
    ) -> Result<(Program, KeptRequests, Vec<EncodedOps>), ExtractError> {
        let Builder {
            run,
            keep,
            mut program,
            mut kept,
            numbering,
            linking,
            encoded,
            extent,
        } = self;
        let Run { posted_at, .. } = run;
        let Some((first_start, last_end)) = extent else {
            return Err(ExtractError::Empty {
                path: source.to_path_buf(),
            });
        };
        program.measured_ns = last_end.saturating_sub(first_start);
        program.messages.reserve_exact(messages.len());
        match keep {
            Keep::Operations => {
                let mut requests = std::mem::take(&mut program.requests);
                link_messages(
                    messages,
                    &mut program,
                    &mut requests[..],
                    &linking,
                    &posted_at,
                );
                program.requests = requests;
            }
            Keep::Encoded => link_messages(messages, &mut program, &mut kept, &linking, &posted_at),
        }
        fit_blocking_costs(&mut program, &numbering.entry_and_exit);
        Ok((program, kept, encoded))
    }
}

/// What the program numbers across ranks, as ranks are added in rank order.
struct Numbering {
    /// Collective instance of the trace ([`TraceInstance::key`]) -> program instance.
    instances: FxHashMap<(bool, usize), usize>,
    /// The pure time of non-blocking collectives.
    nonblocking_model: CollectiveModel,
    /// Compute name -> program name id.
    names: FxHashMap<String, u32>,
    /// Per program instance: for a blocking one, its last member's entry and its first
    /// member's exit (measured); `None` for a non-blocking one.
    entry_and_exit: Vec<Option<(u64, u64)>>,
}

impl Numbering {
    fn new(nonblocking_model: CollectiveModel) -> Numbering {
        Numbering {
            instances: FxHashMap::default(),
            nonblocking_model,
            names: FxHashMap::default(),
            entry_and_exit: Vec::new(),
        }
    }

    /// Gives the next rank's part the program's ids: its collective instances (each
    /// numbered at its first member, members linked, a blocking one's entry and exit
    /// brought up to date) and its compute names; the program's requests being those
    /// from index `offset` on.
    fn add(&mut self, program: &mut Program, offset: usize, part: &mut RankPart) {
        let rank = part.program.rank;
        for m in std::mem::take(&mut part.members) {
            let inst = *self.instances.entry(m.instance.key()).or_insert_with(|| {
                let blocking = matches!(m.instance, TraceInstance::Blocking(_));
                self.entry_and_exit.push(blocking.then_some((0, u64::MAX)));
                new_instance(program, m.call)
            });
            let cop = &mut program.collectives[inst];
            cop.bytes = cop.bytes.max(m.bytes);
            cop.members.push((rank, m.at));
            match m.instance {
                TraceInstance::Blocking(_) => {
                    let o = &mut part.program.ops[m.at];
                    if let OpKind::Collective { instance, .. } = &mut o.kind {
                        *instance = inst;
                    }
                    if let Some((entry, exit)) = &mut self.entry_and_exit[inst] {
                        *entry = (*entry).max(o.measured_start_ns);
                        *exit = (*exit).min(o.measured_end_ns);
                    }
                }
                TraceInstance::Nonblocking {
                    described, request, ..
                } => {
                    cop.op = described;
                    cop.cost_ns = self
                        .nonblocking_model
                        .pure(described, cop.bytes)
                        .map(|n| n.0);
                    program.requests[request - offset].set_instance(Some(inst));
                }
            }
        }
        if part.names.is_empty() {
            return;
        }
        let ids: Vec<u32> = part
            .names
            .iter()
            .map(|n| rank::name_id(&mut program.names, &mut self.names, n))
            .collect();
        for o in &mut part.program.ops {
            if let OpKind::Compute { name, .. } = &mut o.kind {
                *name = ids[*name as usize];
            }
        }
    }
}

/// A new collective instance of `op`, without members yet; its index.
fn new_instance(program: &mut Program, op: Op) -> usize {
    program.collectives.push(CollectiveOp {
        op,
        bytes: 0,
        members: Vec::new(),
        cost_ns: None,
    });
    program.collectives.len() - 1
}

/// Each blocking collective instance's pure time: the shortest, over the instances of
/// the same call and size class, of a member's exit after the last member's entry
/// (`entry_and_exit`, by instance: the last entry and the first exit, `None` for a
/// non-blocking instance).
fn fit_blocking_costs(program: &mut Program, entry_and_exit: &[Option<(u64, u64)>]) {
    let shortest = |&(entry, exit): &(u64, u64)| exit.saturating_sub(entry);
    let mut best: FxHashMap<(Op, u32), u64> = FxHashMap::default();
    for (c, seen) in program.collectives.iter().zip(entry_and_exit) {
        if let Some(s) = seen.as_ref().map(shortest) {
            let e = best.entry((c.op, class_of(c.bytes))).or_insert(s);
            *e = (*e).min(s);
        }
    }
    for (c, seen) in program.collectives.iter_mut().zip(entry_and_exit) {
        if seen.is_some() {
            c.cost_ns = best.get(&(c.op, class_of(c.bytes))).copied();
        }
    }
}
