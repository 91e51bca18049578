//! Turning what a thread records into stream records in its ring: the thread's delta
//! state, and the compute-span names and source lines it has already defined (each is
//! defined once per thread, in the same group as the first record that names it).
//!
//! Only the thread that owns the ring touches its encoder; a group that is dropped
//! (the recorder finishing while the ring is full) leaves the encoder (and the ring's
//! delta state) as it was, so the stream stays decodable.

use std::panic::Location;

use overlap_format::fxhash::FxHashMap;
use overlap_format::stream::codec::{
    encode_buffers_head, encode_function_site, encode_site, encode_string_head, STRING_MAX,
};

use super::buffers::BufferAccess;
use super::ring::Group;
use super::site::{NamedSite, SiteKind, SiteWord};

/// Entries of the direct-mapped cache of source sites already defined.
const SITE_CACHE: usize = 32;

/// A thread's encoding state.
#[derive(Default)]
pub(crate) struct ThreadEncoder {
    /// Strings defined, by the address of their `&'static str`.
    strings: FxHashMap<usize, u32>,
    /// Source sites defined, by site word.
    sites: FxHashMap<u64, ()>,
    /// The most recent site words defined, by a hash of the word: the common case of a
    /// call from a line already seen costs a compare.
    site_cache: [u64; SITE_CACHE],
    /// Buffers definitions defined, by id.
    buffers: Vec<bool>,
}

/// Definitions a group adds, committed to the encoder once the group is published.
#[derive(Default)]
pub(crate) struct NewDefs {
    strings: [(usize, u32); 2],
    n_strings: usize,
    site: Option<u64>,
    buffers: Option<u32>,
}

impl ThreadEncoder {
    fn next_string_id(&self, pending: &NewDefs) -> u32 {
        (self.strings.len() + pending.n_strings + 1) as u32
    }

    /// The id of `text`, appending its definition to `g` when it is new.
    fn string<W: FnMut() -> bool>(
        &self,
        text: &'static str,
        g: &mut Group<'_, W>,
        defs: &mut NewDefs,
    ) -> u32 {
        let key = text.as_ptr() as usize ^ text.len() << 48;
        if let Some(&id) = self.strings.get(&key) {
            return id;
        }
        if let Some(&(_, id)) = defs.strings[..defs.n_strings]
            .iter()
            .find(|(k, _)| *k == key)
        {
            return id;
        }
        let id = self.next_string_id(defs);
        let mut text = text;
        if text.len() > STRING_MAX {
            let mut cut = STRING_MAX;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text = &text[..cut];
        }
        g.record(|c| encode_string_head(c, id, text.len()));
        g.put(text.as_bytes());
        defs.strings[defs.n_strings] = (key, id);
        defs.n_strings += 1;
        id
    }

    /// The id of a compute span's name, defining it in `g` when new.
    #[inline]
    pub(crate) fn name<W: FnMut() -> bool>(
        &self,
        name: &'static str,
        g: &mut Group<'_, W>,
        defs: &mut NewDefs,
    ) -> u32 {
        self.string(name, g, defs)
    }

    /// Defines the source location of a call made from `site` in `g`, when the word is
    /// a source location not defined yet (code addresses need no definition).
    #[inline]
    pub(crate) fn site<W: FnMut() -> bool>(
        &self,
        site: SiteWord,
        g: &mut Group<'_, W>,
        defs: &mut NewDefs,
    ) {
        let word = site.word();
        if !site.is_source() || self.site_cache[slot(word)] == word {
            return;
        }
        if self.sites.contains_key(&word) {
            return;
        }
        match site.decode() {
            SiteKind::Source(l) => self.define_site(word, l, g, defs),
            SiteKind::Named(n) => self.define_named_site(word, n, g, defs),
            SiteKind::Unknown | SiteKind::Address(_) => {}
        }
    }

    #[cold]
    fn define_named_site<W: FnMut() -> bool>(
        &self,
        word: u64,
        n: &'static NamedSite,
        g: &mut Group<'_, W>,
        defs: &mut NewDefs,
    ) {
        let file = self.string(n.file(), g, defs);
        let function = self.string(n.function(), g, defs);
        // Python gives no column here: 0, unknown.
        g.record(|c| encode_function_site(c, word, file, n.line(), 0, function));
        defs.site = Some(word);
    }

    #[cold]
    fn define_site<W: FnMut() -> bool>(
        &self,
        word: u64,
        l: &'static Location<'static>,
        g: &mut Group<'_, W>,
        defs: &mut NewDefs,
    ) {
        let file = self.string(l.file(), g, defs);
        g.record(|c| encode_site(c, word, file, l.line(), l.column()));
        defs.site = Some(word);
    }

    /// Defines the buffer names of `b` in `g`, when this thread has not yet.
    #[inline]
    pub(crate) fn buffers<W: FnMut() -> bool>(
        &self,
        b: BufferAccess,
        g: &mut Group<'_, W>,
        defs: &mut NewDefs,
    ) {
        if !self.buffers.get(b.id() as usize).copied().unwrap_or(false) {
            define_buffers(b.id(), g, defs);
        }
    }

    /// Remembers what a published group defined.
    #[inline]
    pub(crate) fn commit(&mut self, defs: &NewDefs) {
        for &(key, id) in &defs.strings[..defs.n_strings] {
            self.strings.insert(key, id);
        }
        if let Some(word) = defs.site {
            self.sites.insert(word, ());
            self.site_cache[slot(word)] = word;
        }
        if let Some(id) = defs.buffers {
            let id = id as usize;
            if self.buffers.len() <= id {
                self.buffers.resize(id + 1, false);
            }
            self.buffers[id] = true;
        }
    }
}

#[cold]
fn define_buffers<W: FnMut() -> bool>(id: u32, g: &mut Group<'_, W>, defs: &mut NewDefs) {
    if let Some(def) = BufferAccess::definition(id) {
        g.record(|c| encode_buffers_head(c, id, def.reads, def.writes, def.names.len()));
        g.put(&def.names);
        defs.buffers = Some(id);
    }
}

fn slot(word: u64) -> usize {
    ((word ^ word >> 17) as usize) % SITE_CACHE
}
