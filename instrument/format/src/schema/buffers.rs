//! The buffers a compute span reads and writes, as the program declared them.
//!
//! A program names its buffers once, where it allocates them ("bind" a name to an
//! address range), and each compute span lists the names it reads and writes. Names
//! keep the per-span record small (a span carries a few small ids, not addresses); the
//! addresses are what lets an analysis match a compute's buffers to the buffers MPI
//! calls name. A name can be bound again (a vector that reallocated): a span's name
//! means the binding in force when the span started ([`Bindings::resolve`]).
//!
//! Wire structs here: a change means bumping `FORMAT_VERSION`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::Nanos;

/// One buffer a compute span uses: its name and where it was then.
///
/// Wire struct (an entry of a compute span's `reads` or `writes`): a change means
/// bumping `FORMAT_VERSION`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferUse {
    /// The program's name for it (`halo_l`, `sendbuf`).
    pub name: String,
    /// Start address.
    pub buf: u64,
    /// Length in bytes.
    pub len: u64,
}

/// What a compute span declared it reads and writes. A span that declared nothing has
/// none (`None` where it is held): its buffers are unknown, never "none".
///
/// Wire struct (the `args` of a compute span): a change means bumping
/// `FORMAT_VERSION`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpanBuffers {
    /// Buffers read.
    pub reads: Vec<BufferUse>,
    /// Buffers written.
    pub writes: Vec<BufferUse>,
}

/// A name bound to an address range at a time (ns since the rank's epoch, or since the
/// run's start once aligned).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The buffer's name.
    pub name: String,
    /// When it was bound.
    pub at: Nanos,
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
}

/// Why a declared name has no address.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unbound {
    /// The program never bound the name.
    #[error("buffer {0:?} was never bound")]
    Never(String),
    /// The name was first bound after the span ended.
    #[error("buffer {0:?} was bound only after the span ended")]
    Later(String),
}

/// Every binding of a rank, by name, in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bindings {
    by_name: HashMap<String, Vec<(Nanos, u64, u64)>>,
}

impl Bindings {
    /// The bindings, in any order (ties in time keep their order: the later one wins).
    pub fn new(all: impl IntoIterator<Item = Binding>) -> Bindings {
        let mut by_name: HashMap<String, Vec<(Nanos, u64, u64)>> = HashMap::new();
        for b in all {
            by_name
                .entry(b.name)
                .or_default()
                .push((b.at, b.addr, b.len));
        }
        for v in by_name.values_mut() {
            v.sort_by_key(|&(at, _, _)| at);
        }
        Bindings { by_name }
    }

    /// True when nothing was bound.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Where `name` was for a span from `start` to `end`: the last binding made at or
    /// before `start`; failing that, the first one made before `end` (the span bound
    /// it itself).
    pub fn resolve(&self, name: &str, start: Nanos, end: Nanos) -> Result<BufferUse, Unbound> {
        let v = self
            .by_name
            .get(name)
            .ok_or_else(|| Unbound::Never(name.to_string()))?;
        let before = v.partition_point(|&(at, _, _)| at <= start);
        let (_, addr, len) = match before {
            0 => v
                .first()
                .filter(|&&(at, _, _)| at <= end)
                .ok_or_else(|| Unbound::Later(name.to_string()))?,
            n => &v[n - 1],
        };
        Ok(BufferUse {
            name: name.to_string(),
            buf: *addr,
            len: *len,
        })
    }

    /// A span's declared names resolved: `None` (and why) when any name is unbound,
    /// since leaving a name out would claim the span does not touch that buffer.
    pub fn resolve_all(
        &self,
        reads: &[String],
        writes: &[String],
        start: Nanos,
        end: Nanos,
    ) -> Result<SpanBuffers, Unbound> {
        let each = |names: &[String]| {
            names
                .iter()
                .map(|n| self.resolve(n, start, end))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(SpanBuffers {
            reads: each(reads)?,
            writes: each(writes)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(name: &str, at: u64, addr: u64, len: u64) -> Binding {
        Binding {
            name: name.into(),
            at: Nanos(at),
            addr,
            len,
        }
    }

    //  time     0    10        20   25   30        40
    //  data     bound 0x1000  |     rebound 0x2000 (grown)
    //  span A        [12 ......... 22]              -> 0x1000
    //  span B                        [30 .... 40]   -> 0x2000
    //  halo          ........................ bound at 35 (inside span B)
    #[test]
    fn a_name_means_the_binding_in_force_when_the_span_started() {
        let b = Bindings::new([
            bind("data", 25, 0x2000, 64),
            bind("data", 0, 0x1000, 32),
            bind("halo", 35, 0x3000, 8),
        ]);
        let at = |start, end| b.resolve("data", Nanos(start), Nanos(end));
        assert_eq!(at(12, 22).map(|u| (u.buf, u.len)), Ok((0x1000, 32)));
        assert_eq!(at(30, 40).map(|u| (u.buf, u.len)), Ok((0x2000, 64)));
        // Bound exactly when the span starts: in force.
        assert_eq!(at(25, 26).map(|u| u.buf), Ok(0x2000));
        // Bound inside the span that uses it.
        assert_eq!(
            b.resolve("halo", Nanos(30), Nanos(40)).map(|u| u.buf),
            Ok(0x3000)
        );
        assert_eq!(
            b.resolve("halo", Nanos(12), Nanos(22)),
            Err(Unbound::Later("halo".into()))
        );
        assert_eq!(
            b.resolve("nope", Nanos(12), Nanos(22)),
            Err(Unbound::Never("nope".into()))
        );
    }

    #[test]
    fn one_unbound_name_makes_the_span_unknown() {
        let b = Bindings::new([bind("x", 0, 8, 8)]);
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let ok = b.resolve_all(&names(&["x"]), &names(&[]), Nanos(1), Nanos(2));
        assert_eq!(ok.map(|s| (s.reads.len(), s.writes.len())), Ok((1, 0)));
        let bad = b.resolve_all(&names(&["x"]), &names(&["y"]), Nanos(1), Nanos(2));
        assert_eq!(bad, Err(Unbound::Never("y".into())));
    }
}
