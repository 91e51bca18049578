//! `overlap whatif`: the measured run replayed on another network or progress mode
//! (Dimemas' what-if), reported in the shape of `overlap analyze` with the measured
//! figures beside. The replay is [`overlap_analyzer::replay`]; the report is the normal
//! analysis of the trace retimed by it ([`overlap_analyzer::replay::retimed`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use overlap_analyzer::analysis::{analyze as analyze_trace, Report};
use overlap_analyzer::metrics::oversubscription::Oversubscription;
use overlap_analyzer::metrics::pop::Pop;
use overlap_analyzer::ops::Program;
use overlap_analyzer::replay::{
    measured_orders, replay, retimed, Assumed, EagerSource, Network, NetworkFit, NetworkSource,
    ProgressMode, ReplayConfig,
};
use overlap_analyzer::report::{network_line, render};
use overlap_analyzer::suggest::{program_of, suggest, Options as SuggestOptions};
use overlap_analyzer::units::duration;
use serde::Serialize;

use crate::cli::{load_trace, style, AnalysisArgs};
use crate::output::{out, outln};
use crate::replay_args::{NetworkArgs, PolicyArgs};

/// Units ([`crate::units`]): durations and bandwidths must say theirs; sizes may be
/// bare bytes.
const UNITS: &str = "\
Units: durations in ns, us (or µs), ms or s (`2us`, `1.5ms`); bandwidths in B/s, KB/s,
MB/s, GB/s (decimal prefixes: 1 KB = 1000 B) or KiB/s, MiB/s, GiB/s (binary): both must
say their unit, a bare number is refused. Sizes in B, KB, MB, KiB, MiB (a bare number
is bytes).

Without --latency, --bandwidth or --model, the network is fitted to the trace's own
messages. The eager limit is fitted from the trace when it shows one (sends that completed
before their receive was posted), else 64 KiB, unless --eager-limit says.";

/// `overlap whatif --json`: the what-if figures, the measured POP figures beside them,
/// and the report of the predicted run.
#[derive(Serialize)]
struct WhatifJson<'a> {
    whatif: Whatif<'a>,
    measured: Measured<'a>,
    report: &'a Report,
}

/// The prediction: the network and progress mode it assumes, the order replayed, the
/// predicted run time and its range, and how far the replay can be trusted.
#[derive(Serialize)]
struct Whatif<'a> {
    network: &'a NetworkFit,
    progress: ProgressMode,
    order: &'static str,
    predicted_ns: u64,
    predicted_range_ns: [u64; 2],
    measured_ns: u64,
    oversubscription: &'a Oversubscription,
    replay: WhatifReplay<'a>,
}

/// How far the replay behind the prediction can be trusted.
#[derive(Serialize)]
struct WhatifReplay<'a> {
    self_error: Option<f64>,
    network_unknown: Option<String>,
    assumed: &'a Assumed,
}

/// The measured run's figures set beside the prediction.
#[derive(Serialize)]
struct Measured<'a> {
    pop: &'a Pop,
}

/// Which order `overlap whatif` replays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum OrderArg {
    /// The order the program ran in.
    Measured,
    /// The order `overlap suggest` suggests.
    Suggested,
}

impl OrderArg {
    /// Its name in the report and the JSON.
    fn name(self) -> &'static str {
        match self {
            OrderArg::Measured => "measured",
            OrderArg::Suggested => "suggested",
        }
    }
}

#[derive(Debug, Args)]
#[command(after_long_help = UNITS)]
pub(crate) struct WhatifArgs {
    /// The trace (merged file or directory of per-rank files).
    trace: PathBuf,
    #[command(flatten)]
    network: NetworkArgs,
    /// Which order to replay: the measured one, or the one `overlap suggest` suggests
    /// (with --policy and --conservative as there).
    #[arg(long, value_enum, default_value_t = OrderArg::Measured)]
    order: OrderArg,
    #[command(flatten)]
    policies: PolicyArgs,
    /// Print JSON: the what-if figures, the predicted report, the measured POP figures.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    analysis: AnalysisArgs,
}

