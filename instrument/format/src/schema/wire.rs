//! The JSON form of events (Chrome Trace Event format, as Perfetto reads it) and the
//! writers that put them in files.
//!
//! A per-rank file is the JSON *array* form, written one event per line and closed with
//! `]` only at the end, so a file cut short is still a loadable prefix. A merged trace is
//! the JSON *object* form, with our metadata in `otherData` (written first, so a reader
//! meets it before the events).
//!
//! Changing any struct here changes the wire format: bump `FORMAT_VERSION`.

use std::borrow::Cow;
use std::io::{self, Write};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{
    stream_tid, CallArgs, CallEvent, ComputeEvent, Event, GpuArgs, GpuEvent, Nanos, SpanBuffers,
};

/// A time on the wire: microseconds as a JSON number with up to three decimals, which
/// is exactly the nanosecond value inside the program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Micros(pub Nanos);

impl Serialize for Micros {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Division is correctly rounded and serde_json prints the shortest decimal that
        // reads back to the same f64, so this prints exactly `<us>.<3 digits>` for any
        // time below 2^53 ns (104 days).
        s.serialize_f64(self.0 .0 as f64 / 1000.0)
    }
}

impl<'de> Deserialize<'de> for Micros {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let us = f64::deserialize(d)?;
        if !us.is_finite() || us < 0.0 {
            return Err(serde::de::Error::custom(format!(
                "time {us} is not a non-negative number of microseconds"
            )));
        }
        Ok(Micros(Nanos((us * 1000.0).round() as u64)))
    }
}

/// The `ph` field: what kind of Chrome trace event this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Phase {
    /// `X`: a complete event with `ts` and `dur`.
    #[serde(rename = "X")]
    Complete,
    /// `B`: begin of a duration event.
    #[serde(rename = "B")]
    Begin,
    /// `E`: end of a duration event.
    #[serde(rename = "E")]
    End,
    /// `i`: an instant.
    #[serde(rename = "i")]
    Instant,
    /// `C`: a counter sample.
    #[serde(rename = "C")]
    Counter,
    /// `M`: metadata (process and thread names, and overlap's own records).
    #[serde(rename = "M")]
    Metadata,
    /// `b`: begin of an async (nestable) slice, matched by `id`.
    #[serde(rename = "b")]
    AsyncBegin,
    /// `e`: end of an async slice.
    #[serde(rename = "e")]
    AsyncEnd,
    /// `n`: an async instant.
    #[serde(rename = "n")]
    AsyncInstant,
    /// `s`: start of a flow arrow.
    #[serde(rename = "s")]
    FlowStart,
    /// `t`: step of a flow arrow.
    #[serde(rename = "t")]
    FlowStep,
    /// `f`: end of a flow arrow.
    #[serde(rename = "f")]
    FlowEnd,
}

/// The `cat` field of the events overlap writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// An MPI call.
    Mpi,
    /// User computation.
    Compute,
    /// Lifetime of a non-blocking request (merged traces).
    Request,
    /// A message from a send to the call that completed its receive (merged traces).
    Message,
    /// Clock findings, such as a clock-suspect message (merged traces).
    Clock,
    /// A call a rank was still inside at its in-flight dump, from its start to the dump
    /// (merged traces; the call itself is in the per-rank `in_flight` of `otherData`).
    Hang,
    /// GPU work: a copy or kernel on a device stream's track, or a host wait on the host
    /// thread ([`GpuArgs`]).
    Gpu,
    /// A flow from one step of a packet's staging chain to the next: a copy to the MPI
    /// call it enabled, or a receive's completion to the copy it started (merged traces).
    GpuChain,
    /// What the program did with a completed request's buffer (`overlap trace
    /// --buffers`): an instant per watch or unwatched completion (merged traces,
    /// [`super::LearnedArgs`]).
    Buffer,
    /// The run's metadata: the protobuf trace's one instant whose args are what the
    /// JSON's `otherData` holds (never written in JSON).
    Run,
    /// One instance of a region the program marked with `MPI_Pcontrol`, from the call
    /// that entered it to the one that left it (merged traces, [`super::RegionArgs`];
    /// rebuilt from the calls when a merged trace is read).
    Region,
}

