//! Reading a stream back into events: frames are checked one by one (a frame cut short
//! or failing its checksum ends the reading, with everything before it kept), then each
//! thread's records are decoded in order, calls regrouped with the completions, starts
//! and group members that follow them, stamps converted to nanoseconds since the epoch,
//! and the Rust layer's source locations numbered as sites.

use std::collections::HashMap;
use std::sync::Arc;

use super::codec::{decode, Deltas, GpuRecord, Record};
use super::convert::{converter, Converter, Readings};
pub(super) use super::frames::Frame;
use super::frames::{frames, FramesEnd};
use super::sites::{Place, Sites};
use super::varint::Reader;
pub use super::visitor::{Problem, StreamError, Visitor};
use super::{is_stream, le_u32, le_u64, FrameKind, FILE_HEADER_LEN, FRAME_HEADER_LEN};
use crate::schema::{
    readable_version, Bindings, CallEvent, Completion, ComputeEvent, Event, Footer, GpuEvent,
    Header, Nanos, SpanBuffers, Started, FORMAT_NAME,
};

/// Reads a whole stream, handing its contents to `v`. Returns what could not be used.
pub fn read(bytes: &[u8], v: &mut impl Visitor) -> Result<Vec<Problem>, StreamError> {
    read_borrowing(bytes, v, &[])
}

