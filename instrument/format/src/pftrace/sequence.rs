//! One writer sequence of the protobuf trace (`trusted_packet_sequence_id`): its
//! interning tables and the packets written on it, in timestamp order.
//!
//! Perfetto's importer keeps interned data per sequence: an `iid` means what the
//! sequence defined it as, in a packet at or before the first that uses it, and the
//! sequence's first packet says `SEQ_INCREMENTAL_STATE_CLEARED`. That first packet
//! also sets the sequence's defaults and a clock of its own, incremental (a
//! `ClockSnapshot` of sequence clock 64 at 0, BOOTTIME at 0): every later timestamp is
//! the nanoseconds since the sequence's packet before, a byte or two where an absolute
//! time takes four or five. Later packets do not say `SEQ_NEEDS_INCREMENTAL_STATE`: the
//! importer reads that flag only to drop packets whose state was lost in a ring buffer,
//! which a file written whole never has. Slices arrive here by
//! their start; each one's end is held (a heap of what is in flight, never the run) and
//! written once no slice still to come can start before it, so every packet of a
//! sequence is at or after the one before it, and the slices of a track nest the way
//! their times say.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::Serialize;

use super::annotations::{write_args, AnnotationError};
use super::intern::{define_in, ArgInterning, Interner};
use super::proto::{field, Proto, BOOTTIME, INCREMENTAL_CLOCK, SEQ_INCREMENTAL_STATE_CLEARED};
use crate::fxhash::FxHashMap;
use crate::schema::wire::Category;
use crate::schema::Nanos;

/// `TrackEvent.Type` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventType {
    SliceBegin = 1,
    SliceEnd = 2,
    Instant = 3,
    Counter = 4,
}

/// Where in the source a slice's call was made, as `SourceLocation` interns it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceLocation {
    /// What the sequence knows it by: one id per location (a call site's address).
    pub id: u64,
    /// The source file.
    pub file: String,
    /// The function.
    pub function: Option<String>,
    /// The line.
    pub line: Option<u32>,
}

/// A slice to write: its track, name, category, times, args, source location and the
/// flows it starts (at its begin) and ends (at its end).
pub struct Slice<'a, A: ?Sized> {
    /// The track's uuid.
    pub track: u64,
    /// Its name.
    pub name: &'a str,
    /// Its category.
    pub category: Category,
    /// Its start.
    pub start: Nanos,
    /// Its end (at or after `start`).
    pub end: Nanos,
    /// Its arguments, written as typed debug annotations.
    pub args: Option<&'a A>,
    /// Where in the source it was called from.
    pub source: Option<&'a SourceLocation>,
    /// Flows leaving it (written on its begin).
    pub flows_out: &'a [u64],
    /// Flows arriving in it (written on its end, terminating them).
    pub flows_in: &'a [u64],
    /// Fields of `args` left out (a call's `site`, when `source` says where it is).
    pub skip_args: &'a [&'a str],
    /// Values of the sequence's counters ([`Sequence::with_counters`]) at its begin and
    /// at its end, one per counter (`extra_counter_values`): empty for none.
    pub counters: (&'a [i64], &'a [i64]),
}

/// A held event's bytes: in place when short (a slice's end, most often), so that
/// holding one costs no allocation.
#[derive(Debug)]
enum Bytes {
    /// Its length and bytes.
    Inline(u8, [u8; INLINE]),
    /// Longer.
    Heap(Vec<u8>),
}

/// The most bytes a held event keeps in place.
const INLINE: usize = 46;

impl Bytes {
    fn of(b: &[u8]) -> Bytes {
        if b.len() > INLINE {
            return Bytes::Heap(b.to_vec());
        }
        let mut inline = [0u8; INLINE];
        inline[..b.len()].copy_from_slice(b);
        Bytes::Inline(b.len() as u8, inline)
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Inline(n, b) => &b[..*n as usize],
            Bytes::Heap(v) => v,
        }
    }
}

/// A packet held until its time comes, as the heap orders it: its time, the order it
/// was made in (for equal times, the later made goes first: an inner slice ends before
/// its parent), and its slot in [`Sequence::slots`] (the heap moves 24 bytes, not the
/// event's).
type Held = (u64, Reverse<u64>, u32);

