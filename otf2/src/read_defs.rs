//! Reading an archive's global definitions, and each location's clock offsets, into
//! [`Definitions`]: the library hands them to callbacks with strings by reference, so
//! they are gathered as they come and resolved once every string is known.

use std::collections::HashMap;
use std::os::raw::c_void;
use std::path::Path;

use crate::defs::{
    Attribute, AttributeType, ClockOffset, ClockProperties, Comm, Definitions, Group, Location,
    LocationGroup, Property, Region, RmaWin, SourceCodeLocation, SystemTreeNode,
};
use crate::ffi::{check, text};
use crate::sys;
use crate::Result;

/// Definitions as the callbacks give them: strings by reference.
#[derive(Default)]
struct Raw {
    strings: HashMap<u32, String>,
    defs: Definitions,
    /// Names of regions, attributes... still as string references, resolved at the end.
    names: Vec<(Named, u32)>,
    props: Vec<(u32, u32, RawProperty)>,
}

enum RawProperty {
    Text(u32),
    U64(u64),
    Other,
}

/// Which string of which definition a reference fills.
#[derive(Clone, Copy)]
enum Named {
    RegionName(u32),
    RegionCanonical(u32),
    RegionDescription(u32),
    RegionFile(u32),
    NodeName(u32),
    NodeClass(u32),
    GroupOfLocations(u32),
    Location(u64),
    Group(u32),
    Comm(u32),
    RmaWin(u32),
    SourceFile(u32),
    AttributeName(u32),
    AttributeDescription(u32),
}

fn defined(r: u32) -> Option<u32> {
    (r != sys::UNDEFINED_U32).then_some(r)
}

impl Raw {
    fn resolve(mut self) -> Definitions {
        let s = |r: u32| self.strings.get(&r).cloned().unwrap_or_default();
        let d = &mut self.defs;
        for (named, r) in self.names.iter().copied() {
            let t = s(r);
            match named {
                Named::RegionName(x) => d.regions.entry(x).or_default().name = t,
                Named::RegionCanonical(x) => d.regions.entry(x).or_default().canonical_name = t,
                Named::RegionDescription(x) => d.regions.entry(x).or_default().description = t,
                Named::RegionFile(x) => d.regions.entry(x).or_default().source_file = t,
                Named::NodeName(x) => d
                    .system_tree
                    .get_mut(&x)
                    .into_iter()
                    .for_each(|n| n.name = t.clone()),
                Named::NodeClass(x) => d
                    .system_tree
                    .get_mut(&x)
                    .into_iter()
                    .for_each(|n| n.class_name = t.clone()),
                Named::GroupOfLocations(x) => d
                    .location_groups
                    .get_mut(&x)
                    .into_iter()
                    .for_each(|n| n.name = t.clone()),
                Named::Location(x) => d
                    .locations
                    .get_mut(&x)
                    .into_iter()
                    .for_each(|n| n.name = t.clone()),
                Named::Group(x) => d
                    .groups
                    .get_mut(&x)
                    .into_iter()
                    .for_each(|n| n.name = t.clone()),
                Named::Comm(x) => d
                    .comms
                    .get_mut(&x)
                    .into_iter()
                    .for_each(|n| n.name = t.clone()),
                Named::RmaWin(x) => d
                    .rma_wins
                    .get_mut(&x)
                    .into_iter()
                    .for_each(|n| n.name = t.clone()),
                Named::SourceFile(x) => d
                    .source_code_locations
                    .get_mut(&x)
                    .into_iter()
                    .for_each(|n| n.file = t.clone()),
                Named::AttributeName(x) => d
                    .attributes
                    .get_mut(&x)
                    .into_iter()
                    .for_each(|n| n.name = t.clone()),
                Named::AttributeDescription(x) => d
                    .attributes
                    .get_mut(&x)
                    .into_iter()
                    .for_each(|n| n.description = t.clone()),
            }
        }
        for (group, name, value) in self.props.drain(..) {
            let value = match value {
                RawProperty::Text(r) => Property::Text(s(r)),
                RawProperty::U64(v) => Property::U64(v),
                RawProperty::Other => Property::Other,
            };
            d.group_properties
                .entry(group)
                .or_default()
                .insert(s(name), value);
        }
        self.defs
    }
}