/// [`read`], with the calibration readings of another file of the same host
/// ([`super::host_readings`]) to convert the stamps of a file whose own readings are
/// too few (a rank cut short before its second reading, by a build that took it late):
/// used only then, and said in a note.
pub fn read_borrowing(
    bytes: &[u8],
    v: &mut impl Visitor,
    borrowed: &[(u64, u64)],
) -> Result<Vec<Problem>, StreamError> {
    if !is_stream(bytes) {
        let what = if bytes.is_empty() {
            "the file is empty".to_string()
        } else {
            "it does not start with \"OVLPRANK\"".to_string()
        };
        return Err(StreamError::NotAStream(what));
    }
    if bytes.len() < FILE_HEADER_LEN {
        return Err(StreamError::NotAStream(format!(
            "the file ends {} byte(s) into its 16-byte opening",
            bytes.len()
        )));
    }
    let version = le_u32(bytes, 8);
    if !readable_version(version) || version < 4 {
        return Err(StreamError::Version { found: version });
    }
    let mut framing = Vec::new();
    let (frames, end) = frames(bytes, &mut framing);
    if end == FramesEnd::Damaged {
        v.damaged();
    }
    let mut problems = Vec::new();
    let header = match frames.first() {
        Some(f) if f.kind == FrameKind::Header => serde_json::from_slice::<Header>(f.payload)
            .map_err(|e| StreamError::BadHeader {
                offset: f.offset as u64,
                reason: e.to_string(),
            })?,
        _ => {
            return Err(StreamError::BadHeader {
                offset: FILE_HEADER_LEN as u64,
                reason: framing
                    .first()
                    .map_or("the first frame is not the header".into(), |p| {
                        p.reason.clone()
                    }),
            })
        }
    };
    if header.format != FORMAT_NAME {
        return Err(StreamError::BadHeader {
            offset: FILE_HEADER_LEN as u64,
            reason: format!("format is {:?}, not {FORMAT_NAME:?}", header.format),
        });
    }
    let (converter, readings) = converter(&frames, header.epoch_ns, &mut problems, borrowed)?;
    let borrowed_note = (readings == Readings::Borrowed).then(|| Problem {
        offset: FILE_HEADER_LEN as u64,
        event_index: 0,
        reason: format!(
            "too few calibration readings of its own: its stamps are converted with those \
             of another rank of host {:?}, which reads the same time-stamp counter (exact \
             at their readings, as for that rank)",
            header.host
        ),
    });
    let bindings = super::buffers::collect(&frames, &converter, &mut problems);
    v.header(header);
    if let Some(note) = borrowed_note {
        v.note(note);
    }
    let mut threads: HashMap<u32, ThreadState> = HashMap::new();
    let mut sites = Sites::default();
    let mut events = 0u64;
    let mut footer_events = None;
    for f in &frames[1..] {
        match f.kind {
            FrameKind::Header => problems.push(Problem {
                offset: f.offset as u64,
                event_index: events,
                reason: "a second header frame, ignored".into(),
            }),
            FrameKind::Clock | FrameKind::Calibration | FrameKind::Bindings => {}
            FrameKind::Thread => {
                v.thread(f.tid, String::from_utf8_lossy(f.payload).into_owned());
            }
            FrameKind::Footer => {
                if f.payload.len() == 20 {
                    let footer = Footer {
                        events: le_u64(f.payload, 0),
                        threads: le_u32(f.payload, 8),
                        buffer_stalls: le_u64(f.payload, 12),
                    };
                    footer_events = Some(footer.events);
                    v.footer(footer);
                } else {
                    problems.push(Problem {
                        offset: f.offset as u64,
                        event_index: events,
                        reason: format!("a footer of {} bytes (20 expected)", f.payload.len()),
                    });
                }
            }
            FrameKind::CallPaths => match super::paths::decode(f.payload) {
                Ok(paths) => paths.into_iter().for_each(|p| v.call_path(p)),
                Err(reason) => problems.push(Problem {
                    offset: f.offset as u64,
                    event_index: events,
                    reason,
                }),
            },
            FrameKind::CallCounts => match super::counts::decode(f.payload) {
                Ok(counts) => v.call_counts(counts),
                Err(reason) => problems.push(Problem {
                    offset: f.offset as u64,
                    event_index: events,
                    reason,
                }),
            },
            FrameKind::Learned => {
                let at = f.offset as u64;
                match super::learned::convert(f.payload, &converter, at, events) {
                    Ok(records) => records.into_iter().for_each(|r| match r {
                        super::learned::Learned::Watch(w) => v.learned(w),
                        super::learned::Learned::Unwatched(u) => v.unwatched(u),
                    }),
                    Err(p) => problems.push(p),
                }
            }
            FrameKind::InFlight => match super::inflight::decode(f.payload) {
                Ok(raw) => {
                    let nanos = |s| converter.nanos(s).0;
                    let (dump, unknown) = super::inflight::convert(raw, nanos, |word| {
                        let (id, new) = sites.wire(word);
                        new.into_iter().for_each(|s| v.site(s));
                        id
                    });
                    v.in_flight(dump);
                    let at = f.offset as u64;
                    problems.extend(unknown.into_iter().map(|reason| Problem {
                        offset: at,
                        event_index: events,
                        reason,
                    }));
                }
                Err(reason) => problems.push(Problem {
                    offset: f.offset as u64,
                    event_index: events,
                    reason,
                }),
            },
            FrameKind::Events => {
                let state = threads.entry(f.tid).or_default();
                let mut page = Page {
                    tid: f.tid,
                    converter: &converter,
                    bindings: &bindings,
                    sites: &mut sites,
                    events: &mut events,
                    build: v.wants_events(),
                    at: 0,
                    notes: Vec::new(),
                    unbound: Vec::new(),
                };
                let outcome = page.read(state, f.payload, v);
                let (notes, unbound) = (page.notes, page.unbound);
                for (at, reason) in unbound {
                    v.note(Problem {
                        offset: (f.offset + FRAME_HEADER_LEN + at) as u64,
                        event_index: events,
                        reason: format!("thread {}: {reason}", f.tid),
                    });
                }
                for (at, reason) in notes {
                    problems.push(Problem {
                        offset: (f.offset + FRAME_HEADER_LEN + at) as u64,
                        event_index: events,
                        reason: format!("thread {}: {reason}", f.tid),
                    });
                }
                // A torn frame ends within a record: said once, by the framing.
                if let (Err((at, reason)), false) = (outcome, f.torn) {
                    problems.push(Problem {
                        offset: (f.offset + FRAME_HEADER_LEN + at) as u64,
                        event_index: events,
                        reason: format!(
                            "thread {}: {reason}; its later records are left out",
                            f.tid
                        ),
                    });
                }
            }
        }
    }
    for (&tid, state) in &mut threads {
        if let Some(p) = state.pending.take() {
            problems.push(Problem {
                offset: bytes.len() as u64,
                event_index: events,
                reason: format!(
                    "thread {tid}: the last call lacks {} of the records that follow it; \
                     it is kept with the others",
                    p.remaining
                ),
            });
            let mut page = Page {
                tid,
                converter: &converter,
                bindings: &bindings,
                sites: &mut sites,
                events: &mut events,
                build: v.wants_events(),
                at: 0,
                notes: Vec::new(),
                unbound: Vec::new(),
            };
            page.finish(p, v);
            for (_, reason) in page.notes {
                problems.push(Problem {
                    offset: bytes.len() as u64,
                    event_index: events,
                    reason: format!("thread {tid}: {reason}"),
                });
            }
        }
    }
    // A cut or a corrupt frame ends the file: every event read came before it.
    for mut p in framing {
        p.event_index = events;
        problems.push(p);
    }
    if let Some(n) = footer_events.filter(|&n| n != events) {
        problems.push(Problem {
            offset: bytes.len() as u64,
            event_index: events,
            reason: format!("the footer counts {n} events, the file holds {events}"),
        });
    }
    Ok(problems)
}

