//! The protobuf wire encoding, by hand, the way Perfetto's protozero writes it: varints,
//! tags and length-delimited fields appended to a byte buffer, nested messages written
//! in place and their length filled in once known. No schema compiler and no message
//! structs: the field numbers below are those of Perfetto's own `.proto` files
//! (`protos/perfetto/trace/...`), which `scripts/check-pftrace.py` decodes with.
//!
//! Why not prost over the vendored `.proto` files: prost builds a tree of owned
//! messages (a `String` per name, a `Vec` per repeated field) and encodes it after, so
//! every event costs allocations the writer does not need; this writer appends straight
//! into the packet buffer (see docs/trace-format.md, "Perfetto protobuf", for figures).

/// Wire type of varint fields.
const VARINT: u32 = 0;
/// Wire type of fixed 64-bit fields.
const FIXED64: u32 = 1;
/// Wire type of length-delimited fields (strings, bytes, nested messages).
const LEN: u32 = 2;

/// Field numbers of Perfetto's trace protos that the writer uses.
pub(crate) mod field {
    /// `Trace.packet`.
    pub const TRACE_PACKET: u32 = 1;
    /// `TracePacket.timestamp`.
    pub const TIMESTAMP: u32 = 8;
    /// `TracePacket.trusted_packet_sequence_id`.
    pub const SEQUENCE_ID: u32 = 10;
    /// `TracePacket.track_event`.
    pub const TRACK_EVENT: u32 = 11;
    /// `TracePacket.interned_data`.
    pub const INTERNED_DATA: u32 = 12;
    /// `TracePacket.sequence_flags`.
    pub const SEQUENCE_FLAGS: u32 = 13;
    /// `TracePacket.track_descriptor`.
    pub const TRACK_DESCRIPTOR: u32 = 60;
    /// `TracePacket.clock_snapshot`.
    pub const CLOCK_SNAPSHOT: u32 = 6;
    /// `TracePacket.timestamp_clock_id`.
    pub const TIMESTAMP_CLOCK_ID: u32 = 58;
    /// `TracePacketDefaults.timestamp_clock_id`.
    pub const DEFAULT_TIMESTAMP_CLOCK_ID: u32 = 58;
    /// `ClockSnapshot.clocks`.
    pub const CLOCKS: u32 = 1;
    /// `ClockSnapshot.Clock.clock_id`.
    pub const CLOCK_ID: u32 = 1;
    /// `ClockSnapshot.Clock.timestamp`.
    pub const CLOCK_TIMESTAMP: u32 = 2;
    /// `ClockSnapshot.Clock.is_incremental`.
    pub const CLOCK_IS_INCREMENTAL: u32 = 3;

    /// `TrackEvent.category_iids`.
    pub const CATEGORY_IIDS: u32 = 3;
    /// `TrackEvent.debug_annotations`.
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    /// `TrackEvent.type`.
    pub const TYPE: u32 = 9;
    /// `TrackEvent.name_iid`.
    pub const NAME_IID: u32 = 10;
    /// `TrackEvent.track_uuid`.
    pub const TRACK_UUID: u32 = 11;
    /// `TrackEvent.counter_value`.
    pub const COUNTER_VALUE: u32 = 30;
    /// `TrackEvent.source_location_iid`.
    pub const SOURCE_LOCATION_IID: u32 = 34;
    /// `TrackEvent.flow_ids` (fixed64).
    pub const FLOW_IDS: u32 = 47;
    /// `TrackEvent.terminating_flow_ids` (fixed64).
    pub const TERMINATING_FLOW_IDS: u32 = 48;

    /// `InternedData.event_categories`.
    pub const EVENT_CATEGORIES: u32 = 1;
    /// `InternedData.event_names`.
    pub const EVENT_NAMES: u32 = 2;
    /// `InternedData.debug_annotation_names`.
    pub const DEBUG_ANNOTATION_NAMES: u32 = 3;
    /// `InternedData.source_locations`.
    pub const SOURCE_LOCATIONS: u32 = 4;
    /// `iid` of every interned entry.
    pub const IID: u32 = 1;
    /// `name` of `EventCategory`, `EventName`, `DebugAnnotationName`.
    pub const INTERNED_NAME: u32 = 2;
    /// `SourceLocation.file_name`.
    pub const FILE_NAME: u32 = 2;
    /// `SourceLocation.function_name`.
    pub const FUNCTION_NAME: u32 = 3;
    /// `SourceLocation.line_number`.
    pub const LINE_NUMBER: u32 = 4;

    /// `DebugAnnotation.name_iid`.
    pub const ANNOTATION_NAME_IID: u32 = 1;
    /// `DebugAnnotation.bool_value`.
    pub const BOOL_VALUE: u32 = 2;
    /// `DebugAnnotation.uint_value`.
    pub const UINT_VALUE: u32 = 3;
    /// `DebugAnnotation.int_value`.
    pub const INT_VALUE: u32 = 4;
    /// `DebugAnnotation.double_value`.
    pub const DOUBLE_VALUE: u32 = 5;
    /// `DebugAnnotation.string_value`.
    pub const STRING_VALUE: u32 = 6;
    /// `DebugAnnotation.string_value_iid`.
    pub const STRING_VALUE_IID: u32 = 17;
    /// `InternedData.debug_annotation_string_values`.
    pub const DEBUG_ANNOTATION_STRING_VALUES: u32 = 29;
    /// `InternedString.str`.
    pub const INTERNED_STR: u32 = 2;
    /// `TracePacket.trace_packet_defaults`.
    pub const TRACE_PACKET_DEFAULTS: u32 = 59;
    /// `TracePacketDefaults.track_event_defaults`.
    pub const TRACK_EVENT_DEFAULTS: u32 = 11;
    /// `TrackEventDefaults.track_uuid`.
    pub const DEFAULT_TRACK_UUID: u32 = 11;
    /// `TrackEventDefaults.extra_counter_track_uuids`.
    pub const DEFAULT_EXTRA_COUNTERS: u32 = 31;
    /// `TrackEvent.extra_counter_values`.
    pub const EXTRA_COUNTER_VALUES: u32 = 12;
    /// `DebugAnnotation.dict_entries`.
    pub const DICT_ENTRIES: u32 = 11;
    /// `DebugAnnotation.array_values`.
    pub const ARRAY_VALUES: u32 = 12;

