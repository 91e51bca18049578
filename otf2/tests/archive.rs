//! An archive written through the wrapper reads back as written, and `otf2-print` (the
//! OTF2 library's own reader) reads it without an error.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::BTreeMap;

use overlap_otf2::*;

fn definitions() -> Definitions {
    let mut d = Definitions {
        clock: ClockProperties {
            timer_resolution: 1_000_000_000,
            global_offset: 1000,
            trace_length: 500,
            realtime_ns: Some(1_700_000_000_000_000_000),
        },
        ..Definitions::default()
    };
    d.system_tree.insert(
        0,
        SystemTreeNode {
            name: "node0".into(),
            class_name: "node".into(),
            parent: None,
        },
    );
    for rank in 0..2u32 {
        d.location_groups.insert(
            rank,
            LocationGroup {
                name: format!("MPI Rank {rank}"),
                kind: location_group_type::PROCESS,
                system_tree_parent: Some(0),
            },
        );
        d.locations.insert(
            u64::from(rank),
            Location {
                name: format!("rank {rank} thread 0"),
                kind: location_type::CPU_THREAD,
                events: 0,
                group: rank,
            },
        );
        let mut props = BTreeMap::new();
        props.insert("OVERLAP::HOST".to_string(), Property::Text("node0".into()));
        props.insert(
            "OVERLAP::EPOCH".to_string(),
            Property::U64(1000 + u64::from(rank)),
        );
        d.group_properties.insert(rank, props);
    }
    d.regions.insert(
        0,
        Region {
            name: "MPI_Isend".into(),
            canonical_name: "MPI_Isend".into(),
            role: region_role::POINT2POINT,
            paradigm: paradigm::MPI,
            ..Region::default()
        },
    );
    d.regions.insert(
        1,
        Region {
            name: "MPI_Wait".into(),
            canonical_name: "MPI_Wait".into(),
            role: region_role::POINT2POINT,
            paradigm: paradigm::MPI,
            ..Region::default()
        },
    );
    d.regions.insert(
        2,
        Region {
            name: "compute".into(),
            canonical_name: "compute".into(),
            role: region_role::FUNCTION,
            paradigm: paradigm::USER,
            source_file: "halo.c".into(),
            begin_line: 42,
            end_line: 42,
            ..Region::default()
        },
    );
    d.groups.insert(
        0,
        Group {
            name: "world locations".into(),
            kind: 4,
            paradigm: paradigm::MPI,
            members: vec![0, 1],
        },
    );
    d.groups.insert(
        1,
        Group {
            name: "world".into(),
            kind: 5,
            paradigm: paradigm::MPI,
            members: vec![0, 1],
        },
    );
    d.comms.insert(
        0,
        Comm {
            name: "MPI_COMM_WORLD".into(),
            group: 1,
            parent: None,
        },
    );
    d.attributes.insert(
        0,
        Attribute {
            name: "overlap::site".into(),
            description: "call site".into(),
            kind: AttributeType::U64,
        },
    );
    d.attributes.insert(
        1,
        Attribute {
            name: "overlap::peer".into(),
            description: "requested peer".into(),
            kind: AttributeType::I64,
        },
    );
    d.clock_offsets.insert(
        1,
        vec![
            ClockOffset::new(1001, -1, 2.0),
            ClockOffset::new(1400, -2, 3.0),
        ],
    );
    d
}

fn events(rank: u32) -> Vec<(u64, Record, Vec<Attr>)> {
    let peer = 1 - rank;
    vec![
        (
            1010,
            Record::Enter { region: 0 },
            vec![Attr {
                attribute: 0,
                value: AttrValue::U64(0xdead),
            }],
        ),
        (
            1011,
            Record::MpiIsend {
                receiver: peer,
                comm: 0,
                tag: 7,
                bytes: 64,
                request: 1,
            },
            vec![],
        ),
        (1012, Record::Leave { region: 0 }, vec![]),
        (1020, Record::Enter { region: 2 }, vec![]),
        (1100, Record::Leave { region: 2 }, vec![]),
        (
            1110,
            Record::Enter { region: 1 },
            vec![Attr {
                attribute: 1,
                value: AttrValue::I64(-2),
            }],
        ),
        (1120, Record::MpiIsendComplete { request: 1 }, vec![]),
        (
            1121,
            Record::MpiIrecv {
                sender: peer,
                comm: 0,
                tag: 7,
                bytes: 64,
                request: 2,
            },
            vec![],
        ),
        (1130, Record::Leave { region: 1 }, vec![]),
    ]
}

