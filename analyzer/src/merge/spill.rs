//! Records the merge sets aside on disk so that its memory does not grow with the run's
//! messages: fixed-size records in segments of one unnamed temporary file, written
//! whole or through a small buffer each, read back whole or through a small buffer each
//! ([`Cursor`]), and merged across segments in order ([`merged`]).
//!
//! ```text
//!  file   | rank 0 sends | rank 0 receives | rank 1 sends | ... | sent by 0 | ...
//!          Segment{offset, count}: count records of one type, SIZE bytes each
//! ```
//!
//! The file is created unlinked (`tempfile`): nothing is left behind, even when the
//! merge is killed.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io;
use std::marker::PhantomData;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// A record of fixed size, as bytes.
pub(crate) trait Record: Sized {
    /// Its size on disk.
    const SIZE: usize;
    /// Appends its bytes to `out`.
    fn put(&self, out: &mut Vec<u8>);
    /// Reads it back from `SIZE` bytes.
    fn get(bytes: &[u8]) -> Self;
}

/// Bytes a buffered reader or writer holds: a merge over a thousand ranks holds a few
/// thousand of them.
const BUFFER: usize = 8 << 10;

/// Where a run of records lies in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Segment {
    offset: u64,
    count: u64,
}

impl Segment {
    /// How many records it holds.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }
}

/// The temporary file.
pub(crate) struct Spill {
    file: File,
    /// Bytes written or set aside.
    len: Cell<u64>,
}

impl Spill {
    /// A new, empty file in `dir`.
    pub(crate) fn new_in(dir: &Path) -> io::Result<Spill> {
        Ok(Spill {
            file: tempfile::tempfile_in(dir)?,
            len: Cell::new(0),
        })
    }

    /// Appends `records` as one segment.
    pub(crate) fn append<R: Record>(&self, records: &[R]) -> io::Result<Segment> {
        let mut bytes = Vec::with_capacity(records.len() * R::SIZE);
        for r in records {
            r.put(&mut bytes);
        }
        let segment = Segment {
            offset: self.len.get(),
            count: records.len() as u64,
        };
        self.file.write_all_at(&bytes, segment.offset)?;
        self.len.set(segment.offset + bytes.len() as u64);
        Ok(segment)
    }

    /// Sets aside room for `count` records of `R`, to be filled by a [`Filler`].
    pub(crate) fn reserve<R: Record>(&self, count: u64) -> Segment {
        let segment = Segment {
            offset: self.len.get(),
            count,
        };
        self.len.set(segment.offset + count * R::SIZE as u64);
        segment
    }

    /// Every record of `segment`.
    pub(crate) fn read<R: Record>(&self, segment: Segment) -> io::Result<Vec<R>> {
        let mut bytes = vec![0; segment.count as usize * R::SIZE];
        self.file.read_exact_at(&mut bytes, segment.offset)?;
        Ok(bytes.chunks_exact(R::SIZE).map(R::get).collect())
    }

    /// The records of `segment`, one at a time, through a small buffer.
    pub(crate) fn cursor<R: Record>(&self, segment: Segment) -> Cursor<'_, R> {
        Cursor {
            spill: self,
            segment,
            taken: 0,
            buffer: Vec::new(),
            at: 0,
            record: PhantomData,
        }
    }
}

/// Reads a segment's records in order.
pub(crate) struct Cursor<'a, R> {
    spill: &'a Spill,
    segment: Segment,
    /// Records read into the buffer so far.
    taken: u64,
    buffer: Vec<u8>,
    at: usize,
    record: PhantomData<R>,
}

impl<R: Record> Cursor<'_, R> {
    /// The next record, if there is one.
    pub(crate) fn next_record(&mut self) -> io::Result<Option<R>> {
        if self.at == self.buffer.len() {
            let left = self.segment.count - self.taken;
            if left == 0 {
                return Ok(None);
            }
            let n = left.min((BUFFER / R::SIZE).max(1) as u64);
            self.buffer.resize(n as usize * R::SIZE, 0);
            let offset = self.segment.offset + self.taken * R::SIZE as u64;
            self.spill.file.read_exact_at(&mut self.buffer, offset)?;
            self.taken += n;
            self.at = 0;
        }
        let r = R::get(&self.buffer[self.at..self.at + R::SIZE]);
        self.at += R::SIZE;
        Ok(Some(r))
    }
}

/// Fills a reserved segment in order, through a small buffer.
pub(crate) struct Filler<R> {
    segment: Segment,
    written: u64,
    buffer: Vec<u8>,
    record: PhantomData<R>,
}

impl<R: Record> Filler<R> {
    /// A filler of `segment` (from [`Spill::reserve`]).
    pub(crate) fn new(segment: Segment) -> Self {
        Filler {
            segment,
            written: 0,
            buffer: Vec::new(),
            record: PhantomData,
        }
    }

    /// Appends `r`; more records than the segment has room for is a bug of the caller.
    pub(crate) fn push(&mut self, spill: &Spill, r: &R) -> io::Result<()> {
        r.put(&mut self.buffer);
        if self.buffer.len() >= BUFFER {
            self.flush(spill)?;
        }
        Ok(())
    }

