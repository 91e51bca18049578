//! An archive's definitions as plain Rust data: what is written into the global
//! definitions, and what is read back from them (strings resolved, references kept as
//! OTF2 numbers them). The numeric kinds are OTF2's own values (checked against the
//! headers in the tests).

use std::collections::BTreeMap;

/// OTF2's `OTF2_CollectiveOp` values.
pub mod collective_op {
    #![allow(missing_docs)]
    pub const BARRIER: u8 = 0;
    pub const BCAST: u8 = 1;
    pub const GATHER: u8 = 2;
    pub const GATHERV: u8 = 3;
    pub const SCATTER: u8 = 4;
    pub const SCATTERV: u8 = 5;
    pub const ALLGATHER: u8 = 6;
    pub const ALLGATHERV: u8 = 7;
    pub const ALLTOALL: u8 = 8;
    pub const ALLTOALLV: u8 = 9;
    pub const ALLTOALLW: u8 = 10;
    pub const ALLREDUCE: u8 = 11;
    pub const REDUCE: u8 = 12;
    pub const REDUCE_SCATTER: u8 = 13;
    pub const SCAN: u8 = 14;
    pub const EXSCAN: u8 = 15;
    pub const REDUCE_SCATTER_BLOCK: u8 = 16;
    pub const CREATE_HANDLE: u8 = 17;
    pub const DESTROY_HANDLE: u8 = 18;
    pub const CREATE_HANDLE_AND_ALLOCATE: u8 = 21;
    pub const DESTROY_HANDLE_AND_DEALLOCATE: u8 = 22;
}

/// OTF2's values of the RMA records' kinds: `OTF2_RmaSyncLevel` (bits),
/// `OTF2_LockType`, `OTF2_RmaAtomicType`, `OTF2_RmaSyncType`, and the `RmaWin` flag
/// that says its creation and destruction are recorded.
pub mod rma {
    #![allow(missing_docs)]
    pub const SYNC_LEVEL_NONE: u32 = 0;
    pub const SYNC_LEVEL_PROCESS: u32 = 1;
    pub const SYNC_LEVEL_MEMORY: u32 = 2;
    pub const LOCK_EXCLUSIVE: u8 = 0;
    pub const LOCK_SHARED: u8 = 1;
    pub const ATOMIC_ACCUMULATE: u8 = 0;
    pub const ATOMIC_COMPARE_AND_SWAP: u8 = 3;
    pub const ATOMIC_FETCH_AND_ACCUMULATE: u8 = 7;
    pub const SYNC_TYPE_MEMORY: u8 = 0;
    pub const WIN_FLAG_CREATE_DESTROY_EVENTS: u32 = 1;
}

/// OTF2's `OTF2_Paradigm` values used here.
pub mod paradigm {
    #![allow(missing_docs)]
    pub const UNKNOWN: u8 = 0;
    pub const USER: u8 = 1;
    pub const COMPILER: u8 = 2;
    pub const MPI: u8 = 4;
    pub const MEASUREMENT_SYSTEM: u8 = 6;
}

/// OTF2's `OTF2_RegionRole` values used here.
pub mod region_role {
    #![allow(missing_docs)]
    pub const UNKNOWN: u8 = 0;
    pub const FUNCTION: u8 = 1;
    pub const WRAPPER: u8 = 2;
    pub const CODE: u8 = 4;
    pub const BARRIER: u8 = 15;
    pub const COLL_ONE2ALL: u8 = 23;
    pub const COLL_ALL2ONE: u8 = 24;
    pub const COLL_ALL2ALL: u8 = 25;
    pub const COLL_OTHER: u8 = 26;
    pub const POINT2POINT: u8 = 28;
    pub const RMA: u8 = 29;
}

/// OTF2's `OTF2_LocationGroupType` values.
pub mod location_group_type {
    #![allow(missing_docs)]
    pub const UNKNOWN: u8 = 0;
    pub const PROCESS: u8 = 1;
}

/// OTF2's `OTF2_LocationType` values.
pub mod location_type {
    #![allow(missing_docs)]
    pub const UNKNOWN: u8 = 0;
    pub const CPU_THREAD: u8 = 1;
}

/// The archive's clock: ticks per second and the range of its timestamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ClockProperties {
    /// Ticks per second.
    pub timer_resolution: u64,
    /// The earliest timestamp, in ticks.
    pub global_offset: u64,
    /// From the earliest to the latest timestamp, in ticks.
    pub trace_length: u64,
    /// Real time (ns since the Unix epoch) at `global_offset`, when the writer knew it.
    pub realtime_ns: Option<u64>,
}

/// One measured offset of a location's clock to the global clock (a local definition):
/// at local tick `time`, global = local + `offset`, give or take `std_dev` ticks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockOffset {
    /// Local ticks when measured.
    pub time: u64,
    /// Global minus local, ticks.
    pub offset: i64,
    /// Standard deviation of the measurement, ticks.
    pub std_dev: f64,
}

impl ClockOffset {
    /// The offset `offset` measured at local tick `time`, give or take `std_dev`.
    pub const fn new(time: u64, offset: i64, std_dev: f64) -> ClockOffset {
        ClockOffset {
            time,
            offset,
            std_dev,
        }
    }
}

