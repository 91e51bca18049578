//! The GPU section made a part of whole ranks at a time ([`GpuFold`]). Each rank with
//! GPU work is measured on its own timeline and requests when its part is added; what
//! it needs of its messages' other ends (the send's entry, the exit of the call that
//! completed the receive) is read in the run's message ends
//! ([`crate::metrics::message_ends`]), never in another rank's timeline. What a part
//! cannot finish is kept small until every part is in:
//!
//! - each side's copy of a message (a send's D2H, a receive's H2D: [`CopyEnd`], only for
//!   messages that had one), joined into the chains by message in [`GpuFold::finish`];
//! - each send staged through a D2H with how long a host wait held it ([`Held`]): its
//!   rank's serialized-staging finding names the worst one's packet, which may be known
//!   only from the receiver's H2D, so it is made once the chains are.

use overlap_format::schema::{GpuOp, MergedInfo, ParamValue, GPU_BACKEND_PARAM};

use super::chains::{chain_of, received_copy, sent_copy, Chain, CopyEnd, MessageCalls};
use super::findings::{self, device_busy, GpuFinding, Held, RankData};
use super::intervals::Intervals;
use super::{summarize, ChainRow, CopyStats, GpuReport, RankGpu};
use crate::metrics::message_ends::MessageEnds;
use crate::model::copies::CopyIndex;
use crate::model::{Message, RequestLife, Timeline, Trace};

/// The GPU section of a run, made of its parts: [`GpuFold::add`] each part (in any
/// order), then [`GpuFold::finish`].
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct GpuFold {
    /// The ranks of the parts added: a chain needs both of its ranks in the run.
    ranks_seen: Vec<u32>,
    /// Each rank with GPU work, as its part left it.
    ranks: Vec<RankPart>,
    /// The D2H of each send that had one: (message index, copy).
    sent: Vec<(usize, CopyEnd)>,
    /// The H2D of each receive that had one: (message index, copy).
    received: Vec<(usize, CopyEnd)>,
}

/// A rank with GPU work, measured on its part.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct RankPart {
    /// Its figures, whole.
    row: RankGpu,
    /// Its findings made of it alone, in the order a rank's are listed before the sort:
    /// GPU idle, host blocked on copies, copies serialized with MPI.
    findings: Vec<GpuFinding>,
    /// Its sends staged through a D2H, in message order: (message index, how long a host
    /// wait held it). Its serialized-staging finding, which comes first, is made of them.
    staged: Vec<(usize, Option<Held>)>,
}

impl GpuFold {
    /// A fold of no part yet.
    pub fn new() -> GpuFold {
        GpuFold::default()
    }

    /// Measures the ranks of `part` (a part trace: its own ranks; the run's messages,
    /// requests and info) that have GPU work. `ends` are the run's message ends.
    pub fn add(&mut self, part: &Trace, ends: &MessageEnds) {
        self.ranks_seen.extend(part.ranks.iter().map(|t| t.rank));
        let with_gpu: Vec<&Timeline> = part.ranks.iter().filter(|t| !t.gpu.is_empty()).collect();
        if with_gpu.is_empty() {
            return;
        }
        let at = |rank: u32| with_gpu.binary_search_by_key(&rank, |t| t.rank).ok();
        // Each rank's copies indexed once, both directions.
        let index: Vec<(CopyIndex, CopyIndex)> =
            with_gpu.iter().map(|t| CopyIndex::both(t)).collect();
        let mut windows: Vec<Vec<(u64, u64)>> = vec![Vec::new(); with_gpu.len()];
        let mut staged: Vec<Vec<(usize, CopyEnd)>> = vec![Vec::new(); with_gpu.len()];
        for (mi, m) in part.messages.iter().enumerate() {
            let (from, to) = (at(m.send().rank), at(m.recv_post().rank));
            if from.is_none() && to.is_none() {
                continue;
            }
            let window = message_window(ends, mi, m);
            if let Some(i) = from {
                windows[i].extend(window);
                if let Some(copy) = sent_copy(with_gpu[i], &index[i].0, m) {
                    staged[i].push((mi, copy));
                    self.sent.push((mi, copy));
                }
            }
            if let Some(i) = to {
                // A message to itself is one window of the rank, not two.
                if m.send().rank != m.recv_post().rank {
                    windows[i].extend(window);
                }
                if let Some(copy) = received_copy(with_gpu[i], &index[i].1, m) {
                    self.received.push((mi, copy));
                }
            }
        }
        let parts = with_gpu.iter().zip(windows.into_iter().zip(staged));
        for (t, (windows, staged)) in parts {
            let data = RankData::of(t, rank_requests(&part.requests, t.rank), windows);
            self.ranks
                .push(rank_part(&data, &staged, part.messages.as_slice()));
        }
    }