/// A held packet's `TrackEvent` bytes.
#[derive(Debug)]
struct Slot {
    event: Bytes,
}

/// One sequence: interning tables, definitions not yet written, the packets written and
/// those held until their time.
#[derive(Debug)]
pub struct Sequence {
    id: u32,
    started: bool,
    names: Interner,
    categories: Interner,
    arg_names: Interner,
    strings: Interner,
    /// Source locations by their id.
    sources: FxHashMap<u64, u64>,
    /// Annotation names the args' types name (`&'static str`), by address and length:
    /// found without hashing their text.
    static_names: FxHashMap<(usize, usize), u64>,
    /// The track events name when they name none (`TrackEventDefaults.track_uuid`).
    default_track: Option<u64>,
    /// The counter tracks events give values of (`extra_counter_track_uuids`).
    counters: Vec<u64>,
    /// `InternedData` entries defined since the last packet.
    defs: Proto,
    /// Encoded `Trace.packet` fields ready to go to the file.
    out: Proto,
    held: BinaryHeap<Reverse<Held>>,
    /// The held packets' bytes, by slot; `free` lists the slots to use again.
    slots: Vec<Slot>,
    free: Vec<u32>,
    made: u64,
    /// The time of the last packet written: what the next one's timestamp counts from.
    now: u64,
    /// Scratch for the `TrackEvent` being encoded.
    event: Proto,
    /// Scratch for a slice's end.
    end: Proto,
    events: u64,
}

impl Sequence {
    /// A sequence with id `id` (at least 1), unique in the file.
    pub fn new(id: u32) -> Sequence {
        Sequence {
            id,
            started: false,
            names: Interner::default(),
            categories: Interner::default(),
            arg_names: Interner::default(),
            strings: Interner::default(),
            sources: FxHashMap::default(),
            static_names: FxHashMap::default(),
            default_track: None,
            counters: Vec::new(),
            defs: Proto::default(),
            out: Proto::default(),
            held: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            made: 0,
            now: 0,
            event: Proto::default(),
            end: Proto::default(),
            events: 0,
        }
    }

    /// A sequence whose events are on `track` unless they say otherwise (set in its
    /// first packet's defaults, so that each event on it saves naming it).
    pub fn with_default_track(id: u32, track: u64) -> Sequence {
        let mut s = Sequence::new(id);
        s.default_track = Some(track);
        s
    }

    /// This sequence, its slices giving values of the counters on `tracks` at their
    /// begin and end ([`Slice::counters`]; set in its first packet's defaults).
    pub fn with_counters(mut self, tracks: &[u64]) -> Sequence {
        self.counters = tracks.to_vec();
        self
    }