#[test]
fn written_archives_read_back_and_otf2_print_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    if !available() {
        let err = ArchiveWriter::create(dir.path(), "traces", "t")
            .err()
            .unwrap();
        assert!(err.to_string().contains("built without OTF2"), "{err}");
        return;
    }
    let mut w = ArchiveWriter::create(dir.path(), "traces", "overlap test").unwrap();
    for rank in 0..2u32 {
        let mut ew = w.events(u64::from(rank)).unwrap();
        for (t, r, a) in events(rank) {
            ew.write(t, &r, &a).unwrap();
        }
        assert_eq!(ew.close().unwrap(), 9);
    }
    let anchor = w.finish(&definitions()).unwrap();
    assert_eq!(anchor, dir.path().join("traces.otf2"));

    let mut read: BTreeMap<u64, Vec<(u64, Record, Vec<Attr>)>> = BTreeMap::new();
    let defs = read_archive(&anchor, |l, t, r, a| {
        read.entry(l).or_default().push((t, r.clone(), a.to_vec()));
        Ok(())
    })
    .unwrap();
    let mut want = definitions();
    for l in want.locations.values_mut() {
        l.events = 9;
    }
    assert_eq!(defs, want, "the definitions read back are those written");
    for rank in 0..2u32 {
        assert_eq!(read[&u64::from(rank)], events(rank));
    }

    // A visitor's error stops the reading and is said with the location.
    let err = read_archive(&anchor, |_, t, _, _| {
        if t > 1020 {
            Err("enough".into())
        } else {
            Ok(())
        }
    })
    .unwrap_err();
    assert!(err.to_string().contains("location 0: enough"), "{err}");

    if let Some(text) = otf2_print(&anchor) {
        assert_eq!(
            text.lines().filter(|l| l.starts_with("ENTER ")).count(),
            6,
            "{text}"
        );
        assert_eq!(
            text.lines().filter(|l| l.starts_with("MPI_ISEND ")).count(),
            2,
            "{text}"
        );
        assert_eq!(
            text.lines().filter(|l| l.starts_with("MPI_IRECV ")).count(),
            2,
            "{text}"
        );
    }
}

#[test]
fn what_is_not_an_archive_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    if !available() {
        let err = Archive::open(&dir.path().join("a.otf2")).err().unwrap();
        assert!(err.to_string().contains("built without OTF2"), "{err}");
        return;
    }
    let bogus = dir.path().join("traces.otf2");
    std::fs::write(&bogus, b"not an anchor").unwrap();
    let err = Archive::open(&bogus).err().unwrap().to_string();
    assert!(err.contains("traces.otf2"), "{err}");
    let err = Archive::open(&dir.path().join("none.otf2"))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("none.otf2"), "{err}");
    // A second archive over the first is refused.
    let w = ArchiveWriter::create(dir.path(), "traces", "t")
        .err()
        .unwrap()
        .to_string();
    assert!(w.contains("there already"), "{w}");
}

