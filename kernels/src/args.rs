//! The one definition of every kernel's command-line options. Each kernel's `Options`
//! is a clap `Args` struct whose attributes carry the flag names, the help and the
//! defaults; `Options::default()` is what an empty command line parses to. The
//! `overlap-kernels` binary parses [`Kernels`] directly, and `overlap run` flattens the
//! same [`Kernels`] and hands the kernels binary back exactly the options its user gave
//! ([`Given::argv`]), so no option, name or default is written twice.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::PossibleValue;
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, Command, FromArgMatches, Subcommand};

use crate::options::{false_overlap, gpu_pipeline, halo3d, pingpong, sync, toeplitz};

/// What an empty command line parses to: the defaults, as the options define them.
///
/// # Panics
/// When `T` has a required option: kernel options all have defaults (a unit test parses
/// every kernel's).
pub fn defaults<T: Args + FromArgMatches>() -> T {
    let command = T::augment_args(Command::new("defaults").no_binary_name(true));
    let matches = command.get_matches_from(std::iter::empty::<OsString>());
    #[allow(clippy::expect_used)]
    T::from_arg_matches(&matches).expect("every kernel option has a default")
}

/// Implements clap's `ValueEnum` from an enum's `ALL` and `name()`, so that a value's
/// name on the command line is defined once.
macro_rules! value_enum_by_name {
    ($t:ty) => {
        impl clap::ValueEnum for $t {
            fn value_variants<'a>() -> &'a [Self] {
                &<$t>::ALL
            }
            fn to_possible_value(&self) -> Option<PossibleValue> {
                Some(PossibleValue::new(self.name()))
            }
        }
    };
}

value_enum_by_name!(false_overlap::Variant);
value_enum_by_name!(toeplitz::Variant);
value_enum_by_name!(toeplitz::ProductChoice);
value_enum_by_name!(pingpong::Pattern);
value_enum_by_name!(sync::SyncKind);
value_enum_by_name!(gpu_pipeline::Variant);
value_enum_by_name!(gpu_pipeline::BackendChoice);

/// Options parsed as `T`, with the options the user gave as they were given (not those
/// left at their defaults), to pass on to another command line parsing the same `T`.
#[derive(Clone, Debug)]
pub struct Given<T> {
    /// The parsed options.
    pub options: T,
    argv: Vec<OsString>,
}

impl<T> Given<T> {
    /// `--flag value` for every option given on the command line, in definition order.
    pub fn argv(&self) -> &[OsString] {
        &self.argv
    }
}

/// The options of `T` that `matches` got from the command line, as arguments.
fn given_argv<T: Args>(matches: &ArgMatches) -> Vec<OsString> {
    let command = T::augment_args(Command::new("given"));
    let mut argv = Vec::new();
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        if matches.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        let Some(long) = arg.get_long() else { continue };
        let flag = OsString::from(format!("--{long}"));
        if arg.get_action().takes_values() {
            for value in matches.get_raw(id).into_iter().flatten() {
                argv.push(flag.clone());
                argv.push(value.to_os_string());
            }
        } else {
            argv.push(flag);
        }
    }
    argv
}

impl<T: FromArgMatches + Args> FromArgMatches for Given<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(Given {
            options: T::from_arg_matches(matches)?,
            argv: given_argv::<T>(matches),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.options.update_from_arg_matches(matches)?;
        self.argv = given_argv::<T>(matches);
        Ok(())
    }
}

impl<T: FromArgMatches + Args> Args for Given<T> {
    fn augment_args(cmd: Command) -> Command {
        T::augment_args(cmd)
    }
    fn augment_args_for_update(cmd: Command) -> Command {
        T::augment_args_for_update(cmd)
    }
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

/// `--json FILE`/`--model FILE`: the file must be in a directory that exists, checked
/// before the run rather than after it.
fn output_file(value: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(value);
    let absolute = std::path::absolute(&path).map_err(|e| format!("not a usable path: {e}"))?;
    match absolute.parent() {
        Some(dir) if !dir.is_dir() => {
            Err(format!("the directory {} does not exist", dir.display()))
        }
        _ => Ok(path),
    }
}

/// Where a micro-benchmark writes its results.
#[derive(Clone, Debug, Args)]
pub struct JsonOutput {
    /// Write the results as JSON here.
    #[arg(long, value_name = "FILE", value_parser = output_file)]
    pub json: Option<PathBuf>,
}

/// The ping-pong kernel's options and its output files.
#[derive(Clone, Debug, Args)]
pub struct PingpongArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub options: pingpong::Options,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub output: JsonOutput,
    /// Write the single pattern's latency and bandwidth per size as a network model.
    #[arg(long, value_name = "FILE", value_parser = output_file)]
    pub model: Option<PathBuf>,
}

