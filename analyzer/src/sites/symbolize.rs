//! Turns a code address of a traced process into a [`Site`] with the `addr2line` crate:
//! the address's object and file offset from the rank's code maps, the object's virtual
//! address from its ELF program headers, then file:line and function from its DWARF
//! (inline frames included), from a separate debug file when the object has none
//! (build-id or `.gnu_debuglink`, where GDB looks), or the function alone from the symbol
//! table. Each object is opened once and each (object, file offset) symbolized once per
//! run: sites repeat millions of times, and ranks with their own address layouts share
//! the same few lines. An object is read at the path the rank mapped, unless a folder of
//! [`SYMBOL_PATH_VAR`] holds a file of its name: a trace analysed on another machine,
//! or after the program was moved, is symbolized from the copy the user names.

use overlap_format::input::{open_input, Accept, InputError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSegment};

use super::maps::{self, CodeMap, Segment};
use super::{Resolution, Site};

/// Where separate debug files live (GDB's default debug-file directory).
const DEBUG_DIR: &str = "/usr/lib/debug";

/// The environment variable naming folders (separated by `:`, as `PATH`) searched, in
/// order and before the path a rank mapped, for an object by its file name.
pub const SYMBOL_PATH_VAR: &str = "OVERLAP_SYMBOL_PATH";

/// An object file opened for symbolization.
struct Loaded {
    segments: Vec<Segment>,
    loader: addr2line::Loader,
}

/// Symbolizes code addresses, caching objects and answers.
pub struct Symbolizer {
    objects: HashMap<String, Result<Loaded, String>>,
    answers: HashMap<(String, u64), Site>,
    /// Folders searched first for an object, by file name.
    search: Vec<PathBuf>,
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer")
            .field("objects", &self.objects.len())
            .field("answers", &self.answers.len())
            .field("search", &self.search)
            .finish()
    }
}

impl Symbolizer {
    /// A symbolizer with nothing opened yet, searching the folders of
    /// [`SYMBOL_PATH_VAR`] (none when it is unset) before the paths the ranks mapped.
    #[allow(clippy::new_without_default)] // it reads the environment: not a default
    pub fn new() -> Symbolizer {
        let search = std::env::var_os(SYMBOL_PATH_VAR)
            .map(|v| std::env::split_paths(&v).collect())
            .unwrap_or_default();
        Symbolizer::with_search_path(search)
    }

    /// A symbolizer with nothing opened yet that looks for each object, by its file
    /// name, in `folders` in order before the path a rank mapped (empty folder names
    /// are skipped). A copy found there is the one read, even when it cannot be: the
    /// user named it, and the file at the mapped path may be another build.
    pub fn with_search_path(folders: Vec<PathBuf>) -> Symbolizer {
        let search = folders
            .into_iter()
            .filter(|f| !f.as_os_str().is_empty())
            .collect();
        Symbolizer {
            objects: HashMap::new(),
            answers: HashMap::new(),
            search,
        }
    }

    /// The file to read for the object a rank mapped at `path`: the first of the search
    /// folders holding a file of its name, else `path` itself.
    fn locate(&self, path: &str) -> PathBuf {
        let name = base_name(path);
        self.search
            .iter()
            .map(|folder| folder.join(name))
            .find(|candidate| candidate.is_file())
            .unwrap_or_else(|| PathBuf::from(path))
    }

    /// The site of return address `address` of a process with code maps `maps`. The
    /// call instruction ends just before its return address, so `address - 1` is
    /// looked up (a call at the end of an inlined block would otherwise be charged to
    /// the line after it).
    pub fn symbolize(&mut self, maps: &[CodeMap], address: u64) -> Site {
        let Some((map, offset)) = maps::locate(maps, address.wrapping_sub(1)) else {
            return Site::unavailable(
                format!("{address:#x}"),
                None,
                None,
                "the address is in none of the rank's code mappings",
            );
        };
        let key = (map.path.clone(), offset);
        if let Some(site) = self.answers.get(&key) {
            return site.clone();
        }
        let site = self.resolve(&map.path, offset);
        self.answers.insert(key, site.clone());
        site
    }

    /// Objects that could not be read, with why.
    pub fn unreadable(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = self
            .objects
            .iter()
            .filter_map(|(p, o)| o.as_ref().err().map(|e| (p.clone(), e.clone())))
            .collect();
        v.sort();
        v
    }

