//! Properties of reading and gating damaged traces, over a small valid two-rank run
//! recorded with the recorder (binary per-rank streams) and its merged file:
//!
//! - per-rank streams truncated, with bytes flipped or frames removed, and merged files
//!   with lines removed, cut or bytes flipped: loading, analyzing and checking never panic;
//! - a valid trace with events removed (a rank file dropped, a rank file cut, a merged
//!   file cut) never passes `check` against the full trace's baseline: it exits 2.
//!
//! Each rank, times in µs (the same on both, the Isend to the other rank):
//!
//! ```text
//! |Init|Isend|compute 5|Wait| x 8 |Barrier|Finalize|
//! ```

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use overlap_analyzer::analysis::analyze;
use overlap_analyzer::check::{self, Baseline, CheckOptions, Exit};
use overlap_analyzer::load::load;
use overlap_analyzer::merge::{merge_dir, write_merged};
use overlap_analyzer::metrics::Options;
use overlap_format::stream::{FILE_HEADER_LEN, FRAME_HEADER_LEN};
use overlap_instrument::clock::{ClockSource, Stamp};
use overlap_instrument::recorder::{CallData, RankFileSink, Recorder, RecorderConfig, Transfer};
use overlap_instrument::schema::{
    ClockSync, CommId, Completion, Header, Nanos, Op, RequestId, SyncPhase, FORMAT_VERSION,
};
use proptest::prelude::*;

const RANKS: u32 = 2;

/// The valid run: each rank's stream, the merged file, and the baseline of the whole.
struct Valid {
    ranks: Vec<Vec<u8>>,
    merged: Vec<u8>,
    baseline: Baseline,
}

fn header(rank: u32) -> Header {
    Header {
        format_version: FORMAT_VERSION,
        ..crate::common::header(rank, RANKS, 0, "boot-1")
    }
}

/// Records rank `rank` into `path`.
fn record(path: &Path, rank: u32) {
    let sink = RankFileSink::create(path, &header(rank)).expect("file");
    let mut config = RecorderConfig::default();
    config.clock = ClockSource::Monotonic;
    let rec = Recorder::with_epoch(sink, config, 0).expect("recorder");
    rec.record_clock_sync(ClockSync {
        phase: SyncPhase::Init,
        local_ns: 0,
        offset_ns: 0,
        error_ns: 0,
        rtt_ns: 0,
        rounds: 10,
    });
    let at = |us: u64| Stamp::from_nanos(Nanos(us * 1000));
    rec.record_call(Op::Init, at(0), at(1), CallData::Plain, &[]);
    let peer = 1 - rank as i32;
    let mut t = 1;
    for i in 0..8u64 {
        let transfer = Transfer {
            peer,
            tag: i as i32,
            bytes: 64,
            comm: CommId::WORLD,
            buf: 0x1000,
            buf_len: 64,
        };
        let request = RequestId(i);
        rec.record_call(
            Op::Isend,
            at(t),
            at(t + 1),
            CallData::Post { transfer, request },
            &[],
        );
        rec.record_compute("step", at(t + 1), at(t + 6));
        let done = [Completion {
            request: Some(i),
            source: None,
            tag: None,
            bytes: None,
        }];
        rec.record_call(
            Op::Wait,
            at(t + 6),
            at(t + 7),
            CallData::Complete { flag: None },
            &done,
        );
        t += 7;
    }
    let barrier = overlap_instrument::recorder::Collective {
        comm: CommId::WORLD,
        send_bytes: 0,
        recv_bytes: 0,
        root: None,
    };
    rec.record_call(
        Op::Barrier,
        at(t),
        at(t + 1),
        CallData::Collective(barrier),
        &[],
    );
    rec.record_call(Op::Finalize, at(t + 1), at(t + 2), CallData::Plain, &[]);
    rec.finish().expect("finish");
}

fn rank_file(dir: &Path, rank: u32) -> PathBuf {
    dir.join(format!("rank-{rank}.ovlp"))
}

fn valid() -> &'static Valid {
    static VALID: OnceLock<Valid> = OnceLock::new();
    VALID.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        for r in 0..RANKS {
            record(&rank_file(dir.path(), r), r);
        }
        let ranks = (0..RANKS)
            .map(|r| std::fs::read(rank_file(dir.path(), r)).expect("read"))
            .collect();
        let m = merge_dir(dir.path()).expect("merge");
        let merged_path = dir.path().join("merged.json");
        write_merged(&m.merged, &merged_path).expect("write merged");
        let merged = std::fs::read(&merged_path).expect("read merged");
        let loaded = load(dir.path(), &mut |_, _| {}).expect("load");
        let report = analyze(&loaded.trace, &Options::default()).0;
        let made = check::make_baseline(&loaded, &report, 5.0).expect("a baseline");
        // The whole run passes its own baseline, from the directory and merged.
        assert_eq!(exit_of(dir.path(), &made.baseline), Exit::Pass);
        assert_eq!(exit_of(&merged_path, &made.baseline), Exit::Pass);
        Valid {
            ranks,
            merged,
            baseline: made.baseline,
        }
    })
}

