//! What tracing adds to an MPI call: the same calls timed untraced (rsmpi) and traced
//! (TracedComm), alternating batches, medians reported. A batch fits in the thread's
//! ring and the writer drains between batches, as in a program that does something
//! between its MPI calls; the rate the writer sustains when calls come faster than it
//! can write them is measured apart, by `benches/writer.rs`. Also: the recorder alone
//! (no MPI), a compute span plain and naming its buffers (guard and tracing layer), the
//! clock reads, the bytes per event on disk and the ring memory per thread.
//!
//! Run with `make bench` (or `cargo bench -p overlap-instrument --bench overhead`); it
//! initialises MPI as a singleton, so no `mpiexec` is needed.

use std::hint::black_box;
use std::time::Instant;

use mpi::collective::CommunicatorCollectives;
use mpi::point_to_point::{Destination, Source};
use mpi::request::scope;
use mpi::topology::Communicator;
use overlap_instrument::clock::monotonic_now_ns;
use overlap_instrument::layer::ComputeLayer;
use overlap_instrument::mpi::{TraceConfig, TraceSession};
use overlap_instrument::recorder::{BufferAccess, CallData, NullSink, Recorder, RecorderConfig};
use overlap_instrument::schema::{CommId, Op};
use tracing_subscriber::layer::SubscriberExt;

/// Operations per batch: at most 5 records each, so a batch fits in the default ring.
const BATCH: usize = 2_000;
const BATCHES: usize = 61;
/// Pause between batches, so the writer has drained the ring (untimed).
const PAUSE: std::time::Duration = std::time::Duration::from_millis(15);

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median ns per call of `f` over alternating batches of `a` and `b`.
fn compare(mut a: impl FnMut(), mut b: impl FnMut()) -> (f64, f64) {
    let mut ta = Vec::with_capacity(BATCHES);
    let mut tb = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let t = Instant::now();
        for _ in 0..BATCH {
            a();
        }
        ta.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
        std::thread::sleep(PAUSE);
        let t = Instant::now();
        for _ in 0..BATCH {
            b();
        }
        tb.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
        std::thread::sleep(PAUSE);
    }
    (median(&mut ta), median(&mut tb))
}

fn report(name: &str, calls_per_op: usize, (plain, traced): (f64, f64)) {
    let per_call = (traced - plain) / calls_per_op as f64;
    println!(
        "{name:<38} untraced {plain:8.1} ns   traced {traced:8.1} ns   overhead {per_call:6.1} ns/call"
    );
}

