//! `overlap-kernels`: the MPI binary that runs one bundled kernel on every rank, traced.
//! `overlap run` launches it under `mpiexec`; it can also be launched by hand:
//!
//! ```text
//! mpiexec -n 4 overlap-kernels toeplitz --variant overlapped --trace-dir run.ranks
//! overlap merge run.ranks --out run.json
//! ```
//!
//! Rank 0 prints what the kernel reports (and for the micro-benchmarks writes the JSON
//! results and the network model); a kernel error on any rank takes the job down.

mod args;

use std::path::Path;
use std::process::ExitCode;

use mpi::collective::{CommunicatorCollectives, SystemOperation};
use mpi::topology::{Communicator, SimpleCommunicator};
use overlap_instrument::mpi::{TraceConfig, TraceSession};
use overlap_instrument::schema::CommId;
use overlap_kernels::false_overlap::FalseOverlap;
use overlap_kernels::gpu_pipeline::{self, GpuPipeline};
use overlap_kernels::halo3d::{self, Halo3d};
use overlap_kernels::pingpong::{self, Pingpong};
use overlap_kernels::results::{self, write_json};
use overlap_kernels::stats::Stability;
use overlap_kernels::sync::{self, Sync};
use overlap_kernels::toeplitz::{self, Method, Toeplitz, ToeplitzReport};
use overlap_kernels::{Kernel, KernelContext, KernelError, KernelReport};

use args::Cli;
use clap::Parser;
use overlap_kernels::args::Kernels;

/// Runs `kernel` traced on this rank. `Err` carries the exit code after a failure that
/// every rank saw alike (invalid options); any other failure aborts the job.
fn traced<K: Kernel>(
    world: &SimpleCommunicator,
    args: &Cli,
    kernel: &K,
) -> Result<K::Output, ExitCode> {
    let rank = world.rank();
    let mut config = TraceConfig::new(args.trace_dir(), kernel.name());
    config.params = kernel.params();
    config.recorder.flush_interval = args.flush();
    let session = match TraceSession::start(world, config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rank {rank}: error: {e}");
            world.abort(1);
        }
    };
    let ctx = KernelContext {
        comm: session.comm(world, CommId::WORLD),
        recorder: session.recorder(),
    };
    let outcome = kernel.run(&ctx);
    if let Err(KernelError::InvalidOption(reason)) = &outcome {
        // Every rank checked the same options against the same rank count: all fail
        // here, so the job can end cleanly, with one message.
        if rank == 0 {
            eprintln!("rank 0: error: invalid option: {reason}");
        }
        if let Err(e) = session.finish() {
            eprintln!("rank {rank}: error: {e}");
        }
        return Err(ExitCode::from(2));
    }
    let output = match outcome {
        Ok(o) => o,
        Err(e) => {
            eprintln!("rank {rank}: error: {e}");
            // Keep what was recorded, then take the whole job down: the other ranks would
            // wait forever for this one.
            if let Err(fe) = session.recorder().finish() {
                eprintln!("rank {rank}: error: {fe}");
            }
            world.abort(1);
        }
    };
    if let Err(e) = session.finish() {
        eprintln!("rank {rank}: error: {e}");
        world.abort(1);
    }
    Ok(output)
}

fn false_overlap_summary(world: &SimpleCommunicator, k: &FalseOverlap, report: &KernelReport) {
    let local = [report.messages_verified, report.bytes_received];
    let mut total = [0u64; 2];
    world.all_reduce_into(&local[..], &mut total[..], SystemOperation::sum());
    if world.rank() == 0 {
        println!(
            "{} ({}): {} ranks, {} iterations, {} payloads verified ({:.1} MiB)",
            k.name(),
            k.options.variant.name(),
            world.size(),
            k.options.iterations,
            total[0],
            total[1] as f64 / (1024.0 * 1024.0)
        );
    }
}

fn toeplitz_summary(ranks: i32, k: &Toeplitz, r: &ToeplitzReport) -> String {
    let o = &k.options;
    let product = match (r.method, r.fft_len) {
        (Method::Fft, Some(len)) => format!("FFT product (blocks of {len} rows)"),
        _ => "direct product".to_string(),
    };
    let mut times = r.iteration_s.clone();
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let median = overlap_kernels::stats::median(&mut times);
    format!(
        "toeplitz ({}): {ranks} ranks, n = {}, lambda = {}, m = {}, {} iterations, {product}\n\
         \x20 per iteration (slowest rank): mean {}, median {}, min {}\n\
         \x20 of which in the exchange's MPI calls {}, in the product {} (means, slowest rank)\n\
         \x20 {} halo messages ({}) received (and {} receives from MPI_PROC_NULL at the two \
         ends, which carry none)\n\
         \x20 result verified against the serial product: relative error {:.2e} (limit {:e})",
        o.variant.name(),
        o.size,
        o.lambda,
        o.vectors,
        o.iterations,
        results::seconds(mean),
        results::seconds(median),
        results::seconds(times[0]),
        results::seconds(r.exchange_s),
        results::seconds(r.compute_s),
        r.messages,
        results::bytes(r.bytes),
        2 * o.iterations,
        r.relative_error,
        toeplitz::TOLERANCE,
    )
}

