//! Regression gates over reports: a baseline keeps the metrics of a complete run that
//! do not flake on a noisy machine, and what that run was (program, parameters, ranks,
//! the work of each rank); `check` compares a new run against it within a tolerance and
//! refuses to judge a trace that lost data or covers something else; `diff` puts two
//! runs side by side.
//!
//! - [`metrics`]: which figures are gated and whether a tolerance can fail;
//! - [`usable`]: what makes a trace unfit for a gate;
//! - [`compare`]: the verdicts and the exit status; [`render`]: table and JUnit;
//! - [`diff`]: two runs side by side.

pub mod compare;
pub mod diff;
pub mod metrics;
pub mod render;
mod unlike;
pub mod usable;

use std::collections::BTreeMap;
use std::path::Path;

use overlap_format::input::read_input;
use overlap_format::schema::ParamValue;
use serde::{Deserialize, Serialize};

pub use compare::{check, check_judged, CheckOptions, Comparison, Exit, Outcome, Scale, Verdict};
pub use diff::{diff, diff_table, DiffRow};
pub use metrics::{gate_metrics, Better, Gate, Metric, Unit};
pub use render::{comparison_table, junit, junit_error};
pub use unlike::unlike;
pub use usable::{work, Problem, RankWork};

use crate::analysis::{DirAnalysis, Report};
use crate::load::Loaded;
use crate::model::Trace;
use crate::window::Choice;
use crate::{Error, Result};

/// The name every baseline file carries.
pub const BASELINE_FORMAT: &str = "overlap-baseline";
/// The baseline layout's version. Version 1 recorded neither the work of each rank,
/// nor completeness, nor a tolerance, and wrote unknown figures as 0: it is refused.
pub const BASELINE_VERSION: u32 = 2;
/// The largest baseline file read: a baseline holds a few metrics and the work of each
/// rank, far below this even for a million ranks.
pub const BASELINE_MAX_BYTES: u64 = 64 << 20;
/// The tolerance a baseline is made for unless told otherwise, percent.
pub const DEFAULT_TOLERANCE_PCT: f64 = 5.0;

/// Parameters that change from one run of the same program to the next (where the
/// program was loaded in memory, which CPUs its ranks were given): neither kept in a
/// baseline nor compared.
const RUN_ONLY_PARAMS: &[&str] = &[
    "code_maps",
    overlap_format::schema::PROGRAM_OBJECTS_PARAM,
    overlap_format::schema::CPU_AFFINITY_PARAM,
    overlap_format::schema::ONLINE_CPUS_PARAM,
];

/// A baseline file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// Always [`BASELINE_FORMAT`].
    pub format: String,
    /// [`BASELINE_VERSION`].
    pub version: u32,
    /// The run it was made from: program.
    pub program: String,
    /// ... its parameters.
    pub params: BTreeMap<String, ParamValue>,
    /// ... the size of its `MPI_COMM_WORLD`.
    pub world_size: u32,
    /// ... and the work of each traced rank.
    pub ranks: Vec<RankWork>,
    /// True when the trace it was made from was complete (`overlap baseline` makes none
    /// from an incomplete trace; a file saying false is refused).
    pub complete: bool,
    /// The tolerance it was made for, percent; `check --tolerance` overrides it.
    pub tolerance_pct: f64,
    /// The gated metrics.
    pub metrics: Vec<Metric>,
    /// The part of the run it was made of (`--from/--to`, `--region`, `--ranks`), as
    /// asked; absent for the whole run. A check must ask for the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Choice>,
}

/// A trace as a gate judges it: what makes the run as loaded incomplete (judged before
/// a window cut it: ranks a window leaves out are not missing), the work of the part of
/// it analysed, and the window asked for (`None`: the whole run). It holds no trace, so
/// that the trace can be given to the analysis ([`crate::analysis::analyze_owned`]),
/// which then peaks lower.
#[derive(Clone, Debug)]
pub struct Judged {
    /// [`usable::completeness`] of the run as loaded.
    pub incomplete: Vec<Problem>,
    /// [`usable::work`] of the part analysed: the whole run, or its cut.
    pub work: Vec<RankWork>,
    /// The window asked for.
    pub window: Option<Choice>,
}

