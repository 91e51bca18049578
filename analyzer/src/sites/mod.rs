//! Call sites: where in the program each MPI call was made, as `file:line (function)`,
//! so that reports name code rather than times and group the many findings one line of
//! source causes. A call's `site` is either a code address (the preload), symbolized
//! with the rank's own code maps and the object's debug info ([`symbolize`]), or the id
//! of a source location the Rust layer listed (`#[track_caller]`). [`SiteTable`] does
//! this once per distinct site of a run; [`crate::metrics::by_site`] sums findings and
//! waits by site.

pub mod maps;
mod rank;
pub mod symbolize;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use overlap_format::schema::{MergedInfo, Outcome};

use crate::fxhash::FxHashMap;
use crate::model::{Timeline, Trace};
pub use rank::RankSymbols;
pub use symbolize::Symbolizer;

/// How a site's place in the source was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// The recording layer gave file and line itself (the Rust layer's `#[track_caller]`
    /// lines; the preload's Python frames, with their function).
    Recorded,
    /// File, line and function from the object's DWARF (or its separate debug file).
    DebugInfo,
    /// The function from the symbol table; no line information.
    SymbolTable,
    /// Nothing could be read: the site is an object and offset (or a bare address).
    Unavailable,
}

/// A call site, as reports name it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Site {
    /// How reports show it: `calls.c:57 (main)`, `kernels/src/halo.rs:88`,
    /// `calls+0x1234 (main)` without line information, `calls+0x1234` or `0x7f…` when
    /// symbolization was unavailable.
    pub label: String,
    /// Source file (as the debug info or the compiler names it).
    pub file: Option<String>,
    /// Line, from 1.
    pub line: Option<u32>,
    /// Function the call is in (the innermost one when inlined).
    pub function: Option<String>,
    /// Functions the innermost one was inlined into, innermost first.
    pub inlined_into: Vec<String>,
    /// The call path's callers (`overlap trace --callpath N`), as each is labelled:
    /// the caller of the function that made the call first, outwards. Empty for a
    /// site recorded alone. The label ends with them (`a.c:9 (wait) ← b.c:40 (main)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub callers: Vec<String>,
    /// The object file (executable or library) the code address is in.
    pub object: Option<String>,
    /// File offset of the call in that object.
    pub offset: Option<u64>,
    /// How the source place was found.
    pub resolution: Resolution,
    /// Why file and line are missing, when they are.
    pub unavailable: Option<String>,
}

impl Site {
    /// A site nothing could be learnt about beyond `label`.
    pub(crate) fn unavailable(
        label: String,
        object: Option<String>,
        offset: Option<u64>,
        why: &str,
    ) -> Site {
        Site {
            label,
            file: None,
            line: None,
            function: None,
            inlined_into: Vec::new(),
            callers: Vec::new(),
            object,
            offset,
            resolution: Resolution::Unavailable,
            unavailable: Some(why.to_string()),
        }
    }

    /// A source location the recording layer listed, in `function` when it says:
    /// `prog.py:12 (exchange)`. An absolute path (a Python program run by its full
    /// path) is shown by its base name, as debug info's are; `file` keeps it whole.
    pub(crate) fn recorded(file: &str, line: u32, function: Option<&str>) -> Site {
        let shown = if file.starts_with('/') {
            symbolize::base_name(file)
        } else {
            file
        };
        Site {
            label: match function {
                Some(f) => format!("{shown}:{line} ({f})"),
                None => format!("{shown}:{line}"),
            },
            file: Some(file.to_string()),
            line: Some(line),
            function: function.map(str::to_string),
            inlined_into: Vec::new(),
            callers: Vec::new(),
            object: None,
            offset: None,
            resolution: Resolution::Recorded,
            unavailable: None,
        }
    }

    /// Where the site is, the same for every instruction of it: its label, or for code
    /// of a shared library whose function is known, the function in the library
    /// (`__memmove_avx_unaligned_erms in libc.so.6`: which instruction of `memcpy`
    /// touched a buffer, or on which line of the library's source, says nothing to the
    /// program's author), inlined into the outermost function the symbolizer gives.
    pub fn place(&self) -> String {
        match self.library_function() {
            Some((f, library)) => match self.inlined_into.last() {
                Some(outer) => format!("{f} in {library}, inlined in {outer}"),
                None => format!("{f} in {library}"),
            },
            None => self.label.clone(),
        }
    }

