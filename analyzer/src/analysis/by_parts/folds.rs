//! What the second pass makes of each part of whole ranks ([`Folds::add`]), and what
//! the parts together give once all are in ([`Folds::finish`]). Each figure is the
//! function the analysis of a whole trace calls, given the part trace; what crosses
//! ranks is read in the first pass's columns, which the folds borrow.

use crate::metrics::by_site::{BySite, Groups};
use crate::metrics::descheduled::{Descheduled, DescheduledTime};
use crate::metrics::false_overlap::{self, Finding};
use crate::metrics::false_overlap_summary::{self, FalseOverlap};
use crate::metrics::message_ends::MessageEnds;
use crate::metrics::options::Options;
use crate::metrics::request_parts::parts_of_whole_ranks;
use crate::metrics::request_row::RequestRow;
use crate::metrics::request_summary::{self, listed, RequestSummary};
use crate::metrics::requests::RequestPass;
use crate::metrics::wait_kind::Candidate;
use crate::metrics::wait_states::{self, RankExtent, SummaryFold, WaitStates};
use crate::model::{MessagesByRank, Trace};
use crate::profile::Profile;
use crate::regions::RankMarks;
use crate::sites::SiteTable;

use super::super::of_trace;
use super::super::pass_order::{Models, PART};
use super::super::rows::Rows;

/// The ranks of a part, as [`MessagesByRank::between`] takes them: those after the
/// previous part's last (none: from the first), up to its own last (none: to the end).
pub(super) type Bounds = (Option<u32>, Option<u32>);

/// The second pass's folds, and what they read of the columns.
pub(super) struct Folds<'a> {
    opts: &'a Options,
    models: &'a Models,
    sites: &'a SiteTable,
    pass: &'a RequestPass<'a>,
    /// The collectives' and one-sided epochs' wait candidates, by rank.
    shared: &'a [Candidate],
    ends: &'a MessageEnds,
    /// The messages by sender and by receiver.
    index: &'a MessagesByRank,
    descheduled_time: &'a DescheduledTime,
    /// The rows of the requests being folded (one vector, reused).
    rows: Vec<RequestRow>,
    /// The figures of the parts added so far.
    so_far: Partial,
}

/// The figures of consecutive parts (whole ranks), folded: each part is folded apart
/// and merged into those before it ([`Partial::merge`]), as the parts of several
/// workers are to be.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Partial {
    /// The wait-state instances found descheduled.
    descheduled: Descheduled,
    /// Each rank's extent, in rank order.
    extents: Vec<RankExtent>,
    /// The wait states' totals and worst instances.
    wait_summary: SummaryFold,
    wait_groups: Groups,
    requests: request_summary::Fold,
    findings: false_overlap_summary::Fold,
    profile: crate::profile::Fold,
    of_trace: of_trace::Fold,
    marks: Vec<RankMarks>,
}

impl Partial {
    /// The figures of no part, listing what `opts` says.
    fn new(opts: &Options) -> Partial {
        Partial {
            descheduled: Descheduled::default(),
            extents: Vec::new(),
            wait_summary: SummaryFold::new(opts),
            wait_groups: Groups::default(),
            requests: request_summary::Fold::default(),
            findings: false_overlap_summary::Fold::new(opts.findings),
            profile: crate::profile::Fold::new(),
            of_trace: of_trace::Fold::default(),
            marks: Vec::new(),
        }
    }

    /// The message indices it keeps (the GPU staging), read as `global[index]`: the
    /// figures of a block folded over its view ([`super::view`]), numbered as the run's.
    pub(super) fn renumber(&mut self, global: &[u32]) {
        self.of_trace.renumber(global);
    }

    /// Adds the figures of the parts after these (of later ranks), folded with the same
    /// `opts`: what folding those parts here gives, figure for figure.
    fn merge(&mut self, later: Partial, opts: &Options) {
        self.descheduled.merge(&later.descheduled);
        self.extents.extend(later.extents);
        self.wait_summary.merge(later.wait_summary);
        self.wait_groups.merge(later.wait_groups);
        self.requests.merge(later.requests, opts);
        self.findings.merge(later.findings);
        self.profile.merge(later.profile);
        self.of_trace.merge(later.of_trace);
        self.marks.extend(later.marks);
    }
}

/// What the folds give once every part is in.
pub(super) struct Folded {
    pub wait_states: WaitStates,
    pub request_summary: RequestSummary,
    pub false_overlap: FalseOverlap,
    pub by_site: BySite,
    pub profile: Profile,
    /// The parts of the report read from the ranks, to finish beside the figures.
    pub of_trace: of_trace::Fold,
    /// Each rank's region marks.
    pub marks: Vec<RankMarks>,
}

