//! The writer thread: wakes every flush interval (or when a ring fills up), drains every
//! thread's ring, turns records into events, hands them to the sink and flushes it. All
//! formatting and I/O of the recorder happens here, off the recording threads.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::record::Record;
use super::sink::Sink;
use super::Shared;
use crate::clock::StampConverter;
use crate::schema::{CallEvent, Completion, ComputeEvent, Event, Footer};

/// What the writer reports when it ends.
#[derive(Debug)]
pub(crate) struct WriterOutcome {
    pub(crate) footer: Footer,
    pub(crate) error: Option<io::Error>,
}

/// A call waiting for the completion records that follow it.
struct PendingCall {
    event: CallEvent,
    data: super::record::CallData,
    remaining: u32,
    completed: Vec<Completion>,
}

struct Writer<S: Sink> {
    sink: S,
    clock: StampConverter,
    error: Option<io::Error>,
    events: u64,
    announced: Vec<bool>,
    pending: Option<PendingCall>,
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
            completed,
            ..
        } = p;
        event.args = data.to_args(completed);
        self.emit(Event::Call(event));
    }

    fn record(&mut self, tid: u32, record: &Record) {
        match *record {
            Record::Call {
                op,
                start,
                end,
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
                    remaining: follow,
                    completed: Vec::with_capacity(follow as usize),
                };
                if follow == 0 {
                    self.finish_call(p);
                } else {
                    self.pending = Some(p);
                }
            }
            Record::Completed(c) => {
                if let Some(p) = self.pending.as_mut() {
                    p.completed.push(c);
                    p.remaining -= 1;
                    if p.remaining == 0 {
                        let p = self.pending.take().expect("just matched");
                        self.finish_call(p);
                    }
                }
            }
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