/// Every RMA record kind, on one window of the world, in order.
fn rma_events(rank: u32) -> Vec<(u64, Record, Vec<Attr>)> {
    let peer = 1 - rank;
    let win = 3;
    let records = vec![
        Record::Enter { region: 0 },
        Record::RmaCollectiveBegin,
        Record::RmaWinCreate { win },
        Record::RmaCollectiveEnd {
            op: collective_op::CREATE_HANDLE_AND_ALLOCATE,
            sync_level: rma::SYNC_LEVEL_PROCESS | rma::SYNC_LEVEL_MEMORY,
            win,
            root: u32::MAX,
            sent: 0,
            received: 0,
        },
        Record::RmaGroupSync {
            sync_level: rma::SYNC_LEVEL_PROCESS,
            win,
            group: 2,
        },
        Record::RmaPut {
            win,
            remote: peer,
            bytes: 64,
            matching_id: 1,
        },
        Record::RmaGet {
            win,
            remote: peer,
            bytes: 32,
            matching_id: 2,
        },
        Record::RmaAtomic {
            win,
            remote: peer,
            kind: rma::ATOMIC_COMPARE_AND_SWAP,
            sent: 8,
            received: 8,
            matching_id: 3,
        },
        Record::RmaOpTest {
            win,
            matching_id: 2,
        },
        Record::RmaOpCompleteBlocking {
            win,
            matching_id: 1,
        },
        Record::RmaOpCompleteNonBlocking {
            win,
            matching_id: 2,
        },
        Record::RmaOpCompleteRemote {
            win,
            matching_id: 3,
        },
        Record::RmaRequestLock {
            win,
            remote: peer,
            lock_id: 9,
            lock_type: rma::LOCK_EXCLUSIVE,
        },
        Record::RmaAcquireLock {
            win,
            remote: peer,
            lock_id: 9,
            lock_type: rma::LOCK_SHARED,
        },
        Record::RmaReleaseLock {
            win,
            remote: peer,
            lock_id: 9,
        },
        Record::RmaSync {
            win,
            remote: rank,
            sync_type: rma::SYNC_TYPE_MEMORY,
        },
        Record::RmaWinDestroy { win },
        Record::Leave { region: 0 },
    ];
    // The Enter names its source code location.
    let at_line = vec![Attr {
        attribute: 2,
        value: AttrValue::SourceCodeLocation(5),
    }];
    records
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let attrs = if i == 0 { at_line.clone() } else { vec![] };
            (1010 + i as u64, r, attrs)
        })
        .collect()
}

#[test]
fn rma_records_windows_and_source_locations_read_back_as_written() {
    if !available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut defs = definitions();
    defs.groups.insert(
        2,
        Group {
            name: "epoch".into(),
            kind: 5,
            paradigm: paradigm::MPI,
            members: vec![1],
        },
    );
    defs.attributes.insert(
        2,
        Attribute {
            name: SOURCE_CODE_LOCATION.into(),
            description: "where the call was made".into(),
            kind: AttributeType::SourceCodeLocation,
        },
    );
    defs.source_code_locations.insert(
        5,
        SourceCodeLocation {
            file: "epoch.c".into(),
            line: 41,
        },
    );
    defs.rma_wins.insert(
        3,
        RmaWin {
            name: "window 3".into(),
            comm: 0,
            flags: rma::WIN_FLAG_CREATE_DESTROY_EVENTS,
        },
    );
    let mut w = ArchiveWriter::create(dir.path(), "traces", "overlap test").unwrap();
    let n = rma_events(0).len() as u64;
    for rank in 0..2u32 {
        let mut ew = w.events(u64::from(rank)).unwrap();
        for (t, r, a) in rma_events(rank) {
            ew.write(t, &r, &a).unwrap();
        }
        assert_eq!(ew.close().unwrap(), n);
    }
    let anchor = w.finish(&defs).unwrap();
    let mut read: BTreeMap<u64, Vec<(u64, Record, Vec<Attr>)>> = BTreeMap::new();
    let back = read_archive(&anchor, |l, t, r, a| {
        read.entry(l).or_default().push((t, r.clone(), a.to_vec()));
        Ok(())
    })
    .unwrap();
    assert_eq!(back.rma_wins, defs.rma_wins);
    assert_eq!(back.source_code_locations, defs.source_code_locations);
    assert_eq!(back.attributes, defs.attributes);
    assert_eq!(back.groups, defs.groups);
    for rank in 0..2u32 {
        assert_eq!(read[&u64::from(rank)], rma_events(rank));
    }
    if let Some(text) = otf2_print(&anchor) {
        for r in rma_events(0) {
            let kind = r.1.kind();
            let printed = text
                .lines()
                .filter(|l| l.split_whitespace().next() == Some(kind))
                .count();
            assert_eq!(printed, 2, "{kind}: {text}");
        }
        assert!(text.contains("epoch.c:41"), "{text}");
    }
}

/// What OTF2's own `otf2-print` prints of the archive at `anchor`, which it must read
/// whole; none when the tool is not installed (`scripts/bootstrap.sh` installs it).
fn otf2_print(anchor: &std::path::Path) -> Option<String> {
    let out = std::process::Command::new("otf2-print")
        .arg(anchor)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "otf2-print: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}
