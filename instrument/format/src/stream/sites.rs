//! The Rust layer's source locations while a stream is read: the site words threads
//! define, numbered as the schema's [`SourceSite`] ids by first use.

use std::collections::HashMap;

use super::codec::SOURCE_SITE_TAG;
use crate::schema::SourceSite;

/// The Rust layer's source locations: site words defined by the threads, and the ids
/// given out by first use (one id per distinct file, line and column, as the schema says).
#[derive(Default)]
pub(super) struct Sites {
    pub(super) defined: HashMap<u64, (String, u32, u32)>,
    ids: HashMap<(String, u32, u32), u64>,
    by_word: HashMap<u64, u64>,
}

impl Sites {
    /// The wire `site` of a call made from `word`, and the site record to list first
    /// when it is new.
    pub(super) fn wire(&mut self, word: u64) -> (Option<u64>, Option<SourceSite>) {
        if word == 0 {
            return (None, None);
        }
        if word & SOURCE_SITE_TAG == 0 {
            return (Some(word), None);
        }
        if let Some(&id) = self.by_word.get(&word) {
            return (Some(id), None);
        }
        let Some(key) = self.defined.get(&word).cloned() else {
            return (None, None);
        };
        if let Some(&id) = self.ids.get(&key) {
            self.by_word.insert(word, id);
            return (Some(id), None);
        }
        let id = self.ids.len() as u64 + 1;
        self.ids.insert(key.clone(), id);
        self.by_word.insert(word, id);
        let (file, line, column) = key;
        (
            Some(id),
            Some(SourceSite {
                id,
                file,
                line,
                column,
            }),
        )
    }
}