fn eager_line(fit: &NetworkFit) -> String {
    let limit = fit.mid.eager_limit;
    match &fit.eager {
        EagerSource::Fitted {
            largest_eager,
            smallest_rendezvous,
        } => format!(
            "{limit} B, fitted: the largest message seen eager was {largest_eager} B{}",
            smallest_rendezvous.map_or(String::new(), |r| format!(
                ", the smallest larger one seen waiting for its receiver {r} B"
            ))
        ),
        EagerSource::Given => format!("{limit} B, given"),
        EagerSource::Default => {
            format!("{limit} B, assumed (the trace shows no eager message; --eager-limit sets it)")
        }
    }
}

fn source_line(fit: &NetworkFit) -> String {
    let base = match &fit.source {
        NetworkSource::Fitted {
            messages,
            clean,
            classes,
        } => format!(
            "fitted to {clean} clean transfer(s) of {messages} message(s), {classes} size \
             class(es)"
        ),
        NetworkSource::OneClass { class } => format!(
            "fitted to {} clean transfer(s) of {} message(s)",
            class.clean, class.messages
        ),
        NetworkSource::Classes { classes, .. } => format!(
            "measured by {} clean transfer(s) of {} message(s), {} size class(es)",
            classes.iter().map(|c| c.clean).sum::<u64>(),
            classes.iter().map(|c| c.messages).sum::<u64>(),
            classes.len()
        ),
        NetworkSource::NoMessages => "no message to fit it to, none needed".to_string(),
        NetworkSource::File { path } => format!("from {}", path.display()),
        NetworkSource::Given => "given".to_string(),
    };
    match (fit.latency_given, fit.bandwidth_given) {
        (true, true) => "given".to_string(),
        (true, false) => format!("latency given, bandwidth {base}"),
        (false, true) => format!("bandwidth given, latency {base}"),
        (false, false) => base,
    }
}

