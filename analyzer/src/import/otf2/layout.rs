//! What an archive's definitions say of the run, in overlap's terms: which location is
//! which thread of which rank, each rank's header (kept by overlap's writer, else made
//! from the definitions), which region is which MPI call or compute, how a rank of a
//! communicator is a world rank, and how ticks become nanoseconds.
//!
//! Ranks: a location group of an overlap archive says its rank in its header; in other
//! archives (Score-P), a process's rank is the place of its first location in the
//! communication-locations group (`MPI_COMM_WORLD`'s), else its place among the
//! processes. Threads are numbered in their process by location reference.

use std::collections::{BTreeMap, HashMap};

use overlap_format::schema::{Header, Op, FORMAT_NAME, FORMAT_VERSION};
use overlap_otf2::{location_group_type, location_type, paradigm, Definitions, Property};

use super::vocabulary::{self as v, CallAttr};

/// Group kinds (`OTF2_GroupType`) the layout reads.
const COMM_LOCATIONS: u8 = 4;
const COMM_GROUP: u8 = 5;
const COMM_SELF: u8 = 6;

/// What a region is to overlap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum RegionKind {
    /// An MPI call overlap models.
    Call(Op),
    /// An MPI function overlap does not record (counted as such).
    Unrecorded(String),
    /// The program's own code: compute (its name, with its source line when known).
    Compute(String),
    /// Neither (the measurement system's own regions, OpenMP, threads...).
    Other,
}

/// A rank as the definitions describe it.
#[derive(Clone, Debug)]
pub(super) struct RankDef {
    /// Its header (kept, or made).
    pub header: Header,
    /// Its properties (empty in other writers' archives).
    pub props: BTreeMap<String, Property>,
    /// The location group.
    pub group: u32,
}

/// The definitions, read for overlap.
pub(super) struct Layout {
    /// True for an archive overlap wrote (its ranks have headers).
    pub ours: bool,
    /// Ranks by rank.
    pub ranks: BTreeMap<u32, RankDef>,
    /// Each thread location's rank and tid.
    pub threads: BTreeMap<u64, (u32, u32)>,
    /// Regions.
    pub regions: HashMap<u32, RegionKind>,
    /// overlap's attributes by reference.
    pub attrs: HashMap<u32, CallAttr>,
    /// Communicators: overlap's id and the world rank of each member, by reference.
    comms: HashMap<u32, Comm>,
    /// RMA windows: the communicator each was created over, by reference (overlap's
    /// window id).
    wins: HashMap<u32, u32>,
    /// Groups of ranks (`COMM_GROUP`, as an RMA epoch names them): their world ranks.
    rank_groups: HashMap<u32, Vec<i32>>,
    /// The attribute that names an event's source code location, if defined.
    pub source_attr: Option<u32>,
    /// Source code locations: file and line, by reference.
    pub places: HashMap<u32, (String, u32)>,
    /// Ticks per second.
    pub resolution: u64,
}

#[derive(Clone, Debug)]
struct Comm {
    id: u32,
    world: Vec<u32>,
    is_self: bool,
}

