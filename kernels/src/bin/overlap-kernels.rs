//! `overlap-kernels`: the MPI binary that runs one bundled kernel on every rank, traced.
//! `overlap run` launches it under `mpiexec`; it can also be launched by hand:
//!
//! ```text
//! mpiexec -n 4 overlap-kernels false-overlap --variant fixed --trace-dir run.ranks
//! overlap merge run.ranks --out run.json
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use mpi::collective::{CommunicatorCollectives, SystemOperation};
use mpi::topology::Communicator;
use overlap_instrument::mpi::{TraceConfig, TraceSession};
use overlap_instrument::schema::CommId;
use overlap_kernels::false_overlap::{FalseOverlap, Options, Variant};
use overlap_kernels::{Kernel, KernelContext};

const USAGE: &str = "\
usage: overlap-kernels false-overlap --trace-dir DIR [options]

options:
  --variant naive|fixed     where the send Waitall goes (default naive)
  --size WORDS              small message, 8-byte words (default 16384)
  --ratio R                 large message is size*R words (default 8)
  --iters N                 iterations (default 20)
  --compute UNITS           work per compute phase, 1024 multiply-adds each (default 2000)
  --flush-ms MS             how often trace data reaches the file (default 50)
  --kill-rank R             testing aid: rank R kills itself (SIGKILL) ...
  --kill-at-iteration K     ... at the start of iteration K (default 0)";

struct Args {
    trace_dir: PathBuf,
    flush: Duration,
    options: Options,
}

fn parse_number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{flag}: '{value}' is not a valid number"))
}

fn parse(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    match argv.next().as_deref() {
        Some("false-overlap") => {}
        Some(other) => return Err(format!("unknown kernel '{other}' (known: false-overlap)")),
        None => return Err("no kernel given".into()),
    }
    let mut options = Options::default();
    let mut trace_dir = None;
    let mut flush = Duration::from_millis(50);
    while let Some(flag) = argv.next() {
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--trace-dir" => trace_dir = Some(PathBuf::from(value)),
            "--variant" => {
                options.variant = Variant::from_name(&value)
                    .ok_or_else(|| format!("--variant: '{value}' is not naive or fixed"))?;
            }
            "--size" => options.size = parse_number(&flag, &value)?,
            "--ratio" => options.ratio = parse_number(&flag, &value)?,
            "--iters" => options.iterations = parse_number(&flag, &value)?,
            "--compute" => options.compute = parse_number(&flag, &value)?,
            "--flush-ms" => flush = Duration::from_millis(parse_number(&flag, &value)?),
            "--kill-rank" => options.kill_rank = Some(parse_number(&flag, &value)?),
            "--kill-at-iteration" => options.kill_at_iteration = parse_number(&flag, &value)?,
            other => return Err(format!("unknown option '{other}'")),
        }
    }
    let trace_dir = trace_dir.ok_or("--trace-dir is required")?;
    Ok(Args {
        trace_dir,
        flush,
        options,
    })
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("overlap-kernels: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Some(universe) = mpi::initialize() else {
        eprintln!("overlap-kernels: MPI was already initialised");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let rank = world.rank();
    let kernel = FalseOverlap {
        options: args.options,
    };
    let mut config = TraceConfig::new(&args.trace_dir, kernel.name());
    config.params = kernel.params();
    config.recorder.flush_interval = args.flush;
    let session = match TraceSession::start(&world, config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rank {rank}: error: {e}");
            world.abort(1);
        }
    };
    let ctx = KernelContext {
        comm: session.comm(&world, CommId::WORLD),
        recorder: session.recorder(),
    };
    let report = match kernel.run(&ctx) {
        Ok(r) => r,
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
    let local = [report.messages_verified, report.bytes_received];
    let mut total = [0u64; 2];
    world.all_reduce_into(&local[..], &mut total[..], SystemOperation::sum());
    if let Err(e) = session.finish() {
        eprintln!("rank {rank}: error: {e}");
        world.abort(1);
    }
    if rank == 0 {
        println!(
            "{} ({}): {} ranks, {} iterations, {} payloads verified ({:.1} MiB)",
            kernel.name(),
            kernel.options.variant.name(),
            world.size(),
            kernel.options.iterations,
            total[0],
            total[1] as f64 / (1024.0 * 1024.0)
        );
    }
    ExitCode::SUCCESS
}
