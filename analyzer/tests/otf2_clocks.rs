//! Reading an OTF2 archive whose clock offsets bend (Score-P's periodic
//! synchronisation): each time between two offsets is moved by the offset interpolated
//! between them minus the line through the first and the last
//! (`analyzer/src/import/otf2/clocks.rs`).
#![allow(clippy::unwrap_used, missing_docs)]

use overlap_analyzer::import::otf2::read_archive_into;
use overlap_format::schema::{Event, SyncPhase};
use overlap_otf2::*;

/// An archive of another writer whose rank 1 measured three offsets that bend:
/// its compute at local 1000..1500 is read at 1100..1550, and its synchronisations
/// are the first and the last offsets, with the largest deviation as their bound.
#[test]
fn an_archive_whose_offsets_bend_is_read_piecewise_linearly() {
    if !available() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut d = Definitions {
        clock: ClockProperties {
            timer_resolution: 1_000_000_000,
            global_offset: 0,
            trace_length: 3000,
            realtime_ns: None,
        },
        ..Definitions::default()
    };
    for rank in 0..2u32 {
        d.location_groups.insert(
            rank,
            LocationGroup {
                name: format!("MPI Rank {rank}"),
                kind: location_group_type::PROCESS,
                system_tree_parent: None,
            },
        );
        d.locations.insert(
            u64::from(rank),
            Location {
                name: "Master thread".into(),
                kind: location_type::CPU_THREAD,
                events: 0,
                group: rank,
            },
        );
    }
    d.regions.insert(
        0,
        Region {
            name: "work".into(),
            canonical_name: "work".into(),
            role: region_role::FUNCTION,
            paradigm: paradigm::USER,
            ..Region::default()
        },
    );
    let bent = vec![
        ClockOffset::new(0, 0, 1.0),
        ClockOffset::new(1000, 100, 7.0),
        ClockOffset::new(2000, 0, 2.0),
    ];
    d.clock_offsets.insert(1, bent);
    let mut w = ArchiveWriter::create(dir.path(), "traces", "a test").expect("create");
    for location in 0..2u64 {
        let mut e = w.events(location).expect("events");
        e.write(1000, &Record::Enter { region: 0 }, &[])
            .expect("enter");
        e.write(1500, &Record::Leave { region: 0 }, &[])
            .expect("leave");
        e.close().expect("close");
    }
    let anchor = w.finish(&d).expect("finish");
    let ranks = read_archive_into::<Vec<Event>>(&anchor).expect("read");
    let span = |r: usize| match &ranks[r].events[0] {
        Event::Compute(c) => (c.start.0, c.end.0),
        other => panic!("{other:?}"),
    };
    assert_eq!(span(0), (1000, 1500));
    assert_eq!(span(1), (1100, 1550));
    let syncs: Vec<_> = ranks[1]
        .syncs
        .iter()
        .map(|s| (s.phase, s.local_ns, s.offset_ns, s.error_ns))
        .collect();
    assert_eq!(
        syncs,
        vec![(SyncPhase::Init, 0, 0, 7), (SyncPhase::Final, 2000, 0, 7)]
    );
}
