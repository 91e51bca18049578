//! Writing an archive's global definitions: every string they name defined first,
//! then each kind of definition in the order references need.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::defs::{AttributeType, Definitions, Property};
use crate::ffi::{c_string, check};
use crate::sys;
use crate::Result;

/// Interns the definitions' strings.
#[derive(Default)]
struct Strings {
    refs: HashMap<String, u32>,
    order: Vec<String>,
}

impl Strings {
    fn of(&mut self, s: &str) -> u32 {
        if let Some(r) = self.refs.get(s) {
            return *r;
        }
        let r = self.order.len() as u32;
        self.refs.insert(s.to_string(), r);
        self.order.push(s.to_string());
        r
    }
}

fn or_undefined(r: Option<u32>) -> u32 {
    r.unwrap_or(sys::UNDEFINED_U32)
}

/// Writes every global definition, strings first.
///
/// # Safety
/// `g` is the archive's open global definition writer.
pub(crate) unsafe fn write_globals(
    path: &Path,
    g: *mut sys::OTF2_GlobalDefWriter,
    defs: &Definitions,
    events: &BTreeMap<u64, u64>,
) -> Result<()> {
    let mut s = Strings::default();
    // Every string, referenced in the order below, interned first.
    let mut text = |t: &str| s.of(t);
    let attrs: Vec<_> = defs
        .attributes
        .iter()
        .map(|(r, a)| (*r, text(&a.name), text(&a.description), a.kind))
        .collect();
    let nodes: Vec<_> = defs
        .system_tree
        .iter()
        .map(|(r, n)| (*r, text(&n.name), text(&n.class_name), n.parent))
        .collect();
    let lgs: Vec<_> = defs
        .location_groups
        .iter()
        .map(|(r, l)| (*r, text(&l.name), l.kind, l.system_tree_parent))
        .collect();
    let locs: Vec<_> = defs
        .locations
        .iter()
        .map(|(r, l)| {
            (
                *r,
                text(&l.name),
                l,
                events.get(r).copied().unwrap_or(l.events),
            )
        })
        .collect();
    let regions: Vec<_> = defs
        .regions
        .iter()
        .map(|(r, x)| {
            let names = (text(&x.name), text(&x.canonical_name), text(&x.description));
            (*r, names, text(&x.source_file), x)
        })
        .collect();
    let groups: Vec<_> = defs
        .groups
        .iter()
        .map(|(r, x)| (*r, text(&x.name), x))
        .collect();
    let comms: Vec<_> = defs
        .comms
        .iter()
        .map(|(r, x)| (*r, text(&x.name), x))
        .collect();
    let places: Vec<_> = defs
        .source_code_locations
        .iter()
        .map(|(r, x)| (*r, text(&x.file), x.line))
        .collect();
    let wins: Vec<_> = defs
        .rma_wins
        .iter()
        .map(|(r, x)| (*r, text(&x.name), x))
        .collect();
    let mut props = Vec::new();
    for (group, named) in &defs.group_properties {
        for (name, value) in named {
            let value = match value {
                Property::Text(t) => Some((sys::OTF2_TYPE_STRING, u64::from(text(t)))),
                Property::U64(v) => Some((sys::OTF2_TYPE_UINT64, *v)),
                Property::Other => None,
            };
            if let Some(v) = value {
                props.push((*group, text(name), v));
            }
        }
    }
    let c = &defs.clock;
    // SAFETY (whole block): `g` is open; every pointer passed lives across the call.
    unsafe {
        check(
            path,
            "OTF2_GlobalDefWriter_WriteClockProperties",
            sys::OTF2_GlobalDefWriter_WriteClockProperties(
                g,
                c.timer_resolution,
                c.global_offset,
                c.trace_length,
                c.realtime_ns.unwrap_or(sys::UNDEFINED_U64),
            ),
        )?;
        for (i, t) in s.order.iter().enumerate() {
            let t = c_string(t);
            check(
                path,
                "OTF2_GlobalDefWriter_WriteString",
                sys::OTF2_GlobalDefWriter_WriteString(g, i as u32, t.as_ptr()),
            )?;
        }
        for (r, name, description, kind) in attrs {
            let kind = match kind {
                AttributeType::U64 => sys::OTF2_TYPE_UINT64,
                AttributeType::I64 => sys::OTF2_TYPE_INT64,
                AttributeType::SourceCodeLocation => sys::OTF2_TYPE_SOURCE_CODE_LOCATION,
                AttributeType::Other(k) => k as sys::OTF2_Type_enum,
            };
            check(
                path,
                "OTF2_GlobalDefWriter_WriteAttribute",
                sys::OTF2_GlobalDefWriter_WriteAttribute(g, r, name, description, kind as u8),
            )?;
        }
        for (r, name, class, parent) in nodes {
            check(
                path,
                "OTF2_GlobalDefWriter_WriteSystemTreeNode",
                sys::OTF2_GlobalDefWriter_WriteSystemTreeNode(
                    g,
                    r,
                    name,
                    class,
                    or_undefined(parent),
                ),
            )?;
        }
        for (r, name, kind, parent) in lgs {
            check(
                path,
                "OTF2_GlobalDefWriter_WriteLocationGroup",
                sys::OTF2_GlobalDefWriter_WriteLocationGroup(
                    g,
                    r,
                    name,
                    kind,
                    or_undefined(parent),
                    sys::UNDEFINED_U32,
                ),
            )?;
        }
        for (r, name, l, n) in locs {
            check(
                path,
                "OTF2_GlobalDefWriter_WriteLocation",
                sys::OTF2_GlobalDefWriter_WriteLocation(g, r, name, l.kind, n, l.group),
            )?;
        }
        for (r, (name, canonical, description), file, x) in regions {
            check(
                path,
                "OTF2_GlobalDefWriter_WriteRegion",
                sys::OTF2_GlobalDefWriter_WriteRegion(
                    g,
                    r,
                    name,
                    canonical,
                    description,
                    x.role,
                    x.paradigm,
                    sys::OTF2_REGION_FLAG_NONE as sys::OTF2_RegionFlag,
                    file,
                    x.begin_line,
                    x.end_line,
                ),
            )?;
        }
        for (r, name, x) in groups {
            check(
                path,
                "OTF2_GlobalDefWriter_WriteGroup",
                sys::OTF2_GlobalDefWriter_WriteGroup(
                    g,
                    r,
                    name,
                    x.kind,
                    x.paradigm,
                    sys::OTF2_GROUP_FLAG_NONE as sys::OTF2_GroupFlag,
                    x.members.len() as u32,
                    x.members.as_ptr(),
                ),
            )?;
        }
        for (r, name, x) in comms {
            check(
                path,
                "OTF2_GlobalDefWriter_WriteComm",
                sys::OTF2_GlobalDefWriter_WriteComm(
                    g,
                    r,
                    name,
                    x.group,
                    or_undefined(x.parent),
                    sys::OTF2_COMM_FLAG_NONE as sys::OTF2_CommFlag,
                ),
            )?;
        }
        for (r, file, line) in places {
            check(
                path,
                "OTF2_GlobalDefWriter_WriteSourceCodeLocation",
                sys::OTF2_GlobalDefWriter_WriteSourceCodeLocation(g, r, file, line),
            )?;
        }
        for (r, name, x) in wins {
            check(
                path,
                "OTF2_GlobalDefWriter_WriteRmaWin",
                sys::OTF2_GlobalDefWriter_WriteRmaWin(g, r, name, x.comm, x.flags),
            )?;
        }
        for (group, name, (kind, v)) in props {
            let mut value: sys::OTF2_AttributeValue = std::mem::zeroed();
            if kind == sys::OTF2_TYPE_STRING {
                value.stringRef = v as u32;
            } else {
                value.uint64 = v;
            }
            check(
                path,
                "OTF2_GlobalDefWriter_WriteLocationGroupProperty",
                sys::OTF2_GlobalDefWriter_WriteLocationGroupProperty(
                    g, group, name, kind as u8, value,
                ),
            )?;
        }
    }
    Ok(())
}