impl Category {
    /// The name on the wire (`cat` of the JSON, the interned category of the protobuf).
    pub fn wire_name(self) -> &'static str {
        match self {
            Category::Mpi => "mpi",
            Category::Compute => "compute",
            Category::Request => "request",
            Category::Message => "message",
            Category::Clock => "clock",
            Category::Hang => "hang",
            Category::Gpu => "gpu",
            Category::GpuChain => "gpu_chain",
            Category::Buffer => "buffer",
            Category::Run => "run",
            Category::Region => "region",
        }
    }
}

/// The `bp` field of a flow end: bind to the enclosing slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FlowBinding {
    /// `e`: the slice that encloses the flow event's timestamp.
    #[serde(rename = "e")]
    Enclosing,
}

/// The `s` field of an instant: how far it reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum InstantScope {
    /// `t`: the thread.
    #[serde(rename = "t")]
    Thread,
    /// `p`: the process.
    #[serde(rename = "p")]
    Process,
    /// `g`: the whole trace.
    #[serde(rename = "g")]
    Global,
}

/// Names of the metadata (`M`) events overlap writes. Perfetto reads the first four and
/// ignores the rest, which are overlap's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaName {
    /// `process_name`, args [`NameArgs`].
    ProcessName,
    /// `process_sort_index`, args [`SortIndexArgs`].
    ProcessSortIndex,
    /// `thread_name`, args [`NameArgs`].
    ThreadName,
    /// `thread_sort_index`, args [`SortIndexArgs`].
    ThreadSortIndex,
    /// `overlap_header`, args [`super::Header`].
    Header,
    /// `overlap_clock_sync`, args [`super::ClockSync`].
    ClockSync,
    /// `overlap_footer`, args [`super::Footer`].
    Footer,
    /// `overlap_site`, args [`super::SourceSite`]: a source location calls name by id.
    Site,
}

impl MetaName {
    /// Every metadata name.
    pub const ALL: [MetaName; 8] = [
        MetaName::ProcessName,
        MetaName::ProcessSortIndex,
        MetaName::ThreadName,
        MetaName::ThreadSortIndex,
        MetaName::Header,
        MetaName::ClockSync,
        MetaName::Footer,
        MetaName::Site,
    ];

    /// The `name` field on the wire.
    pub fn wire_name(self) -> &'static str {
        match self {
            MetaName::ProcessName => "process_name",
            MetaName::ProcessSortIndex => "process_sort_index",
            MetaName::ThreadName => "thread_name",
            MetaName::ThreadSortIndex => "thread_sort_index",
            MetaName::Header => "overlap_header",
            MetaName::ClockSync => "overlap_clock_sync",
            MetaName::Footer => "overlap_footer",
            MetaName::Site => "overlap_site",
        }
    }

    /// The metadata name for a wire name.
    pub fn from_wire_name(name: &str) -> Option<MetaName> {
        MetaName::ALL.into_iter().find(|m| m.wire_name() == name)
    }
}

/// Args of `process_name` and `thread_name`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NameArgs {
    /// The name to show.
    pub name: String,
}

/// Args of `process_sort_index` and `thread_sort_index`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SortIndexArgs {
    /// Smaller sorts first.
    pub sort_index: i64,
}

/// Args of a compute event that declared no buffers: `{}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ComputeArgs {}

/// One Chrome trace event. `A` is the type of its `args`: a concrete args struct when
/// writing, `serde_json::Value` when a reader does not know yet what it holds.
///
/// Wire struct: a change means bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireEvent<'a, A> {
    /// Event name: the MPI function for calls, the user's name for compute spans.
    pub name: Cow<'a, str>,
    /// Category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cat: Option<Category>,
    /// Phase.
    pub ph: Phase,
    /// Timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<Micros>,
    /// Duration (complete events only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dur: Option<Micros>,
    /// Process: the rank.
    pub pid: u32,
    /// Thread: the recording thread's index within the rank.
    #[serde(default)]
    pub tid: u32,
    /// Async slice or flow id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// Flow end binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bp: Option<FlowBinding>,
    /// Instant scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s: Option<InstantScope>,
    /// Arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<A>,
}

impl<'a, A> WireEvent<'a, A> {
    /// A bare event of phase `ph` named `name` on `pid`/`tid`; fill in the rest.
    pub fn new(name: impl Into<Cow<'a, str>>, ph: Phase, pid: u32, tid: u32) -> Self {
        WireEvent {
            name: name.into(),
            cat: None,
            ph,
            ts: None,
            dur: None,
            pid,
            tid,
            id: None,
            bp: None,
            s: None,
            args: None,
        }
    }

