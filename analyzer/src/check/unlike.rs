//! Whether two traces set side by side by `overlap diff` are of like runs: the same
//! program with the same parameters, the same `MPI_COMM_WORLD`, the same ranks traced and
//! about the same work. `check` refuses a trace that differs from its baseline so
//! ([`super::usable::differences`]); `diff` compares all the same (comparing unlike runs
//! is often its point: a variant against another) but warns, in the same terms, so that
//! a delta is not read as a change of the same program.

use super::usable::{differences, Problem, RankWork};
use super::{coverage_of, DEFAULT_TOLERANCE_PCT};
use crate::analysis::Report;

fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// What differs between run `a` (named `a_name`) and run `b`, one line each, as `check`
/// tells it of a trace and its baseline (the work compared with `check`'s default
/// tolerance); empty for like runs.
pub fn unlike(
    (a_name, a, a_work): (&str, &Report, &[RankWork]),
    (b_name, b, b_work): (&str, &Report, &[RankWork]),
) -> Vec<String> {
    let (ca, cb) = (coverage_of(a, a_work), coverage_of(b, b_work));
    differences(&ca, &cb, DEFAULT_TOLERANCE_PCT)
        .into_iter()
        .map(|d| match d {
            Problem::OtherProgram { baseline, current } => format!(
                "{a_name} and {b_name} are of other programs or parameters: {a_name} is \
                 {baseline}, {b_name} is {current}"
            ),
            Problem::OtherWorld { baseline, current } => {
                format!("{a_name} ran {baseline} rank(s) in MPI_COMM_WORLD, {b_name} {current}")
            }
            Problem::OtherRanks {
                only_baseline,
                only_current,
            } => {
                let mut parts = Vec::new();
                if !only_baseline.is_empty() {
                    parts.push(format!(
                        "only {a_name} has rank(s) {}",
                        list(&only_baseline)
                    ));
                }
                if !only_current.is_empty() {
                    parts.push(format!("only {b_name} has rank(s) {}", list(&only_current)));
                }
                format!("other ranks traced: {}", parts.join("; "))
            }
            Problem::OtherWork {
                ranks,
                tolerance_pct,
            } => {
                let each: Vec<String> = ranks
                    .iter()
                    .map(|(r, x, y)| format!("rank {r} {x} in {a_name}, {y} in {b_name}"))
                    .collect();
                format!(
                    "the traced work differs by more than {tolerance_pct}% (MPI calls, polls \
                     aside): {}",
                    each.join(", ")
                )
            }
            other => other.to_string(),
        })
        .collect()
}
