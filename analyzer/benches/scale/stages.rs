//! Where analyze's memory goes (`--only stages`): a counting allocator, enabled only in
//! that measurement, and analyze's steps run one after another on one thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use overlap_analyzer::load::load_dir;
use overlap_analyzer::metrics::Options;

use super::{common, Res, MIB};

/// Counts live heap bytes and their peak, only in the `stages` measurement (elsewhere it
/// passes straight to the system allocator, so the other figures are not its cost).
struct Counting;
static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            if new_size >= layout.size() {
                let grow = new_size - layout.size();
                let live = LIVE.fetch_add(grow, Ordering::Relaxed) + grow;
                PEAK.fetch_max(live, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Where analyze's memory goes: its steps one after another on this thread, each with
/// its time, the heap it keeps (what it returns, held until the end as `analyze` holds
/// it) and the heap's peak while it ran, both counted by the allocator.
pub fn stages(dir: &Path, label: &str, events: u64) -> Res<()> {
    use overlap_analyzer::metrics::collective_model::CollectiveModel;
    use overlap_analyzer::metrics::cross_rank::CrossRank;
    use overlap_analyzer::metrics::wait_states;
    use overlap_analyzer::metrics::{budget, false_overlap, requests, transfer};
    use overlap_analyzer::replay::ideal;
    COUNTING.store(true, Ordering::Relaxed);
    let opts = Options::default();
    // The first pass of an analysis that holds one rank at a time (what crosses ranks,
    // and what the run keeps of each), on its own: dropped before the trace is loaded.
    let t_first = Instant::now();
    let digested = overlap_analyzer::metrics::digest::digest_dir(
        dir,
        &overlap_analyzer::import::Reading::unwatched(),
    )?;
    let (first_secs, first_live) = (
        t_first.elapsed().as_secs_f64(),
        LIVE.load(Ordering::Relaxed),
    );
    let first_peak = PEAK.swap(0, Ordering::Relaxed);
    let messages = digested.messages.len();
    drop(digested);
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let t_load = Instant::now();
    let trace = load_dir(dir, &mut |_, _| {})?.trace;
    // A rank directory given (`--dirs`) comes without its count: the loaded trace's.
    let e = match events {
        0 => trace.ranks.iter().map(|t| t.event_count() as f64).sum(),
        n => n as f64,
    };
    println!(
        "stages {label} {:<22} {first_secs:>7.2} s  keeps {:>7.0} MiB ({:>5.1} B/event)  \
         peak {:>7.0} MiB ({:>5.1} B/event); {messages} messages",
        "first pass (dropped)",
        first_live as f64 / MIB,
        first_live as f64 / e,
        first_peak as f64 / MIB,
        first_peak as f64 / e,
    );
    let mut before = 0usize;
    let mut step = |name: &str, t: Instant| {
        let live = LIVE.load(Ordering::Relaxed);
        let peak = PEAK.swap(live, Ordering::Relaxed);
        println!(
            "stages {label} {name:<22} {:>7.2} s  keeps {:>7.0} MiB ({:>5.1} B/event)  \
             peak {:>7.0} MiB ({:>5.1} B/event)",
            t.elapsed().as_secs_f64(),
            (live as f64 - before as f64) / MIB,
            (live as f64 - before as f64) / e,
            peak as f64 / MIB,
            peak as f64 / e,
        );
        before = live;
    };
    step("load", t_load);
    let t = Instant::now();
    let budgets = budget::budgets(&trace);
    step("budgets", t);
    let t = Instant::now();
    let cross = CrossRank::of(&trace);
    step("cross-rank columns", t);
    let t = Instant::now();
    let waits = wait_states::instances_with(&trace, &cross);
    step("wait states", t);
    let t = Instant::now();
    let model = transfer::TransferModel::fit_with(&trace, &cross.messages);
    let collective = CollectiveModel::fit_with(&cross.collectives);
    step("models", t);
    let t = Instant::now();
    let pass = requests::RequestPass::new(&trace, &cross, &model, &collective, &opts);
    drop(cross);
    let reqs = pass.rows(&trace, 0..trace.requests.len());
    step("per request", t);
    let t = Instant::now();
    let _sites = overlap_analyzer::sites::SiteTable::build(&trace);
    step("sites", t);
    let t = Instant::now();
    let ls = false_overlap::late_sender_by_call(&waits);
    // The transfer's uncertainty (a lookup per finding) costs nothing measurable here.
    let found = false_overlap::findings(&trace, &reqs, &ls, &opts, &|_| 0);
    step("false overlap", t);
    let t = Instant::now();
    let program = overlap_analyzer::ops::extract_measured(&trace).ok();
    step("operations", t);
    let t = Instant::now();
    let ideal = program.as_ref().and_then(ideal::replay);
    step("ideal replay", t);
    let t = Instant::now();
    let check = program
        .as_ref()
        .and_then(|p| overlap_analyzer::replay::self_check(&trace, p).ok());
    step("self-check replay", t);
    println!(
        "stages {label}: {} waits, {} requests, {} findings, ideal {ideal:?}, self check {}; \
         {} budgets",
        waits.len(),
        reqs.len(),
        found.len(),
        check.is_some(),
        budgets.0.len(),
    );
    println!("#fig 0 {}", common::peak_rss()?);
    Ok(())
}