/// Rank 0 writes the results file; false on failure (reported).
fn save_json<T: serde::Serialize>(
    path: Option<&Path>,
    kernel: &str,
    ranks: i32,
    stability: &Stability,
    results: &T,
) -> bool {
    let Some(path) = path else { return true };
    match write_json(path, kernel, ranks as u32, stability, results) {
        Ok(()) => {
            println!("results written to {}", path.display());
            true
        }
        Err(e) => {
            eprintln!("overlap-kernels: error: writing {}: {e}", path.display());
            false
        }
    }
}

/// What rank 0 prints and writes for a micro-benchmark; false when a file failed.
fn pingpong_output(
    ranks: i32,
    r: &pingpong::PingpongResults,
    o: &pingpong::Options,
    json: Option<&Path>,
    model: Option<&Path>,
) -> bool {
    let names: Vec<&str> = o
        .patterns(ranks as usize)
        .iter()
        .map(|p| p.name())
        .collect();
    println!(
        "pingpong: {ranks} ranks, patterns {}, {} to {}",
        names.join(", "),
        results::bytes(o.min_bytes as u64),
        results::bytes(o.max_bytes as u64)
    );
    print!("{}", pingpong::table(r, &o.stability));
    let mut ok = save_json(json, "pingpong", ranks, &o.stability, r);
    if let Some(path) = model {
        match pingpong::network_model(r, ranks as u32).map(|m| (m.write(path), m)) {
            Some((Ok(()), m)) => println!(
                "network model written to {} (fit: latency {}, {} asymptotic)",
                path.display(),
                results::seconds(m.fit.latency_ns * 1e-9),
                results::rate(1e9 / m.fit.ns_per_byte)
            ),
            Some((Err(e), _)) => {
                eprintln!("overlap-kernels: error: {e}");
                ok = false;
            }
            None => {
                eprintln!("overlap-kernels: error: --model needs the single pattern's figures");
                ok = false;
            }
        }
    }
    ok
}

fn run(world: &SimpleCommunicator, args: &Cli) -> Result<bool, ExitCode> {
    let (rank, ranks) = (world.rank(), world.size());
    match &args.kernel {
        Kernels::FalseOverlap(run) => {
            let k = FalseOverlap {
                options: run.kernel.options.clone(),
            };
            let report = traced(world, args, &k)?;
            false_overlap_summary(world, &k, &report);
            Ok(true)
        }
        Kernels::Toeplitz(run) => {
            let k = Toeplitz {
                options: run.kernel.options.clone(),
            };
            let report = traced(world, args, &k)?;
            if rank == 0 {
                println!("{}", toeplitz_summary(ranks, &k, &report));
            }
            Ok(true)
        }
        Kernels::Pingpong(run) => {
            let given = &run.kernel.options;
            let (options, j, model) = (&given.options, &given.output.json, &given.model);
            let k = Pingpong {
                options: options.clone(),
            };
            let r = traced(world, args, &k)?;
            Ok(rank != 0 || pingpong_output(ranks, &r, options, j.as_deref(), model.as_deref()))
        }
        Kernels::Sync(run) => {
            let (options, j) = (&run.kernel.options.options, &run.kernel.options.output.json);
            let k = Sync {
                options: options.clone(),
            };
            let r = traced(world, args, &k)?;
            if rank != 0 {
                return Ok(true);
            }
            println!("sync: {ranks} ranks");
            print!("{}", sync::table(&r, &options.stability));
            Ok(save_json(
                j.as_deref(),
                "sync",
                ranks,
                &options.stability,
                &r,
            ))
        }
        Kernels::Halo3d(run) => {
            let (options, j) = (&run.kernel.options.options, &run.kernel.options.output.json);
            let k = Halo3d {
                options: options.clone(),
            };
            let r = traced(world, args, &k)?;
            if rank != 0 {
                return Ok(true);
            }
            println!("halo3d: {ranks} ranks");
            print!("{}", halo3d::table(&r, &options.stability));
            Ok(save_json(
                j.as_deref(),
                "halo3d",
                ranks,
                &options.stability,
                &r,
            ))
        }
        Kernels::GpuPipeline(run) => {
            // The rank's place on its node picks its GPU among the node's.
            let local_rank = world.split_shared(rank).rank() as usize;
            let chosen = GpuPipeline::new(run.kernel.options.clone(), local_rank);
            // A backend that cannot run on some rank ends the job on every rank, cleanly.
            let mut all_ok = 0i32;
            world.all_reduce_into(
                &i32::from(chosen.is_ok()),
                &mut all_ok,
                SystemOperation::min(),
            );
            let k = match chosen {
                Ok(k) if all_ok == 1 => k,
                Ok(_) => return Err(ExitCode::from(2)),
                Err(why) => {
                    eprintln!("rank {rank}: error: {why}");
                    return Err(ExitCode::from(2));
                }
            };
            let r = traced(world, args, &k)?;
            if rank == 0 {
                println!("{}", gpu_pipeline::summary(&k, ranks, &r));
            }
            Ok(true)
        }
    }
}

fn main() -> ExitCode {
    // A results file whose directory is missing fails here, not after the run.
    let args = Cli::parse();
    let Some(universe) = mpi::initialize() else {
        eprintln!("overlap-kernels: MPI was already initialised");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    match run(&world, &args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(code) => code,
    }
}
