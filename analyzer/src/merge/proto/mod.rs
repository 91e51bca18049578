//! The merged trace as Perfetto's protobuf (`.pftrace`): the same events as the JSON
//! ([`super::write`]), rank section after rank section, encoded by
//! [`overlap_format::pftrace`].
//!
//! What differs from the JSON is only how Perfetto is told it: a `TrackDescriptor` per
//! rank (process `rank N (host)`), per recording thread and per GPU stream; a slice's
//! begin and end instead of a complete event; a message's arrow as flow ids on the
//! send's slice and on the slice of the call that completed its receive (not events of
//! their own); request lifetimes on lanes of child tracks, so that overlapping requests
//! never break slice nesting ([`requests`]); counters of requests and bytes in flight;
//! the run's `otherData` as the typed args of one instant on a track of its own.
//!
//! ```text
//!  rank 0 (host)            process track
//!    main                   thread track    |MPI_Isend|.....|MPI_Wait|
//!    requests               lane tracks       [Isend → 1 ........]
//!    requests in flight     counter           _/‾‾‾‾‾‾‾‾‾‾‾‾‾‾‾‾‾‾\_
//! ```

mod requests;
mod section;
mod window;

use std::io::Write;

use overlap_format::pftrace::{PftraceWriter, Sequence, Slice, Track};
use overlap_format::schema::wire::Category;
use overlap_format::schema::{MergedInfo, Nanos};

use crate::fxhash::FxHashMap;

pub(crate) use section::write_section;
pub use window::{Cut, Window};

/// How many encoded bytes a sequence gathers before they go to the file.
pub(crate) const DRAIN_AT: usize = 256 << 10;

/// Where protobuf packets go while a merged file is written: the encoder, the tracks
/// described so far, and the next ids to hand out.
pub(crate) struct ProtoOut<W: Write> {
    w: PftraceWriter<W>,
    next_uuid: u64,
    next_sequence: u32,
    processes: FxHashMap<u32, u64>,
    threads: FxHashMap<(u32, u32), u64>,
    events: u64,
    window: Window,
}

/// An annotation error as the I/O error the writers pass on.
pub(crate) fn io_error(e: overlap_format::pftrace::AnnotationError) -> std::io::Error {
    std::io::Error::other(e)
}

impl<W: Write> ProtoOut<W> {
    /// Starts the file of `window` of the run: the run's metadata (`info`, what the
    /// JSON's `otherData` holds) as an instant at the run's start on a track of its own,
    /// and the window's, when it is not the whole run, at its start.
    pub(crate) fn new(out: W, info: &MergedInfo, window: Window) -> std::io::Result<Self> {
        let mut p = ProtoOut {
            w: PftraceWriter::new(out),
            next_uuid: 1,
            next_sequence: overlap_format::pftrace::DESCRIPTOR_SEQUENCE + 1,
            processes: FxHashMap::default(),
            threads: FxHashMap::default(),
            events: 0,
            window,
        };
        let track = p.uuid();
        p.w.track(&Track::Named {
            uuid: track,
            parent: None,
            name: "overlap run",
            order: -1,
        })?;
        let mut seq = p.sequence();
        seq.instant(track, "run", Category::Run, Nanos(0), Some(info))
            .map_err(io_error)?;
        if !p.window.is_all() {
            let w = WindowArgs {
                from_ns: p.window.from().0,
                to_ns: (p.window.to().0 != u64::MAX).then_some(p.window.to().0),
                ranks: p.window.ranks().map(<[u32]>::to_vec),
            };
            seq.instant(track, "window", Category::Run, p.window.from(), Some(&w))
                .map_err(io_error)?;
        }
        p.finish_sequence(&mut seq)?;
        Ok(p)
    }

    /// The part of the run written.
    pub(crate) fn window(&self) -> &Window {
        &self.window
    }

    /// A new track uuid.
    pub(crate) fn uuid(&mut self) -> u64 {
        let u = self.next_uuid;
        self.next_uuid += 1;
        u
    }

