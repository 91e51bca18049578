//! Symbolization of real code addresses: a C program (tests/programs/sites.c, compiled
//! here with `cc -g`) prints the return addresses of two calls and its own code maps,
//! as the preload records them; the symbolizer must name their lines of sites.c, with
//! the inlined frame, for a position-independent and a fixed-address executable, from a
//! separate debug file found by `.gnu_debuglink`, and fall back to the symbol table and
//! then to `object+offset` (never a made-up line) as the debug info goes away, and from
//! a folder of the search path once the executable moved. And the
//! grouping of wait states by site, on a hand-built trace.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use overlap_analyzer::analysis::analyze;
use overlap_analyzer::metrics::{Options, WaitKind};
use overlap_instrument::schema::SyncPhase;

use overlap_analyzer::sites::maps::{self, CodeMap};
use overlap_analyzer::sites::{Resolution, Symbolizer};

fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/sites.c")
}

/// The line of sites.c holding `marker`.
fn line_of(marker: &str) -> u32 {
    let text = std::fs::read_to_string(source()).expect("sites.c reads");
    let lines: Vec<usize> = (text.lines().enumerate())
        .filter(|(_, l)| l.contains(marker))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(lines.len(), 1, "one line holds {marker}");
    lines[0] as u32
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?} runs: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Compiles sites.c with `flags` into `dir/name`, runs it, and returns the two return
/// addresses (from main, from the inlined helper) and the code maps it printed.
fn compile_and_run(dir: &Path, name: &str, flags: &[&str]) -> (PathBuf, [u64; 2], Vec<CodeMap>) {
    let exe = dir.join(name);
    run(Command::new("cc")
        .args(["-g", "-O2"])
        .args(flags)
        .arg(source())
        .arg("-o")
        .arg(&exe));
    let out = run(&mut Command::new(&exe));
    let mut lines = out.lines();
    let mut address = || {
        let l = lines.next().expect("an address line");
        u64::from_str_radix(l.trim_start_matches("0x"), 16).expect("hex address")
    };
    let sites = [address(), address()];
    let maps = maps::parse(&lines.collect::<Vec<_>>().join("\n")).expect("maps parse");
    (exe, sites, maps)
}

fn labels(maps: &[CodeMap], sites: [u64; 2]) -> Vec<(String, Resolution)> {
    let mut s = Symbolizer::new();
    sites
        .iter()
        .map(|a| {
            let site = s.symbolize(maps, *a);
            (site.label, site.resolution)
        })
        .collect()
}

fn expected() -> Vec<(String, Resolution)> {
    vec![
        (
            format!("sites.c:{} (main)", line_of("SITE-MAIN")),
            Resolution::DebugInfo,
        ),
        (
            format!(
                "sites.c:{} (helper, inlined in main)",
                line_of("SITE-INLINED")
            ),
            Resolution::DebugInfo,
        ),
    ]
}

#[test]
fn position_independent_and_fixed_address_executables() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, flags) in [("pie", &["-fPIE", "-pie"][..]), ("fixed", &["-no-pie"][..])] {
        let (_, sites, maps) = compile_and_run(dir.path(), name, flags);
        assert_eq!(labels(&maps, sites), expected(), "{name}");
    }
}

#[test]
fn separate_debug_file_then_symbols_then_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (exe, sites, maps) = compile_and_run(dir.path(), "sites", &[]);
    // Move the DWARF to a separate file the executable names by .gnu_debuglink.
    let debug = dir.path().join("sites.debug");
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&exe)
        .arg(&debug));
    run(Command::new("objcopy")
        .arg("--strip-debug")
        .arg(format!("--add-gnu-debuglink={}", debug.display()))
        .arg(&exe));
    assert_eq!(labels(&maps, sites), expected(), "from the debug file");

    // A debug file of another build (another build-id) is not used.
    let (other, _, _) = compile_and_run(dir.path(), "other", &["-DOTHER_BUILD"]);
    let stale = dir.path().join("stale.debug");
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&other)
        .arg(&stale));
    std::fs::rename(&debug, dir.path().join("kept.debug")).expect("rename");
    std::fs::rename(&stale, &debug).expect("rename");
    let site = Symbolizer::new().symbolize(&maps, sites[0]);
    assert_eq!(site.resolution, Resolution::SymbolTable, "{site:?}");
    std::fs::rename(dir.path().join("kept.debug"), &debug).expect("rename");
    assert_eq!(labels(&maps, sites), expected(), "the right one again");

    // Without it, the symbol table still names the function, and no line is invented.
    std::fs::remove_file(&debug).expect("remove");
    let mut s = Symbolizer::new();
    let site = s.symbolize(&maps, sites[0]);
    assert_eq!(site.resolution, Resolution::SymbolTable);
    assert_eq!((site.file, site.line), (None, None));
    assert_eq!(site.function.as_deref(), Some("main"));
    let offset = site.offset.expect("a file offset");
    assert_eq!(site.label, format!("sites+{offset:#x} (main)"));
    assert_eq!(offset, sites[0] - 1 - maps[0].start + maps[0].offset);

    // Without the executable, the object and offset are all there is.
    std::fs::remove_file(&exe).expect("remove");
    let site = Symbolizer::new().symbolize(&maps, sites[0]);
    assert_eq!(site.resolution, Resolution::Unavailable);
    assert_eq!(site.label, format!("sites+{offset:#x}"));
    assert!(
        site.unavailable.as_deref().is_some_and(
            |w| w.ends_with("not found (OVERLAP_SYMBOL_PATH names folders holding a copy)")
        ),
        "{site:?}"
    );
    // An address outside every mapping is shown as it is.
    let site = Symbolizer::new().symbolize(&maps, 0x10);
    assert_eq!(
        (site.label.as_str(), site.resolution),
        ("0x10", Resolution::Unavailable)
    );
}