impl Judged {
    /// The whole of a loaded run.
    pub fn whole(loaded: &Loaded) -> Judged {
        Judged::part(usable::completeness(loaded), &loaded.trace, None)
    }

    /// The part `analysed` of a run whose completeness as loaded is `incomplete`, cut to
    /// the window asked for.
    pub fn part(incomplete: Vec<Problem>, analysed: &Trace, window: Option<Choice>) -> Judged {
        Judged {
            incomplete,
            work: usable::work(analysed),
            window,
        }
    }

    /// The whole of the run whose rank files are in `dir`, analysed a part of its ranks
    /// at a time (`run`): judged as [`Judged::whole`] judges the run loaded.
    pub fn of_parts(dir: &Path, run: &DirAnalysis) -> Judged {
        let incomplete = usable::completeness_of(&usable::Read {
            source: dir,
            info: &run.info,
            unreadable: &run.unreadable,
            problems: &[],
            cut_short: false,
            work: &run.work,
            ends_early: &run.ends_early,
        });
        Judged {
            incomplete,
            work: run.work.clone(),
            window: None,
        }
    }
}

impl Baseline {
    /// Program and parameters as one line.
    pub fn program_text(&self) -> String {
        usable::program_text(&self.program, &self.params)
    }
}

/// The parameters of a run that describe the program, not the run.
fn program_params(params: &BTreeMap<String, ParamValue>) -> BTreeMap<String, ParamValue> {
    params
        .iter()
        .filter(|(k, _)| !RUN_ONLY_PARAMS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// What a report's run covers.
fn coverage_of<'a>(report: &Report, work: &'a [RankWork]) -> usable::Coverage<'a> {
    usable::Coverage {
        program: usable::program_text(&report.run.program, &program_params(&report.run.params)),
        world_size: report.run.world_size,
        work,
    }
}

/// A baseline made, and what to tell the user about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Made {
    /// The baseline.
    pub baseline: Baseline,
    /// Metrics kept but not gated (no figure; at their worst), in words.
    pub notes: Vec<String>,
}

/// Makes a baseline from a loaded trace and its report, for a tolerance in percent.
/// Refused, with every reason, when the trace is incomplete, or when the tolerance is
/// not a usable number or lets a metric never fail.
pub fn make_baseline(
    loaded: &Loaded,
    report: &Report,
    tolerance_pct: f64,
) -> std::result::Result<Made, Vec<String>> {
    make_baseline_of(&Judged::whole(loaded), report, tolerance_pct)
}

/// [`make_baseline`] of a judged trace: of a window, it keeps the window and the work
/// of the ranks in it.
pub fn make_baseline_of(
    judged: &Judged,
    report: &Report,
    tolerance_pct: f64,
) -> std::result::Result<Made, Vec<String>> {
    if !judged.incomplete.is_empty() {
        return Err(judged
            .incomplete
            .iter()
            .map(|p| format!("incomplete trace: {p}"))
            .collect());
    }
    let baseline = Baseline {
        format: BASELINE_FORMAT.into(),
        version: BASELINE_VERSION,
        program: report.run.program.clone(),
        params: program_params(&report.run.params),
        world_size: report.run.world_size,
        ranks: judged.work.clone(),
        complete: true,
        tolerance_pct,
        metrics: gate_metrics(report),
        window: judged.window.clone(),
    };
    let problems = baseline_problems(&baseline, tolerance_pct);
    if !problems.is_empty() {
        return Err(problems);
    }
    let notes = baseline
        .metrics
        .iter()
        .filter_map(|m| match metrics::gate(m, tolerance_pct) {
            Gate::NoFigure => Some(format!("{}: no figure in this trace: not gated", m.name)),
            Gate::AtWorst => Some(format!(
                "{}: at its worst possible value ({}): it can only improve, so it is not a gate",
                m.name,
                m.value
                    .map_or("unknown".into(), |v| metrics::show(v, m.unit))
            )),
            _ => None,
        })
        .collect();
    Ok(Made { baseline, notes })
}