    /// The function and the shared library (its file name) the site is in, when it is
    /// in a shared library's function that the symbolizer named.
    pub fn library_function(&self) -> Option<(&str, &str)> {
        let library = symbolize::base_name(self.object.as_deref()?);
        (library.contains(".so")).then_some((self.function.as_deref()?, library))
    }

    /// Fills in the label from the other fields.
    pub(crate) fn labelled(mut self) -> Site {
        let place = match (&self.file, self.line, &self.object, self.offset) {
            (Some(file), Some(line), _, _) => {
                // Debug info names files by absolute path: the base name reads better
                // and the full path stays in `file`.
                let shown = if file.starts_with('/') {
                    symbolize::base_name(file)
                } else {
                    file
                };
                format!("{shown}:{line}")
            }
            (_, _, Some(object), Some(offset)) => {
                format!("{}+{offset:#x}", symbolize::base_name(object))
            }
            _ => self.label.clone(),
        };
        self.label = match (&self.function, self.inlined_into.last()) {
            (Some(f), Some(outer)) => format!("{place} ({f}, inlined in {outer})"),
            (Some(f), None) => format!("{place} ({f})"),
            (None, _) => place,
        };
        self
    }
}

/// What one rank recorded of its sites, each distinct one once and sorted: the sites
/// of its calls, and the instructions that touched buffers (`overlap trace --buffers`:
/// each an address inside the instruction, kept one past it so that the symbolizer's
/// step back for return addresses lands on it again). A run has millions of calls and
/// a few hundred sites.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct RankSites {
    rank: u32,
    calls: Vec<u64>,
    touches: Vec<u64>,
}

impl RankSites {
    /// What the rank whose timeline is `t` recorded of its sites.
    pub(crate) fn of(t: &Timeline) -> RankSites {
        let mut seen: FxHashMap<u64, ()> = FxHashMap::default();
        for c in &t.calls {
            if let Some(site) = c.site {
                seen.insert(site.get(), ());
            }
        }
        let mut calls: Vec<u64> = seen.into_keys().collect();
        calls.sort_unstable();
        let mut touches: Vec<u64> = (t.learned.iter())
            .filter_map(|l| match l.outcome {
                Outcome::Used { ip, .. } => ip.map(|ip| touch_key(ip.get())),
                Outcome::Untouched { .. } => None,
            })
            .collect();
        touches.sort_unstable();
        touches.dedup();
        RankSites {
            rank: t.rank,
            calls,
            touches,
        }
    }
}

/// Every distinct call site of a run, symbolized once.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SiteTable {
    sites: Vec<Site>,
    ids: FxHashMap<(u32, u64), u32>,
    notes: Vec<String>,
}

/// Where the table keeps a touch's instruction address `ip`: one past it, as a return
/// address is, so that one lookup (which steps back a byte) serves both.
fn touch_key(ip: u64) -> u64 {
    ip.wrapping_add(1)
}

/// True for a shared object of the MPI implementation (MPICH's `libmpich*`, Open
/// MPI's `libmpi*`), by its file name.
pub(crate) fn is_mpi_library(object: &str) -> bool {
    let name = object.rsplit('/').next().unwrap_or(object);
    name.starts_with("libmpi")
}

impl SiteTable {
    /// Symbolizes every distinct site of `trace`: per rank, with that rank's code maps
    /// or source-site list (each process has its own address layout).
    pub fn build(trace: &Trace) -> SiteTable {
        SiteTable::of_ranks(&trace.info, trace.ranks.iter().map(RankSites::of))
    }

