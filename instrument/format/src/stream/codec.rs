//! The records of a thread's event stream, encoded as the hot path writes them and
//! decoded as readers take them apart: one tag byte, then the fields of that kind of
//! record in a fixed order, each integer in LEB128 (see [`super::varint`]).
//!
//! A record's end time is written as its duration (unsigned: stamps never run
//! backwards within a record). Start times, call sites, buffer addresses and request ids are written as differences from
//! the same field of the thread's previous record ([`Deltas`]), so a call of a loop takes
//! a byte or two for each of them. A thread's records are therefore read in order from
//! the thread's first one; a stream is never cut inside a record.

use super::varint::RecordOut;
use crate::call_data::{CallData, Collective, Transfer};
use crate::schema::{ClockSync, Completion, GpuOp, Op, Started, SyncPhase};

/// Group members one members record carries.
pub const MEMBERS_PER_RECORD: usize = 16;

/// Longest string a string definition carries; longer ones are cut there.
pub const STRING_MAX: usize = 4096;

/// Set on a site word that names a source location (defined by a site record), clear on
/// one that is a code address. User-space code addresses never have the top bit set
/// (x86-64 and AArch64 user space ends far below 2^63).
pub const SOURCE_SITE_TAG: u64 = 1 << 63;

/// What a record is: its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Tag {
    /// A call without arguments ([`CallData::Plain`]).
    CallPlain = 1,
    /// [`CallData::Post`].
    CallPost = 2,
    /// [`CallData::Blocking`].
    CallBlocking = 3,
    /// [`CallData::Sendrecv`].
    CallSendrecv = 4,
    /// [`CallData::Complete`].
    CallComplete = 5,
    /// [`CallData::Collective`].
    CallCollective = 6,
    /// [`CallData::CollectivePost`].
    CallCollectivePost = 7,
    /// [`CallData::Query`].
    CallQuery = 8,
    /// [`CallData::Free`].
    CallFree = 9,
    /// [`CallData::Start`].
    CallStart = 10,
    /// [`CallData::OneSided`].
    CallOneSided = 11,
    /// [`CallData::WindowCollective`].
    CallWindowCollective = 12,
    /// [`CallData::WindowSync`].
    CallWindowSync = 13,
    /// [`CallData::SendrecvPost`].
    CallSendrecvPost = 14,
    /// [`CallData::Pcontrol`] (version 11).
    CallPcontrol = 15,
    /// A request completed by the call before it.
    Completed = 32,
    /// A persistent request started by the call before it.
    Started = 33,
    /// Members of the group of the call before it.
    Members = 34,
    /// A compute span.
    Compute = 48,
    /// A clock synchronisation.
    Sync = 49,
    /// A string later records name by id (compute-span names, source files).
    StringDef = 50,
    /// A source location later calls name by their site word.
    SiteDef = 51,
    /// A compute span that declared the buffers it reads and writes.
    ComputeBuffers = 52,
    /// The buffer names later annotated compute spans name by id.
    BuffersDef = 53,
    /// GPU work ([`GpuRecord`]).
    Gpu = 54,
    /// A source location with the function it is in (version 10: the preload's Python
    /// frames), later calls name by their site word.
    FunctionSiteDef = 55,
}

impl Tag {
    pub(super) fn from_byte(b: u8) -> Option<Tag> {
        use Tag::*;
        Some(match b {
            1 => CallPlain,
            2 => CallPost,
            3 => CallBlocking,
            4 => CallSendrecv,
            5 => CallComplete,
            6 => CallCollective,
            7 => CallCollectivePost,
            8 => CallQuery,
            9 => CallFree,
            10 => CallStart,
            11 => CallOneSided,
            12 => CallWindowCollective,
            13 => CallWindowSync,
            14 => CallSendrecvPost,
            15 => CallPcontrol,
            32 => Completed,
            33 => Started,
            34 => Members,
            48 => Compute,
            49 => Sync,
            50 => StringDef,
            51 => SiteDef,
            52 => ComputeBuffers,
            53 => BuffersDef,
            54 => Gpu,
            55 => FunctionSiteDef,
            _ => return None,
        })
    }
}

/// The previous values the delta-coded fields are written against. The encoder and the
/// decoder of a thread's stream each keep one, and update it alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deltas {
    /// Start time of the previous call or compute span.
    pub start: u64,
    /// Site word of the previous call.
    pub site: u64,
    /// Buffer address of the previous transfer or access.
    pub buf: u64,
    /// The previous request id written.
    pub request: u64,
}

