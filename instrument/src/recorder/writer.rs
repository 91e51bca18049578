//! The writer thread: wakes every flush interval (or when a ring fills up), copies what
//! each thread's ring holds into a page of the stream, adds a clock calibration reading
//! when one is due, and hands the page to the sink. No record is decoded or formatted
//! here: that happens when the stream is read.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use overlap_format::stream::{calibration_payload, footer_payload, frame, inflight, FrameKind};

use super::inflight::{snapshot, Watch};
use super::sink::Sink;
use super::Shared;
use crate::clock::{Calibrator, Timebase};
use crate::schema::{DumpReason, Footer};

/// How far apart the first two calibration readings are: the tick rate to about ten
/// parts per million until the next reading (a second later, and at the end) refines it.
const FIRST_GAP: Duration = Duration::from_millis(2);

/// What the writer reports when it ends.
#[derive(Debug)]
pub(crate) struct WriterOutcome {
    pub(crate) footer: Footer,
    pub(crate) error: Option<io::Error>,
}

struct Writer<S: Sink> {
    sink: S,
    page: Vec<u8>,
    calibrator: Option<Calibrator>,
    error: Option<io::Error>,
    announced: Vec<bool>,
}

impl<S: Sink> Writer<S> {
    /// Hands the page to the sink (unless an error stopped the writing).
    fn write_page(&mut self) {
        if self.error.is_none() && !self.page.is_empty() {
            if let Err(e) = self.sink.write(&self.page) {
                self.error = Some(e);
            }
        }
        self.page.clear();
    }

    fn calibrate(&mut self, force: bool) {
        if let Some(reading) = self.calibrator.as_mut().and_then(|c| c.reading(force)) {
            let payload = calibration_payload(&[reading]);
            frame(&mut self.page, FrameKind::Calibration, 0, &[&payload]);
        }
    }

    /// Copies every ring once, then writes the page.
    fn drain_all(&mut self, shared: &Shared, force_calibration: bool) {
        // Bindings first: a span that names one is drained now or later, and a page
        // torn by a kill keeps its beginning.
        let bound = std::mem::take(
            &mut *shared
                .bindings
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if !bound.is_empty() {
            frame(&mut self.page, FrameKind::Bindings, 0, &[&bound]);
        }
        let learned = std::mem::take(
            &mut *shared
                .learned
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if !learned.is_empty() {
            frame(&mut self.page, FrameKind::Learned, 0, &[&learned]);
        }
        let sources = shared
            .frame_sources
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        for (kind, source) in sources {
            if let Some(payload) = source() {
                frame(&mut self.page, kind, 0, &[&payload]);
            }
        }
        for ring in shared.rings_snapshot() {
            let tid = ring.tid as usize;
            if self.announced.len() <= tid {
                self.announced.resize(tid + 1, false);
            }
            if !self.announced[tid] {
                self.announced[tid] = true;
                let name = ring.thread_name.as_bytes();
                frame(&mut self.page, FrameKind::Thread, ring.tid, &[name]);
            }
            let page = &mut self.page;
            ring.drain(|a, b| frame(page, FrameKind::Events, ring.tid, &[a, b]));
        }
        self.calibrate(force_calibration);
        self.write_page();
    }
}

impl<S: Sink> Writer<S> {
    /// Writes an in-flight dump after everything recorded so far; its Unix time when it
    /// reached the sink.
    fn dump(&mut self, shared: &Shared, timebase: Timebase, reason: DumpReason) -> Option<u64> {
        self.drain_all(shared, false);
        let at = timebase.stamp().raw();
        let dump = snapshot(&shared.rings_snapshot(), reason, at);
        frame(
            &mut self.page,
            FrameKind::InFlight,
            0,
            &[&inflight::payload(&dump)],
        );
        self.write_page();
        self.error.is_none().then_some(dump.unix_ns)
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
    timebase: Timebase,
    shared: Arc<Shared>,
    interval: Duration,
    hang_timeout: Option<Duration>,
) -> WriterOutcome {
    let clock = timebase.stamp_clock();
    let mut w = Writer {
        sink,
        page: Vec::with_capacity(1 << 16),
        calibrator: matches!(timebase, Timebase::Tsc).then(Calibrator::default),
        error: None,
        announced: Vec::new(),
    };
    frame(&mut w.page, FrameKind::Clock, 0, &[&[clock as u8]]);
    w.calibrate(false);
    if w.calibrator.is_some() {
        // The second reading goes out before any event: a file holding events can
        // always convert them, even when its first page of events is torn by a kill or
        // a full disk (the readings at the end of that page would be lost with it).
        std::thread::sleep(FIRST_GAP);
        w.calibrate(true);
    }
    w.write_page();
    let mut watch = Watch::new(
        hang_timeout,
        w.sink.dump_marker(),
        Arc::clone(&shared.dump_asked),
    );
    let interval = watch.interval(interval);
    loop {
        // Read the flag before draining: once it is set, one more full drain follows.
        let stopping = shared.finished.load(Ordering::Acquire);
        w.drain_all(&shared, stopping);
        if stopping {
            break;
        }
        if let Some(reason) = watch.due(&shared.rings_snapshot()) {
            if let Some(unix_ns) = w.dump(&shared, timebase, reason) {
                watch.mark(reason, unix_ns);
            }
        }
        std::thread::park_timeout(interval);
    }
    watch.unmark_stalled();
    // Count, then drain once more: a group published while finishing (it passed the
    // `finished` check just before it was set) is counted only after its bytes are
    // published, so everything counted is in the file.
    let rings = shared.rings_snapshot();
    let footer = Footer {
        events: rings.iter().map(|r| r.events()).sum(),
        threads: rings.len() as u32,
        buffer_stalls: rings.iter().map(|r| r.stalls()).sum(),
    };
    w.drain_all(&shared, false);
    frame(
        &mut w.page,
        FrameKind::Footer,
        0,
        &[&footer_payload(&footer)],
    );
    w.write_page();
    if w.error.is_none() {
        if let Err(e) = w.sink.finish() {
            w.error = Some(e);
        }
    }
    WriterOutcome {
        footer,
        error: w.error,
    }
}