    /// [`SiteTable::build`] from what each rank recorded of its sites, in rank order,
    /// and the run's description (each rank's code maps, and the calls it was stuck in
    /// at its dump).
    pub(crate) fn of_ranks(
        run: &MergedInfo,
        ranks: impl IntoIterator<Item = RankSites>,
    ) -> SiteTable {
        let _span = tracing::info_span!("symbolize sites").entered();
        let mut table = SiteTable::default();
        let mut symbolizer = Symbolizer::new();
        let mut by_label: HashMap<String, u32> = HashMap::new();
        let mut no_maps: Vec<u32> = Vec::new();
        let mut inside_mpi: BTreeMap<u32, String> = BTreeMap::new();
        for t in ranks {
            let info = run.ranks.iter().find(|r| r.rank == t.rank);
            let symbols = RankSymbols::new(info);
            if let Some(e) = &symbols.maps_error {
                table.notes.push(format!("rank {}: {e}", t.rank));
            }
            let mut raws = t.calls;
            // The calls a rank was stuck in at its dump have no record of their own.
            let stuck = info.and_then(|r| r.in_flight.as_ref());
            raws.extend((stuck.map_or(&[][..], |d| &d.calls).iter()).filter_map(|c| c.site));
            raws.retain(|&s| s != 0);
            raws.sort_unstable();
            raws.dedup();
            for raw in t.touches {
                if table.ids.contains_key(&(t.rank, raw)) {
                    continue;
                }
                let site = match &symbols.maps {
                    Some(maps) => symbolizer.symbolize(maps, raw),
                    None => Site::unavailable(
                        format!("{:#x}", raw - 1),
                        None,
                        None,
                        "the rank's trace lists no code maps to symbolize it with",
                    ),
                };
                let next = table.sites.len() as u32;
                let id = *by_label.entry(site.label.clone()).or_insert(next);
                if id == next {
                    table.sites.push(site);
                }
                table.ids.insert((t.rank, raw), id);
            }
            for raw in raws {
                if symbols.maps.is_none()
                    && !symbols.is_recorded(raw)
                    && no_maps.last() != Some(&t.rank)
                {
                    no_maps.push(t.rank);
                }
                let site = symbols.site(&mut symbolizer, raw);
                if let Some(library) = site.object.as_deref().filter(|o| is_mpi_library(o)) {
                    // The caller was the MPI library itself (the Fortran bindings call the
                    // C entry points): the program's own line is unknown, and grouping
                    // by this address would lump every call of the function together.
                    let name = library.rsplit('/').next().unwrap_or(library);
                    inside_mpi.entry(t.rank).or_insert_with(|| name.to_string());
                    continue;
                }
                let next = table.sites.len() as u32;
                let id = *by_label.entry(site.label.clone()).or_insert(next);
                if id == next {
                    table.sites.push(site);
                }
                table.ids.insert((t.rank, raw), id);
            }
        }
        for (object, why) in symbolizer.unreadable() {
            table.notes.push(format!("{object}: not symbolized: {why}"));
        }
        if !inside_mpi.is_empty() {
            let ranks: Vec<u32> = inside_mpi.keys().copied().collect();
            let library = inside_mpi.values().next().cloned().unwrap_or_default();
            table.notes.push(format!(
                "rank(s) {ranks:?}: calls from inside {library}: site unknown"
            ));
        }
        if !no_maps.is_empty() {
            table.notes.push(format!(
                "rank(s) {no_maps:?} recorded code addresses but no code maps: sites shown as addresses"
            ));
        }
        table
    }

    /// Every distinct site, in order of first meeting.
    pub fn sites(&self) -> &[Site] {
        &self.sites
    }

    /// What could not be symbolized, and why.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The index in [`SiteTable::sites`] of the site `raw` a call of `rank` recorded.
    pub fn id(&self, rank: u32, raw: u64) -> Option<u32> {
        self.ids.get(&(rank, raw)).copied()
    }

    /// The site `raw` (a call's recorded `site`) of `rank`: e.g. to name "move the wait
    /// after call site X".
    pub fn site(&self, rank: u32, raw: u64) -> Option<&Site> {
        self.sites.get(self.id(rank, raw)? as usize)
    }

    /// The site of the instruction that touched a buffer, `ip` as a learned use records
    /// it ([`Outcome::Used`]: an address inside the instruction, not a return address).
    pub fn touch(&self, rank: u32, ip: u64) -> Option<&Site> {
        self.site(rank, touch_key(ip))
    }

    /// The index of the site of call `index` of `rank`, when it recorded one.
    pub fn id_of_call(&self, trace: &Trace, rank: u32, index: usize) -> Option<u32> {
        let (_, call) = trace.rank(rank)?.call(index)?;
        self.id(rank, call.site?.get())
    }