impl<'a> Folds<'a> {
    /// Folds of no part yet, reading the columns given.
    pub(super) fn new(
        opts: &'a Options,
        models: &'a Models,
        sites: &'a SiteTable,
        pass: &'a RequestPass<'a>,
        shared: &'a [Candidate],
        (ends, index): (&'a MessageEnds, &'a MessagesByRank),
        descheduled_time: &'a DescheduledTime,
    ) -> Folds<'a> {
        Folds {
            opts,
            models,
            sites,
            pass,
            shared,
            ends,
            index,
            descheduled_time,
            rows: Vec::new(),
            so_far: Partial::new(opts),
        }
    }

    /// Adds the figures of the part trace `part` (the parts come in rank order), whose
    /// messages are those of the ranks `bounds` gives ([`MessagesByRank::between`]),
    /// and gives its rows to `sink`: the part is folded apart, then merged into the
    /// parts before it.
    pub(super) fn add(&mut self, part: &Trace, bounds: Bounds, sink: Rows<'_>) {
        let mut folded = Partial::new(self.opts);
        self.fold(part, bounds, sink, &mut folded);
        self.so_far.merge(folded, self.opts);
    }

    /// Adds the figures of the parts after those added (of a later block of ranks,
    /// folded elsewhere).
    pub(super) fn merge(&mut self, later: Partial) {
        self.so_far.merge(later, self.opts);
    }

    /// The figures of the parts added, to be merged elsewhere.
    pub(super) fn into_partial(self) -> Partial {
        self.so_far
    }

    /// Folds the figures of `part` into `to`.
    fn fold(&mut self, part: &Trace, (after, up_to): Bounds, mut sink: Rows<'_>, to: &mut Partial) {
        let (opts, sites) = (self.opts, self.sites);
        let messages = self.index.between(after, up_to);
        let mut waits = {
            let _s = tracing::info_span!("wait states").entered();
            wait_states::instances_of(part, self.ends, self.shared, messages)
        };
        (self.descheduled_time).flag_more(&mut waits, &mut to.descheduled);
        let late_sender = false_overlap::late_sender_by_call(&waits);
        // What reads the wait instances (their groups by site, the profile) runs beside
        // the rest of the part: the folds do not need each other.
        let (wait_groups, profile) = (&mut to.wait_groups, &mut to.profile);
        let (of_trace, extents, marks) = (&mut to.of_trace, &mut to.extents, &mut to.marks);
        let (requests, findings) = (&mut to.requests, &mut to.findings);
        let waits = &waits;
        let part_sink = &mut sink;
        let (pass, rows, ends) = (self.pass, &mut self.rows, self.ends);
        let uncertainty = self.models.uncertainty();
        rayon::join(
            || {
                wait_groups.add_waits(part, sites, waits);
                let _s = tracing::info_span!("profile").entered();
                profile.add(part, sites, waits, messages);
            },
            || {
                of_trace.add(part, sites, ends);
                extents.extend(part.ranks.iter().map(|t| (t.rank, t.extent())));
                marks.extend(part.ranks.iter().map(RankMarks::of));
                let part_requests = part_requests(part);
                let first = part_requests.start;
                let _s = tracing::info_span!("requests").entered();
                for range in parts_of_whole_ranks(&part.requests[part_requests], PART) {
                    let range = first + range.start..first + range.end;
                    pass.rows_into(part, range, rows);
                    let rows = &*rows;
                    if let Some(sink) = part_sink.as_deref_mut() {
                        sink.requests(part, rows);
                    }
                    let (requests, findings) = (&mut *requests, &mut *findings);
                    rayon::join(
                        || requests.add(rows, opts, &|r| listed(part, sites, r)),
                        || {
                            let mut add = |found: Vec<Finding>| {
                                if let Some(sink) = part_sink.as_deref_mut() {
                                    sink.findings(part, sites, &found);
                                }
                                findings.add(part, sites, &found)
                            };
                            false_overlap::findings_into(
                                part,
                                rows,
                                &late_sender,
                                opts,
                                &uncertainty,
                                &mut add,
                            )
                        },
                    );
                }
            },
        );
        if let Some(sink) = sink {
            sink.wait_states(part, sites, waits);
            sink.calls(part, sites);
        }
        to.wait_summary.add(waits);
    }

    /// The figures of every part added.
    pub(super) fn finish(self) -> Folded {
        let sites = self.sites;
        let (model, collective_model) = (&self.models.transfers, &self.models.collectives);
        let all = self.so_far;
        let mut descheduled = self.descheduled_time.calls();
        descheduled.merge(&all.descheduled);
        let wait_states = all.wait_summary.finish(&all.extents, descheduled);
        let (false_overlap, false_overlap_groups) = all.findings.finish(sites);
        let wait_groups = all.wait_groups.finish(sites);
        Folded {
            wait_states,
            request_summary: all.requests.finish(model, collective_model),
            false_overlap,
            by_site: BySite::of_groups(sites, false_overlap_groups, wait_groups),
            profile: all.profile.finish(sites),
            of_trace: all.of_trace,
            marks: all.marks,
        }
    }
}

/// Where the requests of `part`'s ranks are among the run's (which are in rank order).
fn part_requests(part: &Trace) -> std::ops::Range<usize> {
    let (Some(first), Some(last)) = (part.ranks.first(), part.ranks.last()) else {
        return 0..0;
    };
    let requests = &part.requests;
    requests.partition_point(|r| r.rank < first.rank)
        ..requests.partition_point(|r| r.rank <= last.rank)
}