/// Runs `overlap whatif`.
pub(crate) fn whatif(a: WhatifArgs) -> Result<ExitCode> {
    let opts = a.analysis.options()?;
    let trace = load_trace(&a.trace)?;
    // A rank cut short is refused, naming it: a replay of the rest would not be the run.
    let program: Program = program_of(&trace)
        .with_context(|| format!("{}: cannot replay this trace", a.trace.display()))?;
    let progress = a.network.progress.into();
    let measured = a.network.measured(&trace)?;
    let measured_orders = measured_orders(&program);
    // How well the model reproduces the measured run: the measured order on the trace's
    // own network (fitted, or the file's), when it has one.
    let check = match &measured {
        Ok(own) => Some(
            replay(
                &program,
                &measured_orders,
                &ReplayConfig::on(own.mid, progress),
            )
            .context("replaying the measured run on its own network")?,
        ),
        Err(_) => None,
    };
    let fit = a.network.predicting(&trace, measured.clone())?;
    let orders = match a.order {
        OrderArg::Measured => measured_orders,
        OrderArg::Suggested => {
            let options = SuggestOptions {
                dag: a.policies.options()?,
                progress,
                // Only the order is replayed: what a permissive one adds is not needed.
                conservative: true,
            };
            let own = measured.clone().unwrap_or_else(|_| fit.clone());
            let s = suggest(&trace, &program, own, &options)?;
            if let Some(why) = &s.rejected {
                bail!(
                    "{}: the suggested order is rejected: {why}",
                    a.trace.display()
                );
            }
            s.orders
        }
    };
    let self_error = check.as_ref().and_then(|c| c.self_error(&program));
    let unknown_network = measured.as_ref().err().map(ToString::to_string);
    let run = |n: Network| replay(&program, &orders, &ReplayConfig::on(n, progress));
    let predicted = run(fit.mid).context("the run cannot be replayed on this network")?;
    let (low, high) = (run(fit.low)?, run(fit.high)?);
    let (measured_report, _) = analyze_trace(&trace, &opts);
    let (report, _) = analyze_trace(&retimed(&trace, &program, &predicted), &opts);
    let range = (
        low.makespan_ns.min(high.makespan_ns),
        low.makespan_ns.max(high.makespan_ns),
    );
    if a.json {
        let v = WhatifJson {
            whatif: Whatif {
                network: &fit,
                progress,
                order: a.order.name(),
                predicted_ns: predicted.makespan_ns,
                predicted_range_ns: [range.0, range.1],
                measured_ns: program.measured_ns,
                oversubscription: &measured_report.run.oversubscription,
                replay: WhatifReplay {
                    self_error,
                    network_unknown: unknown_network,
                    assumed: &predicted.assumed,
                },
            },
            measured: Measured {
                pop: &measured_report.pop,
            },
            report: &report,
        };
        // Through a JSON value, whose objects keep their keys sorted: the layout the
        // command has always printed.
        let v = serde_json::to_value(&v)?;
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    let pm = |p: ProgressMode| match p {
        ProgressMode::InMpi => "in MPI calls only",
        ProgressMode::Async => "asynchronous",
    };
    outln!(
        "What if: {} (the {} order replayed)",
        a.trace.display(),
        a.order.name()
    );
    if let Some(line) = measured_report.run.oversubscription.warning() {
        outln!("  {line}");
    }
    outln!(
        "  network     {} ({})",
        network_line(&fit),
        source_line(&fit)
    );
    outln!("  eager limit {}", eager_line(&fit));
    outln!("  progress    {}", pm(progress));
    outln!(
        "  predicted   {} (range {} to {}; measured {})",
        duration(predicted.makespan_ns),
        duration(range.0),
        duration(range.1),
        duration(program.measured_ns)
    );
    match (self_error, &unknown_network) {
        (Some(e), _) => outln!(
            "  replay.self_error {:+.1}% (the measured run replayed on the unchanged model)",
            e * 100.0
        ),
        (None, Some(why)) => outln!("  replay.self_error unknown: {why}"),
        (None, None) => outln!("  replay.self_error unknown (the run measured no time)"),
    }
    let s = &predicted.assumed;
    if s.unmatched + s.unmatched_collectives + s.collectives_without_cost + s.other_requests > 0 {
        outln!(
            "  assumed: {} unmatched request(s) completed at once, {} collective(s) without \
             an observed cost taken as 0, {} one-sided request(s) completed at their post",
            s.unmatched + s.unmatched_collectives,
            s.collectives_without_cost,
            s.other_requests
        );
    }
    let (m, p) = (&measured_report.pop, &report.pop);
    let eff = |v: Option<f64>| v.map_or("unknown".to_string(), |v| format!("{:5.1}%", v * 100.0));
    outln!("\n  {:<30} {:>12} {:>12}", "", "measured", "predicted");
    for (name, a, b) in [
        (
            "parallel efficiency",
            m.parallel_efficiency,
            p.parallel_efficiency,
        ),
        ("load balance", m.load_balance, p.load_balance),
        (
            "communication efficiency",
            m.communication_efficiency,
            p.communication_efficiency,
        ),
        (
            "serialization efficiency",
            m.serialization_efficiency,
            p.serialization_efficiency,
        ),
        (
            "transfer efficiency",
            m.transfer_efficiency,
            p.transfer_efficiency,
        ),
    ] {
        outln!("  {name:<30} {:>12} {:>12}", eff(a), eff(b));
    }
    outln!(
        "  {:<30} {:>12} {:>12}",
        "run time",
        duration(m.runtime_ns),
        duration(p.runtime_ns)
    );
    outln!("\nThe predicted run, as `overlap analyze` would report it:\n");
    out!("{}", render(&report, style()));
    Ok(ExitCode::SUCCESS)
}
