//! A hand-written reader for the complete (`X`) events that overlap's own writer emits,
//! so the importer's hot path does not build a `serde_json::Value` for every event.
//!
//! Almost every line of a trace is an MPI call or a compute span, and the writer lays them
//! out the same way every time: `serde_json` output of
//! [`overlap_format::schema::wire::WireEvent`] with the fields in declaration order
//! (`name`, `cat`, `ph`, `ts`, `dur`, `pid`, `tid`, `args`), no whitespace, times as
//! microseconds with at most three decimals. [`parse_complete`] reads exactly that layout
//! and nothing else: on anything unexpected it gives up and returns `None`, and the caller
//! reads the event again through the general serde path, which either accepts it (the
//! layout was merely unusual) or produces the precise error. Whenever the fast path does
//! return an event, it is the very event the serde path would produce (the tests compare
//! the two on many lines, on the writer's own output and on mutated lines).
//!
//! Times are read as exact integers (`ts` of `12.34` is 12 340 ns), which agrees with the
//! serde path's `(us * 1000.0).round()` for every time below 2^51 ns (26 days); above that
//! the fast path declines.

mod compute;
mod numbers;

use overlap_format::schema::{
    CallArgs, CallEvent, Completion, ComputeEvent, Event, Nanos, Op, Started,
};

use numbers::{digit_run, digits_value, long_unsigned, signed, unsigned, ONES, POW10};

/// A complete (`X`) event read by the fast path, with the process it belongs to.
pub(crate) struct FastEvent {
    /// The event's `pid`: the rank.
    pub(crate) pid: u32,
    /// The typed event.
    pub(crate) event: Event,
}

/// Times at or above this many nanoseconds are left to the serde path.
///
/// Below it, the serde path's float arithmetic is exact: reading `<us>.<ddd>` gives the
/// correctly rounded f64 of `ns / 1000` (relative error at most 2^-53), so multiplying by
/// 1000 lands within 0.25 + 0.125 of `ns` and rounds back to it.
const MAX_EXACT_NS: u64 = 1 << 51;