    /// A metadata event.
    pub fn meta(name: MetaName, pid: u32, tid: u32, args: A) -> Self {
        let mut ev = WireEvent::new(name.wire_name(), Phase::Metadata, pid, tid);
        ev.args = Some(args);
        ev
    }

    /// A complete (`X`) event from `start` to `end`.
    pub fn complete(
        name: impl Into<Cow<'a, str>>,
        cat: Category,
        pid: u32,
        tid: u32,
        start: Nanos,
        end: Nanos,
        args: A,
    ) -> Self {
        let mut ev = WireEvent::new(name, Phase::Complete, pid, tid);
        ev.cat = Some(cat);
        ev.ts = Some(Micros(start));
        ev.dur = Some(Micros(end.saturating_sub(start)));
        ev.args = Some(args);
        ev
    }
}

/// Args of an event as written: a call's, a compute span's or GPU work's.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum EventArgs<'a> {
    /// A call's arguments.
    Call(&'a CallArgs),
    /// A compute span that declared its buffers.
    Buffers(&'a SpanBuffers),
    /// A compute span that declared nothing.
    Compute(ComputeArgs),
    /// GPU work.
    Gpu(GpuArgs),
}

/// The wire form of a typed event on process `pid`, with the event's own times.
pub fn event_to_wire(pid: u32, event: &Event) -> WireEvent<'_, EventArgs<'_>> {
    match event {
        Event::Call(CallEvent {
            tid,
            start,
            end,
            op,
            args,
        }) => WireEvent::complete(
            op.mpi_name(),
            Category::Mpi,
            pid,
            *tid,
            *start,
            *end,
            EventArgs::Call(args),
        ),
        Event::Compute(ComputeEvent {
            tid,
            start,
            end,
            name,
            buffers,
        }) => WireEvent::complete(
            name.as_str(),
            Category::Compute,
            pid,
            *tid,
            *start,
            *end,
            match buffers {
                Some(b) => EventArgs::Buffers(b),
                None => EventArgs::Compute(ComputeArgs {}),
            },
        ),
        Event::Gpu(g) => gpu_to_wire(pid, g),
    }
}

/// The wire form of GPU work: a device operation on its stream's track, a host wait on
/// the host thread that waited.
pub fn gpu_to_wire(pid: u32, g: &GpuEvent) -> WireEvent<'static, EventArgs<'static>> {
    let tid = if g.op.on_device() {
        stream_tid(g.device, g.stream)
    } else {
        g.tid
    };
    WireEvent::complete(
        g.display_name(),
        Category::Gpu,
        pid,
        tid,
        g.start,
        g.end,
        EventArgs::Gpu(GpuArgs::of(g)),
    )
}

/// Writes the JSON array form: `[` then one event per line, `]` on [`ArrayWriter::finish`].
/// Events are formatted into a buffer of their own and handed to `out` in blocks of
/// about 64 KiB (serde's writes, a few bytes each, cost more than the formatting when
/// they reach a file one by one); a block always ends between two events.
pub struct ArrayWriter<W: Write> {
    out: W,
    written: u64,
    pending: Vec<u8>,
}

/// How much formatted text [`ArrayWriter`] keeps before handing it over.
const BLOCK: usize = 64 << 10;

/// Formats one event for [`ArrayWriter::write_formatted`], appended to `buf`: the
/// separator that precedes every event of an array but the first, then the event on
/// one line. For formatting blocks of events on other threads.
pub fn format_event<A: Serialize>(buf: &mut Vec<u8>, event: &WireEvent<'_, A>) -> io::Result<()> {
    buf.extend_from_slice(b",\n");
    serde_json::to_writer(buf, event).map_err(io::Error::other)
}

impl<W: Write> ArrayWriter<W> {
    /// Starts the array.
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(b"[\n")?;
        Ok(ArrayWriter {
            out,
            written: 0,
            pending: Vec::with_capacity(BLOCK + 4096),
        })
    }

    /// Appends one event.
    pub fn write<A: Serialize>(&mut self, event: &WireEvent<'_, A>) -> io::Result<()> {
        if self.written > 0 {
            self.pending.extend_from_slice(b",\n");
        }
        serde_json::to_writer(&mut self.pending, event).map_err(io::Error::other)?;
        self.written += 1;
        self.hand_over(false)
    }

    /// Appends `n` events formatted by [`format_event`] into `text`.
    pub fn write_formatted(&mut self, text: &[u8], n: u64) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        let text = match self.written {
            0 => text.strip_prefix(b",\n").unwrap_or(text),
            _ => text,
        };
        self.hand_over(true)?;
        self.out.write_all(text)?;
        self.written += n;
        Ok(())
    }

    /// Hands the formatted text to `out` when there is a block of it (or, `all`, any).
    fn hand_over(&mut self, all: bool) -> io::Result<()> {
        if self.pending.len() >= BLOCK || (all && !self.pending.is_empty()) {
            self.out.write_all(&self.pending)?;
            self.pending.clear();
        }
        Ok(())
    }

    /// Events written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The underlying writer, to flush it (what was formatted is handed to it first).
    pub fn get_mut(&mut self) -> io::Result<&mut W> {
        self.hand_over(true)?;
        Ok(&mut self.out)
    }

    /// Closes the array and hands back the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.pending.extend_from_slice(b"\n]\n");
        self.hand_over(true)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Writes the JSON object form of a merged trace: `otherData` first, then `traceEvents`.
