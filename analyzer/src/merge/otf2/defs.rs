//! The definitions of an archive overlap writes: the system tree of hosts, a process
//! per rank of the world (an empty one for a rank without a file, so that the world's
//! communication locations have every rank at its place) with a location per thread,
//! the communicators and their members, a region per MPI function and per compute
//! span's name, the RMA windows (each over the communicator it was created on) and the
//! groups their epochs name, overlap's attributes, and each rank's header, clock
//! synchronisations and footer as properties of its process
//! ([`crate::import::otf2::vocabulary`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use overlap_format::schema::{Op, SyncPhase};
use overlap_otf2::{
    location_group_type, location_type, paradigm, region_role, rma, Attribute, AttributeType,
    ClockOffset, ClockProperties, Comm, Definitions, Group, Location, LocationGroup, Property,
    Region, RmaWin, SourceCodeLocation, SystemTreeNode, SOURCE_CODE_LOCATION,
};
use serde::Serialize;

use super::named::Named;
use crate::import::otf2::vocabulary::{self as v, location, role_of, CallAttr};
use crate::model::RankTrace;

/// `OTF2_GroupType` values written.
const COMM_LOCATIONS: u8 = 4;
const COMM_GROUP: u8 = 5;

/// What a region stands for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum RegionKey {
    Call(Op),
    Compute(String),
}

/// A window the run's calls name: the communicator it was created over (the world's
/// when its creation was not recorded), and whether its creation allocated its memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Window {
    pub comm: u32,
    pub allocates: bool,
}

/// The definitions being gathered as the ranks are written.
pub(super) struct Builder {
    pub defs: Definitions,
    regions: HashMap<RegionKey, u32>,
    hosts: HashMap<String, u32>,
    /// Each communicator's members (world ranks, sorted): a member's rank in it is its
    /// place.
    members: BTreeMap<u32, Vec<u32>>,
    /// The run's first and last ticks.
    span: Option<(u64, u64)>,
    /// Real time at the first rank's epoch, and that epoch.
    realtime: Option<(u64, u64)>,
    /// The windows, by id (their `RmaWin` reference).
    windows: BTreeMap<u32, Window>,
    /// The groups of ranks the epochs name (`RmaGroupSync`), by their world ranks.
    rma_groups: HashMap<Vec<i32>, u32>,
    /// The source code locations calls were made at, by file and line.
    places: HashMap<SourceCodeLocation, u32>,
}

/// The reference of the attribute that names a call's source code location (after
/// overlap's own).
pub(super) const SOURCE_CODE_LOCATION_ATTR: u32 = CallAttr::ALL.len() as u32;

impl Builder {
    /// The definitions of a world of `world_size` ranks whose communicators have the
    /// members `comms`, with the windows `windows`.
    pub fn new(
        world_size: u32,
        comms: BTreeMap<u32, BTreeSet<u32>>,
        windows: BTreeMap<u32, Window>,
    ) -> Builder {
        let mut defs = Definitions::default();
        defs.system_tree.insert(
            0,
            SystemTreeNode {
                name: "overlap run".into(),
                class_name: "machine".into(),
                parent: None,
            },
        );
        for (i, a) in CallAttr::ALL.iter().enumerate() {
            let kind = if a.signed() {
                AttributeType::I64
            } else {
                AttributeType::U64
            };
            let description = "an argument of the MPI call, as overlap recorded it".to_string();
            defs.attributes.insert(
                i as u32,
                Attribute {
                    name: a.name().into(),
                    description,
                    kind,
                },
            );
        }
        defs.attributes.insert(
            SOURCE_CODE_LOCATION_ATTR,
            Attribute {
                name: SOURCE_CODE_LOCATION.into(),
                description: "where in the source the MPI call was made".into(),
                kind: AttributeType::SourceCodeLocation,
            },
        );
        for rank in 0..world_size {
            defs.location_groups.insert(
                rank,
                LocationGroup {
                    name: format!("MPI Rank {rank}"),
                    kind: location_group_type::PROCESS,
                    system_tree_parent: Some(0),
                },
            );
            defs.locations
                .insert(location(rank, 0), thread_location(rank, 0, None));
        }
        let world: Vec<u64> = (0..world_size).map(|r| location(r, 0)).collect();
        defs.groups.insert(
            0,
            Group {
                name: "MPI_COMM_WORLD's locations".into(),
                kind: COMM_LOCATIONS,
                paradigm: paradigm::MPI,
                members: world,
            },
        );
        let mut members: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        members.insert(0, (0..world_size).collect());
        for (comm, ranks) in comms {
            if comm != 0 {
                members.insert(comm, ranks.into_iter().collect());
            }
        }
        for (i, (comm, m)) in members.iter().enumerate() {
            let group = i as u32 + 1;
            let name = if *comm == 0 {
                "MPI_COMM_WORLD".to_string()
            } else {
                format!("communicator {comm}")
            };
            defs.groups.insert(
                group,
                Group {
                    name: name.clone(),
                    kind: COMM_GROUP,
                    paradigm: paradigm::MPI,
                    members: m.iter().map(|r| u64::from(*r)).collect(),
                },
            );
            let parent = (*comm != 0).then_some(0);
            defs.comms.insert(
                *comm,
                Comm {
                    name,
                    group,
                    parent,
                },
            );
        }
        let mut windows = windows;
        for (win, w) in windows.iter_mut() {
            if !members.contains_key(&w.comm) {
                // A communicator no call defined: the window is the world's.
                w.comm = 0;
            }
            defs.rma_wins.insert(
                *win,
                RmaWin {
                    name: format!("window {win}"),
                    comm: w.comm,
                    flags: rma::WIN_FLAG_CREATE_DESTROY_EVENTS,
                },
            );
        }
        Builder {
            defs,
            regions: HashMap::new(),
            hosts: HashMap::new(),
            members,
            span: None,
            realtime: None,
            windows,
            rma_groups: HashMap::new(),
            places: HashMap::new(),
        }
    }