impl Layout {
    /// The layout of `defs`, the archive having been written by `creator`.
    pub fn of(defs: &Definitions, creator: &str, program: &str) -> Result<Layout, String> {
        if defs.clock.timer_resolution == 0 {
            return Err("its clock properties give no timer resolution".into());
        }
        let processes: Vec<u32> = defs
            .location_groups
            .iter()
            .filter(|(_, g)| g.kind == location_group_type::PROCESS)
            .map(|(r, _)| *r)
            .collect();
        // Rank by the world's communication locations (Score-P), else by place.
        let world_locations: Vec<u64> = defs
            .groups
            .values()
            .find(|g| g.kind == COMM_LOCATIONS)
            .map(|g| g.members.clone())
            .unwrap_or_default();
        let group_of = |l: u64| defs.locations.get(&l).map(|d| d.group);
        let mut ranks = BTreeMap::new();
        let mut ours = false;
        for (place, g) in processes.iter().enumerate() {
            let props = defs.group_properties.get(g).cloned().unwrap_or_default();
            let kept = match props.get(v::HEADER) {
                Some(Property::Text(json)) => {
                    Some(serde_json::from_str::<Header>(json).map_err(|e| {
                        format!("location group {g}: its {} is unreadable: {e}", v::HEADER)
                    })?)
                }
                _ => None,
            };
            let header = match kept {
                Some(h) => {
                    ours = true;
                    h
                }
                None => {
                    let rank = world_locations
                        .iter()
                        .position(|l| group_of(*l) == Some(*g))
                        .unwrap_or(place) as u32;
                    made_header(defs, *g, rank, processes.len() as u32, creator, program)
                }
            };
            ranks.insert(
                header.rank,
                RankDef {
                    header,
                    props,
                    group: *g,
                },
            );
        }
        if ours {
            // An overlap archive lists a rank without a file (missing) as a location
            // group without a header: it is no rank read.
            ranks.retain(|_, r| r.props.contains_key(v::HEADER));
        }
        let rank_of_group: HashMap<u32, u32> = ranks.iter().map(|(r, d)| (d.group, *r)).collect();
        let mut threads = BTreeMap::new();
        let mut next_tid: HashMap<u32, u32> = HashMap::new();
        for (l, d) in &defs.locations {
            if d.kind != location_type::CPU_THREAD && d.kind != location_type::UNKNOWN {
                continue;
            }
            let Some(rank) = rank_of_group.get(&d.group) else {
                continue;
            };
            let tid = if ours {
                (*l & 0xffff_ffff) as u32
            } else {
                let n = next_tid.entry(*rank).or_insert(0);
                *n += 1;
                *n - 1
            };
            threads.insert(*l, (*rank, tid));
        }
        let world_rank_at = |i: u64| -> u32 {
            world_locations
                .get(i as usize)
                .and_then(|l| group_of(*l))
                .and_then(|g| rank_of_group.get(&g).copied())
                .unwrap_or(i as u32)
        };
        let size = ranks.values().map(|r| r.header.size).max().unwrap_or(0);
        let mut comms = HashMap::new();
        let spare = defs.comms.keys().max().map_or(0, |m| m + 1);
        for (r, c) in &defs.comms {
            let group = defs.groups.get(&c.group);
            let is_self = group.is_some_and(|g| g.kind == COMM_SELF);
            let world: Vec<u32> = group
                .map(|g| g.members.iter().map(|m| world_rank_at(*m)).collect())
                .unwrap_or_default();
            let is_world = !is_self && world.len() as u32 == size && c.parent.is_none();
            let id = if ours {
                *r
            } else if is_world {
                0
            } else if *r == 0 {
                spare
            } else {
                *r
            };
            comms.insert(*r, Comm { id, world, is_self });
        }
        let wins = defs.rma_wins.iter().map(|(r, w)| (*r, w.comm)).collect();
        let rank_groups = defs
            .groups
            .iter()
            .filter(|(_, g)| g.kind == COMM_GROUP)
            .map(|(r, g)| {
                let world = g.members.iter().map(|m| world_rank_at(*m) as i32);
                (*r, world.collect())
            })
            .collect();
        let regions = defs
            .regions
            .iter()
            .map(|(r, x)| (*r, region_kind(x)))
            .collect();
        let attrs = defs
            .attributes
            .iter()
            .filter_map(|(r, a)| CallAttr::named(&a.name).map(|c| (*r, c)))
            .collect();
        Ok(Layout {
            ours,
            ranks,
            threads,
            regions,
            attrs,
            comms,
            wins,
            rank_groups,
            source_attr: defs.attribute_named(overlap_otf2::SOURCE_CODE_LOCATION),
            places: (defs.source_code_locations.iter())
                .map(|(r, p)| (*r, (p.file.clone(), p.line)))
                .collect(),
            resolution: defs.clock.timer_resolution,
        })
    }