/// One decoded record. Times are raw stamps, sites raw site words.
#[derive(Clone, Debug, PartialEq)]
pub enum Record<'a> {
    /// A call, followed by `follow` completed, started or members records.
    Call {
        /// Which function.
        op: Op,
        /// Entry stamp.
        start: u64,
        /// Exit stamp.
        end: u64,
        /// Site word (0: unknown).
        site: u64,
        /// Its arguments.
        data: CallData,
        /// Records that follow and belong to it.
        follow: u32,
    },
    /// A completion of the call before.
    Completed(Completion),
    /// A start of the call before.
    Started(Started),
    /// Group members of the call before, in group order.
    Members(Vec<i32>),
    /// A compute span named by string id.
    Compute {
        /// The name's string id.
        name: u32,
        /// Start stamp.
        start: u64,
        /// End stamp.
        end: u64,
    },
    /// A clock synchronisation.
    Sync(ClockSync),
    /// A string definition.
    StringDef {
        /// Its id (from 1, per thread).
        id: u32,
        /// Its bytes (UTF-8 as written).
        text: &'a [u8],
    },
    /// A compute span that declared its buffers.
    ComputeBuffers {
        /// The name's string id.
        name: u32,
        /// Start stamp.
        start: u64,
        /// End stamp.
        end: u64,
        /// Id of the thread's buffers definition it names.
        buffers: u32,
    },
    /// A buffers definition: the names an annotated compute span reads and writes.
    BuffersDef {
        /// Its id (from 1, per thread).
        id: u32,
        /// Names read.
        reads: Vec<String>,
        /// Names written.
        writes: Vec<String>,
    },
    /// GPU work.
    Gpu(GpuRecord),
    /// A source location (tag 51, or 55 with its function).
    SiteDef {
        /// The site word calls made from it carry.
        word: u64,
        /// String id of the file name.
        file: u32,
        /// Line.
        line: u32,
        /// Column (0: unknown).
        column: u32,
        /// String id of the function's name, when the record gives it (tag 55).
        function: Option<u32>,
    },
}

fn tag_of(data: &CallData) -> Tag {
    match data {
        CallData::Plain => Tag::CallPlain,
        CallData::Post { .. } => Tag::CallPost,
        CallData::Blocking { .. } => Tag::CallBlocking,
        CallData::Sendrecv { .. } => Tag::CallSendrecv,
        CallData::Complete { .. } => Tag::CallComplete,
        CallData::Collective(_) => Tag::CallCollective,
        CallData::CollectivePost { .. } => Tag::CallCollectivePost,
        CallData::Query { .. } => Tag::CallQuery,
        CallData::Free { .. } => Tag::CallFree,
        CallData::Start => Tag::CallStart,
        CallData::OneSided { .. } => Tag::CallOneSided,
        CallData::WindowCollective { .. } => Tag::CallWindowCollective,
        CallData::WindowSync { .. } => Tag::CallWindowSync,
        CallData::SendrecvPost { .. } => Tag::CallSendrecvPost,
        CallData::Pcontrol { .. } => Tag::CallPcontrol,
    }
}

#[inline(always)]
fn put_option_bool(out: &mut impl RecordOut, v: Option<bool>) {
    out.put_u8(match v {
        None => 0,
        Some(false) => 1,
        Some(true) => 2,
    });
}

#[inline(always)]
fn put_option_i32(out: &mut impl RecordOut, v: Option<i32>) {
    match v {
        None => out.put_u8(0),
        Some(x) => {
            out.put_u8(1);
            out.put_signed(i64::from(x));
        }
    }
}

#[inline(always)]
fn put_request(out: &mut impl RecordOut, d: &mut Deltas, request: u64) {
    out.put_delta(request, d.request);
    d.request = request;
}

#[inline(always)]
fn put_transfer(out: &mut impl RecordOut, d: &mut Deltas, t: &Transfer) {
    out.put_signed(i64::from(t.peer));
    out.put_signed(i64::from(t.tag));
    out.put_var(t.bytes);
    out.put_var(u64::from(t.comm.0));
    out.put_delta(t.buf, d.buf);
    d.buf = t.buf;
    out.put_delta(t.buf_len, t.bytes);
}

#[inline(always)]
fn put_collective(out: &mut impl RecordOut, c: &Collective) {
    out.put_var(u64::from(c.comm.0));
    out.put_var(c.send_bytes);
    out.put_var(c.recv_bytes);
    put_option_i32(out, c.root);
}

