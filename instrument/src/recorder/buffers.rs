//! Compute spans that say which buffers they read and write.
//!
//! The program binds each buffer's name to its address range once, where it allocates
//! it ([`Recorder::bind_buffer`], [`Recorder::bind_vec`]; again if it moves), and
//! prepares once the list of names a kind of span reads and writes
//! ([`BufferAccess::new`]). A span then carries that prepared list's small id
//! ([`Recorder::compute_with`]): recording it costs what a plain span costs plus one
//! integer, with no allocation, lock or formatting. Each thread's stream defines a list
//! the first time the thread uses it; the bindings go to the writer, which puts them in
//! frames of their own, and the reader gives each span's names the addresses bound to
//! them when it started. The analyzer matches those addresses against the buffers MPI
//! calls name.
//!
//! ```
//! use overlap_instrument::recorder::{BufferAccess, MemorySink, Recorder, RecorderConfig};
//!
//! let sink = MemorySink::new();
//! let rec = Recorder::new(sink.clone(), RecorderConfig::default()).unwrap();
//! let (data, mut sendbuf) = (vec![1.0f64; 64], vec![0.0f64; 64]);
//! rec.bind_vec("data", &data);
//! rec.bind_vec("sendbuf", &sendbuf);
//! let pack = BufferAccess::new(&["data"], &["sendbuf"]).unwrap();
//! {
//!     let _g = rec.compute_with("pack", pack);
//!     sendbuf.copy_from_slice(&data);
//! }
//! rec.finish().unwrap();
//! ```

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Mutex, OnceLock, PoisonError};

use overlap_format::stream::buffers::{
    names_bytes, push_binding, BUFFER_NAMES_MAX, BUFFER_NAME_MAX,
};

use super::{ComputeGuard, DetachedSpan, Recorder};

/// A prepared list of the buffers a kind of compute span reads and writes, by name:
/// made once (interned for the whole process), then passed to every such span. Cheap to
/// copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferAccess {
    id: NonZeroU32,
}

/// Why a list of buffer names cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BufferNameError {
    /// More names than a span may list.
    #[error("{0} buffer names in one list; at most {BUFFER_NAMES_MAX}")]
    TooMany(usize),
    /// An empty name, or one too long.
    #[error("buffer name {0:?}: names are 1 to {BUFFER_NAME_MAX} bytes")]
    BadName(String),
}

/// What a prepared list holds, as its stream definition needs it.
pub(crate) struct Definition {
    /// Names read, then names written, as a buffers definition's bytes.
    pub(crate) names: Vec<u8>,
    pub(crate) reads: usize,
    pub(crate) writes: usize,
}

#[derive(Default)]
struct Registry {
    ids: HashMap<(Vec<String>, Vec<String>), NonZeroU32>,
    defs: Vec<&'static Definition>,
}

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

fn check(names: &[&str]) -> Result<Vec<String>, BufferNameError> {
    if names.len() > BUFFER_NAMES_MAX {
        return Err(BufferNameError::TooMany(names.len()));
    }
    names
        .iter()
        .map(|n| {
            let n = n.trim();
            if n.is_empty() || n.len() > BUFFER_NAME_MAX {
                Err(BufferNameError::BadName(n.to_string()))
            } else {
                Ok(n.to_string())
            }
        })
        .collect()
}

