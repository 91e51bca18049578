//! Where recorded events go. The writer thread hands every event to a [`Sink`]:
//! [`ChromeJsonSink`] streams a per-rank trace file, [`MemorySink`] keeps events for
//! tests, [`NullSink`] drops them (the baseline for overhead measurements).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::schema::wire::{
    event_to_wire, ArrayWriter, MetaName, NameArgs, SortIndexArgs, WireEvent,
};
use crate::schema::{ClockSync, Event, Footer, Header, SourceSite};
use crate::{Error, Result};

/// Receives the events of one rank, in the order each thread recorded them, from the
/// writer thread. Errors stop the writing; they are reported by `Recorder::finish`.
pub trait Sink: Send + 'static {
    /// A thread recorded for the first time.
    fn thread(&mut self, tid: u32, name: &str) -> io::Result<()>;
    /// A call or compute event.
    fn event(&mut self, event: &Event) -> io::Result<()>;
    /// A clock synchronisation result.
    fn clock_sync(&mut self, sync: &ClockSync) -> io::Result<()>;
    /// A source location later calls name by id (written before the first of them).
    fn site(&mut self, site: &SourceSite) -> io::Result<()>;
    /// Make what was written so far durable (reach the file).
    fn flush(&mut self) -> io::Result<()>;
    /// Recording is over.
    fn finish(&mut self, footer: &Footer) -> io::Result<()>;
}

/// Streams a per-rank trace file: header first, then events as they are drained, the
/// footer and the closing `]` at the end. What was flushed stays readable if the process
/// dies.
pub struct ChromeJsonSink {
    path: PathBuf,
    pid: u32,
    out: Option<ArrayWriter<BufWriter<File>>>,
}

impl ChromeJsonSink {
    /// Creates the file (and its directory) and writes the header records at once.
    pub fn create(path: impl AsRef<Path>, header: &Header) -> Result<ChromeJsonSink> {
        let path = path.as_ref().to_path_buf();
        let io_err = |what: &'static str| {
            let path = path.clone();
            move |source| Error::Io {
                what,
                path: path.clone(),
                source,
            }
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io_err("creating the trace directory"))?;
        }
        let file = File::create(&path).map_err(io_err("creating the trace file"))?;
        let mut out = ArrayWriter::new(BufWriter::with_capacity(1 << 16, file))
            .map_err(io_err("writing the trace header"))?;
        let pid = header.rank;
        let name = NameArgs {
            name: format!("rank {} ({})", header.rank, header.host),
        };
        (|| {
            out.write(&WireEvent::meta(MetaName::ProcessName, pid, 0, name))?;
            out.write(&WireEvent::meta(
                MetaName::ProcessSortIndex,
                pid,
                0,
                SortIndexArgs {
                    sort_index: i64::from(pid),
                },
            ))?;
            out.write(&WireEvent::meta(MetaName::Header, pid, 0, header))?;
            out.get_mut().flush()
        })()
        .map_err(io_err("writing the trace header"))?;
        Ok(ChromeJsonSink {
            path,
            pid,
            out: Some(out),
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn out(&mut self) -> io::Result<&mut ArrayWriter<BufWriter<File>>> {
        self.out
            .as_mut()
            .ok_or_else(|| io::Error::other("trace file already closed"))
    }
}

impl Sink for ChromeJsonSink {
    fn thread(&mut self, tid: u32, name: &str) -> io::Result<()> {
        let pid = self.pid;
        let out = self.out()?;
        out.write(&WireEvent::meta(
            MetaName::ThreadName,
            pid,
            tid,
            NameArgs { name: name.into() },
        ))?;
        out.write(&WireEvent::meta(
            MetaName::ThreadSortIndex,
            pid,
            tid,
            SortIndexArgs {
                sort_index: i64::from(tid),
            },
        ))
    }

    fn event(&mut self, event: &Event) -> io::Result<()> {
        let pid = self.pid;
        self.out()?.write(&event_to_wire(pid, event))
    }

    fn clock_sync(&mut self, sync: &ClockSync) -> io::Result<()> {
        let pid = self.pid;
        self.out()?
            .write(&WireEvent::meta(MetaName::ClockSync, pid, 0, sync))
    }

    fn site(&mut self, site: &SourceSite) -> io::Result<()> {
        let pid = self.pid;
        self.out()?
            .write(&WireEvent::meta(MetaName::Site, pid, 0, site))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out()?.get_mut().flush()
    }

    fn finish(&mut self, footer: &Footer) -> io::Result<()> {
        let pid = self.pid;
        self.out()?
            .write(&WireEvent::meta(MetaName::Footer, pid, 0, footer))?;
        let out = self.out.take().expect("checked above");
        out.finish()?.get_ref().sync_data()
    }
}

/// What a [`MemorySink`] received.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recorded {
    /// `(tid, name)` of each thread, in order of first recording.
    pub threads: Vec<(u32, String)>,
    /// Events, in drain order.
    pub events: Vec<Event>,
    /// Clock synchronisations.
    pub syncs: Vec<ClockSync>,
    /// Source locations calls name by id, in order of first use.
    pub sites: Vec<SourceSite>,
    /// The footer, once finished.
    pub footer: Option<Footer>,
}

/// Keeps every event in memory; clone it before handing it to a recorder and read it after.
#[derive(Clone, Debug, Default)]
pub struct MemorySink {
    recorded: Arc<Mutex<Recorded>>,
}

impl MemorySink {
    /// An empty sink.
    pub fn new() -> MemorySink {
        MemorySink::default()
    }

    /// A copy of what was received so far.
    pub fn recorded(&self) -> Recorded {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.recorded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Sink for MemorySink {
    fn thread(&mut self, tid: u32, name: &str) -> io::Result<()> {
        self.lock().threads.push((tid, name.to_string()));
        Ok(())
    }
    fn event(&mut self, event: &Event) -> io::Result<()> {
        self.lock().events.push(event.clone());
        Ok(())
    }
    fn clock_sync(&mut self, sync: &ClockSync) -> io::Result<()> {
        self.lock().syncs.push(*sync);
        Ok(())
    }
    fn site(&mut self, site: &SourceSite) -> io::Result<()> {
        self.lock().sites.push(site.clone());
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self, footer: &Footer) -> io::Result<()> {
        self.lock().footer = Some(*footer);
        Ok(())
    }
}

/// Drops everything: the baseline for measuring the recorder's own cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullSink;

impl Sink for NullSink {
    fn thread(&mut self, _: u32, _: &str) -> io::Result<()> {
        Ok(())
    }
    fn event(&mut self, _: &Event) -> io::Result<()> {
        Ok(())
    }
    fn clock_sync(&mut self, _: &ClockSync) -> io::Result<()> {
        Ok(())
    }
    fn site(&mut self, _: &SourceSite) -> io::Result<()> {
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self, _: &Footer) -> io::Result<()> {
        Ok(())
    }
}
