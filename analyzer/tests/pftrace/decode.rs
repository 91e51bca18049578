//! A protobuf trace read back, with nothing but the wire format and the field numbers
//! of Perfetto's protos: tracks, and events with their interned names resolved per
//! sequence, paired into slices per track. Independent of the writer's code, so that a
//! mistake there shows as a difference from the JSON.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// One field of a message.
enum Field<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
}

/// The fields of message `b`, in order.
fn fields(mut b: &[u8]) -> Vec<(u32, Field<'_>)> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let tag = varint(&mut b);
        let (num, wire) = ((tag >> 3) as u32, tag & 7);
        let f = match wire {
            0 => Field::Varint(varint(&mut b)),
            1 => {
                let (v, rest) = b.split_at(8);
                b = rest;
                Field::Fixed64(u64::from_le_bytes(v.try_into().expect("8 bytes")))
            }
            2 => {
                let n = varint(&mut b) as usize;
                let (v, rest) = b.split_at(n);
                b = rest;
                Field::Bytes(v)
            }
            w => panic!("wire type {w} in field {num}"),
        };
        out.push((num, f));
    }
    out
}

fn varint(b: &mut &[u8]) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = b[0];
        *b = &b[1..];
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
        shift += 7;
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).expect("UTF-8")
}

/// What a track descriptor says.
#[derive(Clone, Debug, Default)]
pub struct Track {
    pub parent: Option<u64>,
    pub name: String,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub counter: bool,
}

/// A track event, its interned ids resolved.
#[derive(Clone, Debug, Default)]
pub struct Ev {
    pub ts: u64,
    pub ty: u64,
    pub track: u64,
    pub name: String,
    pub cat: String,
    pub args: Map<String, Value>,
    pub flows: Vec<u64>,
    pub ends_flows: Vec<u64>,
    pub counter: Option<i64>,
    pub source: Option<String>,
    /// `extra_counter_values`: of the sequence's default counter tracks.
    pub extra: Vec<i64>,
}

/// A slice: its begin event, with the end's time and the flows its end terminates.
#[derive(Clone, Debug)]
pub struct Slice {
    pub begin: Ev,
    pub end: u64,
    pub ends_flows: Vec<u64>,
}

/// The trace read back.
#[derive(Debug, Default)]
pub struct Decoded {
    pub tracks: HashMap<u64, Track>,
    pub events: Vec<Ev>,
}

#[derive(Default)]
struct Interned {
    names: HashMap<u64, String>,
    cats: HashMap<u64, String>,
    args: HashMap<u64, String>,
    sources: HashMap<u64, String>,
    strings: HashMap<u64, String>,
    default_track: Option<u64>,
    extra_counters: Vec<u64>,
    /// The sequence's default clock (`TracePacketDefaults.timestamp_clock_id`).
    default_clock: Option<u64>,
    /// The incremental clock's time: its snapshot's, plus every delta since.
    incremental_ns: Option<u64>,
}

/// Perfetto's first sequence-scoped clock id, the one the writer makes incremental.
const INCREMENTAL_CLOCK: u64 = 64;

/// The incremental clock's time in a `ClockSnapshot`, if it has one.
fn incremental_clock(snapshot: &[u8]) -> Option<u64> {
    fields(snapshot).into_iter().find_map(|(num, f)| {
        let (1, Field::Bytes(clock)) = (num, f) else {
            return None;
        };
        let (mut id, mut ts, mut incremental) = (0, 0, false);
        for (num, f) in fields(clock) {
            match (num, f) {
                (1, Field::Varint(v)) => id = v,
                (2, Field::Varint(v)) => ts = v,
                (3, Field::Varint(v)) => incremental = v != 0,
                _ => {}
            }
        }
        (id == INCREMENTAL_CLOCK && incremental).then_some(ts)
    })
}