    /// The source code location `file:line`, defined on first use.
    pub fn source_code_location(&mut self, file: &str, line: u32) -> u32 {
        let place = SourceCodeLocation {
            file: file.to_string(),
            line,
        };
        let next = self.places.len() as u32;
        *self.places.entry(place.clone()).or_insert_with(|| {
            self.defs.source_code_locations.insert(next, place);
            next
        })
    }

    /// Window `win` (defined, if no call was seen to create it, over the world).
    pub fn window(&self, win: u32) -> Window {
        self.windows.get(&win).copied().unwrap_or_default()
    }

    /// The number of ranks of communicator `comm`.
    pub fn comm_size(&self, comm: u32) -> u32 {
        self.members.get(&comm).map_or(0, |m| m.len() as u32)
    }

    /// The group (`COMM_GROUP`) of the world ranks `ranks`, defined on first use.
    pub fn rma_group(&mut self, ranks: &[i32]) -> u32 {
        if let Some(g) = self.rma_groups.get(ranks) {
            return *g;
        }
        let next = self.defs.groups.keys().max().map_or(0, |m| m + 1);
        let members = ranks
            .iter()
            .filter_map(|r| u64::try_from(*r).ok())
            .collect();
        self.defs.groups.insert(
            next,
            Group {
                name: format!("epoch group {}", self.rma_groups.len()),
                kind: COMM_GROUP,
                paradigm: paradigm::MPI,
                members,
            },
        );
        self.rma_groups.insert(ranks.to_vec(), next);
        next
    }

    /// The rank of world rank `peer` in communicator `comm` (undefined: `u32::MAX`).
    pub fn comm_rank(&self, comm: Option<u32>, peer: Option<i32>) -> u32 {
        let (Some(m), Some(p)) = (
            self.members.get(&comm.unwrap_or(0)),
            peer.and_then(|p| u32::try_from(p).ok()),
        ) else {
            return u32::MAX;
        };
        m.binary_search(&p).map_or(u32::MAX, |i| i as u32)
    }

    /// The region of `key`, defined on first use.
    pub fn region(&mut self, key: RegionKey) -> u32 {
        let next = self.regions.len() as u32;
        let defs = &mut self.defs;
        *self.regions.entry(key.clone()).or_insert_with(|| {
            let region = match key {
                RegionKey::Call(op) => Region {
                    name: op.mpi_name().into(),
                    canonical_name: op.mpi_name().into(),
                    role: role_of(op),
                    paradigm: paradigm::MPI,
                    ..Region::default()
                },
                RegionKey::Compute(name) => Region {
                    canonical_name: name.clone(),
                    name,
                    description: "a compute span".into(),
                    role: region_role::FUNCTION,
                    paradigm: paradigm::USER,
                    ..Region::default()
                },
            };
            defs.regions.insert(next, region);
            next
        })
    }