    /// A new sequence.
    pub(crate) fn sequence(&mut self) -> Sequence {
        let s = Sequence::new(self.next_sequence);
        self.next_sequence += 1;
        s
    }

    /// A new sequence whose events are on `track` unless they name another.
    pub(crate) fn sequence_on(&mut self, track: u64) -> Sequence {
        let s = Sequence::with_default_track(self.next_sequence, track);
        self.next_sequence += 1;
        s
    }

    /// The process track of `rank`, described on first use as `name`.
    pub(crate) fn process(&mut self, rank: u32, name: &str) -> std::io::Result<u64> {
        if let Some(u) = self.processes.get(&rank) {
            return Ok(*u);
        }
        let uuid = self.uuid();
        self.w.track(&Track::Process {
            uuid,
            pid: rank,
            name,
        })?;
        self.processes.insert(rank, uuid);
        Ok(uuid)
    }

    /// The thread track of `tid` on `rank`, described on first use (named `name` when
    /// not empty, placed by `tid` among the process's tracks).
    pub(crate) fn thread(&mut self, rank: u32, tid: u32, name: &str) -> std::io::Result<u64> {
        if let Some(u) = self.threads.get(&(rank, tid)) {
            return Ok(*u);
        }
        let parent = self.process(rank, &format!("rank {rank}"))?;
        let uuid = self.uuid();
        self.w.track(&Track::Thread {
            uuid,
            parent,
            pid: rank,
            tid,
            name,
            order: i64::from(tid),
        })?;
        self.threads.insert((rank, tid), uuid);
        Ok(uuid)
    }

    /// Describes a track made elsewhere (request lanes, counters).
    pub(crate) fn track(&mut self, track: &Track<'_>) -> std::io::Result<()> {
        self.w.track(track)
    }

    /// Hands what `seq` wrote so far to the file.
    pub(crate) fn drain(&mut self, seq: &mut Sequence) -> std::io::Result<()> {
        self.w.drain(seq)
    }

    /// Writes what `seq` still holds and hands it all to the file, counting its events.
    pub(crate) fn finish_sequence(&mut self, seq: &mut Sequence) -> std::io::Result<()> {
        seq.finish();
        self.events += seq.events();
        self.w.drain(seq)
    }

    /// Events written (slices, instants, counter values).
    pub(crate) fn events(&self) -> u64 {
        self.events
    }

    /// Hands over the last block and gives the file back.
    pub(crate) fn finish(self) -> std::io::Result<W> {
        self.w.finish()
    }
}

/// The window's args: what of the run the file holds.
#[derive(serde::Serialize)]
struct WindowArgs {
    from_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    to_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ranks: Option<Vec<u32>>,
}

/// Each call a rank was inside at its last in-flight dump, as a slice from the call's
/// start to the dump (as the JSON's writer writes it).
pub(crate) fn write_in_flight<W: Write>(
    info: &MergedInfo,
    out: &mut ProtoOut<W>,
) -> std::io::Result<()> {
    let window = out.window().clone();
    let mut calls: Vec<_> = super::section::in_flight_slices(info)
        .filter(|(rank, ..)| window.has_rank(*rank))
        .map(|(rank, name, start, end, c)| (start, end, rank, name, c))
        .collect();
    if calls.is_empty() {
        return Ok(());
    }
    calls.sort_by_key(|c| c.0);
    let mut seq = out.sequence();
    for (start, end, rank, name, c) in &calls {
        let track = out.thread(*rank, c.tid, "")?;
        let slice = Slice {
            track,
            name,
            category: Category::Hang,
            start: *start,
            end: *end,
            args: Some(*c),
            source: None,
            flows_out: &[],
            flows_in: &[],
            skip_args: &[],
            counters: (&[], &[]),
        };
        window::write_slice(&mut seq, &window, &slice).map_err(io_error)?;
    }
    out.finish_sequence(&mut seq)
}