/// Loads, analyzes and checks `path` as `overlap check` does; an error (nothing
/// loadable) is exit 2 there.
fn exit_of(path: &Path, base: &Baseline) -> Exit {
    match load(path, &mut |_, _| {}) {
        Err(_) => Exit::Unusable,
        Ok(loaded) => {
            let report = analyze(&loaded.trace, &Options::default()).0;
            check::check(base, &loaded, &report, CheckOptions::default()).exit()
        }
    }
}

/// Byte ranges of a stream's frames (after the file's opening).
fn frames(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = FILE_HEADER_LEN;
    while at + FRAME_HEADER_LEN <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        let end = at + FRAME_HEADER_LEN + len;
        if end > bytes.len() {
            break;
        }
        out.push((at, end));
        at = end;
    }
    out
}

#[derive(Clone, Debug)]
enum Damage {
    /// Keep this share (per mille) of the bytes.
    Cut(u32),
    /// Xor the byte at this share (per mille) with a value.
    Flip(u32, u8),
    /// Remove a frame (per-rank) or a line (merged), chosen by share (per mille).
    Remove(u32),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (0u32..1000).prop_map(Damage::Cut),
        (0u32..1000, 1u8..=255).prop_map(|(at, x)| Damage::Flip(at, x)),
        (0u32..1000).prop_map(Damage::Remove),
    ]
}

fn at(share: u32, len: usize) -> usize {
    (share as usize * len / 1000).min(len.saturating_sub(1))
}

fn damaged_stream(bytes: &[u8], d: &Damage) -> Vec<u8> {
    let mut b = bytes.to_vec();
    match *d {
        Damage::Cut(s) => b.truncate(at(s, bytes.len())),
        Damage::Flip(s, x) => b[at(s, bytes.len())] ^= x,
        Damage::Remove(s) => {
            let f = frames(bytes);
            let (from, to) = f[at(s, f.len())];
            b.drain(from..to);
        }
    }
    b
}

fn damaged_merged(bytes: &[u8], d: &Damage) -> Vec<u8> {
    let mut b = bytes.to_vec();
    match *d {
        Damage::Cut(s) => b.truncate(at(s, bytes.len())),
        Damage::Flip(s, x) => b[at(s, bytes.len())] ^= x,
        Damage::Remove(s) => {
            let mut lines: Vec<&[u8]> = bytes.split_inclusive(|&c| c == b'\n').collect();
            let i = at(s, lines.len());
            lines.remove(i);
            b = lines.concat();
        }
    }
    b
}

/// Writes the run into a fresh directory with rank `rank`'s file replaced by `bytes`
/// (or left out when `None`).
fn dir_with(rank: u32, bytes: Option<&[u8]>) -> tempfile::TempDir {
    let v = valid();
    let dir = tempfile::tempdir().expect("tempdir");
    for r in 0..RANKS {
        let content = if r == rank {
            bytes
        } else {
            Some(&v.ranks[r as usize][..])
        };
        if let Some(c) = content {
            std::fs::write(rank_file(dir.path(), r), c).expect("write");
        }
    }
    dir
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// Damaged per-rank streams: no panic anywhere from reading to the verdict.
    #[test]
    fn damaged_rank_files_never_panic(rank in 0..RANKS, d in damage()) {
        let v = valid();
        let bytes = damaged_stream(&v.ranks[rank as usize], &d);
        let dir = dir_with(rank, Some(&bytes));
        let _ = overlap_analyzer::import::read_rank_file(&rank_file(dir.path(), rank));
        let _ = merge_dir(dir.path());
        let _ = exit_of(dir.path(), &v.baseline);
    }

    /// Damaged merged files: no panic.
    #[test]
    fn damaged_merged_files_never_panic(d in damage()) {
        let v = valid();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("merged.json");
        std::fs::write(&path, damaged_merged(&v.merged, &d)).expect("write");
        let _ = exit_of(&path, &v.baseline);
    }

    /// A rank file dropped or cut anywhere before its end: never a pass, always exit 2.
    #[test]
    fn a_dropped_or_cut_rank_never_passes(rank in 0..RANKS, cut in proptest::option::of(0u32..1000)) {
        let v = valid();
        let whole = &v.ranks[rank as usize];
        let bytes = cut.map(|s| whole[..at(s, whole.len())].to_vec());
        let dir = dir_with(rank, bytes.as_deref());
        prop_assert_eq!(exit_of(dir.path(), &v.baseline), Exit::Unusable, "{:?}", cut);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// A merged file cut anywhere before its end (half the time right after a line, so
    /// that every line left is whole): never a pass, always exit 2.
    #[test]
    fn a_cut_merged_file_never_passes(share in 0u32..1000, on_line in any::<bool>()) {
        let v = valid();
        let mut end = at(share, v.merged.len());
        if on_line {
            end = v.merged[..end].iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("merged.json");
        std::fs::write(&path, &v.merged[..end]).expect("write");
        prop_assert_eq!(exit_of(&path, &v.baseline), Exit::Unusable, "cut at {} of {}", end, v.merged.len());
    }
}