    /// The message indices it keeps (of the staged sends and receives) read as
    /// `global[index]`: the fold of parts whose trace held some of the run's messages,
    /// numbered as the run's.
    pub fn renumber(&mut self, global: &[u32]) {
        let run = |mi: &mut usize| *mi = global[*mi] as usize;
        self.sent.iter_mut().for_each(|(mi, _)| run(mi));
        self.received.iter_mut().for_each(|(mi, _)| run(mi));
        for r in &mut self.ranks {
            r.staged.iter_mut().for_each(|(mi, _)| run(mi));
        }
    }

    /// Adds the fold of the parts after this one's: what adding them here gives.
    pub fn merge(&mut self, later: GpuFold) {
        self.ranks_seen.extend(later.ranks_seen);
        self.ranks.extend(later.ranks);
        self.sent.extend(later.sent);
        self.received.extend(later.received);
    }

    /// The section of the parts added (`None` when no rank recorded GPU work) and its
    /// chains, for the table. `info`, `messages` and `ends` are the run's.
    pub fn finish(
        mut self,
        info: &MergedInfo,
        messages: &[Message],
        ends: &MessageEnds,
    ) -> Option<(GpuReport, Vec<ChainRow>)> {
        if self.ranks.is_empty() {
            return None;
        }
        self.ranks_seen.sort_unstable();
        self.ranks.sort_by_key(|r| r.row.rank);
        let chains = self.chains(messages, ends);
        let chain_at = |mi: usize| {
            let found = chains.binary_search_by_key(&mi, |(at, _)| *at).ok();
            found.map(|i| &chains[i].1)
        };
        let mut findings = Vec::new();
        let mut ranks = Vec::new();
        for r in self.ranks {
            // The sends with a chain (both ranks in the run), as the chains they are.
            let staged = r
                .staged
                .iter()
                .filter_map(|&(mi, held)| Some((chain_at(mi)?, held)));
            findings.extend(findings::serialized_staging(r.row.rank, staged));
            findings.extend(r.findings);
            ranks.push(r.row);
        }
        // A stable sort: a rank's findings of equal loss keep the order above.
        findings.sort_by(|a, b| b.lost_ns.cmp(&a.lost_ns).then(a.rank.cmp(&b.rank)));
        let rows: Vec<ChainRow> = chains.iter().map(|(_, c)| ChainRow::of(c)).collect();
        let pipeline: u64 = ranks.iter().map(|r| r.pipeline_ns).sum();
        let hidden: u64 = ranks.iter().map(|r| r.pipeline_hidden_ns).sum();
        let report = GpuReport {
            backend: match info.params.get(GPU_BACKEND_PARAM) {
                Some(ParamValue::Text(b)) => Some(b.clone()),
                _ => None,
            },
            clock_error_ns: ranks.iter().map(|r| r.clock_error_ns).max().unwrap_or(0),
            ranks,
            chains: summarize(&rows),
            findings,
            pipeline_hidden: (pipeline > 0).then(|| hidden as f64 / pipeline as f64),
        };
        Some((report, rows))
    }