/// Reads a whole protobuf trace.
pub fn decode(bytes: &[u8]) -> Decoded {
    let mut d = Decoded::default();
    let mut seqs: HashMap<u64, Interned> = HashMap::new();
    for (num, packet) in fields(bytes) {
        let (1, Field::Bytes(p)) = (num, packet) else {
            panic!("Trace field {num} is not a packet")
        };
        let (mut ts, mut seq, mut event, mut interned, mut desc) = (None, 0, None, None, None);
        let (mut defaults, mut clock, mut snapshot) = (None, None, None);
        for (num, f) in fields(p) {
            match (num, f) {
                (59, Field::Bytes(b)) => defaults = Some(b),
                (6, Field::Bytes(b)) => snapshot = Some(b),
                (58, Field::Varint(v)) => clock = Some(v),
                (8, Field::Varint(v)) => ts = Some(v),
                (10, Field::Varint(v)) => seq = v,
                (11, Field::Bytes(b)) => event = Some(b),
                (12, Field::Bytes(b)) => interned = Some(b),
                (60, Field::Bytes(b)) => desc = Some(b),
                _ => {}
            }
        }
        let state = seqs.entry(seq).or_default();
        for (num, f) in defaults.map(fields).unwrap_or_default() {
            let (11, Field::Bytes(te)) = (num, f) else {
                continue;
            };
            for (num, f) in fields(te) {
                match (num, f) {
                    (11, Field::Varint(v)) => state.default_track = Some(v),
                    (31, Field::Varint(v)) => state.extra_counters.push(v),
                    _ => {}
                }
            }
        }
        for (num, f) in defaults.map(fields).unwrap_or_default() {
            if let (58, Field::Varint(v)) = (num, f) {
                state.default_clock = Some(v);
            }
        }
        if let Some(b) = snapshot {
            // As Perfetto's importer: a packet with a clock snapshot is read for nothing
            // else (its defaults above).
            state.incremental_ns = incremental_clock(b);
            assert!(
                event.is_none() && interned.is_none(),
                "a snapshot with events"
            );
            continue;
        }
        // A timestamp on the sequence's incremental clock is the time since the packet
        // before; one on another clock is the time itself.
        let ts = match (ts, clock.or(state.default_clock)) {
            (Some(delta), Some(INCREMENTAL_CLOCK)) => {
                let now = state
                    .incremental_ns
                    .expect("incremental clock without a snapshot");
                let now = now + delta;
                state.incremental_ns = Some(now);
                now
            }
            (ts, _) => ts.unwrap_or_default(),
        };
        if let Some(b) = interned {
            intern(state, b);
        }
        if let Some(b) = desc {
            let (uuid, t) = track(b);
            assert!(d.tracks.insert(uuid, t).is_none(), "track {uuid} twice");
        }
        if let Some(b) = event {
            let e = track_event(state, ts, b);
            assert!(
                e.extra.len() <= state.extra_counters.len(),
                "more counter values than counters"
            );
            for (track, v) in state.extra_counters.iter().zip(&e.extra) {
                d.events.push(Ev {
                    ts,
                    ty: 4,
                    track: *track,
                    counter: Some(*v),
                    ..Ev::default()
                });
            }
            d.events.push(e);
        }
    }
    d
}

fn intern(state: &mut Interned, b: &[u8]) {
    for (kind, f) in fields(b) {
        let Field::Bytes(entry) = f else { continue };
        let (mut iid, mut name, mut file, mut func, mut line) =
            (0, String::new(), None, None, None);
        for (num, f) in fields(entry) {
            match (num, f) {
                (1, Field::Varint(v)) => iid = v,
                (2, Field::Bytes(s)) => {
                    name = text(s);
                    file = Some(text(s));
                }
                (3, Field::Bytes(s)) => func = Some(text(s)),
                (4, Field::Varint(v)) => line = Some(v),
                _ => {}
            }
        }
        let map = match kind {
            29 => &mut state.strings,
            1 => &mut state.cats,
            2 => &mut state.names,
            3 => &mut state.args,
            4 => {
                let src = format!(
                    "{}:{}:{}",
                    file.unwrap_or_default(),
                    line.unwrap_or(0),
                    func.unwrap_or_default()
                );
                state.sources.insert(iid, src);
                continue;
            }
            _ => continue,
        };
        map.insert(iid, name);
    }
}

