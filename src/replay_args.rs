//! The options `overlap suggest` and `overlap whatif` share: the network a replay runs
//! on, how transfers progress, the ordering policies, and the units they are given in.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};
use clap::{Args, ValueEnum};
use overlap_analyzer::dag::{built_in_names, BuiltIn, Mode, Options as DagOptions};
use overlap_analyzer::model::Trace;
use overlap_analyzer::replay::{NetworkFit, ProgressMode, UnknownNetwork};

use crate::units::{parse_bandwidth, parse_bytes, parse_duration_ns};

/// What gives a network the trace does not: said wherever a prediction needs one.
pub(crate) const GIVE_NETWORK: &str = "Give the network: --model FILE (written by `overlap \
     run pingpong --model FILE` on the same machines), or --latency and --bandwidth (one of \
     them is enough when the trace measured a size class: the other is fitted to it)";

/// How rendezvous transfers progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProgressArg {
    /// Only while the sender or the receiver is inside an MPI call (MPICH's default).
    InMpi,
    /// Continuously (a progress thread or an offloading NIC).
    Async,
}

impl From<ProgressArg> for ProgressMode {
    fn from(p: ProgressArg) -> ProgressMode {
        match p {
            ProgressArg::InMpi => ProgressMode::InMpi,
            ProgressArg::Async => ProgressMode::Async,
        }
    }
}

/// The network a replay runs on: fitted to the trace's clean transfers, from a model
/// file, or given.
#[derive(Debug, Args)]
pub(crate) struct NetworkArgs {
    /// A network model file (`overlap run pingpong --model FILE`) instead of the fit to
    /// the trace's own messages.
    #[arg(long, value_name = "FILE")]
    pub(crate) model: Option<PathBuf>,
    /// One-way latency of the network to predict for (e.g. `2us`), over the fitted one.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_ns)]
    pub(crate) latency: Option<f64>,
    /// Bandwidth of the network to predict for (e.g. `12.5GB/s`), over the fitted one.
    #[arg(long, value_name = "RATE", value_parser = parse_bandwidth)]
    pub(crate) bandwidth: Option<f64>,
    /// Largest eager message (e.g. `64KiB`); larger ones use rendezvous (default: fitted
    /// from the trace where it shows it, else 64 KiB).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub(crate) eager_limit: Option<u64>,
    /// How rendezvous transfers progress.
    #[arg(long, value_enum, default_value_t = ProgressArg::InMpi)]
    pub(crate) progress: ProgressArg,
}

impl NetworkArgs {
    /// The trace's own network, before `--latency` and `--bandwidth`: the model file's,
    /// or the fit to the trace's clean transfers (unknown, with the reason, when that
    /// cannot be made); with the eager limit given.
    pub(crate) fn measured(&self, trace: &Trace) -> Result<Result<NetworkFit, UnknownNetwork>> {
        let fit = match &self.model {
            Some(path) => Ok(NetworkFit::from_file(path, trace, None)?),
            None => NetworkFit::from_trace(trace, None),
        };
        Ok(fit.map(|f| match self.eager_limit {
            Some(limit) => f.with_eager_limit(limit),
            None => f,
        }))
    }

    /// `measured` (what [`Self::measured`] gave) with the latency and bandwidth given
    /// over it; unknown, with the reason, when the trace gives none and what was given
    /// does not complete it.
    pub(crate) fn completed(
        &self,
        measured: Result<NetworkFit, UnknownNetwork>,
    ) -> Result<NetworkFit, UnknownNetwork> {
        let given = (self.latency, self.bandwidth);
        match measured {
            Ok(fit) => fit.with_given(given.0, given.1),
            Err(unknown) => {
                unknown
                    .with_given(given.0, given.1)
                    .map(|fit| match self.eager_limit {
                        Some(limit) => fit.with_eager_limit(limit),
                        None => fit,
                    })
            }
        }
    }

    /// The network to predict on ([`Self::completed`]); an error naming the options when
    /// there is none.
    pub(crate) fn predicting(
        &self,
        trace: &Trace,
        measured: Result<NetworkFit, UnknownNetwork>,
    ) -> Result<NetworkFit> {
        self.completed(measured).map_err(|unknown| {
            anyhow!(
                "{}: cannot predict: {unknown}. {GIVE_NETWORK}",
                trace.source.display()
            )
        })
    }
}

/// The ordering policies.
#[derive(Debug, Args)]
pub(crate) struct PolicyArgs {
    /// The built-in policies to apply after data dependence, in priority order:
    /// posts-early, lower-tag-first, waits-late (program order is always the last
    /// tie-break).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "posts-early,lower-tag-first"
    )]
    pub(crate) policy: Vec<String>,
    /// Only what is proven: the moves a permissive order would add ("possible if",
    /// needing what the trace does not show) are not looked for.
    #[arg(long)]
    pub(crate) conservative: bool,
}

impl PolicyArgs {
    /// The DAG options they name.
    pub(crate) fn options(&self) -> Result<DagOptions> {
        let mut policies = Vec::new();
        for name in &self.policy {
            match BuiltIn::parse(name.trim()) {
                Some(b) => policies.push(b.policy()),
                None if name.trim() == "program-order" => {}
                None => bail!(
                    "--policy: unknown policy {name:?} (built-ins: {}; program-order is always last)",
                    built_in_names()
                ),
            }
        }
        Ok(DagOptions {
            policies,
            mode: Mode::Proven,
        })
    }
}