/// Encodes a call. `d` is updated as the decoder will update its own.
///
/// Always inlined: a recorder's call site knows which `CallData` it records, so the
/// match folds away, and the output cursor stays in registers.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn encode_call(
    out: &mut impl RecordOut,
    d: &mut Deltas,
    op: Op,
    start: u64,
    end: u64,
    site: u64,
    data: &CallData,
    follow: u32,
) {
    out.put_u8(tag_of(data) as u8);
    out.put_var(u64::from(op.code()));
    out.put_delta(start, d.start);
    d.start = start;
    out.put_var(end.wrapping_sub(start));
    out.put_delta(site, d.site);
    d.site = site;
    out.put_var(u64::from(follow));
    match data {
        CallData::Plain | CallData::Start => {}
        CallData::Post { transfer, request } => {
            put_transfer(out, d, transfer);
            put_request(out, d, request.0);
        }
        CallData::Blocking { transfer } => put_transfer(out, d, transfer),
        CallData::Sendrecv { send, recv } => {
            put_transfer(out, d, send);
            put_transfer(out, d, recv);
        }
        CallData::SendrecvPost {
            send,
            recv,
            request,
        } => {
            put_transfer(out, d, send);
            put_transfer(out, d, recv);
            put_request(out, d, request.0);
        }
        CallData::Complete { flag } => put_option_bool(out, *flag),
        CallData::Collective(c) => put_collective(out, c),
        CallData::CollectivePost {
            collective,
            request,
        } => {
            put_collective(out, collective);
            put_request(out, d, request.0);
        }
        CallData::Query { transfer, flag } => {
            put_transfer(out, d, transfer);
            out.put_u8(u8::from(*flag));
        }
        CallData::Free { request } => put_request(out, d, request.0),
        CallData::OneSided { access, request } => {
            out.put_signed(i64::from(access.target));
            out.put_var(access.bytes);
            out.put_var(u64::from(access.win));
            out.put_delta(access.buf, d.buf);
            d.buf = access.buf;
            out.put_delta(access.buf_len, access.bytes);
            match request {
                None => out.put_u8(0),
                Some(r) => {
                    out.put_u8(1);
                    put_request(out, d, r.0);
                }
            }
        }
        CallData::WindowCollective { win, comm } => {
            out.put_var(u64::from(*win));
            out.put_var(u64::from(comm.0));
        }
        CallData::WindowSync {
            win,
            target,
            exclusive,
            flag,
        } => {
            out.put_var(u64::from(*win));
            put_option_i32(out, *target);
            put_option_bool(out, *exclusive);
            put_option_bool(out, *flag);
        }
        CallData::Pcontrol { level, name } => {
            out.put_signed(i64::from(*level));
            let bytes = name.as_bytes();
            out.put_var(bytes.len() as u64);
            for &b in bytes {
                out.put_u8(b);
            }
        }
    }
}

/// Encodes a completion of the call before (always inlined, as [`encode_call`]).
#[inline(always)]
pub fn encode_completion(out: &mut impl RecordOut, d: &mut Deltas, c: &Completion) {
    out.put_u8(Tag::Completed as u8);
    let present = u8::from(c.request.is_some())
        | u8::from(c.source.is_some()) << 1
        | u8::from(c.tag.is_some()) << 2
        | u8::from(c.bytes.is_some()) << 3;
    out.put_u8(present);
    if let Some(r) = c.request {
        put_request(out, d, r);
    }
    if let Some(s) = c.source {
        out.put_signed(i64::from(s));
    }
    if let Some(t) = c.tag {
        out.put_signed(i64::from(t));
    }
    if let Some(b) = c.bytes {
        out.put_var(b);
    }
}

/// Encodes a start of the call before.
#[inline]
pub fn encode_started(out: &mut impl RecordOut, d: &mut Deltas, s: &Started) {
    out.put_u8(Tag::Started as u8);
    put_request(out, d, s.request);
    out.put_delta(s.persistent, s.request);
}

/// Encodes up to [`MEMBERS_PER_RECORD`] group members (more are left out: callers
/// split larger groups).
#[inline]
pub fn encode_members(out: &mut impl RecordOut, ranks: &[i32]) {
    let ranks = &ranks[..ranks.len().min(MEMBERS_PER_RECORD)];
    out.put_u8(Tag::Members as u8);
    out.put_var(ranks.len() as u64);
    for &r in ranks {
        out.put_signed(i64::from(r));
    }
}

/// Encodes a compute span whose name was defined as string `name`.
#[inline]
pub fn encode_compute(out: &mut impl RecordOut, d: &mut Deltas, name: u32, start: u64, end: u64) {
    out.put_u8(Tag::Compute as u8);
    out.put_var(u64::from(name));
    out.put_delta(start, d.start);
    d.start = start;
    out.put_var(end.wrapping_sub(start));
}

