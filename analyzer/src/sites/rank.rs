//! What symbolizes the sites one rank recorded: the source locations its recorder
//! listed (the Rust layer), its code maps (the preload's code addresses, each process at
//! its own addresses) and its call paths (`overlap trace --callpath`). The analysis'
//! [`super::SiteTable`] and the merge's `src` labels both go through it.

use std::collections::BTreeMap;

use overlap_format::schema::{CallPath, RankClock, SourceSite};
use overlap_format::stream::paths::CALL_PATH_TAG;

use super::maps::{self, CodeMap};
use super::{is_mpi_library, Site, Symbolizer};
use crate::fxhash::FxHashMap;

/// One rank's means of symbolizing its sites.
pub struct RankSymbols<'a> {
    recorded: BTreeMap<u64, (&'a str, u32, Option<&'a str>)>,
    /// The rank's code maps, when it listed readable ones.
    pub maps: Option<Vec<CodeMap>>,
    paths: FxHashMap<u64, &'a [u64]>,
    /// Why the rank's code maps could not be read, when they could not.
    pub maps_error: Option<String>,
}

impl<'a> RankSymbols<'a> {
    /// What `info` (the merged trace's entry for the rank, when there is one) lists.
    pub fn new(info: Option<&'a RankClock>) -> RankSymbols<'a> {
        match info {
            Some(r) => RankSymbols::listed(&r.source_sites, r.code_maps.as_deref(), &r.call_paths),
            None => RankSymbols::listed(&[], None, &[]),
        }
    }

    /// What a rank lists: the source locations its recorder gave, its code maps (as its
    /// header's `code_maps`) and its call paths.
    pub fn listed(
        sites: &'a [SourceSite],
        code_maps: Option<&str>,
        call_paths: &'a [CallPath],
    ) -> RankSymbols<'a> {
        let recorded = (sites.iter())
            .map(|s| (s.id, (s.file.as_str(), s.line, s.function.as_deref())))
            .collect();
        let (maps, maps_error) = match code_maps.map(maps::parse) {
            Some(Ok(m)) => (Some(m), None),
            Some(Err(e)) => (None, Some(e.to_string())),
            None => (None, None),
        };
        let paths = (call_paths.iter())
            .map(|p| (p.site, p.frames.as_slice()))
            .collect();
        RankSymbols {
            recorded,
            maps,
            paths,
            maps_error,
        }
    }

    /// True when `raw` is a source location the recorder listed (no code maps needed).
    pub fn is_recorded(&self, raw: u64) -> bool {
        self.recorded.contains_key(&raw)
    }

    /// The site `raw`, a call's recorded `site`.
    pub fn site(&self, symbolizer: &mut Symbolizer, raw: u64) -> Site {
        let unavailable = |why: &str| {
            let label = if raw & CALL_PATH_TAG != 0 {
                format!("call path {}", raw & !CALL_PATH_TAG)
            } else {
                format!("{raw:#x}")
            };
            Site::unavailable(label, None, None, why)
        };
        if let Some((file, line, function)) = self.recorded.get(&raw) {
            return Site::recorded(file, *line, *function);
        }
        let Some(maps) = &self.maps else {
            return unavailable("the rank's trace lists no code maps to symbolize it with");
        };
        if raw & CALL_PATH_TAG == 0 {
            return symbolizer.symbolize(maps, raw);
        }
        match self.paths.get(&raw) {
            Some(frames) => path_site(symbolizer, maps, frames),
            None => unavailable("the rank's trace does not list this call path"),
        }
    }
}

/// True for the C library's start-up functions, which call `main`.
fn is_startup(function: &str) -> bool {
    function.starts_with("__libc_start") || function == "_start"
}

/// The site of a call path (`frames`: return addresses, the call site first, outwards):
/// its innermost frame outside the MPI library (MPICH's Fortran bindings call the C
/// entry points, so their frame comes first), with the frames outside it as callers.
fn path_site(symbolizer: &mut Symbolizer, maps: &[CodeMap], frames: &[u64]) -> Site {
    let mut symbolized = frames.iter().map(|&ip| symbolizer.symbolize(maps, ip));
    let mut innermost = None;
    for site in symbolized.by_ref() {
        if !site.object.as_deref().is_some_and(is_mpi_library) {
            innermost = Some(site);
            break;
        }
    }
    let Some(mut site) = innermost else {
        // Every frame in MPI (or none at all): the first is as good as any (and is
        // skipped as inside it).
        return match frames.first() {
            Some(&first) => symbolizer.symbolize(maps, first),
            None => Site::unavailable("an empty call path".into(), None, None, "no frames"),
        };
    };
    // The C library's start-up frames below `main` say nothing of the program.
    site.callers = symbolized
        .take_while(|s| !s.function.as_deref().is_some_and(is_startup))
        .map(|s| s.label)
        .collect();
    for caller in &site.callers {
        site.label.push_str(" ← ");
        site.label.push_str(caller);
    }
    site
}