/// The `Raw` behind a callback's user data.
///
/// # Safety
/// `user` is the `&mut Raw` registered with the callbacks.
unsafe fn raw<'a>(user: *mut c_void) -> &'a mut Raw {
    // SAFETY: the caller's promise.
    unsafe { &mut *user.cast::<Raw>() }
}

const OK: sys::OTF2_CallbackCode = sys::OTF2_CALLBACK_SUCCESS as sys::OTF2_CallbackCode;

unsafe extern "C" fn on_clock(
    user: *mut c_void,
    res: u64,
    offset: u64,
    length: u64,
    real: u64,
) -> sys::OTF2_CallbackCode {
    // SAFETY: registered with a `Raw`.
    let r = unsafe { raw(user) };
    r.defs.clock = ClockProperties {
        timer_resolution: res,
        global_offset: offset,
        trace_length: length,
        realtime_ns: (real != sys::UNDEFINED_U64).then_some(real),
    };
    OK
}

unsafe extern "C" fn on_string(
    user: *mut c_void,
    me: u32,
    s: *const std::os::raw::c_char,
) -> sys::OTF2_CallbackCode {
    // SAFETY: registered with a `Raw`; the library passes a C string.
    let (r, t) = unsafe { (raw(user), text(s)) };
    r.strings.insert(me, t);
    OK
}

unsafe extern "C" fn on_attribute(
    user: *mut c_void,
    me: u32,
    name: u32,
    description: u32,
    kind: u8,
) -> sys::OTF2_CallbackCode {
    // SAFETY: registered with a `Raw`.
    let r = unsafe { raw(user) };
    let kind = match u32::from(kind) {
        k if k == sys::OTF2_TYPE_UINT64 => AttributeType::U64,
        k if k == sys::OTF2_TYPE_INT64 => AttributeType::I64,
        k if k == sys::OTF2_TYPE_SOURCE_CODE_LOCATION => AttributeType::SourceCodeLocation,
        _ => AttributeType::Other(kind),
    };
    r.defs.attributes.insert(
        me,
        Attribute {
            name: String::new(),
            description: String::new(),
            kind,
        },
    );
    r.names.push((Named::AttributeName(me), name));
    r.names.push((Named::AttributeDescription(me), description));
    OK
}

unsafe extern "C" fn on_node(
    user: *mut c_void,
    me: u32,
    name: u32,
    class: u32,
    parent: u32,
) -> sys::OTF2_CallbackCode {
    // SAFETY: registered with a `Raw`.
    let r = unsafe { raw(user) };
    r.defs.system_tree.insert(
        me,
        SystemTreeNode {
            name: String::new(),
            class_name: String::new(),
            parent: defined(parent),
        },
    );
    r.names.push((Named::NodeName(me), name));
    r.names.push((Named::NodeClass(me), class));
    OK
}

unsafe extern "C" fn on_location_group(
    user: *mut c_void,
    me: u32,
    name: u32,
    kind: u8,
    parent: u32,
    _creator: u32,
) -> sys::OTF2_CallbackCode {
    // SAFETY: registered with a `Raw`.
    let r = unsafe { raw(user) };
    r.defs.location_groups.insert(
        me,
        LocationGroup {
            name: String::new(),
            kind,
            system_tree_parent: defined(parent),
        },
    );
    r.names.push((Named::GroupOfLocations(me), name));
    OK
}