    /// The chains, by message index: the copies of both sides joined by message, each
    /// message whose two ranks are in the run and that had a copy on either side.
    fn chains(&mut self, messages: &[Message], ends: &MessageEnds) -> Vec<(usize, Chain)> {
        self.sent.sort_unstable_by_key(|(mi, _)| *mi);
        self.received.sort_unstable_by_key(|(mi, _)| *mi);
        let seen = |rank: u32| self.ranks_seen.binary_search(&rank).is_ok();
        let mut sent = self.sent.iter().peekable();
        let mut received = self.received.iter().peekable();
        let mut chains = Vec::new();
        // The two lists walked together, a message at a time in message order.
        loop {
            let mi = match (sent.peek(), received.peek()) {
                (None, None) => break,
                (Some(s), None) => s.0,
                (None, Some(r)) => r.0,
                (Some(s), Some(r)) => s.0.min(r.0),
            };
            let d2h = sent.next_if(|s| s.0 == mi).map(|s| s.1);
            let h2d = received.next_if(|r| r.0 == mi).map(|r| r.1);
            let m = &messages[mi];
            if !(seen(m.send().rank) && seen(m.recv_post().rank)) {
                continue;
            }
            let calls = MessageCalls {
                send: ends.send(mi).start(),
                completion: ends.recv_done(mi, m).map(|d| (d.at, d.end)),
            };
            chains.extend(chain_of(m, calls, d2h, h2d).map(|c| (mi, c)));
        }
        chains
    }
}

/// The window of message `mi` (`m`): its send's entry to the exit of the call that
/// completed its receive, both read in the run's message ends; `None` when either call
/// is not in the trace.
fn message_window(ends: &MessageEnds, mi: usize, m: &Message) -> Option<(u64, u64)> {
    Some((ends.send(mi).start()?.0, ends.recv_done(mi, m)?.end.0))
}

/// The requests of `rank` among the run's `requests`, which are in rank order
/// ([`Trace::requests`]).
fn rank_requests(requests: &[RequestLife], rank: u32) -> &[RequestLife] {
    let from = requests.partition_point(|r| r.rank < rank);
    let to = from + requests[from..].partition_point(|r| r.rank == rank);
    &requests[from..to]
}