    /// The communicator id of `comm`, and the world rank of its rank `r` as seen by
    /// `me` (`None`: undefined, or not a member).
    pub fn world(&self, comm: u32, r: u32, me: u32) -> (Option<u32>, Option<i32>) {
        let Some(c) = self.comms.get(&comm) else {
            return (None, None);
        };
        if r == u32::MAX {
            return (Some(c.id), None);
        }
        let w = if c.is_self {
            (r == 0).then_some(me)
        } else {
            c.world.get(r as usize).copied()
        };
        (Some(c.id), w.map(|w| w as i32))
    }

    /// The communicator id of window `win`'s communicator, and the world rank of its
    /// rank `r` as seen by `me` (`None`: an undefined window, or no rank of it).
    pub fn win_world(&self, win: u32, r: u32, me: u32) -> (Option<u32>, Option<i32>) {
        match self.wins.get(&win) {
            Some(comm) => self.world(*comm, r, me),
            None => (None, None),
        }
    }

    /// The world ranks of group `group` (empty when it is no group of ranks).
    pub fn rank_group(&self, group: u32) -> Vec<i32> {
        self.rank_groups.get(&group).cloned().unwrap_or_default()
    }

    /// Nanoseconds from `epoch` (ticks) to `ticks`.
    pub fn ns(&self, ticks: u64, epoch: u64) -> u64 {
        let d = u128::from(ticks.saturating_sub(epoch));
        u64::try_from(d * 1_000_000_000 / u128::from(self.resolution)).unwrap_or(u64::MAX)
    }

    /// Nanoseconds of `ticks` ticks (signed).
    pub fn ns_signed(&self, ticks: i64) -> i64 {
        let ns = i128::from(ticks) * 1_000_000_000 / i128::from(self.resolution);
        i64::try_from(ns).unwrap_or(if ticks < 0 { i64::MIN } else { i64::MAX })
    }
}

/// What a region is: an MPI call overlap knows, another MPI function, compute, or
/// another paradigm's.
fn region_kind(r: &overlap_otf2::Region) -> RegionKind {
    if let Some(op) = Op::from_mpi_name(&r.name) {
        return RegionKind::Call(op);
    }
    if r.paradigm == paradigm::MPI || r.name.starts_with("MPI_") {
        return RegionKind::Unrecorded(r.name.clone());
    }
    if ![paradigm::UNKNOWN, paradigm::USER, paradigm::COMPILER].contains(&r.paradigm) {
        return RegionKind::Other;
    }
    let name = if r.source_file.is_empty() {
        r.name.clone()
    } else if r.begin_line > 0 {
        format!("{} ({}:{})", r.name, r.source_file, r.begin_line)
    } else {
        format!("{} ({})", r.name, r.source_file)
    };
    RegionKind::Compute(name)
}

/// The header of a rank of another writer's archive, from the definitions: its host is
/// its system tree node's name; its epoch the archive's first tick (every rank's, so
/// that ranks without clock offsets share one clock).
fn made_header(
    defs: &Definitions,
    group: u32,
    rank: u32,
    size: u32,
    creator: &str,
    program: &str,
) -> Header {
    let host = defs
        .location_groups
        .get(&group)
        .and_then(|g| g.system_tree_parent)
        .and_then(|n| defs.system_tree.get(&n))
        .map(|n| n.name.clone())
        .unwrap_or_default();
    let res = u128::from(defs.clock.timer_resolution.max(1));
    let epoch_ns =
        u64::try_from(u128::from(defs.clock.global_offset) * 1_000_000_000 / res).unwrap_or(0);
    let mut params = overlap_format::schema::Params::new();
    if !creator.is_empty() {
        params.insert(
            "otf2_creator".into(),
            overlap_format::schema::ParamValue::Text(creator.into()),
        );
    }
    Header {
        format: FORMAT_NAME.to_string(),
        format_version: FORMAT_VERSION,
        rank,
        size,
        host,
        os_pid: 0,
        epoch_ns,
        clock_domain: String::new(),
        program: program.to_string(),
        params,
        run_id: String::new(),
        start_unix_ns: defs.clock.realtime_ns.unwrap_or(0),
    }
}
