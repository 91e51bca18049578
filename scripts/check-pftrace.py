#!/usr/bin/env python3
"""Decodes every packet of Perfetto protobuf traces (.pftrace) with Perfetto's own
schema (the PyPI `perfetto` package's perfetto_trace_pb2) and checks the rules its
importer relies on:

  - every packet decodes as a TracePacket;
  - per sequence (trusted_packet_sequence_id): the first packet sets
    SEQ_INCREMENTAL_STATE_CLEARED (and the defaults, if any); every interned id an event
    uses (event name, category, debug-annotation name and string value, source
    location) was defined by an earlier or the same packet of that sequence; timestamps
    never go back: on a sequence whose default clock is its own incremental clock
    (sequence-scoped id 64 to 127, set by a ClockSnapshot packet that carries nothing
    else the importer reads), each timestamp is the time since the packet before;
  - every track an event names was described (TrackDescriptor) before it, with a
    unique uuid; counter values (and extra_counter_values) go to counter tracks;
  - per track, slice begins and ends pair up (no end without an open slice, none left
    open), in time order across sequences;
  - every flow id starts once (flow_ids) and ends once (terminating_flow_ids), not
    before it started.

Usage: check-pftrace.py FILE.pftrace...   Prints one line per file; exit 1 on a broken
rule (each named with the packet it is in), 2 when the schema cannot be imported.
"""
import sys
from collections import defaultdict

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as e:  # pragma: no cover
    print(f"check-pftrace: cannot import perfetto_trace_pb2 ({e}): "
          "pip install perfetto (scripts/bootstrap.sh --mpi4py makes target/perfetto-venv)",
          file=sys.stderr)
    sys.exit(2)

CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
SEQUENCE_CLOCKS = range(64, 128)
BEGIN, END, INSTANT, COUNTER = (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END,
                                pb.TrackEvent.TYPE_INSTANT, pb.TrackEvent.TYPE_COUNTER)


def packets(data):
    """The TracePacket fields of a Trace, as (offset, bytes), read with the wire format."""
    i, n = 0, len(data)
    while i < n:
        start = i
        tag, i = varint(data, i)
        if tag >> 3 != 1 or tag & 7 != 2:
            raise ValueError(f"byte {start}: field {tag >> 3} wire type {tag & 7} is not Trace.packet")
        length, i = varint(data, i)
        if i + length > n:
            raise ValueError(f"byte {start}: packet of {length} bytes runs past the end ({n})")
        yield start, data[i:i + length]
        i += length


def varint(data, i):
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def string_iids(a):
    """The interned string values an annotation (and its entries) use."""
    if a.HasField("string_value_iid"):
        yield a.string_value_iid
    for inner in list(a.dict_entries) + list(a.array_values):
        yield from string_iids(inner)


def name_iids(a):
    """The interned names an annotation and its dictionaries' entries use."""
    if a.HasField("name_iid"):
        yield a.name_iid
    for inner in list(a.dict_entries) + list(a.array_values):
        yield from name_iids(inner)


