//! `overlap merge` holding one rank at a time: the merged file from a directory of rank
//! files without the whole run in memory.
//!
//! 1. Every file is read through, keeping only its header, clocks and event count
//!    (rayon's threads): the clock plan needs every rank's synchronisations.
//! 2. Each rank is read into its timeline, aligned and sorted, and reduced to a digest:
//!    its counts, and what the caller's [`RankDigest`] makes of it (the run's summary:
//!    [`crate::summary`]); its message ends, numbered by (key, seq) ([`super::ends`]),
//!    are set aside in a temporary file next to the output ([`super::spilled`]). The
//!    timeline is then dropped (a rank per thread at a time).
//! 3. The ends are joined on disk: the run's messages, ids and clock suspects, set aside
//!    by rank.
//! 4. Each rank is read again into its timeline and its section written
//!    ([`super::section::RankSection`]) with its messages read back; with more than one
//!    thread, the next rank is read while this one is written.
//!
//! Memory is the largest rank's timeline and messages, once per thread (ranks are
//! digested side by side, and read ahead while one is written; one at a time on one
//! thread), plus a
//! digest and up to three buffers of 8 KiB per rank, and the clock-suspect messages'
//! records (40 B each, for `otherData`; a run with sound clocks has none): neither the
//! run's other events nor its messages. The temporary file holds about 260 B per
//! message. The file is the one [`super::write_merged`] writes from
//! [`super::merge_dir`], byte for byte.
//!
//! A file that changes between two readings (its events no longer counted as before) is
//! named ([`Error::Changed`]) and nothing is written.

use std::path::Path;

use overlap_format::output::check_output;
use overlap_format::schema::{InFlightDump, MergedInfo, Nanos, PeersOutOfRange};

use super::matching::{rank_ends, rank_requests};
use super::run_files::RunFiles;
use super::section::{site_labels, RankSection};
use super::spilled::SpilledEnds;
use super::write::{write_file, write_in_flight};
use super::SizeEstimate;
use super::{file_of, out_of_range, Output, RankEvents, Unreadable};
use crate::model::{RequestLife, Timeline};
use crate::{Error, Result};

/// What the caller makes of each rank while the merge holds its timeline (a rank at a
/// time, on rayon's threads), and of them all once the file is written: the merge's
/// per-rank digest given from above, so that the merge needs none of the analysis.
pub trait RankDigest: Sync {
    /// What is kept of one rank.
    type Rank: Send + Sync;
    /// What is made of them all.
    type Run;
    /// What is kept of the rank whose timeline `t` is (on the run's timeline), given its
    /// last in-flight dump.
    fn of_rank(&self, t: &Timeline, last_dump: Option<&InFlightDump>) -> Self::Rank;
    /// What is made of every rank's, in rank order, and the merged file's `otherData`.
    fn of_run(&self, ranks: Vec<Self::Rank>, info: &MergedInfo) -> Self::Run;
}

/// The digest that keeps nothing.
impl RankDigest for () {
    type Rank = ();
    type Run = ();
    fn of_rank(&self, _: &Timeline, _: Option<&InFlightDump>) {}
    fn of_run(&self, _: Vec<()>, _: &MergedInfo) {}
}

/// What merging a directory into a file did, and what `D` made of its ranks.
#[derive(Clone, Debug)]
pub struct Written<D = ()> {
    /// The merged file's `otherData`.
    pub info: MergedInfo,
    /// Files that could not be used.
    pub unreadable: Vec<Unreadable>,
    /// What was read but could not be used in full, one line each naming its file.
    pub notes: Vec<String>,
    /// Events written.
    pub events: u64,
    /// What the [`RankDigest`] made of the ranks (the run's summary: [`crate::summary`]).
    pub summary: D,
    /// Each rank's operating-system process id, by rank (0 when unknown).
    pub processes: Vec<(u32, u32)>,
}

/// What the merge keeps of a rank once its timeline is dropped (its message ends are
/// set aside on disk).
struct Digest<R> {
    rank: u32,
    events: u64,
    requests: usize,
    peers: Vec<PeersOutOfRange>,
    extent: Option<(Nanos, Nanos)>,
    notes: Vec<String>,
    os_pid: u32,
    /// What the caller's [`RankDigest`] kept of it.
    kept: R,
}

/// Merges the rank files of `dir` into `out` (the files [`super::merge_dir`] would use,
/// with the same checks), one rank at a time, in the format `out`'s name says
/// ([`TraceFormat::of_path`]), each rank given to `digest`.
pub fn merge_to_file<D: RankDigest>(dir: &Path, out: &Path, digest: &D) -> Result<Written<D::Run>> {
    merge_to_file_if(dir, out, &Output::of_path(out), |_, _, _| Ok(()), digest)
}

