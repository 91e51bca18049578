//! The recorders' source locations while a stream is read: the site words threads
//! define (the Rust layer's `#[track_caller]` lines, the preload's Python frames),
//! numbered as the schema's [`SourceSite`] ids by first use.

use std::collections::HashMap;

use super::codec::SOURCE_SITE_TAG;
use crate::schema::SourceSite;

/// A source location as a site definition gives it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Place {
    pub(super) file: String,
    pub(super) line: u32,
    pub(super) column: u32,
    /// The function, when the definition names it (tag 55).
    pub(super) function: Option<String>,
}

/// The source locations: site words defined by the threads, and the ids given out by
/// first use (one id per distinct file, line, column and function, as the schema says).
#[derive(Default)]
pub(super) struct Sites {
    pub(super) defined: HashMap<u64, Place>,
    ids: HashMap<Place, u64>,
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
        let Some(place) = self.defined.get(&word).cloned() else {
            return (None, None);
        };
        if let Some(&id) = self.ids.get(&place) {
            self.by_word.insert(word, id);
            return (Some(id), None);
        }
        let id = self.ids.len() as u64 + 1;
        self.ids.insert(place.clone(), id);
        self.by_word.insert(word, id);
        let Place {
            file,
            line,
            column,
            function,
        } = place;
        (
            Some(id),
            Some(SourceSite {
                id,
                file,
                line,
                column,
                function,
            }),
        )
    }
}
