//! The writer thread: wakes every flush interval (or when a ring fills up), drains every
//! thread's ring, turns records into events, hands them to the sink and flushes it. All
//! formatting and I/O of the recorder happens here, off the recording threads.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::record::Record;
use super::sink::Sink;
use super::site::{SiteWord, SourceSites};
use super::Shared;
use crate::clock::StampConverter;
use crate::schema::{CallEvent, Completion, ComputeEvent, Event, Footer, Started};

/// What the writer reports when it ends.
#[derive(Debug)]
pub(crate) struct WriterOutcome {
    pub(crate) footer: Footer,
    pub(crate) error: Option<io::Error>,
}

/// A call waiting for the completion records that follow it.
struct PendingCall {
    event: CallEvent,
    data: super::CallData,
    site: SiteWord,
    remaining: u32,
    completed: Vec<Completion>,
    started: Vec<Started>,
    group: Vec<i32>,
}

struct Writer<S: Sink> {
    sink: S,
    clock: StampConverter,
    error: Option<io::Error>,
    events: u64,
    announced: Vec<bool>,
    pending: Option<PendingCall>,
    sources: SourceSites,
}

impl<S: Sink> Writer<S> {
    fn attempt(&mut self, f: impl FnOnce(&mut S) -> io::Result<()>) {
        if self.error.is_none() {
            if let Err(e) = f(&mut self.sink) {
                self.error = Some(e);
            }
        }
    }

    fn emit(&mut self, event: Event) {
        self.events += 1;
        self.attempt(|s| s.event(&event));
    }

    fn finish_call(&mut self, p: PendingCall) {
        let PendingCall {
            mut event,
            data,
            site,
            completed,
            started,
            group,
            ..
        } = p;
        let (site, new_site) = self.sources.wire(site);
        if let Some(listed) = new_site {
            self.attempt(|s| s.site(&listed));
        }
        event.args = data.to_args(site.unwrap_or(0), completed, started);
        event.args.group = group;
        self.emit(Event::Call(event));
    }

    fn record(&mut self, tid: u32, record: &Record) {
        match *record {
            Record::Call {
                op,
                start,
                end,
                site,
                data,
                follow,
            } => {
                let p = PendingCall {
                    event: CallEvent {
                        tid,
                        start: self.clock.to_nanos(start),
                        end: self.clock.to_nanos(end),
                        op,
                        args: Default::default(),
                    },
                    data,
                    site,
                    remaining: follow,
                    completed: Vec::new(),
                    started: Vec::new(),
                    group: Vec::new(),
                };
                if follow == 0 {
                    self.finish_call(p);
                } else {
                    self.pending = Some(p);
                }
            }
            Record::Completed(c) => self.follow(|p| p.completed.push(c)),
            Record::Started(s) => self.follow(|p| p.started.push(s)),
            Record::Members { ranks, len } => self.follow(|p| {
                let n = usize::from(len).min(ranks.len());
                p.group.extend_from_slice(&ranks[..n]);
            }),
            Record::Compute { name, start, end } => {
                let (start, end) = (self.clock.to_nanos(start), self.clock.to_nanos(end));
                self.emit(Event::Compute(ComputeEvent {
                    tid,
                    start,
                    end,
                    name: name.to_string(),
                }))
            }
            Record::Sync(sync) => self.attempt(|s| s.clock_sync(&sync)),
        }
    }

    /// Adds a follow record to the pending call, and emits the call after its last one.
    fn follow(&mut self, add: impl FnOnce(&mut PendingCall)) {
        if let Some(p) = self.pending.as_mut() {
            add(p);
            p.remaining -= 1;
            if p.remaining == 0 {
                if let Some(p) = self.pending.take() {
                    self.finish_call(p);
                }
            }
        }
    }

    /// Drains every ring once.
    fn drain_all(&mut self, shared: &Shared) {
        self.clock.refresh();
        for ring in shared.rings_snapshot() {
            let tid = ring.tid as usize;
            if self.announced.len() <= tid {
                self.announced.resize(tid + 1, false);
            }
            if !self.announced[tid] {
                self.announced[tid] = true;
                self.attempt(|s| s.thread(ring.tid, &ring.thread_name));
            }
            ring.drain(|r| self.record(ring.tid, r));
        }
    }
}

/// Gives the calling thread the lowest priority of the normal class (nice 19, Linux
/// threads have their own): it still gets a small share of a busy core (so a trace keeps
/// reaching its file while every core spins in MPI), and all the time nobody else wants.
pub(crate) fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions; setpriority changes this thread only.
        unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
        }
    }
}

/// The writer thread's body.
pub(crate) fn run<S: Sink>(
    sink: S,
    clock: StampConverter,
    shared: Arc<Shared>,
    interval: Duration,
) -> WriterOutcome {
    let mut w = Writer {
        sink,
        clock,
        error: None,
        events: 0,
        announced: Vec::new(),
        pending: None,
        sources: SourceSites::default(),
    };
    loop {
        // Read the flag before draining: once it is set, one more full drain follows.
        let stopping = shared.stop.load(Ordering::Acquire);
        w.drain_all(&shared);
        w.attempt(|s| s.flush());
        if stopping {
            break;
        }
        std::thread::park_timeout(interval);
    }
    let rings = shared.rings_snapshot();
    let footer = Footer {
        events: w.events,
        threads: rings.len() as u32,
        buffer_stalls: rings.iter().map(|r| r.stalls()).sum(),
    };
    w.attempt(|s| s.finish(&footer));
    WriterOutcome {
        footer,
        error: w.error,
    }
}
