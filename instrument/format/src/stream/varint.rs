//! The integers of the binary stream: LEB128 (7 bits a byte, low bits first, the top bit
//! set on every byte but the last) for unsigned values, zigzag first for signed ones
//! (0, -1, 1, -2... become 0, 1, 2, 3...), so that small magnitudes take one byte.
//! [`RecordBuf`] is where the hot path encodes a record; [`Reader`] takes it apart.

use std::mem::MaybeUninit;

/// Longest encoded record but a string definition's text: a Sendrecv call with every
/// integer at its widest (10 bytes for 64 bits) fits with room to spare.
pub const RECORD_MAX: usize = 192;

/// A record being encoded, on the stack of the recording thread. Its bytes are left
/// uninitialised until written, so making one costs nothing.
#[derive(Clone, Copy)]
pub struct RecordBuf {
    bytes: [MaybeUninit<u8>; RECORD_MAX],
    len: usize,
}

impl Default for RecordBuf {
    #[inline]
    fn default() -> Self {
        RecordBuf {
            bytes: [MaybeUninit::uninit(); RECORD_MAX],
            len: 0,
        }
    }
}

impl std::fmt::Debug for RecordBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RecordBuf").field(&self.as_bytes()).finish()
    }
}

impl RecordBuf {
    /// The bytes encoded so far.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: the first `len` bytes were written (`put_u8` is the only writer and
        // advances `len` past what it wrote); MaybeUninit<u8> has u8's layout.
        unsafe { std::slice::from_raw_parts(self.bytes.as_ptr().cast::<u8>(), self.len) }
    }

    /// Starts over.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// One byte.
    #[inline(always)]
    pub fn put_u8(&mut self, b: u8) {
        self.bytes[self.len] = MaybeUninit::new(b);
        self.len += 1;
    }
}

impl RecordOut for RecordBuf {
    #[inline(always)]
    fn put_u8(&mut self, b: u8) {
        RecordBuf::put_u8(self, b);
    }
}

/// Where records are encoded: a [`RecordBuf`], or the recorder's ring itself. A record
/// never takes more than [`RECORD_MAX`] bytes.
pub trait RecordOut {
    /// One byte.
    fn put_u8(&mut self, b: u8);

    /// An unsigned LEB128 integer.
    #[inline(always)]
    fn put_var(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.put_u8(v as u8 | 0x80);
            v >>= 7;
        }
        self.put_u8(v as u8);
    }

    /// A signed integer, zigzag then LEB128.
    #[inline(always)]
    fn put_signed(&mut self, v: i64) {
        self.put_var(zigzag(v));
    }

    /// The difference `v - base`, wrapping, as a signed integer: small when `v` is near
    /// `base`, whatever their magnitude.
    #[inline(always)]
    fn put_delta(&mut self, v: u64, base: u64) {
        self.put_signed(v.wrapping_sub(base) as i64);
    }
}

/// Zigzag: signed to unsigned, small magnitudes to small values.
#[inline(always)]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The inverse of [`zigzag`].
#[inline]
pub fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// Why bytes could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The bytes end inside a value.
    Truncated,
    /// An integer longer than 64 bits, or out of its field's range.
    Overflow,
}

/// Reads values from a slice, front to back.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// True when every byte was consumed.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        let b = *self.bytes.get(self.pos).ok_or(DecodeError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    /// `n` raw bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).ok_or(DecodeError::Overflow)?;
        let out = self
            .bytes
            .get(self.pos..end)
            .ok_or(DecodeError::Truncated)?;
        self.pos = end;
        Ok(out)
    }

    /// An unsigned LEB128 integer.
    pub fn var(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(DecodeError::Overflow);
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError::Overflow)
    }

    /// A signed integer.
    pub fn signed(&mut self) -> Result<i64, DecodeError> {
        self.var().map(unzigzag)
    }

    /// A value written with [`RecordBuf::put_delta`] against `base`.
    pub fn delta(&mut self, base: u64) -> Result<u64, DecodeError> {
        self.signed().map(|d| base.wrapping_add(d as u64))
    }

    /// An unsigned integer that must fit 32 bits.
    pub fn var_u32(&mut self) -> Result<u32, DecodeError> {
        u32::try_from(self.var()?).map_err(|_| DecodeError::Overflow)
    }

    /// A signed integer that must fit 32 bits.
    pub fn signed_i32(&mut self) -> Result<i32, DecodeError> {
        i32::try_from(self.signed()?).map_err(|_| DecodeError::Overflow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_trip_at_their_edges() {
        let unsigned = [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ];
        let signed = [0, -1, 1, -64, 64, i64::from(i32::MIN), i64::MAX, i64::MIN];
        let mut b = RecordBuf::default();
        for v in unsigned {
            b.put_var(v);
        }
        for v in signed {
            b.put_signed(v);
        }
        b.put_delta(5, u64::MAX - 2);
        let mut r = Reader::new(b.as_bytes());
        for v in unsigned {
            assert_eq!(r.var(), Ok(v));
        }
        for v in signed {
            assert_eq!(r.signed(), Ok(v));
        }
        assert_eq!(r.delta(u64::MAX - 2), Ok(5));
        assert!(r.is_empty());
        assert_eq!(r.var(), Err(DecodeError::Truncated));
    }

    #[test]
    fn small_values_take_one_byte() {
        let mut b = RecordBuf::default();
        b.put_var(127);
        b.put_signed(-64);
        b.put_delta(1_000_000_007, 1_000_000_000);
        assert_eq!(b.as_bytes().len(), 3);
    }

    #[test]
    fn overlong_and_cut_integers_are_refused() {
        assert_eq!(Reader::new(&[0x80; 11]).var(), Err(DecodeError::Overflow));
        assert_eq!(Reader::new(&[0xff; 9]).var(), Err(DecodeError::Truncated));
        let mut too_big = [0xff; 10];
        too_big[9] = 0x02;
        assert_eq!(Reader::new(&too_big).var(), Err(DecodeError::Overflow));
        assert_eq!(
            Reader::new(&[0x80, 0x80, 0x80, 0x80, 0x10]).var_u32(),
            Err(DecodeError::Overflow)
        );
    }
}
