//! Symbolization of real code addresses: a C program (tests/programs/sites.c, compiled
//! here with `cc -g`) prints the return addresses of two calls and its own code maps,
//! as the preload records them; the symbolizer must name their lines of sites.c, with
//! the inlined frame, for a position-independent and a fixed-address executable, from a
//! separate debug file found by `.gnu_debuglink`, and fall back to the symbol table and
//! then to `object+offset` (never a made-up line) as the debug info goes away.

use std::path::{Path, PathBuf};
use std::process::Command;

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
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?} runs: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Compiles sites.c with `flags` into `dir/name`, runs it, and returns the two return
/// addresses (from main, from the inlined helper) and the code maps it printed.
fn compile_and_run(dir: &Path, name: &str, flags: &[&str]) -> (PathBuf, [u64; 2], Vec<CodeMap>) {
    let exe = dir.join(name);
    run(Command::new("cc").args(["-g", "-O2"]).args(flags).arg(source()).arg("-o").arg(&exe));
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
        (format!("sites.c:{} (main)", line_of("SITE-MAIN")), Resolution::DebugInfo),
        (
            format!("sites.c:{} (helper, inlined in main)", line_of("SITE-INLINED")),
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
    run(Command::new("objcopy").arg("--only-keep-debug").arg(&exe).arg(&debug));
    run(Command::new("objcopy")
        .arg("--strip-debug")
        .arg(format!("--add-gnu-debuglink={}", debug.display()))
        .arg(&exe));
    assert_eq!(labels(&maps, sites), expected(), "from the debug file");

    // A debug file of another build (another build-id) is not used.
    let (other, _, _) = compile_and_run(dir.path(), "other", &["-DOTHER_BUILD"]);
    let stale = dir.path().join("stale.debug");
    run(Command::new("objcopy").arg("--only-keep-debug").arg(&other).arg(&stale));
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
        site.unavailable.as_deref().is_some_and(|w| w.contains("cannot open")),
        "{site:?}"
    );
    // An address outside every mapping is shown as it is.
    let site = Symbolizer::new().symbolize(&maps, 0x10);
    assert_eq!((site.label.as_str(), site.resolution), ("0x10", Resolution::Unavailable));
}
