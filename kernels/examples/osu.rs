//! The two loops of `bench/osu.c` (osu_latency and osu_bw) written with the `mpi` crate,
//! run plain or through the traced communicator, so `scripts/bench-mpi.sh` can show what
//! the Rust layer costs beside what the preload costs a C program.
//!
//! ```text
//! mpiexec -n 2 osu plain [BYTES...]
//! mpiexec -n 2 osu traced TRACE_DIR [BYTES...]      (default sizes: 8 65536)
//! ```
//!
//! The loops, iteration counts and output lines (`lat_ns BYTES NS`, `bw_mbs BYTES MB/s`,
//! from rank 0) are those of `bench/osu.c`; one difference: the receiver's window of
//! `MPI_Irecv` goes into distinct slices of one buffer (Rust lends a buffer mutably to
//! one request at a time), where OSU reuses one buffer. Both variants share the code
//! below through [`Layer`], monomorphised, so they differ only by the recording.

use std::mem::MaybeUninit;

use mpi::collective::CommunicatorCollectives;
use mpi::ffi;
use mpi::point_to_point::{Destination, Source};
use mpi::request::scope;
use mpi::topology::{Communicator, SimpleCommunicator};
use overlap_instrument::mpi::{TraceConfig, TraceSession, TracedComm};
use overlap_instrument::schema::CommId;

/// Messages in flight per window (osu_bw's default).
const WINDOW: usize = 64;
/// Above this many bytes, fewer iterations (as OSU).
const LARGE: usize = 8192;
const LAT_TAG: i32 = 1;
const BW_TAG: i32 = 2;
const ACK_TAG: i32 = 3;

/// The calls the two loops make, plain or traced.
trait Layer {
    fn send(&self, peer: i32, tag: i32, buf: &[u8]);
    fn recv(&self, peer: i32, tag: i32, buf: &mut [u8]);
    /// `WINDOW` `MPI_Isend` of `buf`, then `MPI_Waitall`.
    fn send_window(&self, peer: i32, tag: i32, buf: &[u8]);
    /// `WINDOW` `MPI_Irecv`, one into each `bytes`-long slice of `buf`, then `MPI_Waitall`.
    fn recv_window(&self, peer: i32, tag: i32, buf: &mut [u8], bytes: usize);
    fn barrier(&self);
}

/// The `mpi` crate, untraced.
struct Plain<'a>(&'a SimpleCommunicator);

/// `MPI_Waitall` on raw requests, with statuses, as [`TracedComm::wait_all`] does.
fn wait_all_raw(raw: &mut [ffi::MPI_Request]) {
    let mut statuses = [MaybeUninit::<ffi::MPI_Status>::uninit(); WINDOW];
    // SAFETY: `raw` holds at most WINDOW active requests, `statuses` room for WINDOW.
    unsafe {
        ffi::MPI_Waitall(
            raw.len() as i32,
            raw.as_mut_ptr(),
            statuses.as_mut_ptr().cast(),
        )
    };
}

impl Layer for Plain<'_> {
    fn send(&self, peer: i32, tag: i32, buf: &[u8]) {
        self.0.process_at_rank(peer).send_with_tag(buf, tag);
    }

    fn recv(&self, peer: i32, tag: i32, buf: &mut [u8]) {
        self.0.process_at_rank(peer).receive_into_with_tag(buf, tag);
    }

    fn send_window(&self, peer: i32, tag: i32, buf: &[u8]) {
        let p = self.0.process_at_rank(peer);
        scope(|s| {
            let mut raw: Vec<ffi::MPI_Request> = (0..WINDOW)
                // SAFETY: completed by wait_all_raw below, inside the scope.
                .map(|_| unsafe { p.immediate_send_with_tag(s, buf, tag).into_raw().0 })
                .collect();
            wait_all_raw(&mut raw);
        });
    }

    fn recv_window(&self, peer: i32, tag: i32, buf: &mut [u8], bytes: usize) {
        let p = self.0.process_at_rank(peer);
        scope(|s| {
            let mut raw: Vec<ffi::MPI_Request> = buf
                .chunks_exact_mut(bytes)
                .take(WINDOW)
                // SAFETY: completed by wait_all_raw below, inside the scope.
                .map(|c| unsafe { p.immediate_receive_into_with_tag(s, c, tag).into_raw().0 })
                .collect();
            wait_all_raw(&mut raw);
        });
    }

    fn barrier(&self) {
        self.0.barrier();
    }
}