/// [`merge_to_file`] as `output` says (format, part of the run), once `accept` has seen
/// what the run holds (its ranks missing or cut short, its files unreadable) and how
/// large the file is expected to be, before anything is written: its `Err(reason)`
/// stops the merge with [`Error::Refused`], leaving `out` as it was.
pub fn merge_to_file_if<D: RankDigest>(
    dir: &Path,
    out: &Path,
    output: &Output,
    accept: impl FnOnce(&MergedInfo, &[Unreadable], &SizeEstimate) -> std::result::Result<(), String>,
    digest: &D,
) -> Result<Written<D::Run>> {
    use rayon::prelude::*;
    // The output's directory, checked before the run is read: the message ends are set
    // aside there.
    let spill_dir = check_output(out)?;
    output.check(out)?;
    let mut files = RunFiles::open(dir)?;
    let unreadable = std::mem::take(&mut files.unreadable);
    let (metas, plan, world_size) = (&files.metas, &files.plan, files.world_size);
    let spill_error = |what: &'static str| {
        let path = spill_dir.clone();
        move |cause| Error::Io { what, path, cause }
    };
    const SET_ASIDE: &str = "setting message ends aside in a temporary file in";
    let spilled =
        std::sync::Mutex::new(SpilledEnds::new_in(&spill_dir).map_err(spill_error(SET_ASIDE))?);
    let digests: Vec<Digest<D::Rank>> = {
        let _s = tracing::info_span!("digest ranks").entered();
        (0..metas.len())
            .into_par_iter()
            .map(|i| {
                let (t, tl) = files.first_timeline(i)?;
                let (requests, ends) = rank_ends(&tl, world_size);
                let ends = ends.into_sorted();
                let mut spilled = spilled.lock().unwrap_or_else(|e| e.into_inner());
                spilled.add(ends).map_err(spill_error(SET_ASIDE))?;
                drop(spilled);
                Ok(Digest {
                    rank: tl.rank,
                    events: tl.event_count() as u64,
                    requests,
                    peers: out_of_range(std::slice::from_ref(&tl), world_size, |r| {
                        file_of(metas, r)
                    }),
                    extent: tl.extent(),
                    notes: t.note_lines().collect(),
                    os_pid: tl.os_pid,
                    kept: digest.of_rank(&tl, plan.last_dump(i, &metas[i]).as_ref()),
                })
            })
            .collect::<Result<_>>()?
    };
    let mut rest = digests;
    let mut matched = {
        let _s = tracing::info_span!("match messages").entered();
        let spilled = spilled.into_inner().unwrap_or_else(|e| e.into_inner());
        spilled
            .join()
            .map_err(spill_error("joining message ends in a temporary file in"))?
    };
    let counts: Vec<u64> = rest.iter().map(|d| d.events).collect();
    let peers = rest.iter().flat_map(|d| d.peers.iter().cloned()).collect();
    // The clock-suspect records go into `otherData`, not kept twice.
    let info = plan.info(metas, &counts, std::mem::take(&mut matched.counts), peers);
    let starts = rest.iter().filter_map(|d| d.extent);
    let run_ns = match (starts.clone().map(|e| e.0).min(), starts.map(|e| e.1).max()) {
        (Some(a), Some(b)) => b.0.saturating_sub(a.0),
        _ => 0,
    };
    let requests: u64 = rest.iter().map(|d| d.requests as u64).sum();
    let ranks: Vec<u32> = rest.iter().map(|d| d.rank).collect();
    let size = SizeEstimate::new(
        output.format,
        &output.window,
        (counts.iter().sum(), requests, info.messages),
        run_ns,
        &ranks,
    );
    accept(&info, &unreadable, &size).map_err(|reason| Error::Refused {
        dir: dir.to_path_buf(),
        reason,
    })?;
    let load = |i: usize| -> Result<(Timeline, Vec<RequestLife>)> {
        let (_, tl) = files.timeline(i, rest[i].events)?;
        let lives = rank_requests(&tl);
        if lives.len() != rest[i].requests {
            return Err(Error::Changed {
                path: metas[i].path.clone(),
            });
        }
        Ok((tl, lives))
    };
    // The next rank is read while this one is written where a second thread can read
    // it; on one thread that would only hold two ranks' timelines at once.
    let read_ahead = rayon::current_num_threads() > 1;
    let mut symbolizer = crate::sites::Symbolizer::new();
    let events = write_file(out, output, &info, |w, reread| {
        let mut next = (!metas.is_empty()).then(|| load(0));
        let mut first_request_id = 1;
        for i in 0..metas.len() {
            let (t, lives) = match next.take() {
                Some(Ok(loaded)) => loaded,
                Some(Err(e)) => {
                    *reread = Some(e);
                    return Err(std::io::Error::other("a rank file could not be read again"));
                }
                None => break,
            };
            let events = RankEvents::File {
                path: metas[i].path.clone(),
                align: plan.rank_align(i, &metas[i]),
            };
            let labels = site_labels(&info, &t, &mut symbolizer);
            let section = RankSection {
                t: &t,
                events: &events,
                requests: &lives,
                first_request_id,
                labels: &labels,
            };
            let messages = match matched.of(t.rank) {
                Ok(m) => m,
                Err(cause) => {
                    *reread = Some(spill_error(
                        "reading messages back from a temporary file in",
                    )(cause));
                    return Err(std::io::Error::other(
                        "the message ends could not be read back",
                    ));
                }
            };
            let more = i + 1 < metas.len();
            first_request_id += lives.len() as u64;
            if read_ahead {
                let (written, loaded) = rayon::join(
                    || section.write(&info, &messages, w, reread),
                    || more.then(|| load(i + 1)),
                );
                written?;
                next = loaded;
            } else {
                section.write(&info, &messages, w, reread)?;
                drop((t, lives, messages));
                next = more.then(|| load(i + 1));
            }
        }
        write_in_flight(&info, w)
    })?;
    let processes = rest.iter().map(|d| (d.rank, d.os_pid)).collect();
    let notes = rest
        .iter_mut()
        .flat_map(|d| std::mem::take(&mut d.notes))
        .collect();
    let summary = digest.of_run(rest.into_iter().map(|d| d.kept).collect(), &info);
    Ok(Written {
        info,
        unreadable,
        notes,
        events,
        summary,
        processes,
    })
}