/// The synchronisation kernel's options and its output file.
#[derive(Clone, Debug, Args)]
pub struct SyncArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub options: sync::Options,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub output: JsonOutput,
}

/// The 3-D halo kernel's options and its output file.
#[derive(Clone, Debug, Args)]
pub struct Halo3dArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub options: halo3d::Options,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub output: JsonOutput,
}

/// How the ranks record.
#[derive(Clone, Debug, Args)]
pub struct Recording {
    /// How often ranks flush trace data to their files, ms.
    #[arg(long, value_name = "MS", default_value_t = 50)]
    pub flush_ms: u64,
}

/// One kernel's options (`K`), how the ranks record, and what the command running it
/// adds (`X`: the trace directory for the kernels binary, the launch for `overlap run`).
#[derive(Clone, Debug, Args)]
pub struct KernelRun<K: FromArgMatches + Args, X: FromArgMatches + Args> {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub kernel: Given<K>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub recording: Given<Recording>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub extra: X,
}

impl<K: FromArgMatches + Args, X: FromArgMatches + Args> KernelRun<K, X> {
    /// The kernel's and the recording options given, for the kernels binary.
    pub fn argv(&self) -> Vec<OsString> {
        let mut argv = self.kernel.argv().to_vec();
        argv.extend_from_slice(self.recording.argv());
        argv
    }
}

/// The bundled kernels, each with its options, and `X` added to each.
#[derive(Clone, Debug, Subcommand)]
pub enum Kernels<X: FromArgMatches + Args> {
    /// Pairs exchanging imbalanced messages; shows false overlap (send Waitall too early).
    FalseOverlap(KernelRun<false_overlap::Options, X>),
    /// MIDAPACK's Toeplitz halo exchange; shows blocking vs false vs real overlap with the
    /// interior product.
    Toeplitz(KernelRun<toeplitz::Options, X>),
    /// Ping-pong latency and bandwidth per message size (single, multiple, crossing
    /// pairs); writes the network model.
    Pingpong(KernelRun<PingpongArgs, X>),
    /// Synchronisation overhead (barrier, pairwise, ring, random, 3-D grid), by
    /// subtracting a delay loop.
    Sync(KernelRun<SyncArgs, X>),
    /// Halo swaps of a 3-D array on a periodic 3-D process grid; time per swap and
    /// bandwidth.
    Halo3d(KernelRun<Halo3dArgs, X>),
    /// Halo packets staged through pinned host memory between GPUs (D2H, MPI, H2D),
    /// pipelined packet by packet or in bulk, every packet checksummed; `--smoke`
    /// checks a new system.
    GpuPipeline(KernelRun<gpu_pipeline::Options, X>),
}

impl<X: FromArgMatches + Args> Kernels<X> {
    /// The kernel's name on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Kernels::FalseOverlap(_) => "false-overlap",
            Kernels::Toeplitz(_) => "toeplitz",
            Kernels::Pingpong(_) => "pingpong",
            Kernels::Sync(_) => "sync",
            Kernels::Halo3d(_) => "halo3d",
            Kernels::GpuPipeline(_) => "gpu-pipeline",
        }
    }

    /// The kernel's variant, for kernels that have one.
    pub fn variant(&self) -> Option<&'static str> {
        match self {
            Kernels::FalseOverlap(k) => Some(k.kernel.options.variant.name()),
            Kernels::Toeplitz(k) => Some(k.kernel.options.variant.name()),
            Kernels::GpuPipeline(k) => Some(k.kernel.options.variant.name()),
            _ => None,
        }
    }

    /// The options given for the kernel and its recording, for the kernels binary.
    pub fn argv(&self) -> Vec<OsString> {
        match self {
            Kernels::FalseOverlap(k) => k.argv(),
            Kernels::Toeplitz(k) => k.argv(),
            Kernels::Pingpong(k) => k.argv(),
            Kernels::Sync(k) => k.argv(),
            Kernels::Halo3d(k) => k.argv(),
            Kernels::GpuPipeline(k) => k.argv(),
        }
    }

    /// What the command running the kernel added.
    pub fn extra(&self) -> &X {
        match self {
            Kernels::FalseOverlap(k) => &k.extra,
            Kernels::Toeplitz(k) => &k.extra,
            Kernels::Pingpong(k) => &k.extra,
            Kernels::Sync(k) => &k.extra,
            Kernels::Halo3d(k) => &k.extra,
            Kernels::GpuPipeline(k) => &k.extra,
        }
    }

    /// How the ranks record.
    pub fn recording(&self) -> &Recording {
        match self {
            Kernels::FalseOverlap(k) => &k.recording.options,
            Kernels::Toeplitz(k) => &k.recording.options,
            Kernels::Pingpong(k) => &k.recording.options,
            Kernels::Sync(k) => &k.recording.options,
            Kernels::Halo3d(k) => &k.recording.options,
            Kernels::GpuPipeline(k) => &k.recording.options,
        }
    }
}