/// What makes a baseline unusable at a tolerance: made from an incomplete trace, no
/// metrics, nothing gateable, a tolerance that is no number or lets a metric never fail.
pub fn baseline_problems(b: &Baseline, tolerance_pct: f64) -> Vec<String> {
    let mut out = Vec::new();
    if !b.complete {
        out.push(
            "the baseline was made from an incomplete trace: remake it from a complete one".into(),
        );
    }
    if b.metrics.is_empty() {
        out.push("the baseline has no metrics: it would gate nothing".into());
    }
    if !metrics::valid_tolerance(tolerance_pct) {
        out.push(format!(
            "tolerance {tolerance_pct}%: it must be a finite, non-negative percentage"
        ));
        return out;
    }
    for m in &b.metrics {
        match metrics::gate(m, tolerance_pct) {
            Gate::CannotFail { why } => out.push(format!(
                "{}: a tolerance of {tolerance_pct}% can never fail: {why}",
                m.name
            )),
            Gate::Impossible { why } => out.push(format!(
                "{}: {why} (a fault of overlap's measurement, not of the program): it \
                 cannot be gated",
                m.name
            )),
            _ => {}
        }
    }
    if !b.metrics.is_empty()
        && !b
            .metrics
            .iter()
            .any(|m| matches!(metrics::gate(m, tolerance_pct), Gate::Gated { .. }))
    {
        out.push(
            "no metric of the baseline has a figure that can regress: it would gate nothing".into(),
        );
    }
    out
}

/// Reads a baseline file.
pub fn read_baseline(path: &Path) -> Result<Baseline> {
    let text = read_input(path, BASELINE_MAX_BYTES, "baseline")?;
    let bad = |reason: String| Error::BadBaseline {
        path: path.to_path_buf(),
        reason,
    };
    // The name and version first, so an older layout gets its own message.
    #[derive(Deserialize)]
    struct Tag {
        format: String,
        version: u32,
    }
    let tag: Tag = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
    if tag.format != BASELINE_FORMAT {
        return Err(bad(format!(
            "format is {:?}, not {BASELINE_FORMAT:?}",
            tag.format
        )));
    }
    if tag.version != BASELINE_VERSION {
        return Err(bad(format!(
            "version {}, but this overlap reads version {BASELINE_VERSION} (a version 1 \
             baseline records neither the ranks nor the work it was made from): remake it \
             with `overlap baseline TRACE --out {}`",
            tag.version,
            path.display()
        )));
    }
    let baseline: Baseline = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
    match impossible_content(&baseline) {
        Some(why) => Err(bad(why)),
        None => Ok(baseline),
    }
}

/// Why a baseline cannot have been made from a run, if it cannot: a world of no ranks, a
/// rank twice or beyond the world, a metric twice, a value outside its unit.
fn impossible_content(b: &Baseline) -> Option<String> {
    if b.world_size == 0 {
        return Some("its world_size is 0: a run has at least one rank".into());
    }
    let mut ranks = std::collections::BTreeSet::new();
    for r in &b.ranks {
        if r.rank >= b.world_size {
            return Some(format!(
                "rank {} is beyond its world of {} rank(s)",
                r.rank, b.world_size
            ));
        }
        if !ranks.insert(r.rank) {
            return Some(format!("rank {} is listed twice", r.rank));
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for m in &b.metrics {
        if !names.insert(m.name.as_str()) {
            return Some(format!("{}: the metric is listed twice", m.name));
        }
    }
    b.metrics.iter().find_map(metrics::value_problem)
}

#[cfg(test)]
mod parts_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use metrics::{Better, Metric, Unit};

    #[test]
    fn an_impossible_value_is_said_not_dropped() {
        let metric = |name: &str, value| Metric {
            name: name.into(),
            value: Some(value),
            unit: Unit::Fraction,
            better: Better::Lower,
        };
        let baseline = Baseline {
            format: BASELINE_FORMAT.into(),
            version: BASELINE_VERSION,
            program: "threads_wait".into(),
            params: BTreeMap::new(),
            world_size: 2,
            ranks: Vec::new(),
            complete: true,
            tolerance_pct: 5.0,
            window: None,
            metrics: vec![
                metric("wait_states.fraction", 1.788),
                metric("a_valid_share", 0.5),
            ],
        };
        let problems = baseline_problems(&baseline, 5.0);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("wait_states.fraction: 178.8% is a fraction outside 0 to 1"),
            "{problems:?}"
        );
    }
}