#[test]
fn an_object_moved_since_the_run_is_read_from_the_search_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (exe, sites, maps) = compile_and_run(dir.path(), "sites", &[]);
    // The program moved (another machine, a rebuild elsewhere): the path it was mapped
    // at holds nothing.
    let elsewhere = dir.path().join("elsewhere");
    let empty = dir.path().join("empty");
    for folder in [&elsewhere, &empty] {
        std::fs::create_dir(folder).expect("mkdir");
    }
    std::fs::rename(&exe, elsewhere.join("sites")).expect("move");
    let site = Symbolizer::with_search_path(Vec::new()).symbolize(&maps, sites[0]);
    assert_eq!(site.resolution, Resolution::Unavailable, "{site:?}");

    // Searched in order, by file name; a folder without it is passed over, and an empty
    // name (`a::b` in the variable) is no folder.
    let search = vec![empty.clone(), PathBuf::new(), elsewhere.clone()];
    let mut s = Symbolizer::with_search_path(search);
    let found: Vec<(String, Resolution)> = sites
        .iter()
        .map(|&a| s.symbolize(&maps, a))
        .map(|site| (site.label, site.resolution))
        .collect();
    assert_eq!(found, expected());
    // The site still names the object the rank mapped, which is what the trace knows.
    let site = s.symbolize(&maps, sites[0]);
    assert_eq!(site.object.as_deref(), exe.to_str());
    assert!(s.unreadable().is_empty(), "{:?}", s.unreadable());

    // A copy in the search path is read before the file at the mapped path.
    std::fs::rename(elsewhere.join("sites"), &exe).expect("move back");
    std::fs::write(empty.join("sites"), b"not an object").expect("write");
    let site = Symbolizer::with_search_path(vec![empty]).symbolize(&maps, sites[0]);
    assert_eq!(site.resolution, Resolution::Unavailable, "{site:?}");
    assert!(
        site.unavailable
            .as_deref()
            .is_some_and(|w| w.contains("not an object file")),
        "{site:?}"
    );
}

/// Rank 0 (Rust layer, source sites listed) receives three times; rank 1 sends late,
/// from a code address its trace has no code maps for.
///
/// ```text
/// rank 0: |Recv 0-100 k.rs:10|    |Recv 200-250 k.rs:10|    |Recv 300-400 k.rs:12|
/// rank 1:         |Send 80-90|          |Send 230-240|          |Send 310-320|
/// Late Sender = E(send) - E(recv): 80, 30, 10
/// -> k.rs:10 MPI_Recv late_sender: 2 waits, 110 ns, worst 80 (rank 0, index 0)
///    k.rs:12 MPI_Recv late_sender: 1 wait, 10 ns
/// ```
#[test]
fn wait_states_grouped_by_site() {
    let mut r0 = rank_trace(
        header(0, 2, 0, "boot-1"),
        vec![sync(SyncPhase::Init, 0, 0, 0)],
        vec![
            at_site(recv(0, 100, 1, 5, 8), 1),
            at_site(recv(200, 250, 1, 5, 8), 1),
            at_site(recv(300, 400, 1, 5, 8), 2),
        ],
    );
    r0.sites = source_sites("k.rs", &[10, 12]);
    let r1 = rank_trace(
        header(1, 2, 0, "boot-1"),
        vec![sync(SyncPhase::Init, 0, 0, 0)],
        vec![
            at_site(send(80, 90, 0, 5, 8), 0x5000),
            at_site(send(230, 240, 0, 5, 8), 0x5000),
            at_site(send(310, 320, 0, 5, 8), 0x5000),
        ],
    );
    let trace = overlap_analyzer::merge::merge(vec![r0, r1]).to_trace(Path::new("hand-built"));
    let (report, _) = analyze(&trace, &Options::default());
    let g: Vec<_> = report
        .by_site
        .wait_states
        .iter()
        .map(|g| {
            (
                g.site.as_deref(),
                g.call,
                g.kind,
                g.count,
                g.total_ns,
                g.worst_ns,
            )
        })
        .collect();
    assert_eq!(
        g,
        [
            (
                Some("k.rs:10"),
                "MPI_Recv",
                Some(WaitKind::LateSender),
                2,
                110,
                80
            ),
            (
                Some("k.rs:12"),
                "MPI_Recv",
                Some(WaitKind::LateSender),
                1,
                10,
                10
            ),
        ]
    );
    assert_eq!(
        (
            report.by_site.wait_states[0].worst_rank,
            report.by_site.wait_states[0].worst_index
        ),
        (0, 0)
    );
    // Rank 1's address cannot be symbolized without code maps: shown as it is, and said.
    let unknown = report
        .by_site
        .sites
        .iter()
        .find(|s| s.label == "0x5000")
        .expect("listed");
    assert_eq!(unknown.resolution, Resolution::Unavailable);
    assert!(report
        .by_site
        .notes
        .iter()
        .any(|n| n.contains("[1]") && n.contains("no code maps")));
}
