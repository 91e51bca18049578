//! A hand-written reader for the complete (`X`) events that overlap's own writer emits,
//! so the importer's hot path does not build a `serde_json::Value` for every event.
//!
//! Almost every line of a trace is an MPI call or a compute span, and the writer lays them
//! out the same way every time: `serde_json` output of
//! [`overlap_instrument::schema::wire::WireEvent`] with the fields in declaration order
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

use overlap_instrument::schema::{CallArgs, CallEvent, Completion, ComputeEvent, Event, Nanos, Op};

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
            eat(&mut s, b"}}")?;
            let name = std::str::from_utf8(name).ok()?;
            Event::Compute(ComputeEvent {
                tid,
                start,
                end,
                name: name.to_owned(),
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

/// A byte repeated in every byte of a u64 (SWAR, eight bytes at a time: byte `i` of the
/// input is byte `i` of a little-endian u64).
const ONES: u64 = 0x0101_0101_0101_0101;
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
    let mut rest = s.strip_prefix(b"MPI_")?;
    let r = &mut rest;
    // Each name is checked whole with its closing quote, so `MPI_Send` does not take the
    // start of `MPI_Sendrecv`. `every_op_is_read` keeps these names and `Op::mpi_name`
    // in step.
    let op = match r.first()? {
        b'S' if eat(r, b"Send\"").is_some() => Op::Send,
        b'S' if eat(r, b"Sendrecv\"").is_some() => Op::Sendrecv,
        b'R' if eat(r, b"Recv\"").is_some() => Op::Recv,
        b'I' if eat(r, b"Irecv\"").is_some() => Op::Irecv,
        b'I' if eat(r, b"Isend\"").is_some() => Op::Isend,
        b'W' if eat(r, b"Wait\"").is_some() => Op::Wait,
        b'W' if eat(r, b"Waitall\"").is_some() => Op::Waitall,
        b'T' if eat(r, b"Test\"").is_some() => Op::Test,
        b'B' if eat(r, b"Barrier\"").is_some() => Op::Barrier,
        b'A' if eat(r, b"Allreduce\"").is_some() => Op::Allreduce,
        _ => return None,
    };
    eat(r, b",\"cat\":\"mpi\",\"ph\":\"X\",\"ts\":")?;
    *s = rest;
    Some(op)
}

/// How many of the bytes of `x` are ASCII digits before the first one that is not (8 if
/// all are).
#[inline(always)]
fn digit_run(x: u64) -> usize {
    // A digit is 0x30..=0x39: its high nibble is 3, and still 3 after adding 6. A carry
    // out of a byte only happens for bytes >= 0xFA, and only spoils later bytes.
    let high = x & (0xF0 * ONES);
    let high_plus_6 = x.wrapping_add(6 * ONES) & (0xF0 * ONES);
    let not_digit = (high | (high_plus_6 >> 4)) ^ (0x33 * ONES);
    (not_digit.trailing_zeros() / 8) as usize
}

/// The value of the first `n` (1 to 8) bytes of `x`, which are ASCII digits.
#[inline(always)]
fn digits_value(x: u64, n: usize) -> u64 {
    // Digits to 0..=9 (a borrow only spoils the bytes after them), and the bytes after
    // them shifted out, which leaves leading zeros in front.
    let v = x.wrapping_sub(0x30 * ONES) << (8 * (8 - n));
    // Pairs, then fours, then the eight (Lemire's unrolled conversion).
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let pairs = 0x0000_00FF_0000_00FF;
    let low = (v & pairs).wrapping_mul(100 + (1_000_000 << 32));
    let high = ((v >> 16) & pairs).wrapping_mul(1 + (10_000 << 32));
    low.wrapping_add(high) >> 32
}

/// Powers of ten for 0 to 8 digits.
const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// Consumes a JSON unsigned integer (no sign, no leading zero, no fraction or exponent
/// consumed) that fits in a u64.
#[inline(always)]
fn unsigned(s: &mut &[u8]) -> Option<u64> {
    // One digit (pids, tids, communicators, small requests) is the common case.
    match *s {
        [d @ b'0'..=b'9', rest @ ..] if !rest.first().is_some_and(u8::is_ascii_digit) => {
            *s = rest;
            Some(u64::from(d - b'0'))
        }
        _ => long_unsigned(s),
    }
}

/// [`unsigned`] for the numbers of more than one digit (and the malformed ones).
#[inline(always)]
fn long_unsigned(s: &mut &[u8]) -> Option<u64> {
    let (value, len) = match s.first_chunk::<8>() {
        Some(chunk) => {
            let x = u64::from_le_bytes(*chunk);
            let n = digit_run(x);
            if n == 0 {
                return None;
            }
            let value = digits_value(x, n);
            if n < 8 {
                (value, n)
            } else {
                more_digits(s, value)?
            }
        }
        None => digits_bytewise(s)?,
    };
    // At least one digit, and no leading zero.
    if len == 0 || (len > 1 && s.first() == Some(&b'0')) {
        return None;
    }
    *s = s.get(len..)?;
    Some(value)
}

/// The value and length of the digits at the start of `s`, whose first eight bytes are
/// digits worth `value`.
#[inline]
fn more_digits(s: &[u8], mut value: u64) -> Option<(u64, usize)> {
    let mut len = 8;
    loop {
        let rest = s.get(len..)?;
        let (more, n) = match rest.first_chunk::<8>() {
            Some(chunk) => {
                let x = u64::from_le_bytes(*chunk);
                let n = digit_run(x);
                if n == 0 {
                    break;
                }
                (digits_value(x, n), n)
            }
            None => digits_bytewise(rest)?,
        };
        if n == 0 {
            break;
        }
        value = value.checked_mul(*POW10.get(n)?)?.checked_add(more)?;
        len += n;
        if n < 8 {
            break;
        }
    }
    Some((value, len))
}

/// The value and length of the digits at the start of `s`, a byte at a time (for the
/// end of the buffer, where eight bytes cannot be read at once).
#[inline(never)]
fn digits_bytewise(s: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    let mut len = 0;
    while let Some(&b) = s.get(len) {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
        len += 1;
    }
    Some((value, len))
}

/// Consumes a JSON integer that fits in an i32. `-0` is declined: serde_json reads it as a
/// float, which is not an integer.
#[inline(always)]
fn signed(s: &mut &[u8]) -> Option<i32> {
    match s.split_first() {
        Some((b'-', rest)) => {
            let mut rest = rest;
            let magnitude = unsigned(&mut rest)?;
            if magnitude == 0 {
                return None;
            }
            let value = i32::try_from(-i64::try_from(magnitude).ok()?).ok()?;
            *s = rest;
            Some(value)
        }
        _ => i32::try_from(unsigned(s)?).ok(),
    }
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
                } else {
                    eat(s, b"\"recv_buf_len\":")?;
                    set(&mut args.recv_buf_len, unsigned(s)?)?;
                }
            }
            b's' => {
                eat(s, b"\"send_bytes\":")?;
                set(&mut args.send_bytes, unsigned(s)?)?;
            }
            b'f' => {
                eat(s, b"\"flag\":")?;
                set(&mut args.flag, u8::try_from(unsigned(s)?).ok()?)?;
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
fn completions(mut s: &[u8]) -> Option<(Vec<Completion>, &[u8])> {
    let s = &mut s;
    eat(s, b"[")?;
    let mut list = Vec::new();
    if eat(s, b"]").is_some() {
        return Some((list, *s));
    }
    loop {
        eat(s, b"{")?;
        list.push(completion(s)?);
        if !comma_or(s, b']')? {
            return Some((list, *s));
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
mod tests {
    use super::*;
    use overlap_instrument::schema::wire::{event_to_wire, Phase};
    use serde_json::Value;

    use crate::import::{complete_event, RawEvent};

    /// What the serde path makes of the event at the start of `line`: pid, event, and
    /// bytes consumed; or why it fails.
    fn via_serde(line: &[u8]) -> Result<(u32, Event, usize), String> {
        let mut stream = serde_json::Deserializer::from_slice(line).into_iter::<RawEvent>();
        let raw = stream
            .next()
            .ok_or("no value")?
            .map_err(|e| e.to_string())?;
        if raw.ph != Phase::Complete {
            return Err(format!("phase {:?}", raw.ph));
        }
        let consumed = stream.byte_offset();
        Ok((raw.pid, complete_event(&raw)?, consumed))
    }

    fn via_fast(line: &[u8]) -> Option<(u32, Event, usize)> {
        parse_complete(line).map(|(f, n)| (f.pid, f.event, n))
    }

    /// The fast path reads `line`, and exactly as the serde path does.
    fn assert_same(line: &str) -> (u32, Event) {
        let fast = via_fast(line.as_bytes());
        let serde = via_serde(line.as_bytes());
        let Some(fast) = fast else {
            panic!("fast path declined {line}\n(serde: {serde:?})");
        };
        assert_eq!(Ok(&fast), serde.as_ref(), "{line}");
        (fast.0, fast.1)
    }

    /// The fast path declines `line`, without panicking.
    fn assert_declined(line: &[u8]) {
        assert!(
            via_fast(line).is_none(),
            "fast path accepted {:?}",
            String::from_utf8_lossy(line)
        );
    }

    /// Whatever `line` is, the fast path either declines it or agrees with serde.
    fn assert_sound(line: &[u8]) {
        if let Some(fast) = via_fast(line) {
            let serde = via_serde(line);
            assert_eq!(
                Ok(&fast),
                serde.as_ref(),
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    const EXAMPLES: &[&str] = &[
        r#"{"name":"pack","cat":"compute","ph":"X","ts":25416.586,"dur":2208.241,"pid":0,"tid":0,"args":{}}"#,
        r#"{"name":"MPI_Irecv","cat":"mpi","ph":"X","ts":27629.059,"dur":70.86,"pid":0,"tid":0,"args":{"peer":1,"tag":17,"bytes":131072,"comm":0,"buf":140566629883920,"buf_len":131072,"request":1}}"#,
        r#"{"name":"MPI_Waitall","cat":"mpi","ph":"X","ts":27718.411,"dur":207.614,"pid":0,"tid":0,"args":{"completed":[{"request":1,"source":1,"tag":17,"bytes":131072}]}}"#,
        r#"{"name":"MPI_Barrier","cat":"mpi","ph":"X","ts":70554.995,"dur":17806.905,"pid":0,"tid":0,"args":{"comm":0}}"#,
        r#"{"name":"MPI_Sendrecv","cat":"mpi","ph":"X","ts":5,"dur":0,"pid":3,"tid":2,"args":{"peer":2,"tag":-1,"bytes":8,"comm":4294967295,"buf":1,"buf_len":8,"recv_peer":-2,"recv_tag":2147483647,"recv_buf":18446744073709551615,"recv_buf_len":0,"completed":[{"source":0,"tag":7,"bytes":8}]}}"#,
        r#"{"name":"MPI_Test","cat":"mpi","ph":"X","ts":0,"dur":0.001,"pid":4294967295,"tid":4294967295,"args":{"request":7,"flag":1,"completed":[{"request":7}]}}"#,
        r#"{"name":"MPI_Test","cat":"mpi","ph":"X","ts":0.5,"dur":0.25,"pid":1,"tid":0,"args":{"request":7,"flag":0}}"#,
        r#"{"name":"MPI_Test","cat":"mpi","ph":"X","ts":0.5,"dur":0.25,"pid":1,"tid":0,"args":{"flag":255}}"#,
        r#"{"name":"MPI_Waitall","cat":"mpi","ph":"X","ts":1.2,"dur":3.45,"pid":1,"tid":0,"args":{"completed":[{"request":1,"source":-2147483648,"tag":-5,"bytes":0},{"request":2},{},{"bytes":3,"tag":4,"source":5,"request":6}]}}"#,
        r#"{"name":"MPI_Allreduce","cat":"mpi","ph":"X","ts":100.01,"dur":1000,"pid":7,"tid":1,"args":{"comm":3,"send_bytes":64,"bytes":64}}"#,
        r#"{"name":"MPI_Isend","cat":"mpi","ph":"X","ts":10.1,"dur":0.02,"pid":2,"tid":0,"args":{"request":99,"buf_len":4,"buf":4096,"comm":0,"bytes":4,"tag":0,"peer":0}}"#,
        r#"{"name":"MPI_Send","cat":"mpi","ph":"X","ts":1,"dur":2,"pid":0,"tid":0,"args":{}}"#,
        r#"{"name":"MPI_Recv","cat":"mpi","ph":"X","ts":1,"dur":2,"pid":0,"tid":0,"args":{"peer":-2,"tag":-1,"completed":[{"source":3,"tag":9,"bytes":12}]}}"#,
        r#"{"name":"MPI_Wait","cat":"mpi","ph":"X","ts":1,"dur":2,"pid":0,"tid":0,"args":{"completed":[]}}"#,
        r#"{"name":"","cat":"compute","ph":"X","ts":0,"dur":0,"pid":0,"tid":0,"args":{}}"#,
        r#"{"name":"überlapp ✓ 重叠","cat":"compute","ph":"X","ts":2251799813685.247,"dur":0,"pid":0,"tid":0,"args":{}}"#,
        r#"{"name":"MPI_Barrier","cat":"mpi","ph":"X","ts":1125899906842.623,"dur":1125899906842.623,"pid":0,"tid":0,"args":{}}"#,
    ];

    #[test]
    fn examples_read_as_serde_reads_them() {
        for line in EXAMPLES {
            assert_same(line);
        }
    }

    #[test]
    fn consumes_only_the_object() {
        for line in EXAMPLES {
            for tail in [",\n", "\n", ",", "", "]", "\n]\n", "}garbage"] {
                let text = format!("{line}{tail}");
                let (_, consumed) = parse_complete(text.as_bytes()).expect("reads");
                assert_eq!(consumed, line.len(), "{text}");
            }
        }
    }

    #[test]
    fn reads_every_field() {
        let (pid, event) = assert_same(EXAMPLES[4]);
        assert_eq!(pid, 3);
        let Event::Call(call) = event else {
            panic!("not a call")
        };
        assert_eq!(call.op, Op::Sendrecv);
        assert_eq!(call.tid, 2);
        assert_eq!((call.start, call.end), (Nanos(5000), Nanos(5000)));
        let expected = CallArgs {
            peer: Some(2),
            tag: Some(-1),
            bytes: Some(8),
            comm: Some(u32::MAX),
            buf: Some(1),
            buf_len: Some(8),
            request: None,
            recv_peer: Some(-2),
            recv_tag: Some(i32::MAX),
            recv_buf: Some(u64::MAX),
            recv_buf_len: Some(0),
            send_bytes: None,
            flag: None,
            completed: vec![Completion {
                request: None,
                source: Some(0),
                tag: Some(7),
                bytes: Some(8),
            }],
        };
        assert_eq!(call.args, expected);
        let (_, event) = assert_same(EXAMPLES[0]);
        assert_eq!(
            event,
            Event::Compute(ComputeEvent {
                tid: 0,
                start: Nanos(25_416_586),
                end: Nanos(25_416_586 + 2_208_241),
                name: "pack".into(),
            })
        );
    }

    #[test]
    fn times_with_zero_to_three_decimals() {
        for (ts, ns) in [
            ("0", 0),
            ("5", 5000),
            ("0.0", 0),
            ("0.001", 1),
            ("0.01", 10),
            ("0.1", 100),
            ("7.5", 7500),
            ("7.25", 7250),
            ("7.125", 7125),
            ("10.000", 10_000),
            ("123456789.987", 123_456_789_987),
        ] {
            let line = format!(
                r#"{{"name":"x","cat":"compute","ph":"X","ts":{ts},"dur":{ts},"pid":0,"tid":0,"args":{{}}}}"#
            );
            let (_, event) = assert_same(&line);
            assert_eq!((event.start(), event.end()), (Nanos(ns), Nanos(2 * ns)));
        }
    }

    /// A small deterministic generator (SplitMix64), to keep the tests free of dependencies.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn chance(&mut self, one_in: u64) -> bool {
            self.below(one_in) == 0
        }

        /// A number of any magnitude, small ones and edge values more often.
        fn u64(&mut self) -> u64 {
            match self.below(6) {
                0 => self.below(10),
                1 => self.below(100_000),
                2 => u64::MAX - self.below(3),
                3 => self.next() >> self.below(64),
                _ => self.next(),
            }
        }

        fn i32(&mut self) -> i32 {
            match self.below(5) {
                0 => [i32::MIN, i32::MAX, -1, 0, -2][self.below(5) as usize],
                1 => self.below(64) as i32 - 32,
                _ => self.next() as i32,
            }
        }

        /// A time below 2^51 ns, round values more often.
        fn nanos(&mut self) -> u64 {
            let ns = self.next() >> (13 + self.below(51));
            match self.below(4) {
                0 => ns / 1000 * 1000,
                1 => ns / 10 * 10,
                _ => ns,
            }
        }

        fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Option<T> {
            (!self.chance(2)).then(|| f(self))
        }
    }

    fn random_args(rng: &mut Rng) -> CallArgs {
        let completed = (0..[0, 0, 1, 2, 5][rng.below(5) as usize])
            .map(|_| Completion {
                request: rng.opt(Rng::u64),
                source: rng.opt(Rng::i32),
                tag: rng.opt(Rng::i32),
                bytes: rng.opt(Rng::u64),
            })
            .collect();
        CallArgs {
            peer: rng.opt(Rng::i32),
            tag: rng.opt(Rng::i32),
            bytes: rng.opt(Rng::u64),
            comm: rng.opt(|r| r.u64() as u32),
            buf: rng.opt(Rng::u64),
            buf_len: rng.opt(Rng::u64),
            request: rng.opt(Rng::u64),
            recv_peer: rng.opt(Rng::i32),
            recv_tag: rng.opt(Rng::i32),
            recv_buf: rng.opt(Rng::u64),
            recv_buf_len: rng.opt(Rng::u64),
            send_bytes: rng.opt(Rng::u64),
            flag: rng.opt(|r| r.u64() as u8),
            completed,
        }
    }

    fn random_event(rng: &mut Rng) -> Event {
        let tid = rng.u64() as u32;
        let start = rng.nanos();
        let end = start + rng.nanos().min(super::MAX_EXACT_NS - 1 - start);
        let (start, end) = (Nanos(start), Nanos(end));
        if rng.chance(4) {
            let names = [
                "pack",
                "unpack",
                "",
                "stencil 3d",
                "ünïcödé ✓",
                "tab\tquote\"",
            ];
            Event::Compute(ComputeEvent {
                tid,
                start,
                end,
                name: names[rng.below(names.len() as u64) as usize].into(),
            })
        } else {
            Event::Call(CallEvent {
                tid,
                start,
                end,
                op: Op::ALL[rng.below(Op::ALL.len() as u64) as usize],
                args: random_args(rng),
            })
        }
    }

    /// The line the writer writes for `event` on `pid`.
    fn written(pid: u32, event: &Event) -> String {
        serde_json::to_string(&event_to_wire(pid, event)).expect("serializes")
    }

    #[test]
    fn reads_back_what_the_writer_writes() {
        let mut rng = Rng(1);
        for _ in 0..20_000 {
            let event = random_event(&mut rng);
            let pid = rng.u64() as u32;
            let line = written(pid, &event);
            if let Event::Compute(c) = &event {
                if c.name.contains(['\t', '"']) {
                    // Escaped names are the serde path's business.
                    assert_declined(line.as_bytes());
                    assert_sound(line.as_bytes());
                    continue;
                }
            }
            let (got_pid, got) = assert_same(&line);
            assert_eq!((got_pid, &got), (pid, &event), "{line}");
        }
    }

    #[test]
    fn reads_a_whole_file_as_the_array_writer_writes_it() {
        let mut rng = Rng(6);
        let events: Vec<(u32, Event)> = (0..2_000)
            .map(|_| (rng.below(4) as u32, random_event(&mut rng)))
            .filter(|(_, e)| !matches!(e, Event::Compute(c) if c.name.contains(['\t', '"'])))
            .collect();
        let mut writer =
            overlap_instrument::schema::wire::ArrayWriter::new(Vec::new()).expect("vec");
        for (pid, event) in &events {
            writer.write(&event_to_wire(*pid, event)).expect("vec");
        }
        let file = writer.finish().expect("vec");
        // As the importer walks a file: past `[`, then event, separator, event...
        let mut pos = 2;
        let mut read = Vec::new();
        while let Some((fast, used)) = file.get(pos..).and_then(parse_complete) {
            read.push((fast.pid, fast.event));
            pos += used;
            if file.get(pos..pos + 2) == Some(b",\n") {
                pos += 2;
            }
        }
        assert_eq!(file.get(pos..), Some(&b"\n]\n"[..]));
        assert_eq!(read, events);
    }

    #[test]
    fn args_keys_in_any_order() {
        let mut rng = Rng(2);
        for _ in 0..5_000 {
            let args = random_args(&mut rng);
            let Value::Object(map) = serde_json::to_value(&args).expect("serializes") else {
                panic!("args are an object")
            };
            let mut members: Vec<(String, Value)> = map.into_iter().collect();
            for i in (1..members.len()).rev() {
                members.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let body: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), v))
                .collect();
            let line = format!(
                r#"{{"name":"MPI_Wait","cat":"mpi","ph":"X","ts":1.5,"dur":2,"pid":1,"tid":0,"args":{{{}}}}}"#,
                body.join(",")
            );
            let (_, event) = assert_same(&line);
            let Event::Call(call) = event else {
                panic!("not a call")
            };
            assert_eq!(call.args, args);
        }
    }

    #[test]
    fn times_agree_with_serde_up_to_the_limit() {
        let mut rng = Rng(3);
        let edges = [0, 1, 999, 1000, 1001, MAX_EXACT_NS - 1, MAX_EXACT_NS - 1000];
        let randoms = (0..50_000).map(|_| rng.nanos());
        for ns in edges.into_iter().chain(randoms) {
            let event = Event::Compute(ComputeEvent {
                tid: 0,
                start: Nanos(ns),
                end: Nanos(ns),
                name: "t".into(),
            });
            let line = written(0, &event);
            let (_, got) = assert_same(&line);
            assert_eq!(got, event, "{line}");
        }
        // At and beyond the limit the fast path steps aside.
        for ns in [MAX_EXACT_NS, MAX_EXACT_NS + 1, 1 << 53, u64::MAX / 2] {
            let event = Event::Compute(ComputeEvent {
                tid: 0,
                start: Nanos(ns),
                end: Nanos(ns),
                name: "t".into(),
            });
            assert_declined(written(0, &event).as_bytes());
        }
    }

    #[test]
    fn truncated_lines_are_declined() {
        for line in EXAMPLES {
            for cut in 0..line.len() {
                assert_declined(&line.as_bytes()[..cut]);
            }
        }
    }

    /// `EXAMPLES[1]` with `from` replaced by `to`.
    fn irecv_with(from: &str, to: &str) -> String {
        let line = EXAMPLES[1].replacen(from, to, 1);
        assert_ne!(line, EXAMPLES[1], "{from} not found");
        line
    }

    #[test]
    fn other_layouts_are_declined() {
        let pack = EXAMPLES[0];
        let cases = [
            // Escapes, even harmless ones, and raw control characters.
            pack.replace("pack", r"pa\u0063k"),
            pack.replace("pack", r#"pa\"ck"#),
            pack.replace("pack", "pa\tck"),
            irecv_with("MPI_Irecv", r"MPI_\u0049recv"),
            irecv_with(r#""peer""#, r#""pe\u0065r""#),
            // Unknown names, phases, categories and keys.
            irecv_with("MPI_Irecv", "MPI_Frobnicate"),
            irecv_with("MPI_Irecv", "MPI_"),
            irecv_with("MPI_Irecv", "Irecv"),
            irecv_with(r#""ph":"X""#, r#""ph":"B""#),
            irecv_with(r#""cat":"mpi""#, r#""cat":"request""#),
            irecv_with(r#""cat":"mpi""#, r#""cat":"compute""#),
            pack.replace(r#""cat":"compute""#, r#""cat":"mpi""#),
            irecv_with(r#""peer""#, r#""peers""#),
            irecv_with(r#""request":1"#, r#""request":1,"id":3"#),
            irecv_with(r#""pid""#, r#""id":1,"pid""#),
            irecv_with(r#""peer":1"#, r#""peer":1,"peer":1"#),
            EXAMPLES[2].replace(r#""source":1"#, r#""source":1,"size":1"#),
            EXAMPLES[2].replace(r#""source":1"#, r#""source":1,"source":1"#),
            EXAMPLES[2].replace(r#""completed":["#, r#""completed":[],"completed":["#),
            EXAMPLES[2].replace(r#"}]}"#, r#"}],"completed":[]}"#),
            // Other key orders, whitespace, missing or extra pieces.
            irecv_with(r#""cat":"mpi","ph":"X""#, r#""ph":"X","cat":"mpi""#),
            irecv_with(r#""pid":0,"tid":0"#, r#""tid":0,"pid":0"#),
            irecv_with(r#","tid":0"#, ""),
            irecv_with(
                r#","args":{"peer":1,"tag":17,"bytes":131072,"comm":0,"buf":140566629883920,"buf_len":131072,"request":1}"#,
                "",
            ),
            irecv_with(r#""ts":"#, r#""ts": "#),
            irecv_with(r#""peer":1,"#, r#""peer":1 ,"#),
            format!(" {}", EXAMPLES[1]),
            irecv_with(r#""request":1}"#, r#""request":1,}"#),
            irecv_with(r#"{"peer""#, r#"{,"peer""#),
            pack.replace("{}", r#"{"a":1}"#),
            pack.replace("{}", "null"),
            irecv_with(r#""peer":1"#, r#""peer":null"#),
            EXAMPLES[2].replace("[{", "{").replace("}]", "}"),
            EXAMPLES[2].replace("}]", "},]"),
            // Times: exponents, too many decimals, signs, leading zeros, bare dots.
            irecv_with("27629.059", "2.7629059e4"),
            irecv_with("27629.059", "27629.059E0"),
            irecv_with("27629.059", "27629.0591"),
            irecv_with("27629.059", "27629.0590"),
            irecv_with("27629.059", "-27629.059"),
            irecv_with("27629.059", "-0"),
            irecv_with("27629.059", "+27629.059"),
            irecv_with("27629.059", "027629.059"),
            irecv_with("27629.059", "00"),
            irecv_with("27629.059", "27629."),
            irecv_with("27629.059", ".059"),
            irecv_with("27629.059", "1e21"),
            irecv_with("27629.059", "99999999999999999999999"),
            irecv_with("27629.059", "\"27629.059\""),
            // Integers: overflow, signs where none belong, -0, floats, leading zeros.
            irecv_with(r#""pid":0"#, r#""pid":4294967296"#),
            irecv_with(r#""tid":0"#, r#""tid":-1"#),
            irecv_with(r#""pid":0"#, r#""pid":0.0"#),
            irecv_with(r#""comm":0"#, r#""comm":4294967296"#),
            irecv_with(r#""bytes":131072"#, r#""bytes":18446744073709551616"#),
            irecv_with(r#""bytes":131072"#, r#""bytes":99999999999999999999"#),
            irecv_with(r#""bytes":131072"#, r#""bytes":-1"#),
            irecv_with(r#""bytes":131072"#, r#""bytes":131072.0"#),
            irecv_with(r#""bytes":131072"#, r#""bytes":1e3"#),
            irecv_with(r#""bytes":131072"#, r#""bytes":0131072"#),
            irecv_with(r#""peer":1"#, r#""peer":2147483648"#),
            irecv_with(r#""peer":1"#, r#""peer":-2147483649"#),
            irecv_with(r#""peer":1"#, r#""peer":-0"#),
            irecv_with(r#""peer":1"#, r#""peer":-"#),
            irecv_with(r#""peer":1"#, r#""peer":--1"#),
            irecv_with(r#""peer":1"#, r#""peer":"1""#),
            irecv_with(r#""peer":1"#, r#""peer":true"#),
            irecv_with(r#""request":1"#, r#""flag":256"#),
            EXAMPLES[2].replace(r#""source":1"#, r#""source":-0"#),
            EXAMPLES[2].replace(r#""request":1"#, r#""request":-1"#),
        ];
        for line in &cases {
            assert_declined(line.as_bytes());
            assert_sound(line.as_bytes());
        }
        // Names that are not UTF-8.
        let mut bytes = pack.as_bytes().to_vec();
        bytes[10] = 0xff;
        assert_declined(&bytes);
        assert!(via_serde(&bytes).is_err());
    }

    /// `read` applied to `text`, followed by `after`, and to `text` alone at the very end of
    /// the buffer: the value read and what is left, in both cases.
    fn read_both<T: PartialEq + std::fmt::Debug>(
        read: impl Fn(&mut &[u8]) -> Option<T>,
        text: &str,
        after: &str,
    ) -> Option<T> {
        let followed = format!("{text}{after}");
        let mut s = followed.as_bytes();
        let got = read(&mut s);
        if got.is_some() {
            assert_eq!(s, after.as_bytes(), "{followed}");
        }
        let mut s = text.as_bytes();
        let at_end = read(&mut s);
        assert_eq!(got, at_end, "{text} at the end of the buffer");
        if at_end.is_some() {
            assert!(s.is_empty(), "{text}");
        }
        got
    }

    #[test]
    fn integers_of_every_length() {
        let mut rng = Rng(5);
        let mut texts: Vec<String> = Vec::new();
        for digits in 1..=22u32 {
            let mut random: String = (0..digits)
                .map(|_| char::from(b'0' + rng.below(10) as u8))
                .collect();
            if random.starts_with('0') && digits > 1 {
                random.replace_range(..1, "7");
            }
            texts.push(random);
            texts.push("9".repeat(digits as usize));
            texts.push(format!("1{}", "0".repeat(digits as usize - 1)));
        }
        texts.extend(
            [
                "0",
                "00",
                "01",
                "-0",
                "-",
                "",
                "-01",
                "+1",
                "18446744073709551615",
                "18446744073709551616",
                "2147483647",
                "2147483648",
                "-2147483648",
                "-2147483649",
                "4294967295",
                "4294967296",
                "255",
                "256",
            ]
            .map(String::from),
        );
        for text in &texts {
            // Rust's `parse` is laxer than JSON about signs and leading zeros.
            let digits = text.strip_prefix('-').unwrap_or(text);
            let leading_zero = digits.len() > 1 && digits.starts_with('0');
            let json_ok = !(text.starts_with('+') || leading_zero || text == "-0");
            for after in [",\"tag\":1}", "}", "]", ",", "}}\n"] {
                let expected = text.parse::<u64>().ok().filter(|_| json_ok);
                assert_eq!(read_both(unsigned, text, after), expected, "{text}");
                let expected = text.parse::<i32>().ok().filter(|_| json_ok);
                assert_eq!(read_both(signed, text, after), expected, "{text}");
            }
        }
    }

    #[test]
    fn times_of_every_shape() {
        for whole in [
            "0",
            "5",
            "12",
            "999",
            "27629",
            "12345678",
            "123456789",
            "2251799813685",
        ] {
            for decimals in ["", ".0", ".5", ".05", ".005", ".25", ".125", ".999", ".000"] {
                let text = format!("{whole}{decimals}");
                let expected = whole.parse::<u64>().expect("digits") * 1000
                    + format!("{:0<3}", decimals.trim_start_matches('.'))
                        .parse::<u64>()
                        .expect("digits");
                let line = format!("{text},\"pid\":0");
                let mut rest = line.as_bytes();
                let got = micros(&mut rest);
                if expected < MAX_EXACT_NS {
                    assert_eq!(got, Some(expected), "{text}");
                    assert_eq!(rest, b",\"pid\":0");
                } else {
                    assert_eq!(got, None, "{text}");
                }
            }
        }
        for text in [
            "2251799813685.248",
            "2251799813686",
            "18446744073709551.999",
            "18446744073709551615",
            "99999999999999999999.5",
            "1.",
            "1.2345",
            "1.e3",
            "1e3",
            "-1",
            "01",
            ".5",
        ] {
            // Not read as a time, or not all of it (an exponent is left for the next
            // literal to trip over).
            let line = format!("{text},\"pid\":0");
            let mut s = line.as_bytes();
            let read = micros(&mut s);
            assert!(read.is_none() || s != b",\"pid\":0", "{text}: {read:?}");
        }
    }

    #[test]
    fn string_bodies_of_every_length() {
        for len in 0..40 {
            let body = "x".repeat(len);
            for after in ["\",\"cat\"", "\""] {
                let text = format!("{body}{after}");
                let mut s = text.as_bytes();
                assert_eq!(string_body(&mut s), Some(body.as_bytes()), "{text}");
                assert_eq!(s, &after.as_bytes()[1..]);
            }
            let mut s = body.as_bytes();
            assert_eq!(string_body(&mut s), None, "unterminated {body}");
            for stop in ["\\", "\n", "\u{0}", "\u{1f}"] {
                for at in 0..=len {
                    let mut text = body.clone();
                    text.insert_str(at, stop);
                    text.push('"');
                    let mut s = text.as_bytes();
                    assert_eq!(string_body(&mut s), None, "{text:?}");
                }
            }
        }
        let text = "ünï ✓\u{7f}\"";
        let mut s = text.as_bytes();
        assert_eq!(
            string_body(&mut s),
            Some(&text.as_bytes()[..text.len() - 1])
        );
    }

    #[test]
    fn digit_runs() {
        for len in 0..=8 {
            for stop in [b'/', b':', b'.', b'e', b'"', 0x00, 0xfa, 0xff] {
                let mut bytes = *b"12345678";
                if let Some(b) = bytes.get_mut(len) {
                    *b = stop;
                }
                let x = u64::from_le_bytes(bytes);
                assert_eq!(digit_run(x), len, "{bytes:?}");
                if len > 0 {
                    let expected: u64 = std::str::from_utf8(&bytes[..len])
                        .expect("digits")
                        .parse()
                        .expect("digits");
                    assert_eq!(digits_value(x, len), expected);
                }
            }
        }
    }

    #[test]
    fn declined_where_serde_fails_too() {
        // Serde reads `-0` as a float, which no integer field accepts.
        let line = irecv_with(r#""peer":1"#, r#""peer":-0"#);
        assert!(via_serde(line.as_bytes()).is_err(), "{line}");
    }

    #[test]
    fn every_op_is_read() {
        let tail = r#"","cat":"mpi","ph":"X","ts":5"#;
        for op in Op::ALL {
            let text = format!("{}{tail}", op.mpi_name());
            let mut s = text.as_bytes();
            assert_eq!(call_head(&mut s), Some(op), "{text}");
            assert_eq!(s, b"5");
        }
        for name in [
            "MPI_Sendrecv_replace",
            "MPI_Sen",
            "MPI_",
            "MPI",
            "",
            "mpi_Send",
        ] {
            let text = format!("{name}{tail}");
            let mut s = text.as_bytes();
            assert_eq!(call_head(&mut s), None, "{text}");
            assert_eq!(s, text.as_bytes());
        }
    }

    /// Random edits of valid lines: the fast path never panics, and whatever it accepts,
    /// serde reads the same way.
    #[test]
    fn mutated_lines_are_declined_or_read_as_serde_reads_them() {
        const ALPHABET: &[u8] = b"0123456789-+.eE\"\\,:{}[] \n\tabnulrs_\x00\x1f\x7f\xc3\xa9\xff";
        let mut rng = Rng(4);
        let mut lines: Vec<Vec<u8>> = EXAMPLES.iter().map(|l| l.as_bytes().to_vec()).collect();
        lines.extend((0..50).map(|_| {
            let event = random_event(&mut rng);
            written(rng.u64() as u32, &event).into_bytes()
        }));
        let mut accepted = 0;
        for _ in 0..100_000 {
            let mut line = lines[rng.below(lines.len() as u64) as usize].clone();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(line.len() as u64 + 1) as usize;
                let byte = ALPHABET[rng.below(ALPHABET.len() as u64) as usize];
                match rng.below(3) {
                    0 if at < line.len() => line[at] = byte,
                    1 if at < line.len() => {
                        line.remove(at);
                    }
                    _ => line.insert(at, byte),
                }
            }
            if via_fast(&line).is_some() {
                accepted += 1;
            }
            assert_sound(&line);
        }
        // Many edits (digits in numbers, bytes of names) leave a valid line.
        assert!(accepted > 1000, "{accepted}");
    }
}