fn main() {
    let universe = mpi::initialize().expect("MPI initialises");
    let world = universe.world();
    let dir = std::env::temp_dir().join(format!("overlap-bench-{}", std::process::id()));
    let session =
        TraceSession::start(&world, TraceConfig::new(&dir, "bench")).expect("trace session");
    let comm = session.comm(&world, CommId::WORLD);
    let me = world.rank();

    println!(
        "median of {BATCHES} alternating batches of {BATCH} operations, 1 rank, clock: {}\n",
        if session.recorder().uses_tsc() {
            "TSC"
        } else {
            "CLOCK_MONOTONIC"
        }
    );

    // MPI_Barrier on one rank: about the cheapest MPI call there is.
    report(
        "MPI_Barrier",
        1,
        compare(|| world.barrier(), || comm.barrier()),
    );

    // Isend + Irecv to self, then Waitall: three calls per operation.
    let send = [7u64; 1];
    let mut recv = [0u64; 1];
    let mut recv2 = [0u64; 1];
    report(
        "MPI_Isend+MPI_Irecv+MPI_Waitall (8 B)",
        3,
        compare(
            || {
                scope(|s| {
                    let r = world.process_at_rank(me);
                    let a = r.immediate_receive_into_with_tag(s, &mut recv[..], 1);
                    let b = r.immediate_send_with_tag(s, &send[..], 1);
                    // What TracedComm::wait_all does, minus the recording.
                    let mut all = vec![a, b];
                    let mut it = all.drain(..);
                    let (x, y) = (it.next().expect("two"), it.next().expect("two"));
                    // SAFETY: completed by MPI_Waitall right below.
                    let mut raw = unsafe { [x.into_raw().0, y.into_raw().0] };
                    drop(it);
                    let mut st = [std::mem::MaybeUninit::<mpi::ffi::MPI_Status>::uninit(); 2];
                    // SAFETY: two active requests, room for two statuses.
                    unsafe { mpi::ffi::MPI_Waitall(2, raw.as_mut_ptr(), st.as_mut_ptr().cast()) };
                });
            },
            || {
                scope(|s| {
                    let a = comm.irecv(s, me, 1, &mut recv2[..]);
                    let b = comm.isend(s, me, 1, &send[..]);
                    let mut all = vec![a, b];
                    comm.wait_all(&mut all);
                });
            },
        ),
    );

    // The recorder alone: a call record appended from the hot path (NullSink writer).
    let rec = Recorder::new(NullSink, RecorderConfig::default()).expect("recorder");
    let data = CallData::Complete { flag: None };
    let (_, alone) = compare(
        || {},
        || {
            let start = rec.stamp();
            let end = rec.stamp();
            rec.record_call(Op::Barrier, start, end, black_box(data), &[]);
        },
    );
    println!(
        "{:<38} {alone:8.1} ns per call (two stamps + ring append)",
        "recorder alone"
    );
    // The same through a ThreadRecorder, as the preload records (no thread-local lookup).
    let here = rec.for_this_thread();
    let (_, bound) = compare(
        || {},
        || {
            let start = here.stamp();
            let end = here.stamp();
            here.record_call_from(Op::Barrier, start, end, 0x4242, black_box(data), 0, |_| {
                unreachable!("no completions")
            });
        },
    );
    println!(
        "{:<38} {bound:8.1} ns per call (two stamps + ring append)",
        "thread recorder alone (the preload's)"
    );
    // Compute spans: a plain guard, and one naming the buffers it reads and writes (a
    // list interned once, as programs prepare it); then the same through the tracing
    // layer, a span with `reads`/`writes` fields against one without.
    let step = BufferAccess::new(&["halo_l", "halo_r", "x"], &["y"]).expect("names");
    let (plain, named) = compare(
        || drop(black_box(rec.compute("step"))),
        || drop(black_box(rec.compute_with("step", step))),
    );
    println!(
        "{:<38} {plain:8.1} ns per span; naming its buffers {named:8.1} ns (+{:.1})",
        "compute span (guard)",
        named - plain
    );
    let layer = tracing_subscriber::registry().with(ComputeLayer::new(rec.clone()));
    tracing::subscriber::with_default(layer, || {
        let plain_span = tracing::info_span!("step");
        let named_span = tracing::info_span!("step", reads = "halo_l,halo_r,x", writes = "y");
        let (plain, named) = compare(|| plain_span.in_scope(|| ()), || named_span.in_scope(|| ()));
        println!(
            "{:<38} {plain:8.1} ns per span; naming its buffers {named:8.1} ns (+{:.1})",
            "compute span (tracing layer)",
            named - plain
        );
    });
    let (_, stamp) = compare(
        || {},
        || {
            black_box(rec.stamp());
        },
    );
    println!(
        "{:<38} {stamp:8.1} ns",
        "stamp (clock read on the hot path)"
    );
    let (_, mono) = compare(
        || {},
        || {
            black_box(monotonic_now_ns());
        },
    );
    println!("{:<38} {mono:8.1} ns", "clock_gettime(CLOCK_MONOTONIC)");
    rec.finish().expect("finish");

    let report = session.finish().expect("finish");
    // The rank's file, whatever its format's extension.
    let bytes: u64 = std::fs::read_dir(&dir)
        .expect("the trace directory")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("rank-"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    let per_event = match report.events {
        0 => "unknown (no event written)".to_string(),
        n => format!("{:.0}", bytes as f64 / n as f64),
    };
    println!(
        "\ntrace file: {} events, {} bytes, {per_event} bytes/event; ring memory per thread: {} KiB",
        report.events,
        bytes,
        RecorderConfig::default().ring_bytes / 1024
    );
    println!(
        "buffer stalls (thread waited for the writer): {}",
        report.buffer_stalls
    );
    let _ = std::fs::remove_dir_all(&dir);
}
