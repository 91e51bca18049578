//! `overlap merge --format otf2`: a directory of rank files as an OTF2 archive, for
//! Vampir, Scalasca and every tool that reads Score-P's traces. Written through the
//! OTF2 C library ([`overlap_otf2`]).
//!
//! Each rank is read first for the communicators it uses (an OTF2 record names a rank
//! of its communicator, so each communicator's members must be known before any
//! record), then for its events, indexed and written thread by thread without holding
//! the rank ([`stream`]), in its own clock (ticks are
//! nanoseconds of `CLOCK_MONOTONIC`) with its measured clock offsets as the
//! location's, which OTF2 readers apply. What OTF2 has no record for is kept as
//! overlap's properties and attributes ([`crate::import::otf2::vocabulary`]), so that
//! `overlap analyze` reads the archive as it reads the rank files; GPU work is not
//! written. Call sites are written as OTF2's source code locations ([`sites`]).

mod defs;
mod named;
mod records;
mod rma;
mod sites;
mod stream;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use overlap_format::schema::{Event, LearnedUse, Unwatched};
use overlap_otf2::ArchiveWriter;

use self::defs::{Builder, Window};
use self::named::Named;
use self::records::{Losses, ThreadWriter, Whose};
use self::stream::{RankIndex, ThreadOut};
use super::{check_one_run, world_size_of, Unreadable};
use crate::import::otf2::vocabulary::location;
use crate::import::{rank_files, read_rank_file_into, EventSink};
use crate::model::RankTrace;
use crate::Result;

/// What writing an archive did.
#[derive(Clone, Debug)]
pub struct Otf2Written {
    /// The archive's anchor file.
    pub anchor: PathBuf,
    /// Ranks written.
    pub ranks: usize,
    /// Calls and compute spans written.
    pub events: u64,
    /// OTF2 records written, by location.
    pub records: BTreeMap<u64, u64>,
    /// Rank files that could not be used.
    pub unreadable: Vec<Unreadable>,
    /// What the archive does not hold as the rank files had it.
    pub notes: Vec<String>,
}

/// Where `out` puts the archive: a name ending in `.otf2` is the anchor file itself
/// (its `.def` and directory of events beside it); any other is a directory made to
/// hold `traces.otf2`, as Score-P's experiment directories do.
pub fn archive_place(out: &Path) -> (PathBuf, String) {
    if crate::import::otf2::is_anchor(out) {
        let dir = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = out
            .file_stem()
            .map_or("traces".into(), |s| s.to_string_lossy().into_owned());
        (dir.to_path_buf(), name)
    } else {
        (out.to_path_buf(), "traces".to_string())
    }
}

/// The communicators a rank's calls name, and the world ranks they name on each; the
/// windows they name.
#[derive(Default)]
struct CommUse {
    comms: BTreeMap<u32, BTreeSet<i32>>,
    windows: BTreeMap<u32, Window>,
    events: usize,
    /// Buffer uses learned (`overlap trace --buffers`), which are not written.
    learned: u64,
}

impl Extend<Event> for CommUse {
    fn extend<I: IntoIterator<Item = Event>>(&mut self, events: I) {
        events.into_iter().for_each(|e| self.push(e));
    }
}

impl overlap_format::stream::EventStore for CommUse {}

impl EventSink for CommUse {
    fn push(&mut self, e: Event) {
        self.events += 1;
        if let Event::Call(c) = e {
            let a = &c.args;
            let peers = self.comms.entry(a.comm.unwrap_or(0)).or_default();
            peers.extend(a.peer.into_iter().chain(a.recv_peer).chain(a.root));
            peers.extend(a.completed.iter().filter_map(|d| d.source));
            if let Some(win) = a.win {
                let w = self.windows.entry(win).or_default();
                if let Some(comm) = a.comm {
                    // A window's collectives name the communicator it was created over.
                    w.comm = comm;
                }
                w.allocates |= rma::allocates(c.op);
            }
        }
    }
    fn len(&self) -> usize {
        self.events
    }
    fn learned(&mut self, learned: Vec<LearnedUse>, unwatched: Vec<Unwatched>) {
        self.learned += (learned.len() + unwatched.len()) as u64;
    }
}