impl Layer for TracedComm<'_, SimpleCommunicator> {
    fn send(&self, peer: i32, tag: i32, buf: &[u8]) {
        TracedComm::send(self, peer, tag, buf);
    }

    fn recv(&self, peer: i32, tag: i32, buf: &mut [u8]) {
        TracedComm::recv(self, peer, tag, buf);
    }

    fn send_window(&self, peer: i32, tag: i32, buf: &[u8]) {
        scope(|s| {
            let mut reqs: Vec<_> = (0..WINDOW).map(|_| self.isend(s, peer, tag, buf)).collect();
            self.wait_all(&mut reqs);
        });
    }

    fn recv_window(&self, peer: i32, tag: i32, buf: &mut [u8], bytes: usize) {
        scope(|s| {
            let mut reqs: Vec<_> = buf
                .chunks_exact_mut(bytes)
                .take(WINDOW)
                .map(|c| self.irecv(s, peer, tag, c))
                .collect();
            self.wait_all(&mut reqs);
        });
    }

    fn barrier(&self) {
        TracedComm::barrier(self);
    }
}

/// osu_latency: one-way ns, on rank 0.
fn latency_ns(l: &impl Layer, rank: i32, buf: &mut [u8]) -> f64 {
    let bytes = buf.len();
    let (iters, skip) = if bytes > LARGE {
        (2000, 100)
    } else {
        (20000, 1000)
    };
    l.barrier();
    let mut t0 = mpi::time();
    for i in 0..skip + iters {
        if i == skip {
            t0 = mpi::time();
        }
        if rank == 0 {
            l.send(1, LAT_TAG, buf);
            l.recv(1, LAT_TAG, buf);
        } else if rank == 1 {
            l.recv(0, LAT_TAG, buf);
            l.send(0, LAT_TAG, buf);
        }
    }
    (mpi::time() - t0) / (2.0 * iters as f64) * 1e9
}

/// osu_bw: MB/s (1e6 bytes), on rank 0. `buf` holds `WINDOW` messages of `bytes`.
fn bandwidth_mbs(l: &impl Layer, rank: i32, buf: &mut [u8], bytes: usize) -> f64 {
    let (iters, skip) = if bytes > LARGE {
        (100, 10)
    } else {
        (1000, 100)
    };
    let mut ack = [0u8; 4];
    l.barrier();
    let mut t0 = mpi::time();
    for i in 0..skip + iters {
        if i == skip {
            t0 = mpi::time();
        }
        if rank == 0 {
            l.send_window(1, BW_TAG, &buf[..bytes]);
            l.recv(1, ACK_TAG, &mut ack);
        } else if rank == 1 {
            l.recv_window(0, BW_TAG, buf, bytes);
            l.send(0, ACK_TAG, &ack);
        }
    }
    let secs = mpi::time() - t0;
    (bytes * WINDOW * iters) as f64 / secs / 1e6
}

fn run(l: &impl Layer, rank: i32, sizes: &[usize]) {
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let mut buf = vec![b'a'; largest * WINDOW];
    for &bytes in sizes {
        let lat = latency_ns(l, rank, &mut buf[..bytes]);
        if rank == 0 {
            println!("lat_ns {bytes} {lat:.1}");
        }
    }
    for &bytes in sizes {
        let bw = bandwidth_mbs(l, rank, &mut buf, bytes);
        if rank == 0 {
            println!("bw_mbs {bytes} {bw:.2}");
        }
    }
}

const USAGE: &str = "usage: osu plain [BYTES...] | osu traced TRACE_DIR [BYTES...]";

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().expect(USAGE);
    let dir = match mode.as_str() {
        "plain" => None,
        "traced" => Some(args.next().expect(USAGE)),
        _ => panic!("{USAGE}"),
    };
    let mut sizes: Vec<usize> = args
        .map(|a| match a.parse() {
            Ok(n) if n > 0 => n,
            _ => panic!("message sizes are positive bytes, got {a}"),
        })
        .collect();
    if sizes.is_empty() {
        sizes = vec![8, 65536];
    }
    let universe = mpi::initialize().expect("MPI initialises");
    let world = universe.world();
    assert!(world.size() >= 2, "run on 2 ranks");
    let rank = world.rank();
    match dir {
        None => run(&Plain(&world), rank, &sizes),
        Some(dir) => {
            let session =
                TraceSession::start(&world, TraceConfig::new(dir, "osu")).expect("trace session");
            run(&session.comm(&world, CommId::WORLD), rank, &sizes);
            session.finish().expect("finishing the trace");
        }
    }
}