unsafe extern "C" fn on_location(
    user: *mut c_void,
    me: u64,
    name: u32,
    kind: u8,
    events: u64,
    group: u32,
) -> sys::OTF2_CallbackCode {
    // SAFETY: registered with a `Raw`.
    let r = unsafe { raw(user) };
    r.defs.locations.insert(
        me,
        Location {
            name: String::new(),
            kind,
            events,
            group,
        },
    );
    r.names.push((Named::Location(me), name));
    OK
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_region(
    user: *mut c_void,
    me: u32,
    name: u32,
    canonical: u32,
    description: u32,
    role: u8,
    paradigm: u8,
    _flags: u32,
    file: u32,
    begin: u32,
    end: u32,
) -> sys::OTF2_CallbackCode {
    // SAFETY: registered with a `Raw`.
    let r = unsafe { raw(user) };
    let region = Region {
        role,
        paradigm,
        begin_line: begin,
        end_line: end,
        ..Region::default()
    };
    r.defs.regions.insert(me, region);
    r.names.push((Named::RegionName(me), name));
    r.names.push((Named::RegionCanonical(me), canonical));
    r.names.push((Named::RegionDescription(me), description));
    r.names.push((Named::RegionFile(me), file));
    OK
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_group(
    user: *mut c_void,
    me: u32,
    name: u32,
    kind: u8,
    paradigm: u8,
    _flags: u32,
    n: u32,
    members: *const u64,
) -> sys::OTF2_CallbackCode {
    // SAFETY: registered with a `Raw`; `members` holds `n` values.
    let (r, members) = unsafe {
        let m = if members.is_null() || n == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(members, n as usize)
        };
        (raw(user), m.to_vec())
    };
    r.defs.groups.insert(
        me,
        Group {
            name: String::new(),
            kind,
            paradigm,
            members,
        },
    );
    r.names.push((Named::Group(me), name));
    OK
}

unsafe extern "C" fn on_comm(
    user: *mut c_void,
    me: u32,
    name: u32,
    group: u32,
    parent: u32,
    _flags: u32,
) -> sys::OTF2_CallbackCode {
    // SAFETY: registered with a `Raw`.
    let r = unsafe { raw(user) };
    r.defs.comms.insert(
        me,
        Comm {
            name: String::new(),
            group,
            parent: defined(parent),
        },
    );
    r.names.push((Named::Comm(me), name));
    OK
}

unsafe extern "C" fn on_rma_win(
    user: *mut c_void,
    me: u32,
    name: u32,
    comm: u32,
    flags: u32,
) -> sys::OTF2_CallbackCode {
    // SAFETY: registered with a `Raw`.
    let r = unsafe { raw(user) };
    r.defs.rma_wins.insert(
        me,
        RmaWin {
            name: String::new(),
            comm,
            flags,
        },
    );
    r.names.push((Named::RmaWin(me), name));
    OK
}

unsafe extern "C" fn on_source_code_location(
    user: *mut c_void,
    me: u32,
    file: u32,
    line: u32,
) -> sys::OTF2_CallbackCode {
    // SAFETY: registered with a `Raw`.
    let r = unsafe { raw(user) };
    r.defs.source_code_locations.insert(
        me,
        SourceCodeLocation {
            file: String::new(),
            line,
        },
    );
    r.names.push((Named::SourceFile(me), file));
    OK
}

unsafe extern "C" fn on_property(
    user: *mut c_void,
    group: u32,
    name: u32,
    kind: u8,
    value: sys::OTF2_AttributeValue,
) -> sys::OTF2_CallbackCode {
    // SAFETY: registered with a `Raw`; the union's member is the one `kind` names.
    let (r, value) = unsafe {
        let v = match u32::from(kind) {
            k if k == sys::OTF2_TYPE_STRING => RawProperty::Text(value.stringRef),
            k if k == sys::OTF2_TYPE_UINT64 => RawProperty::U64(value.uint64),
            _ => RawProperty::Other,
        };
        (raw(user), v)
    };
    r.props.push((group, name, value));
    OK
}

/// Reads the global definitions of the open `reader`.
///
/// # Safety
/// `reader` is an open OTF2 reader.
pub(crate) unsafe fn read_globals(
    path: &Path,
    reader: *mut sys::OTF2_Reader,
) -> Result<Definitions> {
    let mut raw = Raw::default();
    // SAFETY (whole block): the reader is open; `raw` outlives the reading.
    unsafe {
        let g = sys::OTF2_Reader_GetGlobalDefReader(reader);
        if g.is_null() {
            return Err(crate::Error::Invalid {
                path: path.to_path_buf(),
                reason: "no global definitions (the .def file is missing or unreadable)".into(),
            });
        }
        let cbs = sys::OTF2_GlobalDefReaderCallbacks_New();
        sys::OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cbs, Some(on_clock));
        sys::OTF2_GlobalDefReaderCallbacks_SetStringCallback(cbs, Some(on_string));
        sys::OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(cbs, Some(on_attribute));
        sys::OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeCallback(cbs, Some(on_node));
        sys::OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(cbs, Some(on_location_group));
        sys::OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cbs, Some(on_location));
        sys::OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cbs, Some(on_region));
        sys::OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cbs, Some(on_group));
        sys::OTF2_GlobalDefReaderCallbacks_SetCommCallback(cbs, Some(on_comm));
        sys::OTF2_GlobalDefReaderCallbacks_SetRmaWinCallback(cbs, Some(on_rma_win));
        sys::OTF2_GlobalDefReaderCallbacks_SetSourceCodeLocationCallback(
            cbs,
            Some(on_source_code_location),
        );
        sys::OTF2_GlobalDefReaderCallbacks_SetLocationGroupPropertyCallback(cbs, Some(on_property));
        let code = sys::OTF2_Reader_RegisterGlobalDefCallbacks(
            reader,
            g,
            cbs,
            (&mut raw as *mut Raw).cast(),
        );
        sys::OTF2_GlobalDefReaderCallbacks_Delete(cbs);
        check(path, "OTF2_Reader_RegisterGlobalDefCallbacks", code)?;
        let mut n = 0u64;
        check(
            path,
            "OTF2_Reader_ReadAllGlobalDefinitions",
            sys::OTF2_Reader_ReadAllGlobalDefinitions(reader, g, &mut n),
        )?;
        check(
            path,
            "OTF2_Reader_CloseGlobalDefReader",
            sys::OTF2_Reader_CloseGlobalDefReader(reader, g),
        )?;
    }
    Ok(raw.resolve())
}