    /// Writes out what the buffer holds.
    pub(crate) fn flush(&mut self, spill: &Spill) -> io::Result<()> {
        let n = (self.buffer.len() / R::SIZE) as u64;
        if self.written + n > self.segment.count {
            return Err(io::Error::other(
                "more records than their segment has room for",
            ));
        }
        let offset = self.segment.offset + self.written * R::SIZE as u64;
        spill.file.write_all_at(&self.buffer, offset)?;
        self.written += n;
        self.buffer.clear();
        Ok(())
    }
}

/// The records of every segment in the order of `key` (each segment must already be
/// in that order; ties go to the earlier segment), holding one buffer per segment.
pub(crate) fn merged<'a, R: Record, K: Ord, F: Fn(&R) -> K>(
    spill: &'a Spill,
    segments: &[Segment],
    key: F,
) -> Merged<'a, R, K, F> {
    Merged {
        cursors: segments.iter().map(|s| spill.cursor(*s)).collect(),
        heads: Vec::new(),
        heap: BinaryHeap::with_capacity(segments.len()),
        key,
        started: false,
    }
}

/// See [`merged`].
pub(crate) struct Merged<'a, R, K, F> {
    cursors: Vec<Cursor<'a, R>>,
    /// Each segment's next record, once read.
    heads: Vec<Option<R>>,
    /// (key of a head, its segment), smallest first.
    heap: BinaryHeap<Reverse<(K, usize)>>,
    key: F,
    started: bool,
}

impl<R: Record, K: Ord, F: Fn(&R) -> K> Merged<'_, R, K, F> {
    fn advance(&mut self, i: usize) -> io::Result<()> {
        let head = self.cursors[i].next_record()?;
        if let Some(r) = &head {
            self.heap.push(Reverse(((self.key)(r), i)));
        }
        self.heads[i] = head;
        Ok(())
    }

    fn next_record(&mut self) -> io::Result<Option<R>> {
        if !self.started {
            self.started = true;
            self.heads = (0..self.cursors.len()).map(|_| None).collect();
            for i in 0..self.cursors.len() {
                self.advance(i)?;
            }
        }
        let Some(Reverse((_, i))) = self.heap.pop() else {
            return Ok(None);
        };
        let r = self.heads[i].take();
        self.advance(i)?;
        Ok(r)
    }
}

impl<R: Record, K: Ord, F: Fn(&R) -> K> Iterator for Merged<'_, R, K, F> {
    type Item = io::Result<R>;

    fn next(&mut self) -> Option<io::Result<R>> {
        self.next_record().transpose()
    }
}

impl<R: Record> Iterator for Cursor<'_, R> {
    type Item = io::Result<R>;

    fn next(&mut self) -> Option<io::Result<R>> {
        self.next_record().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Record for (u32, u64) {
        const SIZE: usize = 12;
        fn put(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(&self.0.to_le_bytes());
            out.extend_from_slice(&self.1.to_le_bytes());
        }
        fn get(b: &[u8]) -> Self {
            (
                u32::from_le_bytes(b[0..4].try_into().expect("4 or 8 bytes")),
                u64::from_le_bytes(b[4..12].try_into().expect("4 or 8 bytes")),
            )
        }
    }

    /// Three sorted segments (one empty, one past a buffer's length) merge into one
    /// sorted run; ties keep their segments' order; a reserved segment filled through a
    /// buffer reads back as written.
    #[test]
    fn segments_merge_in_order_and_reserved_ones_fill() {
        let dir = tempfile::tempdir().expect("temp dir");
        let spill = Spill::new_in(dir.path()).expect("spill");
        let long: Vec<(u32, u64)> = (0..2000).map(|i| (i * 3, 1)).collect();
        let a = spill.append(&long).expect("spill I/O");
        let b = spill.append::<(u32, u64)>(&[]).expect("spill I/O");
        let c = spill
            .append(&[(1, 2), (3, 2), (5999, 2)])
            .expect("spill I/O");
        let got: Vec<(u32, u64)> = merged(&spill, &[a, b, c], |r: &(u32, u64)| r.0)
            .collect::<io::Result<_>>()
            .expect("spill I/O");
        let mut want: Vec<(u32, u64)> = long.clone();
        want.extend([(1, 2), (3, 2), (5999, 2)]);
        want.sort_by_key(|r| r.0); // stable: (3, 1) before (3, 2)
        assert_eq!(got, want);

        let room = spill.reserve::<(u32, u64)>(1500);
        let mut fill = Filler::new(room);
        for i in 0..1500u32 {
            fill.push(&spill, &(i, u64::from(i) * 7))
                .expect("spill I/O");
        }
        fill.flush(&spill).expect("spill I/O");
        let back: Vec<(u32, u64)> = spill.read(room).expect("spill I/O");
        assert_eq!(back.len(), 1500);
        assert!(back.iter().all(|&(i, v)| v == u64::from(i) * 7));
        assert_eq!(spill.read::<(u32, u64)>(a).expect("spill I/O"), long);
        // One past its room is refused, not written over the next segment.
        fill.push(&spill, &(0, 0)).expect("spill I/O");
        assert!(fill.flush(&spill).is_err());
    }
}
