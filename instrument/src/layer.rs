//! Ordinary `tracing` spans in user code become compute spans in the trace.
//!
//! Install [`ComputeLayer`] in a `tracing_subscriber` registry; every span entered and
//! exited on a thread is recorded, by its name, as a compute span of that thread. The
//! layer keeps entry times on a fixed-depth per-thread stack, so it allocates nothing
//! per span.

use std::cell::RefCell;

use tracing::span;
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::clock::Stamp;
use crate::recorder::Recorder;

/// Spans nested deeper than this on one thread are not recorded.
const MAX_DEPTH: usize = 64;

struct OpenSpans {
    stack: [(u64, Stamp); MAX_DEPTH],
    depth: usize,
    /// Enters beyond `MAX_DEPTH` that were not recorded, so their exits are skipped too.
    overflow: usize,
}

thread_local! {
    static OPEN: RefCell<OpenSpans> = const {
        RefCell::new(OpenSpans { stack: [(0, Stamp::ZERO); MAX_DEPTH], depth: 0, overflow: 0 })
    };
}

/// A `tracing_subscriber::Layer` that records entered spans as compute spans.
///
/// ```
/// use overlap_instrument::layer::ComputeLayer;
/// use overlap_instrument::recorder::{MemorySink, Recorder, RecorderConfig};
/// use tracing_subscriber::layer::SubscriberExt;
///
/// let sink = MemorySink::new();
/// let rec = Recorder::new(sink.clone(), RecorderConfig::default()).unwrap();
/// let subscriber = tracing_subscriber::registry().with(ComputeLayer::new(rec.clone()));
/// tracing::subscriber::with_default(subscriber, || {
///     tracing::span!(tracing::Level::INFO, "assemble").in_scope(|| { /* work */ });
/// });
/// rec.finish().unwrap();
/// assert_eq!(sink.recorded().events.len(), 1);
/// ```
pub struct ComputeLayer {
    recorder: Recorder,
}

impl ComputeLayer {
    /// A layer recording into `recorder`.
    pub fn new(recorder: Recorder) -> ComputeLayer {
        ComputeLayer { recorder }
    }
}

impl<S> Layer<S> for ComputeLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_enter(&self, id: &span::Id, _ctx: Context<'_, S>) {
        let now = self.recorder.stamp();
        OPEN.with(|open| {
            let mut open = open.borrow_mut();
            if open.depth < MAX_DEPTH {
                let d = open.depth;
                open.stack[d] = (id.into_u64(), now);
                open.depth += 1;
            } else {
                open.overflow += 1;
            }
        });
    }

    fn on_exit(&self, id: &span::Id, ctx: Context<'_, S>) {
        let now = self.recorder.stamp();
        let start = OPEN.with(|open| {
            let mut open = open.borrow_mut();
            if open.overflow > 0 {
                open.overflow -= 1;
                return None;
            }
            // Spans normally exit in reverse order of entry; tolerate the rare
            // out-of-order exit by searching down the stack.
            let depth = open.depth;
            let pos = open.stack[..depth]
                .iter()
                .rposition(|(sid, _)| *sid == id.into_u64())?;
            let start = open.stack[pos].1;
            open.stack.copy_within(pos + 1..depth, pos);
            open.depth -= 1;
            Some(start)
        });
        if let (Some(start), Some(meta)) = (start, ctx.metadata(id)) {
            self.recorder.record_compute(meta.name(), start, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{MemorySink, RecorderConfig};
    use crate::schema::Event;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn nested_spans_become_nested_compute_spans() {
        let sink = MemorySink::new();
        let rec = Recorder::new(sink.clone(), RecorderConfig::default()).expect("recorder");
        let subscriber = tracing_subscriber::registry().with(ComputeLayer::new(rec.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let outer = tracing::info_span!("outer");
            let _o = outer.enter();
            tracing::info_span!("inner").in_scope(|| std::hint::black_box(1 + 1));
        });
        rec.finish().expect("finish");
        let events = sink.recorded().events;
        let spans: Vec<(&str, u64, u64)> = events
            .iter()
            .map(|e| match e {
                Event::Compute(c) => (c.name.as_str(), c.start.0, c.end.0),
                Event::Call(_) => panic!("only compute spans"),
            })
            .collect();
        assert_eq!(spans.len(), 2);
        let (inner, outer) = (spans[0], spans[1]);
        assert_eq!((inner.0, outer.0), ("inner", "outer"));
        assert!(outer.1 <= inner.1 && inner.2 <= outer.2, "{spans:?}");
    }
}