impl BufferAccess {
    /// The list of buffers read and written (names as the program bound them; blanks
    /// around a name are trimmed). The same lists give the same value.
    pub fn new(reads: &[&str], writes: &[&str]) -> Result<BufferAccess, BufferNameError> {
        let key = (check(reads)?, check(writes)?);
        let mut reg = registry();
        if let Some(&id) = reg.ids.get(&key) {
            return Ok(BufferAccess { id });
        }
        let def = Definition {
            names: names_bytes(key.0.iter().chain(&key.1).map(String::as_str)),
            reads: key.0.len(),
            writes: key.1.len(),
        };
        let n = u32::try_from(reg.defs.len() + 1).unwrap_or(u32::MAX);
        let id = NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN);
        // Definitions live as long as the process: there is one per distinct list.
        reg.defs.push(Box::leak(Box::new(def)));
        reg.ids.insert(key, id);
        Ok(BufferAccess { id })
    }

    /// Like [`BufferAccess::new`], from comma-separated lists (`"halo_l,halo_r"`, as the
    /// `reads` and `writes` fields of a `tracing` span hold them; `""` for none).
    pub fn parse(reads: &str, writes: &str) -> Result<BufferAccess, BufferNameError> {
        fn split(s: &str) -> Vec<&str> {
            s.split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .collect()
        }
        BufferAccess::new(&split(reads), &split(writes))
    }

    /// Its id: the buffers definition it becomes in each thread's stream.
    pub fn id(self) -> u32 {
        self.id.get()
    }

    /// What the stream's definition of `id` holds.
    pub(crate) fn definition(id: u32) -> Option<&'static Definition> {
        registry().defs.get((id as usize).checked_sub(1)?).copied()
    }
}

impl Recorder {
    /// Binds `name` to the address range `[addr, addr + len)` from now on, for the
    /// compute spans that name it (see [`BufferAccess`]). Bind a buffer once, where it
    /// is allocated, and again when it moves. Takes a lock: not for a hot loop.
    pub fn bind_buffer(&self, name: &str, addr: u64, len: u64) {
        let at = self.stamp().raw();
        let shared = self.shared();
        let mut pending = shared
            .bindings
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        push_binding(&mut pending, at, addr, len, name.trim());
    }

    /// Binds `name` to the bytes of `slice`.
    pub fn bind_slice<T>(&self, name: &str, slice: &[T]) {
        self.bind_buffer(
            name,
            slice.as_ptr() as u64,
            std::mem::size_of_val(slice) as u64,
        );
    }

    /// Binds `name` to the whole capacity of `v`, so that resizing it within its
    /// capacity needs no new binding (a reallocation does).
    pub fn bind_vec<T>(&self, name: &str, v: &Vec<T>) {
        let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
        self.bind_buffer(name, v.as_ptr() as u64, bytes as u64);
    }

    /// Starts a compute span that reads and writes `buffers`, ended when the guard is
    /// dropped.
    #[inline]
    pub fn compute_with(&self, name: &'static str, buffers: BufferAccess) -> ComputeGuard<'_> {
        ComputeGuard {
            recorder: self,
            name,
            buffers: Some(buffers),
            start: self.stamp(),
        }
    }

    /// Starts a compute span that reads and writes `buffers`, ended by
    /// [`DetachedSpan::finish`].
    #[inline]
    pub fn start_compute_with(&self, name: &'static str, buffers: BufferAccess) -> DetachedSpan {
        DetachedSpan {
            name,
            buffers: Some(buffers),
            start: self.stamp(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_interned_and_checked() {
        let a = BufferAccess::new(&["x", "y"], &["z"]).expect("ok");
        assert_eq!(BufferAccess::parse(" x, y", "z,").expect("ok"), a);
        assert_ne!(BufferAccess::new(&["y", "x"], &["z"]).expect("ok"), a);
        let def = BufferAccess::definition(a.id()).expect("defined");
        assert_eq!((def.reads, def.writes), (2, 1));
        assert_eq!(def.names, names_bytes(["x", "y", "z"]));
        let many: Vec<&str> = vec!["b"; BUFFER_NAMES_MAX + 1];
        assert_eq!(
            BufferAccess::new(&many, &[]),
            Err(BufferNameError::TooMany(BUFFER_NAMES_MAX + 1))
        );
        assert!(matches!(
            BufferAccess::new(&[""], &[]),
            Err(BufferNameError::BadName(_))
        ));
        assert_eq!(BufferAccess::parse("", "").map(|a| a.id() > 0), Ok(true));
    }
}
