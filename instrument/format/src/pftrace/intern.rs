//! Interning on one sequence of the protobuf trace: names, categories,
//! debug-annotation names and short text values each get an iid the first time the
//! sequence uses them, and their definition goes into the packet that first does
//! ([`super::sequence`] writes it). Kept apart from the sequence's ordering of packets.

use super::annotations::Interning;
use super::proto::{field, Proto};
use crate::fxhash::FxHashMap;

/// Text values interned per sequence: at most this many, each at most
/// [`MAX_INTERNED_LEN`] bytes; others are written as they are (so that a run of unique
/// texts, such as addresses, does not grow the table without bound).
const MAX_INTERNED_STRINGS: usize = 1 << 16;
/// See [`MAX_INTERNED_STRINGS`].
const MAX_INTERNED_LEN: usize = 64;

/// Names interned on one sequence.
#[derive(Debug, Default)]
pub(crate) struct Interner(FxHashMap<String, u64>);

/// The interning the annotations of one event need: names and text values, their new
/// definitions appended to the sequence's.
pub(crate) struct ArgInterning<'a> {
    pub(crate) names: &'a mut Interner,
    pub(crate) statics: &'a mut FxHashMap<(usize, usize), u64>,
    pub(crate) strings: &'a mut Interner,
    pub(crate) defs: &'a mut Proto,
}

impl Interning for ArgInterning<'_> {
    fn static_name(&mut self, name: &'static str) -> u64 {
        let key = (name.as_ptr() as usize, name.len());
        if let Some(iid) = self.statics.get(&key) {
            return *iid;
        }
        let iid = self.name(name);
        self.statics.insert(key, iid);
        iid
    }

    fn name(&mut self, name: &str) -> u64 {
        let (iid, new) = self.names.get(name);
        if new {
            define_in(self.defs, field::DEBUG_ANNOTATION_NAMES, iid, name);
        }
        iid
    }

    fn string(&mut self, value: &str) -> Option<u64> {
        let known = self.strings.0.get(value).copied();
        let iid = match known {
            Some(iid) => iid,
            None if value.len() > MAX_INTERNED_LEN
                || self.strings.0.len() >= MAX_INTERNED_STRINGS =>
            {
                return None
            }
            None => {
                let (iid, _) = self.strings.get(value);
                let n = self.defs.begin(field::DEBUG_ANNOTATION_STRING_VALUES);
                self.defs.uint(field::IID, iid);
                self.defs.bytes_field(field::INTERNED_STR, value.as_bytes());
                self.defs.end(n);
                iid
            }
        };
        Some(iid)
    }
}

impl Interner {
    /// The iid of `name`, and whether it is new (to be defined).
    pub(crate) fn get(&mut self, name: &str) -> (u64, bool) {
        if let Some(iid) = self.0.get(name) {
            return (*iid, false);
        }
        let iid = self.0.len() as u64 + 1;
        self.0.insert(name.to_owned(), iid);
        (iid, true)
    }
}

/// Appends an interned name's definition (`EventName`, `EventCategory`,
/// `DebugAnnotationName`: iid and name) to `defs`.
pub(crate) fn define_in(defs: &mut Proto, kind: u32, iid: u64, name: &str) {
    let n = defs.begin(kind);
    defs.uint(field::IID, iid);
    defs.string(field::INTERNED_NAME, name);
    defs.end(n);
}
