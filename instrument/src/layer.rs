//! Ordinary `tracing` spans in user code become compute spans in the trace.
//!
//! Install [`ComputeLayer`] in a `tracing_subscriber` registry; every span entered and
//! exited on a thread is recorded, by its name, as a compute span of that thread. The
//! layer keeps entry times on a fixed-depth per-thread stack, so it allocates nothing
//! per enter or exit.
//!
//! A span may say which buffers it reads and writes with the fields `reads` and
//! `writes`, each a comma-separated list of names the program bound with
//! [`Recorder::bind_buffer`] (`reads = "halo_l,halo_r", writes = "sendbuf"`; a field
//! left out means none of that kind). They are taken once, when the span is created,
//! and interned ([`BufferAccess`]); entering and exiting the span then costs what a
//! plain one does. A list that cannot be used (more than 16 names, a name over 255
//! bytes) leaves the span's buffers unknown, as if it had said nothing.

use std::cell::RefCell;

use tracing::field::{Field, Visit};
use tracing::span;
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::clock::Stamp;
use crate::recorder::{BufferAccess, Recorder};

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

/// The field names that declare a span's buffers.
const READS: &str = "reads";
const WRITES: &str = "writes";

/// What a span declared, kept in its extensions.
struct Declared(BufferAccess);

/// Collects the `reads` and `writes` fields of a span.
#[derive(Default)]
struct Fields {
    reads: Option<String>,
    writes: Option<String>,
}

impl Fields {
    fn slot(&mut self, field: &Field) -> Option<&mut Option<String>> {
        match field.name() {
            READS => Some(&mut self.reads),
            WRITES => Some(&mut self.writes),
            _ => None,
        }
    }

    /// The declared buffers, when the span named any field and the lists are usable.
    fn access(&self) -> Option<BufferAccess> {
        if self.reads.is_none() && self.writes.is_none() {
            return None;
        }
        let list = |v: &Option<String>| v.clone().unwrap_or_default();
        BufferAccess::parse(&list(&self.reads), &list(&self.writes)).ok()
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if let Some(slot) = self.slot(field) {
            *slot = Some(value.to_string());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if let Some(slot) = self.slot(field) {
            *slot = Some(format!("{value:?}").trim_matches('"').to_string());
        }
    }
}

/// True when a span of this kind may declare buffers.
fn declares(meta: &tracing::Metadata<'_>) -> bool {
    let f = meta.fields();
    f.field(READS).is_some() || f.field(WRITES).is_some()
}

impl<S> Layer<S> for ComputeLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, S>) {
        if !declares(attrs.metadata()) {
            return;
        }
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let (Some(access), Some(span)) = (fields.access(), ctx.span(id)) {
            span.extensions_mut().insert(Declared(access));
        }
    }

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
            let buffers = declares(meta)
                .then(|| ctx.span(id))
                .flatten()
                .and_then(|s| s.extensions().get::<Declared>().map(|d| d.0));
            self.recorder
                .record_compute_with(meta.name(), buffers, start, now);
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
                _ => panic!("only compute spans"),
            })
            .collect();
        assert_eq!(spans.len(), 2);
        let (inner, outer) = (spans[0], spans[1]);
        assert_eq!((inner.0, outer.0), ("inner", "outer"));
        assert!(outer.1 <= inner.1 && inner.2 <= outer.2, "{spans:?}");
    }

    #[test]
    fn reads_and_writes_fields_name_bound_buffers() {
        let sink = MemorySink::new();
        let rec = Recorder::new(sink.clone(), RecorderConfig::default()).expect("recorder");
        rec.bind_buffer("halo_l", 0x1000, 8);
        rec.bind_buffer("halo_r", 0x2000, 8);
        rec.bind_buffer("sendbuf", 0x3000, 64);
        let subscriber = tracing_subscriber::registry().with(ComputeLayer::new(rec.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let pack = tracing::info_span!("pack", reads = "halo_l, halo_r", writes = "sendbuf");
            for _ in 0..2 {
                pack.in_scope(|| std::hint::black_box(1));
            }
            let debug_form = tracing::info_span!("only_writes", writes = ?"halo_l");
            debug_form.in_scope(|| ());
            tracing::info_span!("plain", other = 3).in_scope(|| ());
            tracing::info_span!("unbound", reads = "nowhere").in_scope(|| ());
            let too_many = vec!["b"; 17].join(",");
            tracing::info_span!("too_many", reads = too_many.as_str()).in_scope(|| ());
        });
        rec.finish().expect("finish");
        let got = sink.recorded();
        type Named = Vec<(String, u64)>;
        let spans: Vec<(String, Option<(Named, Named)>)> = got
            .events
            .iter()
            .map(|e| match e {
                Event::Compute(c) => (
                    c.name.clone(),
                    c.buffers.as_ref().map(|b| {
                        let each = |v: &[crate::schema::BufferUse]| {
                            v.iter()
                                .map(|u| (u.name.clone(), u.buf))
                                .collect::<Vec<_>>()
                        };
                        (each(&b.reads), each(&b.writes))
                    }),
                ),
                _ => panic!("only compute spans"),
            })
            .collect();
        let n = |s: &str, a: u64| (s.to_string(), a);
        let pack = Some((
            vec![n("halo_l", 0x1000), n("halo_r", 0x2000)],
            vec![n("sendbuf", 0x3000)],
        ));
        assert_eq!(spans[0], ("pack".into(), pack.clone()));
        assert_eq!(spans[1], ("pack".into(), pack));
        assert_eq!(
            spans[2],
            (
                "only_writes".into(),
                Some((vec![], vec![n("halo_l", 0x1000)]))
            )
        );
        // Said nothing, named a buffer never bound, or a list too long: unknown.
        assert_eq!(spans[3], ("plain".into(), None));
        assert_eq!(spans[4], ("unbound".into(), None));
        assert_eq!(spans[5], ("too_many".into(), None));
        assert_eq!(got.notes.len(), 1, "{:?}", got.notes);
        assert!(got.notes[0].reason.contains("\"nowhere\" was never bound"));
    }
}
