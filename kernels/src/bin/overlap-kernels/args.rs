//! The command line of `overlap-kernels`, parsed by hand (the kernels crate carries no
//! argument parser; `overlap run` builds these command lines from its own, checked
//! options). Every error names the flag and what was wrong with its value.

use std::path::PathBuf;
use std::time::Duration;

use overlap_kernels::stats::Stability;
use overlap_kernels::{false_overlap, halo3d, pingpong, sync, toeplitz};

pub const USAGE: &str = "\
usage: overlap-kernels KERNEL --trace-dir DIR [options]

kernels and their options:
  false-overlap   --variant naive|fixed --size WORDS --ratio R --iters N --compute UNITS
                  --kill-rank R --kill-at-iteration K (testing aids)
  toeplitz        --variant blocking|nonblocking|overlapped --size N --lambda L
                  --vectors M --iters N --product auto|direct|fft
                  --fault-rank R (testing aid: R corrupts a received halo value)
  pingpong        --patterns single,multiple,crossing --min-bytes B --max-bytes B
                  --json FILE --model FILE
  sync            --kinds barrier,pairwise,ring,random,grid3d --max-neighbours K
                  --delay-us US --seed S --json FILE
  halo3d          --sizes E,E,... --json FILE

repetitions (pingpong, sync, halo3d):
  --min-samples N --max-samples N --rse PCT --sample-ms MS --point-seconds S

all kernels:
  --trace-dir DIR           where each rank writes rank-N.json (required)
  --flush-ms MS             how often trace data reaches the file (default 50)";

/// A kernel with its options, and where its results go.
pub enum Choice {
    FalseOverlap(false_overlap::Options),
    Toeplitz(toeplitz::Options),
    Pingpong {
        options: pingpong::Options,
        json: Option<PathBuf>,
        model: Option<PathBuf>,
    },
    Sync {
        options: sync::Options,
        json: Option<PathBuf>,
    },
    Halo3d {
        options: halo3d::Options,
        json: Option<PathBuf>,
    },
}

impl Choice {
    /// The files rank 0 will write at the end.
    pub fn outputs(&self) -> Vec<(&'static str, &PathBuf)> {
        let (json, model) = match self {
            Choice::Pingpong { json, model, .. } => (json, model),
            Choice::Sync { json, .. } | Choice::Halo3d { json, .. } => (json, &None),
            _ => (&None, &None),
        };
        let mut out = Vec::new();
        out.extend(json.iter().map(|p| ("--json", p)));
        out.extend(model.iter().map(|p| ("--model", p)));
        out
    }
}

pub struct Args {
    pub trace_dir: PathBuf,
    pub flush: Duration,
    pub choice: Choice,
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{flag}: '{value}' is not a valid number"))
}

/// A comma-separated list of names, each known to `lookup`.
fn names<T>(
    flag: &str,
    value: &str,
    lookup: impl Fn(&str) -> Option<T>,
    known: &str,
) -> Result<Vec<T>, String> {
    value
        .split(',')
        .map(|n| lookup(n.trim()).ok_or_else(|| format!("{flag}: '{n}' is not one of {known}")))
        .collect()
}

