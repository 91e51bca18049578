//! The merged trace on disk, one rank's section after another: the rank's metadata, its
//! calls and compute spans, its GPU work, its request lifetimes, its ends of message
//! arrows and its halves of staging chains ([`super::links`]); then the calls in flight
//! at the ranks' dumps. A section needs only its own rank's timeline, so the writer can
//! hold one rank at a time ([`super::stream`]).

use std::collections::BTreeSet;
use std::path::Path;

use overlap_format::output::{AtomicFile, OutputError};
use overlap_format::pftrace::TraceFormat;
use overlap_format::region::{region_tid, region_track_name};
use overlap_format::schema::wire::{
    event_to_wire, format_event, gpu_to_wire, Category, MetaName, NameArgs, ObjectWriter,
    SortIndexArgs, WireEvent,
};
use overlap_format::schema::{
    stream_tid, stream_track_name, Event, MergedInfo, ParamValue, GPU_BACKEND_PARAM, HOST_EMULATED,
};

use super::links::{
    format_received, format_request, format_sent, Chains, MessagesByRank, RankMessages,
};
use super::proto::ProtoOut;
use super::section::{
    in_flight_slices, site_labels, write_rank_events, RankSection, SiteLabels, BLOCK_EVENTS,
};
use super::{Merged, Output};
use crate::model::Timeline;
use crate::{Error, Result};

/// Writes the merged trace, in the format its name says ([`TraceFormat::of_path`]);
/// returns the number of events written.
pub fn write_merged(merged: &Merged, path: &Path) -> Result<u64> {
    write_merged_as(merged, path, &Output::of_path(path))
}

/// Writes the merged trace as `output` says; returns the number of events written.
pub fn write_merged_as(merged: &Merged, path: &Path, output: &Output) -> Result<u64> {
    let messages = MessagesByRank::new(
        &merged.messages,
        &merged.info.clock_suspect,
        &merged.timelines,
    );
    let mut symbolizer = crate::sites::Symbolizer::new();
    write_file(path, output, &merged.info, |w, reread| {
        let mut first = 0;
        for (t, events) in merged.timelines.iter().zip(&merged.events) {
            let rest = &merged.requests[first..];
            let n = rest.iter().take_while(|l| l.rank == t.rank).count();
            let labels = site_labels(&merged.info, t, &mut symbolizer);
            let section = RankSection {
                t,
                events,
                requests: &rest[..n],
                first_request_id: first as u64 + 1,
                labels: &labels,
            };
            section.write(&merged.info, &messages.of(t.rank), w, reread)?;
            first += n;
        }
        write_in_flight(&merged.info, w)
    })
}

/// The merged file being written, in one format or the other.
pub(crate) enum MergedOut<W: std::io::Write> {
    /// Chrome JSON (`otherData`, then `traceEvents`).
    Json(ObjectWriter<W>),
    /// Perfetto's protobuf.
    Proto(ProtoOut<W>),
}

/// Writes a merged file whole or not at all (a full disk leaves no partial file to be
/// read later), in `format`: the run's metadata from `info`, then what `events` writes.
/// An error reading a rank file again is left by `events` in its second argument, and
/// is the error reported (not the write it interrupted). Returns the number of events
/// written.
pub(crate) fn write_file(
    path: &Path,
    output: &Output,
    info: &MergedInfo,
    events: impl FnOnce(&mut MergedOut<AtomicFile>, &mut Option<Error>) -> std::io::Result<()>,
) -> Result<u64> {
    output.check(path)?;
    let file = AtomicFile::create(path)?;
    let mut reread: Option<Error> = None;
    let write =
        |file: AtomicFile, reread: &mut Option<Error>| -> std::io::Result<(AtomicFile, u64)> {
            let mut w = match output.format {
                TraceFormat::Json => MergedOut::Json(ObjectWriter::new(file, info)?),
                TraceFormat::Pftrace => {
                    MergedOut::Proto(ProtoOut::new(file, info, output.window.clone())?)
                }
            };
            events(&mut w, reread)?;
            match w {
                MergedOut::Json(w) => {
                    let n = w.written();
                    Ok((w.finish()?, n))
                }
                MergedOut::Proto(w) => {
                    let n = w.events();
                    Ok((w.finish()?, n))
                }
            }
        };
    let failed = |cause| {
        Error::Output(OutputError::Io {
            path: path.to_path_buf(),
            cause,
        })
    };
    let written = write(file, &mut reread);
    if let Some(e) = reread {
        return Err(e);
    }
    let (file, n) = written.map_err(failed)?;
    file.commit()?;
    Ok(n)
}