fn track(b: &[u8]) -> (u64, Track) {
    let mut t = Track::default();
    let mut uuid = 0;
    for (num, f) in fields(b) {
        match (num, f) {
            (1, Field::Varint(v)) => uuid = v,
            (2, Field::Bytes(s)) => t.name = text(s),
            (5, Field::Varint(v)) => t.parent = Some(v),
            (8, _) => t.counter = true,
            (3 | 4, Field::Bytes(s)) => {
                for (n, f) in fields(s) {
                    match (n, f) {
                        (1, Field::Varint(v)) => t.pid = Some(v as u32),
                        (2, Field::Varint(v)) => t.tid = Some(v as u32),
                        (5 | 6, Field::Bytes(s)) => t.name = text(s),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    (uuid, t)
}

fn track_event(state: &Interned, ts: u64, b: &[u8]) -> Ev {
    let mut e = Ev {
        ts,
        track: state.default_track.unwrap_or(0),
        ..Ev::default()
    };
    let name_of = |m: &HashMap<u64, String>, iid: u64, what: &str| {
        m.get(&iid)
            .cloned()
            .unwrap_or_else(|| panic!("{what} iid {iid} used before defined"))
    };
    for (num, f) in fields(b) {
        match (num, f) {
            (9, Field::Varint(v)) => e.ty = v,
            (11, Field::Varint(v)) => e.track = v,
            (10, Field::Varint(v)) => e.name = name_of(&state.names, v, "name"),
            (3, Field::Varint(v)) => e.cat = name_of(&state.cats, v, "category"),
            (30, Field::Varint(v)) => e.counter = Some(v as i64),
            (12, Field::Varint(v)) => e.extra.push(v as i64),
            (34, Field::Varint(v)) => e.source = Some(name_of(&state.sources, v, "source")),
            (47, Field::Fixed64(v)) => e.flows.push(v),
            (48, Field::Fixed64(v)) => e.ends_flows.push(v),
            (4, Field::Bytes(a)) => {
                let (name, value) = annotation(a, state);
                e.args.insert(name, value);
            }
            _ => {}
        }
    }
    e
}

/// A debug annotation's name (interned, or text) and value, as JSON: an event's own,
/// or an entry of a dictionary or list.
fn annotation(b: &[u8], state: &Interned) -> (String, Value) {
    let mut name = String::new();
    let mut value = Value::Null;
    let mut dict = Map::new();
    let mut array = Vec::new();
    for (num, f) in fields(b) {
        match (num, f) {
            (1, Field::Varint(v)) => {
                name = state
                    .args
                    .get(&v)
                    .cloned()
                    .expect("annotation name defined")
            }
            (17, Field::Varint(v)) => {
                value = Value::String(state.strings.get(&v).cloned().expect("string defined"))
            }
            (10, Field::Bytes(s)) => name = text(s),
            (2, Field::Varint(v)) => value = Value::Bool(v != 0),
            (3, Field::Varint(v)) => value = Value::from(v),
            (4, Field::Varint(v)) => value = Value::from(v as i64),
            (5, Field::Fixed64(v)) => value = Value::from(f64::from_bits(v)),
            (6, Field::Bytes(s)) => value = Value::String(text(s)),
            (11, Field::Bytes(s)) => {
                let (k, v) = annotation(s, state);
                dict.insert(k, v);
                value = Value::Null;
            }
            (12, Field::Bytes(s)) => array.push(annotation(s, state).1),
            _ => {}
        }
    }
    if !dict.is_empty() {
        value = Value::Object(dict);
    } else if !array.is_empty() {
        value = Value::Array(array);
    }
    (name, value)
}

impl Decoded {
    /// The slices of every track, their begins and ends paired per track in time
    /// order (file order for equal times).
    pub fn slices(&self) -> Vec<Slice> {
        let mut order: Vec<usize> = (0..self.events.len()).collect();
        order.sort_by_key(|i| self.events[*i].ts);
        let mut open: HashMap<u64, Vec<usize>> = HashMap::new();
        let mut out = Vec::new();
        for i in order {
            let e = &self.events[i];
            match e.ty {
                1 => open.entry(e.track).or_default().push(i),
                2 => {
                    let b = open
                        .get_mut(&e.track)
                        .and_then(Vec::pop)
                        .unwrap_or_else(|| panic!("slice end on track {} with none open", e.track));
                    out.push(Slice {
                        begin: self.events[b].clone(),
                        end: e.ts,
                        ends_flows: e.ends_flows.clone(),
                    });
                }
                _ => {}
            }
        }
        assert!(open.values().all(Vec::is_empty), "slices left open");
        out
    }
}