unsafe extern "C" fn on_offset(
    user: *mut c_void,
    time: u64,
    offset: i64,
    std_dev: f64,
) -> sys::OTF2_CallbackCode {
    // SAFETY: registered with a `Vec<ClockOffset>`.
    let v = unsafe { &mut *user.cast::<Vec<ClockOffset>>() };
    v.push(ClockOffset::new(time, offset, std_dev));
    OK
}

/// Reads the local definitions of `location` (its clock offsets); a location without
/// any has none.
///
/// # Safety
/// `reader` is open with its definition files open and `location` selected.
pub(crate) unsafe fn read_offsets(
    path: &Path,
    reader: *mut sys::OTF2_Reader,
    location: u64,
) -> Result<Vec<ClockOffset>> {
    let mut offsets: Vec<ClockOffset> = Vec::new();
    // SAFETY (whole block): as the caller promises; `offsets` outlives the reading.
    unsafe {
        let d = sys::OTF2_Reader_GetDefReader(reader, location);
        if d.is_null() {
            return Ok(offsets);
        }
        let cbs = sys::OTF2_DefReaderCallbacks_New();
        sys::OTF2_DefReaderCallbacks_SetClockOffsetCallback(cbs, Some(on_offset));
        let code = sys::OTF2_Reader_RegisterDefCallbacks(
            reader,
            d,
            cbs,
            (&mut offsets as *mut Vec<ClockOffset>).cast(),
        );
        sys::OTF2_DefReaderCallbacks_Delete(cbs);
        check(path, "OTF2_Reader_RegisterDefCallbacks", code)?;
        let mut n = 0u64;
        check(
            path,
            "OTF2_Reader_ReadAllLocalDefinitions",
            sys::OTF2_Reader_ReadAllLocalDefinitions(reader, d, &mut n),
        )?;
        check(
            path,
            "OTF2_Reader_CloseDefReader",
            sys::OTF2_Reader_CloseDefReader(reader, d),
        )?;
    }
    offsets.sort_by_key(|o| o.time);
    Ok(offsets)
}