impl RankSection<'_> {
    /// Writes the section in the file's format.
    pub(crate) fn write<W: std::io::Write + Send>(
        &self,
        info: &MergedInfo,
        messages: &RankMessages,
        w: &mut MergedOut<W>,
        reread: &mut Option<Error>,
    ) -> std::io::Result<()> {
        match w {
            MergedOut::Json(w) => self.write_json(info, messages, w, reread),
            MergedOut::Proto(w) => super::proto::write_section(self, info, messages, w, reread),
        }
    }

    /// Writes the section as JSON: metadata, events, GPU work, request slices, message
    /// arrows' ends and staging chains' halves.
    fn write_json<W: std::io::Write + Send>(
        &self,
        info: &MergedInfo,
        messages: &RankMessages,
        w: &mut ObjectWriter<W>,
        reread: &mut Option<Error>,
    ) -> std::io::Result<()> {
        let t = self.t;
        let pid = t.rank;
        let name = NameArgs {
            name: format!("rank {} ({})", t.rank, t.host),
        };
        w.write(&WireEvent::meta(MetaName::ProcessName, pid, 0, name))?;
        let sort = SortIndexArgs {
            sort_index: i64::from(pid),
        };
        w.write(&WireEvent::meta(MetaName::ProcessSortIndex, pid, 0, sort))?;
        for (tid, tname) in &t.threads {
            let n = NameArgs {
                name: tname.clone(),
            };
            w.write(&WireEvent::meta(MetaName::ThreadName, pid, *tid, n))?;
            let s = SortIndexArgs {
                sort_index: i64::from(*tid),
            };
            w.write(&WireEvent::meta(MetaName::ThreadSortIndex, pid, *tid, s))?;
        }
        let labels = self.labels;
        write_rank_events(t, self.events, w, reread, &mut |w, block| {
            write_block(pid, block, labels, w)
        })?;
        write_gpu(info, t, w)?;
        super::learned::write_learned(t, w)?;
        write_regions(t, w)?;
        // Where a request that never completed ends: its rank's last moment.
        let rank_end = t.spans.iter().map(|s| s.end).max().unwrap_or_default();
        write_parallel(self.requests, w, |k, life, text| {
            format_request(t, life, self.first_request_id + k as u64, rank_end, text)
        })?;
        let (sent, received) = (&messages.sent, &messages.received);
        write_parallel(sent, w, |_, m, text| format_sent(t, m, text))?;
        write_parallel(received, w, |_, (m, suspect), text| {
            format_received(t, m, suspect.as_ref(), text)
        })?;
        if let Some(chains) = Chains::of(t) {
            write_parallel(sent, w, |_, m, text| chains.format_sent(t, m, text))?;
            write_parallel(received, w, |_, (m, _), text| {
                chains.format_received(t, m, text)
            })?;
        }
        Ok(())
    }
}

/// Formats `events` on rayon's threads, then writes them in order; a call whose site
/// has a label gets it as its `src`.
fn write_block<W: std::io::Write + Send>(
    pid: u32,
    events: &[Event],
    labels: &SiteLabels,
    w: &mut ObjectWriter<W>,
) -> std::io::Result<()> {
    write_parallel(events, w, |_, e, text| {
        let label = match e {
            Event::Call(c) => c.args.site.and_then(|s| labels.get(&s)),
            _ => None,
        };
        match (e, label) {
            (Event::Call(c), Some(label)) => {
                let mut c = c.clone();
                c.args.src = Some(label.label.clone());
                format_event(text, &event_to_wire(pid, &Event::Call(c)))?;
            }
            _ => format_event(text, &event_to_wire(pid, e))?,
        }
        Ok(1)
    })
}