/// Writes the rank files of `dir` as the OTF2 archive `out` ([`archive_place`]).
pub fn write_otf2(dir: &Path, out: &Path) -> Result<Otf2Written> {
    let _span = tracing::info_span!("write otf2", out = %out.display()).entered();
    let files = rank_files(dir)?;
    let mut unreadable = Vec::new();
    let mut uses: Vec<RankTrace<CommUse>> = Vec::new();
    for f in files {
        match read_rank_file_into::<CommUse>(&f) {
            Ok(t) => uses.push(t),
            Err(e) => unreadable.push(Unreadable {
                reason: super::reason_without_path(&f, &e),
                path: f,
            }),
        }
    }
    if uses.is_empty() {
        return Err(crate::Error::NoRanks {
            dir: dir.to_path_buf(),
            problems: unreadable
                .iter()
                .map(|u| format!("{}: {}", u.path.display(), u.reason))
                .collect(),
        });
    }
    check_one_run(dir, &uses)?;
    uses.sort_by_key(RankTrace::rank);
    let world_size = world_size_of(&uses).max(uses.last().map_or(0, |t| t.rank() + 1));
    let mut comms: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for t in &uses {
        for (comm, peers) in &t.events.comms {
            let members = comms.entry(*comm).or_default();
            members.insert(t.rank());
            members.extend(
                peers
                    .iter()
                    .filter_map(|p| u32::try_from(*p).ok())
                    .filter(|p| *p < world_size),
            );
        }
    }
    let reference_domain = uses
        .iter()
        .find(|t| t.rank() == 0)
        .map(|t| t.header.clock_domain.clone())
        .unwrap_or_default();
    let (place, name) = archive_place(out);
    let mut archive = ArchiveWriter::create(
        &place,
        &name,
        &format!("overlap {}", env!("CARGO_PKG_VERSION")),
    )?;
    let mut windows: BTreeMap<u32, Window> = BTreeMap::new();
    for t in &uses {
        for (win, w) in &t.events.windows {
            let known = windows.entry(*win).or_default();
            if w.comm != 0 {
                known.comm = w.comm;
            }
            known.allocates |= w.allocates;
        }
    }
    let mut b = Builder::new(world_size, comms, windows);
    let mut losses = Losses {
        learned: uses.iter().map(|t| t.events.learned).sum(),
        ..Losses::default()
    };
    let mut events = 0u64;
    let mut symbolizer = crate::sites::Symbolizer::new();
    for u in &uses {
        // Indexed first, then each thread read again and written in its order.
        let mut t = read_rank_file_into::<RankIndex>(&u.path)?;
        t.events.finish();
        let places = sites::source_locations(&t, &mut b, &mut symbolizer);
        events += t.events.events;
        losses.gpu += t.events.gpu;
        let mut named = Named::default();
        let threads = std::mem::take(&mut t.events.threads);
        let tids: BTreeSet<u32> = threads
            .keys()
            .copied()
            .chain(t.threads.keys().copied())
            .collect();
        for (tid, keys) in threads {
            let mut w = archive.events(location(t.rank(), tid))?;
            let whose = Whose {
                rank: t.rank(),
                epoch: t.header.epoch_ns,
                places: &places,
            };
            let writer = ThreadWriter::new(whose, &t.events.posted);
            let out = ThreadOut {
                w: &mut w,
                b: &mut b,
                named: &mut named,
                losses: &mut losses,
            };
            stream::write_thread(&u.path, tid, keys, writer, out)?;
            w.close()?;
        }
        let own_clock = reference_domain.is_empty() || t.header.clock_domain != reference_domain;
        b.rank(&t, &tids, own_clock, &named);
    }
    let records = archive.event_counts().clone();
    let anchor = archive.finish(&b.finish())?;
    Ok(Otf2Written {
        anchor,
        ranks: uses.len(),
        events,
        records,
        unreadable,
        notes: losses.notes(),
    })
}

impl Losses {
    /// What the archive lost, said.
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.gpu > 0 {
            notes.push(format!("{} GPU event(s) not written: OTF2 archives of overlap hold the CPU's calls and spans", self.gpu));
        }
        if self.crossing > 0 {
            notes.push(format!("{} event(s) cut at the end of an enclosing one (OTF2's regions nest; these crossed)", self.crossing));
        }
        if self.learned > 0 {
            notes.push(format!("{} buffer use(s) learned by `overlap trace --buffers` not written: OTF2 has no place for them (analyze the rank directory for them)", self.learned));
        }
        if self.unposted > 0 {
            notes.push(format!("{} completion(s) of requests no recorded call posted, written without their status", self.unposted));
        }
        notes
    }
}