/// A code region (a function, an MPI call, a user span).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Region {
    /// Its name (`MPI_Isend`, `compute`).
    pub name: String,
    /// The name with nothing demangled or shortened.
    pub canonical_name: String,
    /// Free text.
    pub description: String,
    /// `OTF2_RegionRole`.
    pub role: u8,
    /// `OTF2_Paradigm`.
    pub paradigm: u8,
    /// Source file ("" unknown).
    pub source_file: String,
    /// First line (0 unknown).
    pub begin_line: u32,
    /// Last line (0 unknown).
    pub end_line: u32,
}

/// A node of the system tree (machine, node).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemTreeNode {
    /// Its name (the host name, for a node).
    pub name: String,
    /// Its class (`machine`, `node`).
    pub class_name: String,
    /// Parent node, `None` for the root.
    pub parent: Option<u32>,
}

/// A process (an MPI rank) or another group of locations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocationGroup {
    /// Its name (`MPI Rank 3`).
    pub name: String,
    /// `OTF2_LocationGroupType`.
    pub kind: u8,
    /// The system tree node it runs on.
    pub system_tree_parent: Option<u32>,
}

/// A thread (or another stream of events) of a location group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// Its name.
    pub name: String,
    /// `OTF2_LocationType`.
    pub kind: u8,
    /// How many events it has.
    pub events: u64,
    /// The location group (process) it belongs to.
    pub group: u32,
}

/// A group: of locations (`COMM_LOCATIONS`: the MPI ranks, as locations), or of ranks
/// of that group (`COMM_GROUP`: a communicator's members).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Its name.
    pub name: String,
    /// `OTF2_GroupType`: 4 communication locations, 5 communicator group, 6 self.
    pub kind: u8,
    /// `OTF2_Paradigm`.
    pub paradigm: u8,
    /// Its members.
    pub members: Vec<u64>,
}

/// A communicator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comm {
    /// Its name.
    pub name: String,
    /// Its group (`COMM_GROUP`).
    pub group: u32,
    /// The communicator it was created from.
    pub parent: Option<u32>,
}

/// An RMA window (one-sided communication).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RmaWin {
    /// Its name.
    pub name: String,
    /// The communicator it was created over: the RMA records' `remote` is a rank of it.
    pub comm: u32,
    /// `OTF2_RmaWinFlag`.
    pub flags: u32,
}

/// The type of an attribute's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttributeType {
    /// `OTF2_TYPE_UINT64`.
    U64,
    /// `OTF2_TYPE_INT64`.
    I64,
    /// `OTF2_TYPE_SOURCE_CODE_LOCATION`.
    SourceCodeLocation,
    /// Another type (read, not interpreted).
    Other(u8),
}

/// The name OTF2 gives the attribute that attaches a source code location to an event
/// (of type [`AttributeType::SourceCodeLocation`]).
pub const SOURCE_CODE_LOCATION: &str = "SOURCE_CODE_LOCATION";

/// A place in the source: file and line.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceCodeLocation {
    /// The file.
    pub file: String,
    /// The line (from 1).
    pub line: u32,
}

/// An attribute events may carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attribute {
    /// Its name.
    pub name: String,
    /// Free text.
    pub description: String,
    /// Its values' type.
    pub kind: AttributeType,
}

/// A value of a location group's property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Property {
    /// Text.
    Text(String),
    /// A whole number.
    U64(u64),
    /// Another type (read, not interpreted).
    Other,
}

/// The global definitions of an archive (and its locations' clock offsets, which are
/// local definitions).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Definitions {
    /// The clock.
    pub clock: ClockProperties,
    /// Regions by reference.
    pub regions: BTreeMap<u32, Region>,
    /// System tree nodes by reference.
    pub system_tree: BTreeMap<u32, SystemTreeNode>,
    /// Location groups by reference.
    pub location_groups: BTreeMap<u32, LocationGroup>,
    /// Locations by reference.
    pub locations: BTreeMap<u64, Location>,
    /// Groups by reference.
    pub groups: BTreeMap<u32, Group>,
    /// Communicators by reference.
    pub comms: BTreeMap<u32, Comm>,
    /// RMA windows by reference.
    pub rma_wins: BTreeMap<u32, RmaWin>,
    /// Source code locations by reference.
    pub source_code_locations: BTreeMap<u32, SourceCodeLocation>,
    /// Attributes by reference.
    pub attributes: BTreeMap<u32, Attribute>,
    /// Properties of location groups, by group, by name.
    pub group_properties: BTreeMap<u32, BTreeMap<String, Property>>,
    /// Clock offsets of locations (local definitions), in time order.
    pub clock_offsets: BTreeMap<u64, Vec<ClockOffset>>,
}

impl Definitions {
    /// The attribute named `name`, if the archive defines one.
    pub fn attribute_named(&self, name: &str) -> Option<u32> {
        self.attributes
            .iter()
            .find(|(_, a)| a.name == name)
            .map(|(r, _)| *r)
    }
}