/// Writes what `format` makes of each of `items` (given its index), in order: a block
/// at a time, each block formatted on rayon's threads while the one before is written
/// (with one thread, one after the other). `format` appends the events with
/// [`format_event`] and says how many.
fn write_parallel<T: Sync, W: std::io::Write + Send>(
    items: &[T],
    w: &mut ObjectWriter<W>,
    format: impl Fn(usize, &T, &mut Vec<u8>) -> std::io::Result<u64> + Sync,
) -> std::io::Result<()> {
    use rayon::prelude::*;
    const CHUNK: usize = 1024;
    type Texts = Vec<std::io::Result<(Vec<u8>, u64)>>;
    let format_block = |b: usize, block: &[T]| -> Texts {
        block
            .par_chunks(CHUNK)
            .enumerate()
            .map(|(c, chunk)| {
                let first = b * BLOCK_EVENTS + c * CHUNK;
                let mut text = Vec::with_capacity(chunk.len() * 512);
                let mut n = 0;
                for (k, item) in chunk.iter().enumerate() {
                    n += format(first + k, item, &mut text)?;
                }
                Ok((text, n))
            })
            .collect()
    };
    let write = |w: &mut ObjectWriter<W>, texts: Texts| -> std::io::Result<()> {
        for text in texts {
            let (text, n) = text?;
            w.write_formatted(&text, n)?;
        }
        Ok(())
    };
    let mut formatted = Texts::new();
    for (b, block) in items.chunks(BLOCK_EVENTS).enumerate() {
        let before = std::mem::take(&mut formatted);
        let (written, next) = rayon::join(|| write(w, before), || format_block(b, block));
        written?;
        formatted = next;
    }
    write(w, formatted)
}

/// A rank's GPU work: one named track per device stream (after the host threads), the
/// device operations on it, host waits on the thread that waited.
fn write_gpu<W: std::io::Write>(
    info: &MergedInfo,
    a: &Timeline,
    w: &mut ObjectWriter<W>,
) -> std::io::Result<()> {
    let emulated = matches!(
        info.params.get(GPU_BACKEND_PARAM),
        Some(ParamValue::Text(b)) if b == HOST_EMULATED
    );
    let streams: BTreeSet<(u32, u32)> = a
        .gpu
        .iter()
        .filter(|g| g.op.on_device())
        .map(|g| (g.device, g.stream))
        .collect();
    for (device, stream) in streams {
        let tid = stream_tid(device, stream);
        let mut name = stream_track_name(device, stream);
        if emulated {
            name.push_str(" (host-emulated)");
        }
        w.write(&WireEvent::meta(
            MetaName::ThreadName,
            a.rank,
            tid,
            NameArgs { name },
        ))?;
        let s = SortIndexArgs {
            sort_index: i64::from(tid),
        };
        w.write(&WireEvent::meta(MetaName::ThreadSortIndex, a.rank, tid, s))?;
    }
    for g in &a.gpu {
        w.write(&gpu_to_wire(a.rank, g))?;
    }
    Ok(())
}

/// The rank's regions: a slice per instance on its tracks of regions, each named.
fn write_regions<W: std::io::Write>(t: &Timeline, w: &mut ObjectWriter<W>) -> std::io::Result<()> {
    let slices = super::section::region_slices(t);
    let lanes = slices.iter().map(|r| r.lane + 1).max().unwrap_or(0);
    for lane in 0..lanes {
        let tid = region_tid(lane);
        let name = NameArgs {
            name: region_track_name(lane),
        };
        w.write(&WireEvent::meta(MetaName::ThreadName, t.rank, tid, name))?;
        let sort = SortIndexArgs {
            sort_index: i64::from(tid),
        };
        w.write(&WireEvent::meta(
            MetaName::ThreadSortIndex,
            t.rank,
            tid,
            sort,
        ))?;
    }
    for r in &slices {
        let name = r.args.region.as_str();
        let tid = region_tid(r.lane);
        let e = WireEvent::complete(name, Category::Region, t.rank, tid, r.start, r.end, &r.args);
        w.write(&e)?;
    }
    Ok(())
}

/// Each call a rank was inside at its last in-flight dump, as a slice from the call's
/// start to the dump.
pub(crate) fn write_in_flight<W: std::io::Write>(
    info: &MergedInfo,
    w: &mut MergedOut<W>,
) -> std::io::Result<()> {
    let w = match w {
        MergedOut::Json(w) => w,
        MergedOut::Proto(p) => return super::proto::write_in_flight(info, p),
    };
    for (rank, name, start, end, c) in in_flight_slices(info) {
        w.write(&WireEvent::complete(
            name,
            Category::Hang,
            rank,
            c.tid,
            start,
            end,
            c,
        ))?;
    }
    Ok(())
}
