//! The names the analysis keeps as `&'static str` (MPI functions, what a finding's
//! buffer is, a call's part), read back from what another worker of the analysis wrote
//! ([`crate::exchange`]): each distinct name is kept once, for the process's life, and
//! every reading of it gives the same `&'static str`. They are a few hundred words
//! however large the run.

use std::collections::BTreeSet;
use std::sync::Mutex;

use serde::{Deserialize, Deserializer};

/// A name kept for the process's life. A field of this type, read with [`read`], is one
/// serde's derive does not take for a borrow of what it reads (a `&'static str` it
/// would).
pub(crate) type StaticName = &'static str;

/// The process's one `&'static str` of `name`.
pub(crate) fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(kept) = names.get(name) {
        return kept;
    }
    let kept: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(kept);
    kept
}

/// Reads a `&'static str` field (`#[serde(deserialize_with = ...)]`).
pub(crate) fn read<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    String::deserialize(d).map(|s| intern(&s))
}

#[cfg(test)]
mod tests {
    use super::intern;

    /// A name read twice is one `&'static str`.
    #[test]
    fn a_name_is_kept_once() {
        let a = intern(&String::from("MPI_Waitall"));
        let b = intern(&format!("MPI_{}", "Waitall"));
        assert!(std::ptr::eq(a, b));
        assert_eq!(a, "MPI_Waitall");
    }
}