/// A call waiting for the records that follow it.
struct PendingCall {
    event: CallEvent,
    data: crate::call_data::CallData,
    site: u64,
    remaining: u32,
    completed: Vec<Completion>,
    started: Vec<Started>,
    group: Vec<i32>,
}

/// A buffers definition: names read, names written, and the buffers last resolved from
/// it.
type Declared = (Vec<String>, Vec<String>, Option<Arc<SpanBuffers>>);

/// What decoding one thread's records needs to remember between its pages.
#[derive(Default)]
struct ThreadState {
    deltas: Deltas,
    strings: HashMap<u32, String>,
    /// Buffers definitions (names read, names written) by id, and the spans' buffers
    /// last resolved from each (shared by the spans that resolve alike).
    buffers: HashMap<u32, Declared>,
    pending: Option<PendingCall>,
    broken: bool,
}

struct Page<'s> {
    tid: u32,
    converter: &'s Converter,
    bindings: &'s Bindings,
    sites: &'s mut Sites,
    events: &'s mut u64,
    /// Whether the events are built and handed over ([`Visitor::wants_events`]), or
    /// only counted ([`Visitor::skipped`]).
    build: bool,
    /// Where in the payload the record being read starts.
    at: usize,
    /// What could not be used of the records read (offset in the payload, why); the
    /// records themselves are kept.
    notes: Vec<(usize, String)>,
    /// Spans whose buffers are unknown because a name was never bound (offset, why).
    unbound: Vec<(usize, String)>,
}