pub struct ObjectWriter<W: Write> {
    array: ArrayWriter<W>,
}

impl<W: Write> ObjectWriter<W> {
    /// Starts the object with its `otherData`.
    pub fn new<M: Serialize>(mut out: W, other_data: &M) -> io::Result<Self> {
        out.write_all(b"{\"otherData\":")?;
        serde_json::to_writer(&mut out, other_data).map_err(io::Error::other)?;
        out.write_all(b",\n\"displayTimeUnit\":\"ns\",\n\"traceEvents\":")?;
        Ok(ObjectWriter {
            array: ArrayWriter::new(out)?,
        })
    }

    /// Appends one event.
    pub fn write<A: Serialize>(&mut self, event: &WireEvent<'_, A>) -> io::Result<()> {
        self.array.write(event)
    }

    /// Appends `n` events formatted elsewhere (see [`ArrayWriter::write_formatted`]).
    pub fn write_formatted(&mut self, text: &[u8], n: u64) -> io::Result<()> {
        self.array.write_formatted(text, n)
    }

    /// Events written so far.
    pub fn written(&self) -> u64 {
        self.array.written()
    }

    /// Closes the array and the object.
    pub fn finish(self) -> io::Result<W> {
        let mut out = self.array.finish()?;
        out.write_all(b"}\n")?;
        out.flush()?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn category_wire_names_are_serde_names() {
        use Category::*;
        for c in [
            Mpi, Compute, Request, Message, Clock, Hang, Gpu, GpuChain, Buffer, Run, Region,
        ] {
            let text = serde_json::to_string(&c).expect("serializes");
            assert_eq!(text, format!("\"{}\"", c.wire_name()));
        }
    }

    #[test]
    fn micros_are_exact_nanoseconds() {
        for ns in [
            0u64,
            1,
            999,
            1000,
            1_234_567,
            12_345_678_901,
            86_400_000_000_123,
        ] {
            let text = serde_json::to_string(&Micros(Nanos(ns))).expect("serializes");
            let back: Micros = serde_json::from_str(&text).expect("parses");
            assert_eq!(back.0, Nanos(ns), "{text}");
        }
        assert_eq!(
            serde_json::to_string(&Micros(Nanos(12_345_678_901))).expect("serializes"),
            "12345678.901"
        );
        assert!(serde_json::from_str::<Micros>("-1.0").is_err());
    }

    #[test]
    fn array_writer_writes_one_event_per_line_and_closes() {
        let mut w = ArrayWriter::new(Vec::new()).expect("vec");
        let ev: WireEvent<NameArgs> = WireEvent::meta(
            MetaName::ProcessName,
            3,
            0,
            NameArgs {
                name: "rank 3 (node1)".into(),
            },
        );
        w.write(&ev).expect("vec");
        w.write(&ev).expect("vec");
        let text = String::from_utf8(w.finish().expect("vec")).expect("utf8");
        assert_eq!(text.lines().count(), 4);
        let parsed: Vec<WireEvent<NameArgs>> = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(parsed, vec![ev.clone(), ev]);
    }
}