def check(path):
    data = open(path, "rb").read()
    errors = []
    err = lambda where, what: errors.append(f"{path}: packet at byte {where}: {what}")
    seqs = {}  # id -> {"names": set, "cats": set, "args": set, "srcs": set, "ts": last}
    tracks = {}  # uuid -> "counter" | "other"
    events = []  # (ts, order, track, type)
    flows_out, flows_in = {}, {}
    n_packets = n_events = 0
    for order, (at, raw) in enumerate(packets(data)):
        p = pb.TracePacket()
        try:
            p.ParseFromString(raw)
        except Exception as e:  # noqa: BLE001
            err(at, f"does not decode as a TracePacket: {e}")
            continue
        n_packets += 1
        seq_id = p.trusted_packet_sequence_id
        if seq_id not in seqs:
            if not p.sequence_flags & CLEARED:
                err(at, f"first packet of sequence {seq_id} without SEQ_INCREMENTAL_STATE_CLEARED")
            seqs[seq_id] = {"names": set(), "cats": set(), "args": set(), "srcs": set(),
                            "strings": set(), "ts": None, "track": None, "first": True,
                            "counters": [], "clock": None, "incremental": {}}
        s = seqs[seq_id]
        first, s["first"] = s["first"], False
        if p.HasField("trace_packet_defaults"):
            if not first:
                err(at, f"sequence {seq_id}: defaults set after its first packet")
            d = p.trace_packet_defaults
            if d.HasField("track_event_defaults") and d.track_event_defaults.HasField("track_uuid"):
                s["track"] = d.track_event_defaults.track_uuid
            if d.HasField("track_event_defaults"):
                s["counters"] = list(d.track_event_defaults.extra_counter_track_uuids)
            if d.HasField("timestamp_clock_id"):
                s["clock"] = d.timestamp_clock_id
        if p.HasField("clock_snapshot"):
            # Perfetto's importer reads nothing else of such a packet.
            for c in p.clock_snapshot.clocks:
                if c.is_incremental and c.clock_id not in SEQUENCE_CLOCKS:
                    err(at, f"clock {c.clock_id} is incremental but not a sequence's own")
                if c.is_incremental:
                    s["incremental"][c.clock_id] = c.timestamp
            if p.HasField("track_event") or p.HasField("interned_data"):
                err(at, f"sequence {seq_id}: a clock snapshot with events or interned data (ignored)")
            continue
        ts = None
        if p.HasField("timestamp"):
            clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else s["clock"]
            if clock in SEQUENCE_CLOCKS and clock in s["incremental"]:
                ts = s["incremental"][clock] = s["incremental"][clock] + p.timestamp
            elif clock in SEQUENCE_CLOCKS:
                err(at, f"sequence {seq_id}: timestamp on clock {clock}, which no snapshot defined")
                ts = p.timestamp
            else:
                ts = p.timestamp
            if s["ts"] is not None and ts < s["ts"]:
                err(at, f"sequence {seq_id}: timestamp {ts} before {s['ts']}")
            s["ts"] = ts
        if p.HasField("interned_data"):
            d = p.interned_data
            s["names"].update(e.iid for e in d.event_names)
            s["cats"].update(e.iid for e in d.event_categories)
            s["args"].update(e.iid for e in d.debug_annotation_names)
            s["srcs"].update(e.iid for e in d.source_locations)
            s["strings"].update(e.iid for e in d.debug_annotation_string_values)
        if p.HasField("track_descriptor"):
            t = p.track_descriptor
            if t.uuid in tracks:
                err(at, f"track {t.uuid} described twice")
            if t.HasField("parent_uuid") and t.parent_uuid not in tracks:
                err(at, f"track {t.uuid}: parent {t.parent_uuid} not described before it")
            tracks[t.uuid] = "counter" if t.HasField("counter") else "other"
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        n_events += 1
        if e.HasField("name_iid") and e.name_iid not in s["names"]:
            err(at, f"sequence {seq_id}: event name iid {e.name_iid} used before it is defined")
        for c in e.category_iids:
            if c not in s["cats"]:
                err(at, f"sequence {seq_id}: category iid {c} used before it is defined")
        for a in e.debug_annotations:
            for iid in name_iids(a):
                if iid not in s["args"]:
                    err(at, f"sequence {seq_id}: annotation name iid {iid} used before it is defined")
            for iid in string_iids(a):
                if iid not in s["strings"]:
                    err(at, f"sequence {seq_id}: string value iid {iid} used before it is defined")
        if e.HasField("source_location_iid") and e.source_location_iid not in s["srcs"]:
            err(at, f"sequence {seq_id}: source location iid {e.source_location_iid} used before it is defined")
        track = e.track_uuid if e.HasField("track_uuid") else s["track"]
        if track is None:
            err(at, "an event with no track and no default track")
        elif track not in tracks:
            err(at, f"track {track} used before it is described")
        elif (e.type == COUNTER) != (tracks[track] == "counter"):
            err(at, f"track {track}: a {pb.TrackEvent.Type.Name(e.type)} on a "
                    f"{'counter' if tracks[track] == 'counter' else 'slice'} track")
        if e.type in (BEGIN, END):
            events.append((ts, order, track, e.type, at))
        counters = list(e.extra_counter_track_uuids) or s["counters"]
        if len(e.extra_counter_values) > len(counters):
            err(at, f"{len(e.extra_counter_values)} extra counter values for {len(counters)} counter tracks")
        for c in counters[:len(e.extra_counter_values)]:
            if tracks.get(c) != "counter":
                err(at, f"extra counter value on track {c}, not a counter track described before")
        for f in e.flow_ids:
            if f in flows_out:
                err(at, f"flow {f} starts twice")
            flows_out[f] = ts
        for f in e.terminating_flow_ids:
            if f in flows_in:
                err(at, f"flow {f} ends twice")
            flows_in[f] = (ts, at)
    # Slices pair up per track, in time order (file order for equal times).
    open_slices = defaultdict(int)
    for ts, _, track, ty, at in sorted(events):
        if ty == BEGIN:
            open_slices[track] += 1
        elif open_slices[track] == 0:
            err(at, f"track {track}: slice end at {ts} with no slice open")
        else:
            open_slices[track] -= 1
    for track, n in open_slices.items():
        if n:
            errors.append(f"{path}: track {track}: {n} slice(s) never ended")
    for f, (ts, at) in flows_in.items():
        if f not in flows_out:
            err(at, f"flow {f} ends without a start")
        elif flows_out[f] > ts:
            err(at, f"flow {f} ends at {ts}, before it starts at {flows_out[f]}")
    unended = [f for f in flows_out if f not in flows_in]
    if unended:
        errors.append(f"{path}: {len(unended)} flow(s) never end, the first {unended[0]}")
    slices = sum(1 for e in events if e[3] == BEGIN)
    print(f"{path}: {n_packets} packets, {n_events} events, {slices} slices, "
          f"{len(flows_out)} flows, {len(tracks)} tracks, {len(seqs)} sequences, "
          f"{len(data) / max(n_events, 1):.1f} B per event: "
          f"{'ok' if not errors else f'{len(errors)} problem(s)'}")
    for e in errors[:20]:
        print("  " + e)
    return not errors


def main(argv):
    if not argv:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    ok = True
    for path in argv:
        try:
            ok &= check(path)
        except (OSError, ValueError) as e:
            print(f"{path}: {e}")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
