//! A run as the TUI holds it: the trace the analyzer's importer read, the analysis run
//! once at load, and the level-of-detail pyramid of each rank. Also the links the views
//! follow from one call to another (a message's two ends, a request's post and
//! completion, the same collective on other ranks), looked up when a call is selected:
//! a scan of the messages, tens of ms for a million of them, and no memory until then.

use std::cell::OnceCell;
use std::collections::BTreeMap;

use overlap_analyzer::analysis::{analyze, Details, Report};
use overlap_analyzer::metrics::collectives::{self, Instances};
use overlap_analyzer::metrics::Options;
use overlap_analyzer::model::{EventRef, Trace};
use overlap_analyzer::regions::{RegionChoice, RunRegions};
use overlap_analyzer::window::WindowReport;

use crate::gpu_lane::GpuLane;
use crate::lod::RankLod;

/// One loaded and analysed run.
pub struct Run {
    /// How the views name it (the file name).
    pub label: String,
    /// The trace.
    pub trace: Trace,
    /// `overlap analyze`'s report.
    pub report: Report,
    /// Its per-instance tables (every wait, every request, the call sites).
    pub details: Details,
    /// The pyramid of each rank (same order as `trace.ranks`).
    pub lods: Vec<RankLod>,
    /// Each rank's GPU busy time (same order; `None`: no GPU work).
    pub gpu_lanes: Vec<Option<GpuLane>>,
    /// First start and last end over every rank, ns.
    pub extent: (u64, u64),
    /// The blocking collective instances, worked out the first time a wait's cause
    /// needs them.
    instances: OnceCell<Instances>,
    /// The regions the program marked with `MPI_Pcontrol`.
    pub regions: RunRegions,
    /// The window of the run loaded (`overlap tui --from/--to/--region/--ranks`), when
    /// one was asked for.
    pub window: Option<WindowReport>,
}

/// Why a call is linked to another, as the side panel says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// The receive this send's message went to (the call that completed it).
    Receiver,
    /// The send of the message this call received.
    Sender,
    /// The call that completed this post's request.
    Completion,
    /// The post of a request this call completed.
    Post,
    /// The same collective on another rank.
    Member,
}

impl LinkKind {
    /// Its name in the side panel.
    pub fn title(self) -> &'static str {
        match self {
            LinkKind::Receiver => "message to",
            LinkKind::Sender => "message from",
            LinkKind::Completion => "completed by",
            LinkKind::Post => "request of",
            LinkKind::Member => "same collective",
        }
    }

    /// True for a message's other end (drawn as an arrow).
    pub fn is_message(self) -> bool {
        matches!(self, LinkKind::Receiver | LinkKind::Sender)
    }
}

/// A call linked to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    /// How.
    pub kind: LinkKind,
    /// The other call.
    pub to: EventRef,
    /// Bytes, for a message.
    pub bytes: Option<u64>,
}

impl Run {
    /// Analyses a trace and builds the pyramids. Every false-overlap finding is listed,
    /// whatever `opts.findings` says: the screen browses them all, and finds the one of
    /// any wait selected on the timeline.
    pub fn new(label: String, trace: Trace, opts: &Options) -> Run {
        let opts = Options {
            findings: usize::MAX,
            ..*opts
        };
        let (report, details) = analyze(&trace, &opts);
        Run::with_analysis(label, trace, report, details)
    }