/// Milliseconds on the command line, seconds in the options.
pub(crate) fn millis_as_seconds(value: &str) -> Result<f64, String> {
    let ms: f64 = value
        .parse()
        .map_err(|_| format!("'{value}' is not a number of milliseconds"))?;
    Ok(ms / 1e3)
}

/// A percentage on the command line, a fraction in the options.
pub(crate) fn percent_as_fraction(value: &str) -> Result<f64, String> {
    let pct: f64 = value
        .parse()
        .map_err(|_| format!("'{value}' is not a percentage"))?;
    Ok(pct / 100.0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use clap::Parser;

    use super::*;

    /// A command line like the kernels binary's, with nothing added.
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        kernel: Kernels<Nothing>,
    }

    #[derive(Clone, Debug, Args)]
    struct Nothing {}

    fn parse(args: &[&str]) -> Kernels<Nothing> {
        Cli::try_parse_from(std::iter::once("k").chain(args.iter().copied()))
            .unwrap()
            .kernel
    }

    #[test]
    fn every_kernel_has_defaults_for_every_option() {
        // `defaults` panics on a required option; these are the defaults written out.
        let f: false_overlap::Options = defaults();
        assert_eq!(f.size, 16 * 1024);
        assert_eq!(f.kill_rank, None);
        let t: toeplitz::Options = defaults();
        assert_eq!(
            (t.size, t.lambda, t.vectors, t.iterations),
            (1 << 18, 1024, 8, 20)
        );
        let p: pingpong::Options = defaults();
        assert_eq!((p.min_bytes, p.max_bytes, p.patterns), (8, 4 << 20, None));
        assert_eq!(p.stability.max_samples, 20);
        assert_eq!(p.stability.target_rse, 0.02);
        assert!((p.stability.sample_seconds - 0.2e-3).abs() < 1e-15);
        let s: sync::Options = defaults();
        assert_eq!(s.stability.max_samples, 50, "sync takes more samples");
        assert_eq!(s.stability.min_samples, 5);
        let h: halo3d::Options = defaults();
        assert_eq!(h.sizes, [8, 16, 32, 64, 128]);
        assert_eq!(h.stability, crate::options::Stability::default());
    }

    #[test]
    fn options_given_are_passed_on_as_given_and_only_they() {
        let k = parse(&[
            "toeplitz",
            "--lambda",
            "64",
            "--variant=overlapped",
            "--flush-ms",
            "7",
        ]);
        assert_eq!(k.name(), "toeplitz");
        assert_eq!(k.variant(), Some("overlapped"));
        assert_eq!(
            k.argv(),
            [
                "--variant",
                "overlapped",
                "--lambda",
                "64",
                "--flush-ms",
                "7"
            ]
        );
        let k = parse(&["sync", "--kinds", "ring,grid3d", "--rse", "5"]);
        assert_eq!(
            k.argv(),
            ["--kinds", "ring", "--kinds", "grid3d", "--rse", "5"]
        );
        let Kernels::Sync(s) = &k else { panic!() };
        assert_eq!(
            s.kernel.options.options.kinds,
            Some(vec![sync::SyncKind::Ring, sync::SyncKind::Grid3d])
        );
        assert_eq!(s.kernel.options.options.stability.target_rse, 0.05);
        // Parsed again from what is passed on, the options are the same.
        let again = parse(
            &["sync"]
                .into_iter()
                .chain(k.argv().iter().map(|a| a.to_str().unwrap()))
                .collect::<Vec<_>>(),
        );
        let Kernels::Sync(a) = &again else { panic!() };
        assert_eq!(a.kernel.options.options, s.kernel.options.options);
        assert_eq!(parse(&["halo3d"]).argv(), Vec::<OsString>::new());
        assert_eq!(parse(&["pingpong"]).variant(), None);
    }

    #[test]
    fn value_names_are_the_kernels_own() {
        let k = parse(&["false-overlap", "--variant", "fixed"]);
        assert_eq!(k.variant(), Some("fixed"));
        let k = parse(&["toeplitz", "--product", "fft"]);
        let Kernels::Toeplitz(t) = &k else { panic!() };
        assert_eq!(
            t.kernel.options.product,
            toeplitz::ProductChoice::Fixed(toeplitz::Method::Fft)
        );
        let err = Cli::try_parse_from(["k", "toeplitz", "--variant", "fast"]).unwrap_err();
        assert!(
            err.to_string()
                .contains("blocking, nonblocking, overlapped"),
            "{err}"
        );
    }

    #[test]
    fn a_results_file_needs_its_directory() {
        let err = Cli::try_parse_from(["k", "halo3d", "--json", "/nonexistent/dir/r.json"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("the directory /nonexistent/dir does not exist"),
            "{err}"
        );
    }
}