    /// `TrackDescriptor.uuid`.
    pub const UUID: u32 = 1;
    /// `TrackDescriptor.name`.
    pub const TRACK_NAME: u32 = 2;
    /// `TrackDescriptor.process`.
    pub const PROCESS: u32 = 3;
    /// `TrackDescriptor.thread`.
    pub const THREAD: u32 = 4;
    /// `TrackDescriptor.parent_uuid`.
    pub const PARENT_UUID: u32 = 5;
    /// `TrackDescriptor.counter`.
    pub const COUNTER: u32 = 8;
    /// `TrackDescriptor.child_ordering`.
    pub const CHILD_ORDERING: u32 = 11;
    /// `TrackDescriptor.sibling_order_rank`.
    pub const SIBLING_ORDER_RANK: u32 = 12;
    /// `ProcessDescriptor.pid`, `ThreadDescriptor.pid`.
    pub const PID: u32 = 1;
    /// `ThreadDescriptor.tid`.
    pub const TID: u32 = 2;
    /// `ThreadDescriptor.thread_name`.
    pub const THREAD_NAME: u32 = 5;
    /// `ProcessDescriptor.process_name`.
    pub const PROCESS_NAME: u32 = 6;
    /// `CounterDescriptor.unit`.
    pub const COUNTER_UNIT: u32 = 3;
}

/// `TracePacket.sequence_flags`: the first packet of a sequence.
pub(crate) const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
/// The sequence-scoped clock (ids 64 to 127 are a sequence's own) whose timestamps are
/// deltas from the packet before on the sequence.
pub(crate) const INCREMENTAL_CLOCK: u32 = 64;
/// `BuiltinClock.BUILTIN_CLOCK_BOOTTIME`: the trace's clock, which the run's times
/// (nanoseconds since its start) are written on.
pub(crate) const BOOTTIME: u32 = 6;

/// A byte buffer that protobuf fields are appended to.
#[derive(Debug, Default)]
pub(crate) struct Proto {
    pub(crate) bytes: Vec<u8>,
}

/// Where a nested message started (see [`Proto::begin`]).
#[must_use = "a nested message must be ended"]
pub(crate) struct Nested(usize);

impl Proto {
    /// Appends a varint.
    pub(crate) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.bytes.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.bytes.push(v as u8);
    }

    fn tag(&mut self, field: u32, wire: u32) {
        self.varint(u64::from(field << 3 | wire));
    }

    /// A varint field (uint32/64, int32/64 of non-negative values, bool, enum).
    pub(crate) fn uint(&mut self, field: u32, v: u64) {
        self.tag(field, VARINT);
        self.varint(v);
    }

    /// An `int64` field (two's complement: negative values take ten bytes, as protobuf's
    /// `int64` does).
    pub(crate) fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }

    /// A `fixed64` field.
    pub(crate) fn fixed64(&mut self, field: u32, v: u64) {
        self.tag(field, FIXED64);
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }

    /// A `double` field.
    pub(crate) fn double(&mut self, field: u32, v: f64) {
        self.fixed64(field, v.to_bits());
    }

    /// A `string` or `bytes` field.
    pub(crate) fn bytes_field(&mut self, field: u32, v: &[u8]) {
        self.tag(field, LEN);
        self.varint(v.len() as u64);
        self.bytes.extend_from_slice(v);
    }

    /// A `string` field.
    pub(crate) fn string(&mut self, field: u32, v: &str) {
        self.bytes_field(field, v.as_bytes());
    }

    /// Starts a nested message in field `field`: one byte is kept for its length, and
    /// [`Proto::end`] makes room for more when the message needs it.
    pub(crate) fn begin(&mut self, field: u32) -> Nested {
        self.tag(field, LEN);
        self.bytes.push(0);
        Nested(self.bytes.len())
    }

    /// Ends the nested message `at` started, writing its length.
    pub(crate) fn end(&mut self, at: Nested) {
        let start = at.0;
        let len = self.bytes.len() - start;
        if len < 0x80 {
            self.bytes[start - 1] = len as u8;
            return;
        }
        let mut head = Proto::default();
        head.varint(len as u64);
        let extra = head.bytes.len() - 1;
        self.bytes.resize(self.bytes.len() + extra, 0);
        self.bytes.copy_within(start..start + len, start + extra);
        self.bytes[start - 1..start - 1 + head.bytes.len()].copy_from_slice(&head.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_nested_lengths_are_protobuf() {
        let mut p = Proto::default();
        p.uint(1, 300);
        assert_eq!(p.bytes, [0x08, 0xac, 0x02]);
        let mut p = Proto::default();
        let n = p.begin(2);
        p.bytes_field(1, &[7; 200]);
        p.end(n);
        // Tag, a two-byte length (203), then the inner field (tag, 2-byte len, 200 B).
        assert_eq!(&p.bytes[..3], &[0x12, 0xcb, 0x01]);
        assert_eq!(&p.bytes[3..6], &[0x0a, 0xc8, 0x01]);
        assert_eq!(p.bytes.len(), 206);
        let mut p = Proto::default();
        p.int(4, -1);
        assert_eq!(p.bytes.len(), 11);
    }
}