impl Page<'_> {
    /// Decodes one page of a thread; on a bad record, the offset in the page and why.
    fn read(
        &mut self,
        state: &mut ThreadState,
        payload: &[u8],
        v: &mut impl Visitor,
    ) -> Result<(), (usize, String)> {
        if state.broken {
            return Ok(());
        }
        let mut r = Reader::new(payload);
        while !r.is_empty() {
            let at = r.pos();
            self.at = at;
            let record = match decode(&mut r, &mut state.deltas) {
                Ok(rec) => rec,
                Err(e) => {
                    state.broken = true;
                    return Err((at, e.to_string()));
                }
            };
            self.record(state, record, v);
        }
        Ok(())
    }

    fn record(&mut self, state: &mut ThreadState, record: Record<'_>, v: &mut impl Visitor) {
        let follows = matches!(
            record,
            Record::Completed(_) | Record::Started(_) | Record::Members(_)
        );
        if !follows {
            // A call whose follow records never came (the recorder publishes a call and
            // its follow records together): keep it with what it has.
            if let Some(p) = state.pending.take() {
                self.note(format!(
                    "a call lacks {} of the records that follow it; it is kept with the others",
                    p.remaining
                ));
                self.finish(p, v);
            }
        }
        match record {
            Record::Call {
                op,
                start,
                end,
                site,
                data,
                follow,
            } => {
                let (start, end) = (self.converter.nanos(start), self.converter.nanos(end));
                let p = PendingCall {
                    event: CallEvent {
                        tid: self.tid,
                        start,
                        end: end.max(start),
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
                    self.finish(p, v);
                } else {
                    state.pending = Some(p);
                }
            }
            Record::Completed(c) => self.follow(state, v, |p| p.completed.push(c)),
            Record::Started(s) => self.follow(state, v, |p| p.started.push(s)),
            Record::Members(m) => self.follow(state, v, |p| p.group.extend_from_slice(&m)),
            Record::Compute { name, start, end } => {
                self.compute(state, name, start, end, None, v);
            }
            Record::ComputeBuffers {
                name,
                start,
                end,
                buffers,
            } => self.compute(state, name, start, end, Some(buffers), v),
            Record::BuffersDef { id, reads, writes } => {
                state.buffers.insert(id, (reads, writes, None));
            }
            Record::Gpu(g) => self.gpu(state, g, v),
            Record::Sync(s) => v.clock_sync(s),
            Record::StringDef { id, text } => {
                state
                    .strings
                    .insert(id, String::from_utf8_lossy(text).into_owned());
            }
            Record::SiteDef {
                word,
                file,
                line,
                column,
                function,
            } => {
                let file = self.string(state, file, "a source location's file");
                let function =
                    function.map(|f| self.string(state, f, "a source location's function"));
                self.sites.defined.insert(
                    word,
                    Place {
                        file,
                        line,
                        column,
                        function,
                    },
                );
            }
        }
    }

    /// Emits a compute span; `buffers` is the id of the buffers definition it names.
    fn compute(
        &mut self,
        state: &mut ThreadState,
        name: u32,
        start: u64,
        end: u64,
        buffers: Option<u32>,
        v: &mut impl Visitor,
    ) {
        let (start, end) = (self.converter.nanos(start), self.converter.nanos(end));
        let end = end.max(start);
        let name = self.string(state, name, "a compute span's name");
        let buffers = buffers.and_then(|id| {
            let Some((reads, writes, last)) = state.buffers.get_mut(&id) else {
                self.note(format!(
                    "compute span {name:?} names buffers definition {id}, which the thread \
                     never defined; its buffers are unknown"
                ));
                return None;
            };
            match self.bindings.resolve_all(reads, writes, start, end) {
                Ok(b) => match last {
                    Some(l) if **l == b => Some(Arc::clone(l)),
                    _ => Some(Arc::clone(last.insert(Arc::new(b)))),
                },
                Err(e) => {
                    let why = format!("compute span {name:?}: {e}; its buffers are unknown");
                    self.unbound.push((self.at, why));
                    None
                }
            }
        });
        *self.events += 1;
        if !self.build {
            return v.skipped();
        }
        v.event(Event::Compute(ComputeEvent {
            tid: self.tid,
            start,
            end,
            name,
            buffers,
        }));
    }

    /// Emits GPU work (its times are already nanoseconds since the epoch).
    fn gpu(&mut self, state: &ThreadState, g: GpuRecord, v: &mut impl Visitor) {
        let name = if g.name == 0 {
            String::new()
        } else {
            self.string(state, g.name, "GPU work's name")
        };
        *self.events += 1;
        if !self.build {
            return v.skipped();
        }
        v.event(Event::Gpu(GpuEvent {
            tid: self.tid,
            op: g.op,
            device: g.device,
            stream: g.stream,
            issued: Nanos(g.issued),
            start: Nanos(g.start),
            end: Nanos(g.end.max(g.start)),
            bytes: g.bytes,
            src: g.src,
            dst: g.dst,
            packet: g.packet.checked_sub(1),
            name,
            clock_error: Nanos(g.clock_error),
        }));
    }

    /// Notes something that could not be used, at the current record.
    fn note(&mut self, reason: String) {
        self.notes.push((self.at, reason));
    }

    /// String `id` of the thread; empty, and noted, when the thread never defined it.
    fn string(&mut self, state: &ThreadState, id: u32, what: &str) -> String {
        match state.strings.get(&id) {
            Some(s) => s.clone(),
            None => {
                self.note(format!(
                    "{what} is string {id}, which the thread never defined; it is left empty"
                ));
                String::new()
            }
        }
    }

    fn follow(
        &mut self,
        state: &mut ThreadState,
        v: &mut impl Visitor,
        add: impl FnOnce(&mut PendingCall),
    ) {
        if let Some(p) = state.pending.as_mut() {
            // What follows a call is only kept in the call's event.
            if self.build {
                add(p);
            }
            p.remaining = p.remaining.saturating_sub(1);
            if p.remaining == 0 {
                if let Some(p) = state.pending.take() {
                    self.finish(p, v);
                }
            }
        }
    }

    fn finish(&mut self, p: PendingCall, v: &mut impl Visitor) {
        let PendingCall {
            mut event,
            data,
            site,
            completed,
            started,
            group,
            ..
        } = p;
        let (wire, new_site) = self.sites.wire(site);
        if wire.is_none() && site != 0 {
            self.note(format!(
                "a call names source location {site:#x}, which no thread defined; its site \
                 is unknown"
            ));
        }
        let site = wire;
        if let Some(listed) = new_site {
            v.site(listed);
        }
        *self.events += 1;
        if !self.build {
            return v.skipped();
        }
        event.args = data.to_args(site.unwrap_or(0), completed, started);
        event.args.group = group;
        v.event(Event::Call(event));
    }
}