/// Rank `r`'s figures and findings, and its sends `staged` through a D2H (message index,
/// copy) with how long a host wait held each.
fn rank_part(r: &RankData<'_>, staged: &[(usize, CopyEnd)], messages: &[Message]) -> RankPart {
    let t = r.timeline;
    let staged = staged
        .iter()
        .map(|&(mi, copy)| {
            let send = t.spans[messages[mi].send().index].start;
            (mi, findings::held(r, send, &t.gpu[copy.index]))
        })
        .collect();
    let copies = |op: GpuOp| {
        let mine = t.gpu.iter().filter(|g| g.op == op);
        CopyStats {
            count: mine.clone().count() as u64,
            bytes: mine.map(|g| g.bytes).sum(),
            busy_ns: device_busy(t, |o| o == op).measure(),
        }
    };
    let ((idle, blocked), idle_finding) = findings::idle_while_waiting(t);
    let ((copy_ns, with_messages), serial_finding) = findings::copies_vs_messages(r);
    let findings: Vec<GpuFinding> = [idle_finding, findings::blocked_on_copies(r), serial_finding]
        .into_iter()
        .flatten()
        .collect();
    let kernels = device_busy(t, |op| op == GpuOp::Kernel);
    let pipeline = Intervals::union(
        t.gpu
            .iter()
            .filter(|g| g.op.is_copy())
            .map(|g| (g.start.0, g.end.0))
            .chain(r.windows.spans().iter().copied()),
    );
    let waits = t.gpu.iter().filter(|g| g.op == GpuOp::HostWait);
    let mut devices: Vec<u32> = t.gpu.iter().map(|g| g.device).collect();
    devices.sort_unstable();
    devices.dedup();
    let mut streams: Vec<(u32, u32)> = t
        .gpu
        .iter()
        .filter(|g| g.op.on_device())
        .map(|g| (g.device, g.stream))
        .collect();
    streams.sort_unstable();
    streams.dedup();
    let row = RankGpu {
        rank: t.rank,
        devices,
        streams,
        d2h: copies(GpuOp::CopyD2H),
        h2d: copies(GpuOp::CopyH2D),
        d2d: copies(GpuOp::CopyD2D),
        kernels: t.gpu.iter().filter(|g| g.op == GpuOp::Kernel).count() as u64,
        kernel_ns: kernels.measure(),
        host_waits: waits.clone().count() as u64,
        host_wait_ns: waits.map(|g| g.end.0 - g.start.0).sum(),
        host_blocked_ns: blocked,
        gpu_idle_in_host_blocked_ns: idle,
        copy_ns,
        copy_with_messages_ns: with_messages,
        pipeline_ns: pipeline.measure(),
        pipeline_hidden_ns: pipeline.overlap(&kernels),
        clock_error_ns: t.gpu.iter().map(|g| g.clock_error.0).max().unwrap_or(0),
    };
    RankPart {
        row,
        findings,
        staged,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{analyze, unrecorded_runtime, UnrecordedFold};
    use super::*;

    /// The section of `trace` made of its parts of `size` ranks, in rank order.
    fn folded(trace: &Trace, size: usize) -> Option<(GpuReport, Vec<ChainRow>)> {
        let ends = MessageEnds::of(trace);
        let mut fold = GpuFold::new();
        for part in trace.parts(size) {
            fold.add(&part, &ends);
        }
        fold.finish(&trace.info, &trace.messages, &ends)
    }

    fn unrecorded_folded(trace: &Trace, size: usize) -> Option<super::super::UnrecordedRuntime> {
        let mut fold = UnrecordedFold::new();
        for part in trace.parts(size) {
            fold.add(&part);
        }
        fold.finish(&trace.info)
    }

    /// Every kept run's section and note are the same made of parts of 1 rank, of 2 and
    /// of all. In `gpu-bulk` (2 ranks) a part of 1 rank holds one end of each message:
    /// its chains run from rank 0's D2H to rank 1's H2D, so the join by message across
    /// parts makes them, and each rank's message windows read the other rank's calls.
    #[test]
    fn the_kept_runs_fold_to_the_whole() {
        let mut crossing = 0;
        for trace in crate::load::kept_runs() {
            let whole = analyze(&trace);
            if let Some((_, rows)) = &whole {
                crossing += rows
                    .iter()
                    .filter(|r| r.from != r.to && r.breakdown.total_ns.is_some())
                    .count();
            }
            let unrecorded = unrecorded_runtime(&trace);
            for size in [1, 2, trace.ranks.len()] {
                let at = format!("{}, parts of {size}", trace.source.display());
                assert_eq!(folded(&trace, size), whole, "{at}");
                assert_eq!(unrecorded_folded(&trace, size), unrecorded, "{at}");
            }
        }
        assert!(crossing > 0, "a complete chain from one rank to another");
    }

    /// A runtime loaded by a rank is said only when no part recorded GPU work: `gpu-bulk`
    /// with rank 1's GPU work taken away and a runtime named in rank 1's files, where a
    /// part of 1 rank holds rank 1 without GPU work; and a run without GPU work at all,
    /// where it is said of rank 1 whatever the parts.
    #[test]
    fn a_runtime_is_said_only_when_no_part_recorded_gpu_work() {
        let runs = crate::load::kept_runs();
        let named = |mut trace: Trace| {
            let r = trace
                .info
                .ranks
                .iter_mut()
                .find(|r| r.rank == 1)
                .expect("rank 1");
            r.program_objects = Some("/usr/lib/libcudart.so.12".into());
            trace
        };
        let gpu = runs
            .iter()
            .find(|t| t.ranks.iter().any(|r| !r.gpu.is_empty()));
        let mut half = named(gpu.expect("a run with GPU work").clone());
        half.ranks[1].gpu.clear();
        assert!(!half.ranks[0].gpu.is_empty());
        let without = runs
            .iter()
            .find(|t| t.ranks.iter().all(|r| r.gpu.is_empty()));
        let without = named(without.expect("a run without GPU work").clone());
        assert_eq!(unrecorded_runtime(&half), None);
        assert_eq!(unrecorded_runtime(&without).map(|u| u.rank), Some(1));
        for trace in [&half, &without] {
            for size in [1, 2] {
                let whole = unrecorded_runtime(trace);
                assert_eq!(unrecorded_folded(trace, size), whole, "parts of {size}");
            }
        }
        // Half the GPU work: the section is still made, of rank 0 alone.
        for size in [1, 2] {
            assert_eq!(folded(&half, size), analyze(&half), "parts of {size}");
        }
    }
}