    fn resolve(&mut self, path: &str, offset: u64) -> Site {
        let object = Some(path.to_string());
        let short = format!("{}+{offset:#x}", base_name(path));
        if !self.objects.contains_key(path) {
            let opened = open(&self.locate(path));
            self.objects.insert(path.to_string(), opened);
        }
        let loaded = &self.objects[path];
        let loaded = match loaded {
            Ok(l) => l,
            Err(why) => {
                let why = format!("symbolization unavailable: {why}");
                return Site::unavailable(short, object, Some(offset), &why);
            }
        };
        let Some(probe) = maps::virtual_address(&loaded.segments, offset) else {
            return Site::unavailable(
                short,
                object,
                Some(offset),
                "the offset is in no loadable segment of the file (was it rebuilt since?)",
            );
        };
        let mut frames: Vec<(Option<String>, Option<String>, Option<u32>)> = Vec::new();
        if let Ok(mut it) = loaded.loader.find_frames(probe) {
            while let Ok(Some(f)) = it.next() {
                let function = f
                    .function
                    .as_ref()
                    .and_then(|n| n.demangle().ok())
                    .map(|n| n.into_owned());
                let (file, line) = match &f.location {
                    Some(l) => (l.file.map(str::to_string), l.line),
                    None => (None, None),
                };
                frames.push((function, file, line));
            }
        }
        let symbol = || loaded.loader.find_symbol(probe).map(demangle_symbol);
        match frames.split_first() {
            Some(((function, Some(file), Some(line)), outer)) => {
                let function = function.clone().or_else(symbol);
                let inlined_into: Vec<String> =
                    outer.iter().filter_map(|(f, _, _)| f.clone()).collect();
                Site {
                    label: String::new(),
                    file: Some(file.clone()),
                    line: Some(*line),
                    function,
                    inlined_into,
                    callers: Vec::new(),
                    object,
                    offset: Some(offset),
                    resolution: Resolution::DebugInfo,
                    unavailable: None,
                }
                .labelled()
            }
            _ => match symbol() {
                Some(function) => Site {
                    label: String::new(),
                    file: None,
                    line: None,
                    function: Some(function),
                    inlined_into: Vec::new(),
                    callers: Vec::new(),
                    object,
                    offset: Some(offset),
                    resolution: Resolution::SymbolTable,
                    unavailable: Some("no line information (built without -g?)".into()),
                }
                .labelled(),
                None => Site::unavailable(
                    short,
                    object,
                    Some(offset),
                    "no line information and no symbol for this address",
                ),
            },
        }
    }
}

/// The last path component.
pub(super) fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn demangle_symbol(name: &str) -> String {
    addr2line::demangle_auto(name.into(), None).into_owned()
}

/// Opens an object: its segments, and a loader over the file that holds its DWARF.
fn open(path: &Path) -> Result<Loaded, String> {
    let shown = path.display();
    // A path named by the trace: never a fifo (opening it would block) or a device.
    let (file, _) = open_input(path, Accept::File).map_err(|e| match e {
        // No folder of the search path held it either. Short: the text report cuts a
        // note at its width, and the note names the object already.
        InputError::Io { cause, .. } if cause.kind() == std::io::ErrorKind::NotFound => {
            format!("not found ({SYMBOL_PATH_VAR} names folders holding a copy)")
        }
        // Short, as above.
        InputError::NotRegular { kind, .. } => format!("{kind}, not an object file"),
        other => format!("cannot open {other}"),
    })?;
    // SAFETY: the map is read only and dropped before this function returns; a file
    // truncated meanwhile makes the parse below fail or read zeros, not misbehave.
    let data = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("{shown}: {e}"))?;
    let obj =
        object::File::parse(&*data).map_err(|e| format!("{shown} is not an object file: {e}"))?;
    let segments: Vec<Segment> = obj
        .segments()
        .map(|s| {
            let (offset, size) = s.file_range();
            Segment {
                offset,
                size,
                address: s.address(),
            }
        })
        .collect();
    let has_dwarf = obj
        .section_by_name(".debug_info")
        .is_some_and(|s| s.size() > 0);
    let dwarf_file = if has_dwarf {
        path.to_path_buf()
    } else {
        debug_file(path, &obj).unwrap_or_else(|| path.to_path_buf())
    };
    let loader = addr2line::Loader::new(&dwarf_file)
        .map_err(|e| format!("reading {}: {e}", dwarf_file.display()))?;
    Ok(Loaded { segments, loader })
}

/// The separate debug file of an object without DWARF, where GDB would find it: by
/// build-id under `/usr/lib/debug/.build-id/`, then by `.gnu_debuglink` name beside the
/// object, in its `.debug/` folder, and under `/usr/lib/debug/<its folder>/`. A debug
/// file whose build-id differs from the object's belongs to another build: it is not
/// used, since its lines would be wrong.
fn debug_file(path: &Path, obj: &object::File<'_>) -> Option<PathBuf> {
    let build_id = obj.build_id().ok().flatten().filter(|id| id.len() > 1);
    if let Some(id) = build_id {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let p = Path::new(DEBUG_DIR)
            .join(".build-id")
            .join(&hex[..2])
            .join(format!("{}.debug", &hex[2..]));
        if p.is_file() {
            return Some(p);
        }
    }
    let (name, _crc) = obj.gnu_debuglink().ok().flatten()?;
    let name = std::str::from_utf8(name).ok()?;
    let dir = path.parent()?;
    let candidates = [
        dir.join(name),
        dir.join(".debug").join(name),
        Path::new(DEBUG_DIR)
            .join(dir.strip_prefix("/").unwrap_or(dir))
            .join(name),
    ];
    candidates
        .into_iter()
        .find(|c| c.as_path() != path && c.is_file() && same_build(c, build_id))
}

/// True unless both the object and the file at `candidate` carry build-ids, and they
/// differ.
fn same_build(candidate: &Path, build_id: Option<&[u8]>) -> bool {
    let Some(want) = build_id else {
        return true;
    };
    let Ok((file, _)) = open_input(candidate, Accept::File) else {
        return false;
    };
    // SAFETY: read only, and dropped before returning.
    let Ok(data) = (unsafe { memmap2::Mmap::map(&file) }) else {
        return false;
    };
    match object::File::parse(&*data).map(|o| o.build_id()) {
        Ok(Ok(Some(got))) => got == want,
        Ok(Ok(None)) => true,
        _ => false,
    }
}