/// Parses one complete event of category "mpi" or "compute" laid out as overlap's writer lays
/// it out, starting at `buf[0]` == b'{'. Returns the event and the number of bytes consumed
/// (up to and including the closing '}' of the event object). Returns None whenever anything
/// differs from that layout (other phase or category, other key order, unknown key, string
/// escapes, exponents, negative times, more than 3 decimals, overflow, unknown MPI name, ...)
/// so the caller falls back to the general serde path, which produces the precise error.
// Always inlined into the caller's loop (one or two call sites): a call costs about a
// tenth more, mostly in copying the 200-byte result.
#[inline(always)]
pub(crate) fn parse_complete(buf: &[u8]) -> Option<(FastEvent, usize)> {
    let mut s = buf;
    eat(&mut s, b"{\"name\":\"")?;
    // An MPI call's name, category and phase are read in one go; anything else must be a
    // compute span.
    let call = call_head(&mut s);
    let name = match call {
        Some(_) => &[][..],
        None => {
            let name = string_body(&mut s)?;
            eat(&mut s, b",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":")?;
            name
        }
    };
    let start = micros(&mut s)?;
    eat(&mut s, b",\"dur\":")?;
    let dur = micros(&mut s)?;
    eat(&mut s, b",\"pid\":")?;
    let pid = u32::try_from(unsigned(&mut s)?).ok()?;
    // Thread 0 (the only one of most programs) in one comparison.
    let tid = if eat(&mut s, b",\"tid\":0,\"args\":{").is_some() {
        0
    } else {
        eat(&mut s, b",\"tid\":")?;
        let tid = u32::try_from(unsigned(&mut s)?).ok()?;
        eat(&mut s, b",\"args\":{")?;
        tid
    };
    let start = Nanos(start);
    let end = Nanos(start.0.checked_add(dur)?);
    let event = match call {
        Some(op) => {
            let mut call = CallEvent {
                tid,
                start,
                end,
                op,
                args: CallArgs::default(),
            };
            call_args(&mut s, &mut call.args)?;
            eat(&mut s, b"}")?;
            Event::Call(call)
        }
        None => {
            let buffers = compute::compute_args(&mut s)?;
            let name = std::str::from_utf8(name).ok()?;
            Event::Compute(ComputeEvent {
                tid,
                start,
                end,
                name: name.to_owned(),
                buffers,
            })
        }
    };
    Some((FastEvent { pid, event }, buf.len() - s.len()))
}

/// Consumes the literal `lit` at the start of `s`.
#[inline(always)]
fn eat<const N: usize>(s: &mut &[u8], lit: &[u8; N]) -> Option<()> {
    match s.split_first_chunk::<N>() {
        Some((head, rest)) if head == lit => {
            *s = rest;
            Some(())
        }
        _ => None,
    }
}

/// Consumes a `,` (returning true) or the closing byte `close` (returning false).
#[inline(always)]
fn comma_or(s: &mut &[u8], close: u8) -> Option<bool> {
    match s.split_first() {
        Some((&b, rest)) if b == b',' || b == close => {
            *s = rest;
            Some(b == b',')
        }
        _ => None,
    }
}

/// The top bit of every byte.
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Marks (with its top bit) each byte of `x` that ends a plain string body: `"`, `\` or a
/// control character. Bytes after the first marked one may be marked wrongly; the first
/// marked byte is always right.
#[inline(always)]
fn string_stops(x: u64) -> u64 {
    let below = |v: u64, n: u64| v.wrapping_sub(n * ONES) & !v & HIGHS;
    below(x ^ (u64::from(b'"') * ONES), 1)
        | below(x ^ (u64::from(b'\\') * ONES), 1)
        | below(x, 0x20)
}

/// Consumes the body of a string whose opening quote is already consumed, and its
/// closing quote; returns the body. Declines escapes and control characters (which JSON
/// forbids unescaped); the body is not checked to be UTF-8.
#[inline(always)]
fn string_body<'a>(s: &mut &'a [u8]) -> Option<&'a [u8]> {
    let mut len = 0;
    loop {
        let rest = s.get(len..)?;
        match rest.first_chunk::<8>() {
            Some(chunk) => {
                let stops = string_stops(u64::from_le_bytes(*chunk));
                if stops != 0 {
                    len += (stops.trailing_zeros() / 8) as usize;
                    break;
                }
                len += 8;
            }
            None => {
                len += rest
                    .iter()
                    .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
                break;
            }
        }
    }
    let (body, rest) = s.split_at_checked(len)?;
    match rest.split_first() {
        Some((b'"', rest)) => {
            *s = rest;
            Some(body)
        }
        _ => None,
    }
}

/// Consumes the rest of the head of an MPI call, after `{"name":"`, up to the `ts` value:
/// `MPI_Irecv","cat":"mpi","ph":"X","ts":`, and returns the op, as `Op::from_mpi_name`
/// would find it; or consumes nothing.
#[inline(always)]
fn call_head(s: &mut &[u8]) -> Option<Op> {
    // MPI names are short: the closing quote is within the first 32 bytes.
    let quote = s.iter().take(32).position(|&b| b == b'"')?;
    let op = Op::from_mpi_name(std::str::from_utf8(&s[..quote]).ok()?)?;
    let mut rest = &s[quote + 1..];
    eat(&mut rest, b",\"cat\":\"mpi\",\"ph\":\"X\",\"ts\":")?;
    *s = rest;
    Some(op)
}

/// Consumes a time in microseconds with at most three decimals and returns it in
/// nanoseconds, if below [`MAX_EXACT_NS`].
#[inline(always)]
fn micros(s: &mut &[u8]) -> Option<u64> {
    // Times seldom have a single digit: straight to the long form.
    let whole = long_unsigned(s)?;
    if whole > MAX_EXACT_NS / 1000 {
        return None;
    }
    let mut ns = whole * 1000;
    if let Some((b'.', rest)) = s.split_first() {
        // A complete event goes on for more than eight bytes after a time, so the
        // decimals can be read eight bytes at a time.
        let x = u64::from_le_bytes(*rest.first_chunk::<8>()?);
        // At least one decimal, and at most three.
        let n = digit_run(x);
        if !(1..=3).contains(&n) {
            return None;
        }
        ns += digits_value(x, n) * POW10.get(3 - n)?;
        *s = rest.get(n..)?;
    }
    (ns < MAX_EXACT_NS).then_some(ns)
}

/// Reads the members of a call's `args` object into `args`, after its `{`, up to and
/// including its `}`. Keys may come in any order; an unknown or repeated key is declined.
// Inlined so that `args` can live in registers and be stored once, straight into the
// returned event: copying an event that was just written field by field is slow.
#[inline(always)]
fn call_args(s: &mut &[u8], args: &mut CallArgs) -> Option<()> {
    if eat(s, b"}").is_some() {
        return Some(());
    }
    let mut completed = false;
    let mut started = false;
    loop {
        // Each key is told by its first letter and checked whole with its quotes and
        // colon, which also declines keys that merely start like a known one.
        match s.get(1)? {
            b'p' => {
                eat(s, b"\"peer\":")?;
                set(&mut args.peer, signed(s)?)?;
            }
            b't' => {
                eat(s, b"\"tag\":")?;
                set(&mut args.tag, signed(s)?)?;
            }
            b'b' => {
                if eat(s, b"\"bytes\":").is_some() {
                    set(&mut args.bytes, unsigned(s)?)?;
                } else if eat(s, b"\"buf\":").is_some() {
                    set(&mut args.buf, unsigned(s)?)?;
                } else {
                    eat(s, b"\"buf_len\":")?;
                    set(&mut args.buf_len, unsigned(s)?)?;
                }
            }
            b'c' => {
                if eat(s, b"\"comm\":").is_some() {
                    set(&mut args.comm, u32::try_from(unsigned(s)?).ok()?)?;
                } else {
                    eat(s, b"\"completed\":")?;
                    if completed {
                        return None;
                    }
                    completed = true;
                    let (list, rest) = completions(s)?;
                    args.completed = list;
                    *s = rest;
                }
            }
            b'r' => {
                if eat(s, b"\"request\":").is_some() {
                    set(&mut args.request, unsigned(s)?)?;
                } else if eat(s, b"\"recv_peer\":").is_some() {
                    set(&mut args.recv_peer, signed(s)?)?;
                } else if eat(s, b"\"recv_tag\":").is_some() {
                    set(&mut args.recv_tag, signed(s)?)?;
                } else if eat(s, b"\"recv_buf\":").is_some() {
                    set(&mut args.recv_buf, unsigned(s)?)?;
                } else if eat(s, b"\"recv_bytes\":").is_some() {
                    set(&mut args.recv_bytes, unsigned(s)?)?;
                } else if eat(s, b"\"root\":").is_some() {
                    set(&mut args.root, signed(s)?)?;
                } else {
                    eat(s, b"\"recv_buf_len\":")?;
                    set(&mut args.recv_buf_len, unsigned(s)?)?;
                }
            }
            b's' => {
                if eat(s, b"\"site\":").is_some() {
                    set(&mut args.site, unsigned(s)?)?;
                } else if eat(s, b"\"src\":\"").is_some() {
                    let body = std::str::from_utf8(string_body(s)?).ok()?;
                    set(&mut args.src, body.to_owned())?;
                } else if eat(s, b"\"started\":").is_some() {
                    if started {
                        return None;
                    }
                    started = true;
                    let (list, rest) = starts(s)?;
                    args.started = list;
                    *s = rest;
                } else {
                    eat(s, b"\"send_bytes\":")?;
                    set(&mut args.send_bytes, unsigned(s)?)?;
                }
            }
            b'f' => {
                eat(s, b"\"flag\":")?;
                set(&mut args.flag, u8::try_from(unsigned(s)?).ok()?)?;
            }
            b'w' => {
                eat(s, b"\"win\":")?;
                set(&mut args.win, u32::try_from(unsigned(s)?).ok()?)?;
            }
            b'e' => {
                eat(s, b"\"exclusive\":")?;
                set(&mut args.exclusive, u8::try_from(unsigned(s)?).ok()?)?;
            }
            b'g' => {
                eat(s, b"\"group\":")?;
                if !args.group.is_empty() {
                    return None;
                }
                let (list, rest) = ranks(s)?;
                // An empty list is never written (and would hide a repeated key).
                if list.is_empty() {
                    return None;
                }
                args.group = list;
                *s = rest;
            }
            _ => return None,
        }
        if !comma_or(s, b'}')? {
            return Some(());
        }
    }
}

/// Fills `slot` with `value`, unless it is already filled (a repeated key).
#[inline(always)]
fn set<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

/// Reads the `completed` array, `[` to `]`, at the start of `s`; returns it and the bytes
/// after it. (Out of line, and not through `&mut &[u8]`, which would keep the caller's
/// slice in memory rather than in registers.)
#[inline(never)]
fn completions(s: &[u8]) -> Option<(Vec<Completion>, &[u8])> {
    list(s, completion)
}

/// Reads the `started` array of a Start or Startall, like [`completions`].
#[inline(never)]
fn starts(s: &[u8]) -> Option<(Vec<Started>, &[u8])> {
    list(s, started)
}

/// Reads a window group's array of world ranks, `[` to `]`, like [`completions`].
#[inline(never)]
fn ranks(mut s: &[u8]) -> Option<(Vec<i32>, &[u8])> {
    let s = &mut s;
    eat(s, b"[")?;
    let mut list = Vec::new();
    if eat(s, b"]").is_some() {
        return Some((list, *s));
    }
    loop {
        list.push(signed(s)?);
        if !comma_or(s, b']')? {
            return Some((list, *s));
        }
    }
}

/// Reads a JSON array of objects, `[` to `]`, each read by `item` after its `{`.
#[inline(always)]
fn list<T>(mut s: &[u8], item: impl Fn(&mut &[u8]) -> Option<T>) -> Option<(Vec<T>, &[u8])> {
    let s = &mut s;
    eat(s, b"[")?;
    let mut list = Vec::new();
    if eat(s, b"]").is_some() {
        return Some((list, *s));
    }
    loop {
        eat(s, b"{")?;
        list.push(item(s)?);
        if !comma_or(s, b']')? {
            return Some((list, *s));
        }
    }
}

/// Consumes the members of one started request after its `{`, up to and including its
/// `}`. Both members are required.
#[inline(always)]
fn started(s: &mut &[u8]) -> Option<Started> {
    let (mut request, mut persistent) = (None, None);
    loop {
        if eat(s, b"\"request\":").is_some() {
            set(&mut request, unsigned(s)?)?;
        } else {
            eat(s, b"\"persistent\":")?;
            set(&mut persistent, unsigned(s)?)?;
        }
        if !comma_or(s, b'}')? {
            return Some(Started {
                request: request?,
                persistent: persistent?,
            });
        }
    }
}

/// Consumes the members of one completion after its `{`, up to and including its `}`.
#[inline(always)]
fn completion(s: &mut &[u8]) -> Option<Completion> {
    let mut c = Completion {
        request: None,
        source: None,
        tag: None,
        bytes: None,
    };
    if eat(s, b"}").is_some() {
        return Some(c);
    }
    loop {
        match s.get(1)? {
            b'r' => {
                eat(s, b"\"request\":")?;
                set(&mut c.request, unsigned(s)?)?;
            }
            b's' => {
                eat(s, b"\"source\":")?;
                set(&mut c.source, signed(s)?)?;
            }
            b't' => {
                eat(s, b"\"tag\":")?;
                set(&mut c.tag, signed(s)?)?;
            }
            b'b' => {
                eat(s, b"\"bytes\":")?;
                set(&mut c.bytes, unsigned(s)?)?;
            }
            _ => return None,
        }
        if !comma_or(s, b'}')? {
            return Some(c);
        }
    }
}

#[cfg(test)]
mod tests;