    /// The events of thread `tid` of `rank` span `first..=last` (ticks).
    pub fn saw(&mut self, first: u64, last: u64) {
        self.span = Some(match self.span {
            Some((a, b)) => (a.min(first), b.max(last)),
            None => (first, last),
        });
    }

    /// Defines rank `t`'s process, threads (with `counts` events each), properties and
    /// clock offsets. `own_clock`: the rank does not read rank 0's clock, so its
    /// measured offsets align it.
    pub fn rank<S>(
        &mut self,
        t: &RankTrace<S>,
        tids: &BTreeSet<u32>,
        own_clock: bool,
        named: &Named,
    ) {
        let rank = t.rank();
        let host = if t.header.host.is_empty() {
            "unknown host".to_string()
        } else {
            t.header.host.clone()
        };
        let next = self.hosts.len() as u32 + 1;
        let node = *self.hosts.entry(host.clone()).or_insert(next);
        self.defs.system_tree.entry(node).or_insert(SystemTreeNode {
            name: host,
            class_name: "node".into(),
            parent: Some(0),
        });
        if let Some(g) = self.defs.location_groups.get_mut(&rank) {
            g.system_tree_parent = Some(node);
        }
        for tid in tids {
            self.defs.locations.insert(
                location(rank, *tid),
                thread_location(rank, *tid, t.threads.get(tid)),
            );
        }
        if t.header.start_unix_ns > 0 && self.realtime.is_none_or(|(_, e)| t.header.epoch_ns < e) {
            self.realtime = Some((t.header.start_unix_ns, t.header.epoch_ns));
        }
        let mut props = BTreeMap::new();
        let mut keep = |name: &str, value: &dyn erased::Json| {
            if let Some(json) = value.json() {
                props.insert(name.to_string(), Property::Text(json));
            }
        };
        keep(v::HEADER, &t.header);
        keep(v::CLOCK_SYNCS, &t.syncs);
        keep(v::THREADS, &t.threads);
        if let Some(f) = &t.footer {
            keep(v::FOOTER, f);
        }
        if !t.sites.is_empty() {
            keep(v::SITES, &t.sites);
        }
        if let Some(c) = &t.call_counts {
            keep(v::CALL_COUNTS, c);
        }
        if !t.call_paths.is_empty() {
            keep(v::CALL_PATHS, &t.call_paths);
        }
        if !t.in_flight.is_empty() {
            keep(v::IN_FLIGHT, &t.in_flight);
        }
        if !named.buffers.values.is_empty() {
            keep(v::SPAN_BUFFERS, &named.buffers.values);
        }
        if !named.groups.values.is_empty() {
            keep(v::GROUPS, &named.groups.values);
        }
        if !named.regions.values.is_empty() {
            keep(v::REGIONS, &named.regions.values);
        }
        if t.damaged {
            props.insert(v::DAMAGED.into(), Property::Text("true".into()));
        }
        self.defs.group_properties.insert(rank, props);
        if own_clock {
            let offsets: Vec<ClockOffset> = [SyncPhase::Init, SyncPhase::Final]
                .into_iter()
                .filter_map(|p| t.syncs.iter().rev().find(|s| s.phase == p))
                .map(|s| {
                    let time = t.header.epoch_ns + s.local_ns;
                    ClockOffset::new(time, -s.offset_ns, s.error_ns as f64)
                })
                .collect();
            for tid in tids {
                self.defs
                    .clock_offsets
                    .insert(location(rank, *tid), offsets.clone());
            }
        }
    }

    /// The definitions, with the clock's properties.
    pub fn finish(mut self) -> Definitions {
        let (first, last) = self.span.unwrap_or((0, 0));
        self.defs.clock = ClockProperties {
            timer_resolution: 1_000_000_000,
            global_offset: first,
            trace_length: last - first,
            realtime_ns: self
                .realtime
                .map(|(unix, epoch)| unix.saturating_add(first.saturating_sub(epoch))),
        };
        self.defs
    }
}

fn thread_location(rank: u32, tid: u32, name: Option<&String>) -> Location {
    let name = match name {
        Some(n) => format!("rank {rank} {n}"),
        None => format!("rank {rank} thread {tid}"),
    };
    Location {
        name,
        kind: location_type::CPU_THREAD,
        events: 0,
        group: rank,
    }
}

/// JSON of what serializes, without naming its type.
mod erased {
    /// A value kept as JSON.
    pub trait Json {
        fn json(&self) -> Option<String>;
    }
    impl<T: super::Serialize> Json for T {
        fn json(&self) -> Option<String> {
            serde_json::to_string(self).ok()
        }
    }
}