/// Encodes a compute span that declared the buffers of definition `buffers`.
#[inline]
pub fn encode_compute_buffers(
    out: &mut impl RecordOut,
    d: &mut Deltas,
    name: u32,
    start: u64,
    end: u64,
    buffers: u32,
) {
    out.put_u8(Tag::ComputeBuffers as u8);
    out.put_var(u64::from(name));
    out.put_delta(start, d.start);
    d.start = start;
    out.put_var(end.wrapping_sub(start));
    out.put_var(u64::from(buffers));
}

/// A GPU record as the stream holds it. Unlike calls' stamps, its times are nanoseconds
/// of `CLOCK_MONOTONIC` since the header's epoch: a device's times are put on the host
/// clock in nanoseconds (see `overlap_instrument::gpu`), whatever the stamps count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuRecord {
    /// What it is.
    pub op: GpuOp,
    /// The device.
    pub device: u32,
    /// The stream (for a host wait, the stream waited on).
    pub stream: u32,
    /// Host ns it was enqueued (a host wait: when what it waits for was marked).
    pub issued: u64,
    /// Start, ns.
    pub start: u64,
    /// End, ns (not before `start`).
    pub end: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// Source address (0: unknown).
    pub src: u64,
    /// Destination address (0: unknown).
    pub dst: u64,
    /// Packet index plus one (0: none).
    pub packet: u32,
    /// String id of the kernel's name or label (0: none).
    pub name: u32,
    /// Clock error bound, ns.
    pub clock_error: u64,
}

/// Encodes GPU work. Times are written as `issued`, then `start` as a signed difference
/// from it, then the duration; the fields do not take part in the thread's deltas.
pub fn encode_gpu(out: &mut impl RecordOut, g: &GpuRecord) {
    out.put_u8(Tag::Gpu as u8);
    out.put_u8(g.op.code());
    out.put_var(u64::from(g.device));
    out.put_var(u64::from(g.stream));
    out.put_var(g.issued);
    out.put_signed(g.start.wrapping_sub(g.issued) as i64);
    out.put_var(g.end.saturating_sub(g.start));
    out.put_var(g.bytes);
    out.put_var(g.src);
    out.put_var(g.dst);
    out.put_var(u64::from(g.packet));
    out.put_var(u64::from(g.name));
    out.put_var(g.clock_error);
}

/// Encodes the head of a buffers definition; the `len` bytes of its names
/// ([`super::buffers::names_bytes`]) follow it.
pub fn encode_buffers_head(
    out: &mut impl RecordOut,
    id: u32,
    reads: usize,
    writes: usize,
    len: usize,
) {
    out.put_u8(Tag::BuffersDef as u8);
    out.put_var(u64::from(id));
    out.put_var(reads as u64);
    out.put_var(writes as u64);
    out.put_var(len as u64);
}

/// Encodes a clock synchronisation.
pub fn encode_sync(out: &mut impl RecordOut, s: &ClockSync) {
    out.put_u8(Tag::Sync as u8);
    out.put_u8(match s.phase {
        SyncPhase::Init => 0,
        SyncPhase::Final => 1,
    });
    out.put_var(s.local_ns);
    out.put_signed(s.offset_ns);
    out.put_var(s.error_ns);
    out.put_var(s.rtt_ns);
    out.put_var(u64::from(s.rounds));
}

/// Encodes the head of a string definition; the string's `len` bytes follow it
/// (`len` at most [`STRING_MAX`]).
pub fn encode_string_head(out: &mut impl RecordOut, id: u32, len: usize) {
    out.put_u8(Tag::StringDef as u8);
    out.put_var(u64::from(id));
    out.put_var(len.min(STRING_MAX) as u64);
}

/// Encodes a source location, its file defined as string `file`.
pub fn encode_site(out: &mut impl RecordOut, word: u64, file: u32, line: u32, column: u32) {
    out.put_u8(Tag::SiteDef as u8);
    out.put_var(word);
    out.put_var(u64::from(file));
    out.put_var(u64::from(line));
    out.put_var(u64::from(column));
}

/// Encodes a source location in function `function` (a string id, like `file`): what
/// [`encode_site`] writes, then the function, under a tag of its own so that a tag-51
/// record reads as it always did.
pub fn encode_function_site(
    out: &mut impl RecordOut,
    word: u64,
    file: u32,
    line: u32,
    column: u32,
    function: u32,
) {
    out.put_u8(Tag::FunctionSiteDef as u8);
    out.put_var(word);
    out.put_var(u64::from(file));
    out.put_var(u64::from(line));
    out.put_var(u64::from(column));
    out.put_var(u64::from(function));
}

pub use super::decode::{decode, RecordError};

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
