//! The buffers of a run: those MPI calls name ([`Buffer`]) and those compute spans
//! declare they read and write ([`Access`]), and the per-timeline table that keeps the
//! latter compact (a span holds an index; the spans of a loop share one entry).

use std::num::NonZeroU32;

use overlap_format::schema::{BufferUse, SpanBuffers};

use crate::fxhash::FxHashMap;

/// A buffer an MPI call named: `[addr, addr + len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
}

impl Buffer {
    /// True when the two byte ranges share a byte (an empty buffer shares none).
    pub fn overlaps(&self, other: &Buffer) -> bool {
        self.len > 0
            && other.len > 0
            && self.addr < other.addr.saturating_add(other.len)
            && other.addr < self.addr.saturating_add(self.len)
    }
}

/// A buffer a compute span names, bound by the program to an address range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedBuffer {
    /// The program's name for it (`halo_l`, `sendbuf`).
    pub name: String,
    /// Where it was when the span ran.
    pub buf: Buffer,
}

/// The buffers a compute span reads and writes, as the program declared them (the
/// `reads`/`writes` fields of a span). Absent (`None` where it is asked for) when the
/// program said nothing: then they are unknown, never "none".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// Buffers read.
    pub reads: Vec<NamedBuffer>,
    /// Buffers written.
    pub writes: Vec<NamedBuffer>,
}

impl Access {
    /// The analyzer's form of what a span declared.
    pub fn of(b: &SpanBuffers) -> Access {
        let each = |v: &[BufferUse]| {
            v.iter()
                .map(|u| NamedBuffer {
                    name: u.name.clone(),
                    buf: Buffer {
                        addr: u.buf,
                        len: u.len,
                    },
                })
                .collect()
        };
        Access {
            reads: each(&b.reads),
            writes: each(&b.writes),
        }
    }
}

/// The distinct [`Access`]es of a timeline, each once; a span names one by its index
/// plus one (so that "none" costs no extra bytes in a span).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct AccessTable {
    pub(crate) all: Vec<Access>,
    ids: FxHashMap<SpanBuffers, NonZeroU32>,
}

impl AccessTable {
    /// The id of `b`, added when new.
    pub(crate) fn intern(&mut self, b: &SpanBuffers) -> NonZeroU32 {
        if let Some(&id) = self.ids.get(b) {
            return id;
        }
        self.all.push(Access::of(b));
        let id = NonZeroU32::new(self.all.len() as u32).unwrap_or(NonZeroU32::MAX);
        self.ids.insert(b.clone(), id);
        id
    }

    /// The access of an id.
    pub(crate) fn get(&self, id: NonZeroU32) -> Option<&Access> {
        self.all.get(id.get() as usize - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(data: u64) -> SpanBuffers {
        let data = BufferUse {
            name: "data".into(),
            buf: data,
            len: 64,
        };
        SpanBuffers {
            reads: vec![data.clone()],
            writes: vec![data],
        }
    }

    #[test]
    fn spans_that_resolve_alike_share_one_entry() {
        let mut t = AccessTable::default();
        let a = t.intern(&spans(0x1000));
        let b = t.intern(&spans(0x2000));
        assert_eq!(t.intern(&spans(0x1000)), a);
        assert_ne!(a, b);
        assert_eq!(t.all.len(), 2);
        let got = t.get(b).expect("entry");
        assert_eq!(
            got.reads[0].buf,
            Buffer {
                addr: 0x2000,
                len: 64
            }
        );
        assert_eq!(got.writes[0].name, "data");
    }
}
