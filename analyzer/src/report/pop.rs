//! The report's `pop` and `replay` fields as text: the POP efficiencies, how T_ideal was
//! found, and how well the replay reproduces the run.

use std::fmt::Write as _;

use super::style::Style;
use crate::analysis::Report;
use crate::metrics::pop::TIdealMethod;
use crate::units::{duration, pct};

/// Appends the POP efficiencies and the replay's self check.
pub(super) fn section(o: &mut String, r: &Report, style: Style) {
    let run = &r.run;
    let p = &r.pop;
    let _ = writeln!(o, "\n{}", style.bold("POP efficiencies"));
    let line = |o: &mut String, name: &str, v: Option<f64>| {
        let shown = match v {
            Some(v) => style.efficiency(v, &pct(v)),
            None => "unknown (no time to divide by)".to_string(),
        };
        let _ = writeln!(o, "  {:<30} {}", name, shown);
    };
    line(o, "parallel efficiency", p.parallel_efficiency);
    line(o, "  load balance", p.load_balance);
    line(o, "  communication efficiency", p.communication_efficiency);
    line(
        o,
        "    serialization efficiency",
        p.serialization_efficiency,
    );
    line(o, "    transfer efficiency", p.transfer_efficiency);
    let _ = writeln!(
        o,
        "  (T {}; T_ideal {} by {}{})",
        duration(p.runtime_ns),
        duration(p.t_ideal_ns),
        match p.t_ideal_method {
            TIdealMethod::Replay => "ideal-network replay",
            TIdealMethod::Subtraction => "subtraction of non-waiting MPI time",
        },
        match p.t_ideal_method {
            TIdealMethod::Replay =>
                format!(", {} by subtraction", duration(p.t_ideal_subtraction_ns)),
            TIdealMethod::Subtraction => String::new(),
        }
    );
    if let Some(check) = &r.replay {
        let confirmable = match run.oversubscription.oversubscribed {
            Some(true) => "; not confirmable: ranks shared CPUs",
            _ => "",
        };
        let _ = writeln!(
            o,
            "  replay.self_error {} (the measured order replayed on the network fitted to this \
             trace, progress only inside MPI calls: {} for {} measured{confirmable})",
            check
                .self_error
                .map_or("unknown".to_string(), |e| format!("{:+.1}%", e * 100.0)),
            duration(check.replayed_ns),
            duration(check.measured_ns)
        );
    } else if let Some(why) = &r.replay_unknown {
        let _ = writeln!(o, "  replay.self_error unknown: {why}");
    }
}