    /// The site of call `index` of `rank`, when it recorded one.
    pub fn of_call(&self, trace: &Trace, rank: u32, index: usize) -> Option<&Site> {
        self.sites
            .get(self.id_of_call(trace, rank, index)? as usize)
    }

    /// The label of call `index` of `rank`'s site (see [`Site::label`]).
    pub fn label_of_call(&self, trace: &Trace, rank: u32, index: usize) -> Option<String> {
        self.of_call(trace, rank, index).map(|s| s.label.clone())
    }
}

#[cfg(test)]
impl SiteTable {
    /// Names the instruction `ip` of `rank` that touched a buffer `site` (tests of what is
    /// said of a touch in a library, which a hand-built trace cannot symbolize).
    pub(crate) fn name_touch(&mut self, rank: u32, ip: u64, site: Site) {
        self.ids
            .insert((rank, touch_key(ip)), self.sites.len() as u32);
        self.sites.push(site);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mpi_library_is_told_apart_from_the_program() {
        assert!(is_mpi_library(
            "/usr/lib/x86_64-linux-gnu/libmpichfort.so.12.2.2"
        ));
        assert!(is_mpi_library("libmpi_mpifh.so.40"));
        assert!(!is_mpi_library("/home/u/ring"));
        assert!(!is_mpi_library("/opt/app/libsolver.so"));
    }

    #[test]
    fn labels() {
        let inlined = Site {
            label: String::new(),
            file: Some("/src/app/calls.c".into()),
            line: Some(57),
            function: Some("post".into()),
            inlined_into: vec!["exchange".into(), "main".into()],
            callers: Vec::new(),
            object: Some("/src/app/calls".into()),
            offset: Some(0x1234),
            resolution: Resolution::DebugInfo,
            unavailable: None,
        }
        .labelled();
        assert_eq!(inlined.label, "calls.c:57 (post, inlined in main)");
        let symbol_only = Site {
            file: None,
            line: None,
            inlined_into: vec![],
            callers: Vec::new(),
            resolution: Resolution::SymbolTable,
            ..inlined.clone()
        }
        .labelled();
        assert_eq!(symbol_only.label, "calls+0x1234 (post)");
        assert_eq!(
            Site::recorded("kernels/src/halo.rs", 88, None).label,
            "kernels/src/halo.rs:88"
        );
        let python = Site::recorded("/home/u/run/prog.py", 12, Some("exchange"));
        assert_eq!(python.label, "prog.py:12 (exchange)");
        assert_eq!(python.file.as_deref(), Some("/home/u/run/prog.py"));
        assert_eq!(python.function.as_deref(), Some("exchange"));
        assert_eq!(python.resolution, Resolution::Recorded);
    }

    /// A site in the program is its label; one in a shared library, its function in the
    /// library, whichever instruction or line of it.
    #[test]
    fn places() {
        let memcpy = |offset: u64, line: Option<u32>| {
            Site {
                label: String::new(),
                file: line.map(|_| "string/memmove-vec-unaligned-erms.S".into()),
                line,
                function: Some("__memmove_avx_unaligned_erms".into()),
                inlined_into: vec![],
                callers: Vec::new(),
                object: Some("/usr/lib/x86_64-linux-gnu/libc.so.6".into()),
                offset: Some(offset),
                resolution: Resolution::SymbolTable,
                unavailable: None,
            }
            .labelled()
        };
        let place = "__memmove_avx_unaligned_erms in libc.so.6";
        assert_eq!(memcpy(0x1a2b3c, None).place(), place);
        assert_eq!(memcpy(0x1a2b40, Some(330)).place(), place);
        let program = Site {
            object: Some("/src/app/halo".into()),
            file: Some("/src/app/halo.c".into()),
            line: Some(93),
            function: Some("main".into()),
            ..memcpy(0x1234, None)
        }
        .labelled();
        assert_eq!(program.place(), "halo.c:93 (main)");
        let unknown = Site::unavailable("0x7f12".into(), None, None, "no maps");
        assert_eq!(unknown.place(), "0x7f12");
    }
}
