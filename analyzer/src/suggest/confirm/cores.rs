//! Whether a run had a core for every rank: the replay runs every rank in parallel, so a
//! run with more ranks than CPUs on a host is not what it predicts, and no gain measured
//! on one is confirmed. The fact is the run's own
//! ([`crate::metrics::oversubscription`]: the CPUs each rank's affinity allowed, as its
//! header recorded them).

use serde::Serialize;

use crate::metrics::oversubscription::Oversubscription;
use crate::model::Trace;

/// Whether every run had a core for every rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Cores {
    /// Every host of every run had at least as many CPUs as ranks.
    Enough,
    /// A run put more ranks on a host than its ranks' CPUs (the first such run).
    Oversubscribed {
        /// The run.
        trace: String,
        /// The host.
        host: String,
        /// Ranks on it.
        ranks: usize,
        /// The CPUs they could run on.
        cores: usize,
    },
    /// Not known for some run.
    Unknown {
        /// Why.
        why: String,
    },
}

/// Whether each of `runs` had a CPU for every rank: oversubscription found in any run
/// wins over a run that did not record its CPUs.
pub fn check(runs: &[&Trace]) -> Cores {
    let mut unknown = None;
    for t in runs {
        let fact = Oversubscription::of(&t.info);
        match fact.oversubscribed {
            Some(true) => {
                if let Some(h) = fact.hosts.iter().find(|h| h.oversubscribed == Some(true)) {
                    return Cores::Oversubscribed {
                        trace: t.source.display().to_string(),
                        host: h.host.clone(),
                        ranks: h.ranks.len(),
                        cores: h.cpus.unwrap_or(0) as usize,
                    };
                }
            }
            Some(false) => {}
            None => {
                unknown.get_or_insert_with(|| {
                    format!(
                        "{} does not record the CPUs its ranks could run on (traced before format 8)",
                        t.source.display()
                    )
                });
            }
        }
    }
    match unknown {
        Some(why) => Cores::Unknown { why },
        None => Cores::Enough,
    }
}