/// Applies a repetition flag; false when `flag` is not one.
fn stability_flag(s: &mut Stability, flag: &str, value: &str) -> Result<bool, String> {
    match flag {
        "--min-samples" => s.min_samples = number(flag, value)?,
        "--max-samples" => s.max_samples = number(flag, value)?,
        "--rse" => s.target_rse = number::<f64>(flag, value)? / 100.0,
        "--sample-ms" => s.sample_seconds = number::<f64>(flag, value)? / 1e3,
        "--point-seconds" => s.max_seconds = number(flag, value)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn false_overlap_flag(o: &mut false_overlap::Options, flag: &str, v: &str) -> Result<bool, String> {
    match flag {
        "--variant" => {
            o.variant = false_overlap::Variant::from_name(v)
                .ok_or_else(|| format!("--variant: '{v}' is not naive or fixed"))?;
        }
        "--size" => o.size = number(flag, v)?,
        "--ratio" => o.ratio = number(flag, v)?,
        "--iters" => o.iterations = number(flag, v)?,
        "--compute" => o.compute = number(flag, v)?,
        "--kill-rank" => o.kill_rank = Some(number(flag, v)?),
        "--kill-at-iteration" => o.kill_at_iteration = number(flag, v)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn toeplitz_flag(o: &mut toeplitz::Options, flag: &str, v: &str) -> Result<bool, String> {
    match flag {
        "--variant" => {
            o.variant = toeplitz::Variant::from_name(v).ok_or_else(|| {
                format!("--variant: '{v}' is not blocking, nonblocking or overlapped")
            })?;
        }
        "--size" => o.size = number(flag, v)?,
        "--lambda" => o.lambda = number(flag, v)?,
        "--vectors" => o.vectors = number(flag, v)?,
        "--iters" => o.iterations = number(flag, v)?,
        "--product" => {
            o.product = toeplitz::ProductChoice::from_name(v)
                .ok_or_else(|| format!("--product: '{v}' is not auto, direct or fft"))?;
        }
        "--fault-rank" => o.fault_rank = Some(number(flag, v)?),
        _ => return Ok(false),
    }
    Ok(true)
}

fn pingpong_flag(o: &mut pingpong::Options, flag: &str, v: &str) -> Result<bool, String> {
    match flag {
        "--patterns" => {
            let known = "single, multiple, crossing";
            o.patterns = Some(names(flag, v, pingpong::Pattern::from_name, known)?);
        }
        "--min-bytes" => o.min_bytes = number(flag, v)?,
        "--max-bytes" => o.max_bytes = number(flag, v)?,
        _ => return stability_flag(&mut o.stability, flag, v),
    }
    Ok(true)
}

fn sync_flag(o: &mut sync::Options, flag: &str, v: &str) -> Result<bool, String> {
    match flag {
        "--kinds" => {
            let known = "barrier, pairwise, ring, random, grid3d";
            o.kinds = Some(names(flag, v, sync::SyncKind::from_name, known)?);
        }
        "--max-neighbours" => o.max_neighbours = number(flag, v)?,
        "--delay-us" => o.delay_us = number(flag, v)?,
        "--seed" => o.seed = number(flag, v)?,
        _ => return stability_flag(&mut o.stability, flag, v),
    }
    Ok(true)
}

fn halo3d_flag(o: &mut halo3d::Options, flag: &str, v: &str) -> Result<bool, String> {
    match flag {
        "--sizes" => {
            o.sizes = v
                .split(',')
                .map(|e| number(flag, e.trim()))
                .collect::<Result<_, _>>()?;
        }
        _ => return stability_flag(&mut o.stability, flag, v),
    }
    Ok(true)
}

fn set_path(slot: &mut Option<PathBuf>, value: &str) -> Result<bool, String> {
    *slot = Some(PathBuf::from(value));
    Ok(true)
}

impl Choice {
    fn for_kernel(name: &str) -> Result<Choice, String> {
        Ok(match name {
            "false-overlap" => Choice::FalseOverlap(false_overlap::Options::default()),
            "toeplitz" => Choice::Toeplitz(toeplitz::Options::default()),
            "pingpong" => Choice::Pingpong {
                options: pingpong::Options::default(),
                json: None,
                model: None,
            },
            "sync" => Choice::Sync {
                options: sync::Options::default(),
                json: None,
            },
            "halo3d" => Choice::Halo3d {
                options: halo3d::Options::default(),
                json: None,
            },
            other => {
                return Err(format!(
                    "unknown kernel '{other}' (known: false-overlap, toeplitz, pingpong, \
                     sync, halo3d)"
                ))
            }
        })
    }

    /// Applies one of the kernel's flags; false when the kernel has no such flag.
    fn apply(&mut self, flag: &str, v: &str) -> Result<bool, String> {
        match self {
            Choice::FalseOverlap(o) => false_overlap_flag(o, flag, v),
            Choice::Toeplitz(o) => toeplitz_flag(o, flag, v),
            Choice::Pingpong {
                options,
                json,
                model,
            } => match flag {
                "--json" => set_path(json, v),
                "--model" => set_path(model, v),
                _ => pingpong_flag(options, flag, v),
            },
            Choice::Sync { options, json } => match flag {
                "--json" => set_path(json, v),
                _ => sync_flag(options, flag, v),
            },
            Choice::Halo3d { options, json } => match flag {
                "--json" => set_path(json, v),
                _ => halo3d_flag(options, flag, v),
            },
        }
    }
}

pub fn parse(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let kernel = argv.next().ok_or("no kernel given")?;
    let mut choice = Choice::for_kernel(&kernel)?;
    let mut trace_dir = None;
    let mut flush = Duration::from_millis(50);
    while let Some(flag) = argv.next() {
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--trace-dir" => trace_dir = Some(PathBuf::from(value)),
            "--flush-ms" => flush = Duration::from_millis(number(&flag, &value)?),
            _ => {
                if !choice.apply(&flag, &value)? {
                    return Err(format!("unknown option '{flag}' for {kernel}"));
                }
            }
        }
    }
    let trace_dir = trace_dir.ok_or("--trace-dir is required")?;
    Ok(Args {
        trace_dir,
        flush,
        choice,
    })
}
