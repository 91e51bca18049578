//! The integers of the fast path: ASCII digits read eight at a time (SWAR), JSON
//! unsigned and signed integers, as exactly as `serde_json` reads them.

/// A byte repeated in every byte of a u64 (SWAR, eight bytes at a time: byte `i` of the
/// input is byte `i` of a little-endian u64).
pub(super) const ONES: u64 = 0x0101_0101_0101_0101;

/// How many of the bytes of `x` are ASCII digits before the first one that is not (8 if
/// all are).
#[inline(always)]
pub(super) fn digit_run(x: u64) -> usize {
    // A digit is 0x30..=0x39: its high nibble is 3, and still 3 after adding 6. A carry
    // out of a byte only happens for bytes >= 0xFA, and only spoils later bytes.
    let high = x & (0xF0 * ONES);
    let high_plus_6 = x.wrapping_add(6 * ONES) & (0xF0 * ONES);
    let not_digit = (high | (high_plus_6 >> 4)) ^ (0x33 * ONES);
    (not_digit.trailing_zeros() / 8) as usize
}

/// The value of the first `n` (1 to 8) bytes of `x`, which are ASCII digits.
#[inline(always)]
pub(super) fn digits_value(x: u64, n: usize) -> u64 {
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
pub(super) const POW10: [u64; 9] = [
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
pub(super) fn unsigned(s: &mut &[u8]) -> Option<u64> {
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
pub(super) fn long_unsigned(s: &mut &[u8]) -> Option<u64> {
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
pub(super) fn more_digits(s: &[u8], mut value: u64) -> Option<(u64, usize)> {
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
pub(super) fn digits_bytewise(s: &[u8]) -> Option<(u64, usize)> {
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
pub(super) fn signed(s: &mut &[u8]) -> Option<i32> {
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