    /// The encoded packets written so far, to go to the file (and forgotten here).
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out.bytes)
    }

    /// Bytes of encoded packets waiting in [`Sequence::take`].
    pub fn pending(&self) -> usize {
        self.out.bytes.len()
    }

    /// Events written or held on the sequence: slices, instants and counter values.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Writes every held packet whose time is at or before `to`.
    pub fn advance(&mut self, to: Nanos) {
        while let Some(Reverse((at, _, _))) = self.held.peek() {
            if *at > to.0 {
                break;
            }
            let Some(Reverse((at, _, slot))) = self.held.pop() else {
                break;
            };
            let held = std::mem::replace(
                &mut self.slots[slot as usize],
                Slot {
                    event: Bytes::Inline(0, [0; INLINE]),
                },
            );
            self.free.push(slot);
            self.packet(at, held.event.as_slice());
        }
    }

    /// Writes everything held.
    pub fn finish(&mut self) {
        self.advance(Nanos(u64::MAX));
    }

    /// Writes the begin of `s` now (after whatever ends at or before its start) and
    /// holds its end. Slices must come by their start.
    pub fn slice<A: Serialize + ?Sized>(
        &mut self,
        s: &Slice<'_, A>,
    ) -> Result<(), AnnotationError> {
        self.advance(s.start);
        self.events += 1;
        let mut ev = std::mem::take(&mut self.event);
        ev.bytes.clear();
        self.describe(&mut ev, EventType::SliceBegin, s.track, s.name, s.category);
        if let Some(src) = s.source {
            let iid = self.source(src);
            ev.uint(field::SOURCE_LOCATION_IID, iid);
        }
        for f in s.flows_out {
            ev.fixed64(field::FLOW_IDS, *f);
        }
        let args = self.args(&mut ev, s.args, s.skip_args);
        for v in s.counters.0 {
            ev.int(field::EXTRA_COUNTER_VALUES, *v);
        }
        self.packet(s.start.0, &ev.bytes);
        let mut end = std::mem::take(&mut self.end);
        end.bytes.clear();
        end.uint(field::TYPE, EventType::SliceEnd as u64);
        self.track_field(&mut end, s.track);
        for f in s.flows_in {
            end.fixed64(field::TERMINATING_FLOW_IDS, *f);
        }
        for v in s.counters.1 {
            end.int(field::EXTRA_COUNTER_VALUES, *v);
        }
        self.hold(s.end.max(s.start).0, &end.bytes);
        self.event = ev;
        self.end = end;
        args
    }

    /// An instant on `track` at `at`, held until its time comes (its interned names
    /// defined now, in a packet of their own when new).
    pub fn instant<A: Serialize + ?Sized>(
        &mut self,
        track: u64,
        name: &str,
        category: Category,
        at: Nanos,
        args: Option<&A>,
    ) -> Result<(), AnnotationError> {
        self.events += 1;
        let mut ev = Proto::default();
        self.describe(&mut ev, EventType::Instant, track, name, category);
        let written = self.args(&mut ev, args, &[]);
        self.define_now();
        self.hold(at.0, &ev.bytes);
        written
    }

    /// A counter's value on counter track `track` at `at` (not before the last packet).
    pub fn counter(&mut self, track: u64, at: Nanos, value: i64) {
        self.advance(at);
        self.events += 1;
        let mut ev = std::mem::take(&mut self.event);
        ev.bytes.clear();
        ev.uint(field::TYPE, EventType::Counter as u64);
        self.track_field(&mut ev, track);
        ev.int(field::COUNTER_VALUE, value);
        self.packet(at.0, &ev.bytes);
        self.event = ev;
    }

    /// Names `track` in `ev` unless it is the sequence's default.
    fn track_field(&self, ev: &mut Proto, track: u64) {
        if self.default_track != Some(track) {
            ev.uint(field::TRACK_UUID, track);
        }
    }

    /// Type, track, name and category of an event.
    fn describe(&mut self, ev: &mut Proto, ty: EventType, track: u64, name: &str, cat: Category) {
        ev.uint(field::TYPE, ty as u64);
        self.track_field(ev, track);
        let (cat_iid, new) = self.categories.get(cat.wire_name());
        if new {
            self.define(field::EVENT_CATEGORIES, cat_iid, cat.wire_name());
        }
        ev.uint(field::CATEGORY_IIDS, cat_iid);
        let (name_iid, new) = self.names.get(name);
        if new {
            self.define(field::EVENT_NAMES, name_iid, name);
        }
        ev.uint(field::NAME_IID, name_iid);
    }

    /// Appends `args` (but the fields named in `skip`) to `ev` as debug annotations,
    /// interning their names and short texts.
    fn args<A: Serialize + ?Sized>(
        &mut self,
        ev: &mut Proto,
        args: Option<&A>,
        skip: &[&str],
    ) -> Result<(), AnnotationError> {
        let Some(args) = args else { return Ok(()) };
        let mut interning = ArgInterning {
            names: &mut self.arg_names,
            statics: &mut self.static_names,
            strings: &mut self.strings,
            defs: &mut self.defs,
        };
        write_args(ev, &mut interning, skip, args)
    }

    /// The iid of a source location, defined when new.
    fn source(&mut self, src: &SourceLocation) -> u64 {
        if let Some(iid) = self.sources.get(&src.id) {
            return *iid;
        }
        let iid = self.sources.len() as u64 + 1;
        self.sources.insert(src.id, iid);
        let n = self.defs.begin(field::SOURCE_LOCATIONS);
        self.defs.uint(field::IID, iid);
        self.defs.string(field::FILE_NAME, &src.file);
        if let Some(f) = &src.function {
            self.defs.string(field::FUNCTION_NAME, f);
        }
        if let Some(l) = src.line {
            self.defs.uint(field::LINE_NUMBER, u64::from(l));
        }
        self.defs.end(n);
        iid
    }

    fn define(&mut self, kind: u32, iid: u64, name: &str) {
        define_in(&mut self.defs, kind, iid, name);
    }

    /// Writes the definitions made so far in a packet of their own (for an event held
    /// to later, so that no packet written before it uses an iid it defines).
    fn define_now(&mut self) {
        if !self.defs.bytes.is_empty() {
            self.write_packet(None, &[]);
        }
    }

    fn hold(&mut self, at: u64, event: &[u8]) {
        self.made += 1;
        let held = Slot {
            event: Bytes::of(event),
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = held;
                slot
            }
            None => {
                self.slots.push(held);
                (self.slots.len() - 1) as u32
            }
        };
        self.held.push(Reverse((at, Reverse(self.made), slot)));
    }

    /// Writes a packet at `at` carrying the `TrackEvent` `event`.
    fn packet(&mut self, at: u64, event: &[u8]) {
        self.write_packet(Some(at), event);
    }

    /// The sequence's first packet, of its own: it clears the sequence's state, sets
    /// its defaults (the incremental clock; the default track and counters, if any) and
    /// starts the incremental clock at 0, BOOTTIME's 0 (the importer reads nothing else
    /// of a packet with a clock snapshot).
    fn start(&mut self) {
        let p = self.out.begin(field::TRACE_PACKET);
        self.out.uint(field::SEQUENCE_ID, u64::from(self.id));
        self.out
            .uint(field::SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
        let d = self.out.begin(field::TRACE_PACKET_DEFAULTS);
        self.out.uint(
            field::DEFAULT_TIMESTAMP_CLOCK_ID,
            u64::from(INCREMENTAL_CLOCK),
        );
        if self.default_track.is_some() || !self.counters.is_empty() {
            let t = self.out.begin(field::TRACK_EVENT_DEFAULTS);
            if let Some(track) = self.default_track {
                self.out.uint(field::DEFAULT_TRACK_UUID, track);
            }
            for c in &self.counters {
                self.out.uint(field::DEFAULT_EXTRA_COUNTERS, *c);
            }
            self.out.end(t);
        }
        self.out.end(d);
        let c = self.out.begin(field::CLOCK_SNAPSHOT);
        for (clock, incremental) in [(BOOTTIME, false), (INCREMENTAL_CLOCK, true)] {
            let k = self.out.begin(field::CLOCKS);
            self.out.uint(field::CLOCK_ID, u64::from(clock));
            self.out.uint(field::CLOCK_TIMESTAMP, 0);
            if incremental {
                self.out.uint(field::CLOCK_IS_INCREMENTAL, 1);
            }
            self.out.end(k);
        }
        self.out.end(c);
        self.out.end(p);
        self.started = true;
        self.now = 0;
    }

    /// Writes a packet: its time (when it has one: the nanoseconds since the packet
    /// before, on the sequence's incremental clock), sequence, the definitions made
    /// since the last packet, and `event` (when not empty). A time before the last
    /// (which the ordering above never makes) is written as it is, on BOOTTIME.
    fn write_packet(&mut self, at: Option<u64>, event: &[u8]) {
        if !self.started {
            self.start();
        }
        let p = self.out.begin(field::TRACE_PACKET);
        if let Some(at) = at {
            match at.checked_sub(self.now) {
                Some(delta) => {
                    self.out.uint(field::TIMESTAMP, delta);
                    self.now = at;
                }
                None => {
                    self.out.uint(field::TIMESTAMP, at);
                    self.out
                        .uint(field::TIMESTAMP_CLOCK_ID, u64::from(BOOTTIME));
                }
            }
        }
        self.out.uint(field::SEQUENCE_ID, u64::from(self.id));
        if !self.defs.bytes.is_empty() {
            self.out.bytes_field(field::INTERNED_DATA, &self.defs.bytes);
            self.defs.bytes.clear();
        }
        if !event.is_empty() {
            self.out.bytes_field(field::TRACK_EVENT, event);
        }
        self.out.end(p);
    }
}
