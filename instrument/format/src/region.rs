//! What an `MPI_Pcontrol` call says about the program's regions, as recorded: its level
//! and, when the program passed one, the region's name ([`RegionName`], kept inline so
//! that recording it allocates nothing), and the conventions that turn a rank's
//! sequence of them into regions ([`PcontrolMark`]).
//!
//! Two conventions are in use. IPM's names regions: `MPI_Pcontrol(1, "solve")` enters
//! the region `solve`, `MPI_Pcontrol(-1, "solve")` leaves it. mpiP's has no names:
//! `MPI_Pcontrol(0)` turns profiling off, `MPI_Pcontrol(1)` on again, so the stretch
//! between an unnamed 1 and the next unnamed 0 is a region, called [`UNNAMED_REGION`].
//! Any other level (mpiP's 2 to 4: reset, report) is recorded but opens no region.

/// The longest region name recorded (IPM's `MAXSIZE_REGLABEL` is 64 too); a longer
/// string is not taken as a name.
pub const REGION_NAME_MAX: usize = 64;

/// The thread id of a rank's first track of regions in the merged trace: above its
/// recording threads' (small indices), below its GPU streams' (2^24 up). Instances that
/// overlap without nesting go on the next ones ([`region_tid`]).
pub const REGION_TID_BASE: u32 = 1 << 23;

/// The thread id of a rank's `lane`-th track of regions.
pub fn region_tid(lane: u32) -> u32 {
    REGION_TID_BASE + lane.min(REGION_LANES - 1)
}

/// How many tracks of regions a rank may have.
const REGION_LANES: u32 = 1 << 20;

/// Whether `tid` is a track of regions, not a recording thread.
pub fn is_region_tid(tid: u32) -> bool {
    (REGION_TID_BASE..REGION_TID_BASE + REGION_LANES).contains(&tid)
}

/// The name of a rank's `lane`-th track of regions: `regions`, `regions 2`...
pub fn region_track_name(lane: u32) -> String {
    match lane {
        0 => "regions".to_string(),
        n => format!("regions {}", n + 1),
    }
}

/// The region of mpiP's unnamed convention (level 1 on, level 0 off); its instances are
/// told apart by their order, `pcontrol#1`, `pcontrol#2`...
pub const UNNAMED_REGION: &str = "pcontrol";

/// A region name of 1 to [`REGION_NAME_MAX`] printable ASCII bytes, held inline (the
/// hot path records it without allocating), or none.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RegionName {
    len: u8,
    bytes: [u8; REGION_NAME_MAX],
}

impl Default for RegionName {
    fn default() -> Self {
        RegionName::NONE
    }
}

impl std::fmt::Debug for RegionName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl RegionName {
    /// No name.
    pub const NONE: RegionName = RegionName {
        len: 0,
        bytes: [0; REGION_NAME_MAX],
    };

    /// `bytes` as a name, when it is one: 1 to [`REGION_NAME_MAX`] bytes, each printable
    /// ASCII (space to `~`), not all spaces. Trailing spaces (Fortran's padding) are
    /// dropped.
    pub fn new(bytes: &[u8]) -> Option<RegionName> {
        let end = bytes.iter().rposition(|b| *b != b' ')? + 1;
        let bytes = &bytes[..end];
        if bytes.len() > REGION_NAME_MAX || !bytes.iter().all(|b| (b' '..=b'~').contains(b)) {
            return None;
        }
        let mut name = RegionName::NONE;
        name.bytes[..bytes.len()].copy_from_slice(bytes);
        name.len = bytes.len() as u8;
        Some(name)
    }

    /// The name, if there is one.
    pub fn as_str(&self) -> Option<&str> {
        let bytes = &self.bytes[..usize::from(self.len)];
        // Only printable ASCII is ever stored.
        (!bytes.is_empty()).then(|| std::str::from_utf8(bytes).ok())?
    }

    /// The name's bytes (empty when none).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// What one `MPI_Pcontrol` call does to the regions, by the two conventions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcontrolMark<'a> {
    /// Enters a named region (IPM: level 1 with a name).
    Enter(&'a str),
    /// Leaves a named region (IPM: level -1 with a name).
    Leave(&'a str),
    /// Turns profiling on (mpiP: level 1, no name): opens an unnamed region.
    On,
    /// Turns profiling off (mpiP: level 0): closes the unnamed region.
    Off,
    /// Any other level, or -1 without a name: no region.
    Other,
}

impl PcontrolMark<'_> {
    /// What a call at `level` naming `name` does.
    pub fn of(level: i32, name: Option<&str>) -> PcontrolMark<'_> {
        match (level, name) {
            (1, Some(n)) => PcontrolMark::Enter(n),
            (-1, Some(n)) => PcontrolMark::Leave(n),
            (1, None) => PcontrolMark::On,
            (0, _) => PcontrolMark::Off,
            _ => PcontrolMark::Other,
        }
    }
}

/// True when a call at `level` may carry a name (IPM's enter and leave): only then is
/// its second argument looked at.
pub fn level_takes_a_name(level: i32) -> bool {
    level == 1 || level == -1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_printable_ascii() {
        assert_eq!(
            RegionName::new(b"solve").expect("a name").as_str(),
            Some("solve")
        );
        assert_eq!(
            RegionName::new(b"halo   ").expect("a name").as_str(),
            Some("halo")
        );
        assert_eq!(RegionName::new(b""), None);
        assert_eq!(RegionName::new(b"   "), None);
        assert_eq!(RegionName::new(b"a\x01b"), None);
        assert_eq!(RegionName::new("é".as_bytes()), None);
        assert_eq!(RegionName::new(&[b'x'; REGION_NAME_MAX + 1]), None);
        assert!(RegionName::new(&[b'x'; REGION_NAME_MAX]).is_some());
        assert_eq!(RegionName::NONE.as_str(), None);
    }

    #[test]
    fn levels_follow_ipm_and_mpip() {
        assert_eq!(PcontrolMark::of(1, Some("a")), PcontrolMark::Enter("a"));
        assert_eq!(PcontrolMark::of(-1, Some("a")), PcontrolMark::Leave("a"));
        assert_eq!(PcontrolMark::of(1, None), PcontrolMark::On);
        assert_eq!(PcontrolMark::of(0, None), PcontrolMark::Off);
        assert_eq!(PcontrolMark::of(-1, None), PcontrolMark::Other);
        assert_eq!(PcontrolMark::of(3, None), PcontrolMark::Other);
        assert!(level_takes_a_name(-1) && !level_takes_a_name(0));
    }
}