    /// A run whose analysis was made already (the screen lists the findings its report
    /// lists: [`Run::new`] lists them all).
    pub fn with_analysis(label: String, trace: Trace, report: Report, details: Details) -> Run {
        // Every call a wait state was charged to (beyond the clock error) is drawn waiting.
        let mut waited: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for w in details.waits.iter().filter(|w| !w.indeterminate) {
            waited.entry(w.rank).or_default().push(w.index);
        }
        let lods = trace
            .ranks
            .iter()
            .zip(&trace.compute)
            .map(|(t, c)| RankLod::build(t, c, waited.remove(&t.rank).unwrap_or_default()))
            .collect();
        let gpu_lanes = trace.ranks.iter().map(GpuLane::build).collect();
        let extent = trace
            .ranks
            .iter()
            .filter_map(|t| {
                // GPU work may end after the rank's last call (an H2D still running).
                let starts = t.spans.iter().map(|s| s.start.0);
                let ends = t.spans.iter().map(|s| s.end.0);
                Some((
                    starts.chain(t.gpu.iter().map(|g| g.start.0)).min()?,
                    ends.chain(t.gpu.iter().map(|g| g.end.0)).max()?,
                ))
            })
            .fold(None, |acc: Option<(u64, u64)>, (a, b)| {
                Some(acc.map_or((a, b), |(x, y)| (x.min(a), y.max(b))))
            })
            .unwrap_or((0, 1));
        Run {
            label,
            report,
            details,
            lods,
            gpu_lanes,
            extent: (extent.0, extent.1.max(extent.0 + 1)),
            instances: OnceCell::new(),
            regions: RunRegions::of_trace(&trace),
            window: None,
            trace,
        }
    }

    /// The run, said to be the window `w` of a trace.
    pub fn in_window(self, w: WindowReport) -> Run {
        Run {
            window: (!w.asked.is_all()).then_some(w),
            ..self
        }
    }

    /// The span of the run a region covers (`NAME` every instance, `NAME#K` the K-th),
    /// ns from its start; or why there is none (the message lists the run's regions).
    pub fn region_span(&self, text: &str) -> Result<(u64, u64), String> {
        let choice = RegionChoice::parse(text)?;
        let w = self.regions.window(&choice)?;
        Ok((w.from.0, w.to.0))
    }

    /// Position of `rank` in `trace.ranks`.
    pub fn position(&self, rank: u32) -> Option<usize> {
        self.trace
            .ranks
            .binary_search_by_key(&rank, |t| t.rank)
            .ok()
    }

    /// Every call linked to `e`: the other end of its messages, its request's post or
    /// completion, the same collective on the other ranks.
    pub fn links(&self, e: EventRef) -> Vec<Link> {
        let mut out = Vec::new();
        for m in &self.trace.messages {
            let bytes = Some(m.bytes);
            if m.send() == e {
                let to = m.completion().unwrap_or(m.recv_post());
                out.push(Link {
                    kind: LinkKind::Receiver,
                    to,
                    bytes,
                });
            } else if m.recv_post() == e || m.completion() == Some(e) {
                out.push(Link {
                    kind: LinkKind::Sender,
                    to: m.send(),
                    bytes,
                });
            }
        }
        for r in self.trace.requests.iter().filter(|r| r.rank == e.rank) {
            let at = |index| EventRef {
                rank: r.rank,
                index,
            };
            match r.completion() {
                Some(c) if r.post() == e.index && c != e.index => {
                    out.push(Link {
                        kind: LinkKind::Completion,
                        to: at(c),
                        bytes: None,
                    });
                }
                Some(c) if c == e.index && r.post() != e.index => {
                    out.push(Link {
                        kind: LinkKind::Post,
                        to: at(r.post()),
                        bytes: None,
                    });
                }
                _ => {}
            }
        }
        if let Some(members) = self.instance_of(e) {
            out.extend(members.iter().filter(|m| **m != e).map(|m| Link {
                kind: LinkKind::Member,
                to: *m,
                bytes: None,
            }));
        }
        out
    }

    /// The members of the blocking collective instance `e` belongs to.
    fn instance_of(&self, e: EventRef) -> Option<&[EventRef]> {
        let pos = self.position(e.rank)?;
        let span = self.trace.ranks[pos].spans.get(e.index)?;
        span.op()
            .filter(|op| op.class() == overlap_format::schema::OpClass::Collective)?;
        let inst = self
            .instances
            .get_or_init(|| collectives::instances(&self.trace));
        let id = inst.calls.of(pos, e.index)?;
        inst.members.get(id as usize).map(Vec::as_slice)
    }
}
