//! Whether a run had a core for every rank: the replay runs every rank in parallel, so a
//! run with more ranks than cores on a host is not what it predicts, and no gain measured
//! on one is confirmed.
//!
//! A stand-in until the trace records the cores each rank could run on: ranks are
//! counted per host from the traces' headers, and a host is known only when it is the
//! machine the analysis runs on (its name and the CPUs it reports, given by the caller).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::Trace;

/// The machine the analysis runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// Its host name, as `MPI_Get_processor_name` gives it.
    pub host: String,
    /// The CPUs it reports.
    pub cores: usize,
}

/// Whether every run had a core for every rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Cores {
    /// Every host of every run had at least as many cores as ranks.
    Enough,
    /// A run put more ranks on a host than it has cores (the first such run).
    Oversubscribed {
        /// The run.
        trace: String,
        /// The host.
        host: String,
        /// Ranks on it.
        ranks: usize,
        /// Its cores.
        cores: usize,
    },
    /// Not known for some host.
    Unknown {
        /// Why.
        why: String,
    },
}

/// Whether each of `runs` had a core for every rank, `here` being the machine the
/// analysis runs on (none: not known).
pub fn check(runs: &[&Trace], here: Option<&Machine>) -> Cores {
    let hosts: Vec<(String, Vec<&str>)> = runs
        .iter()
        .map(|t| {
            (
                t.source.display().to_string(),
                t.ranks.iter().map(|r| r.host.as_str()).collect(),
            )
        })
        .collect();
    of_hosts(&hosts, here)
}

/// [`check`] of runs given as their name and each rank's host.
fn of_hosts(runs: &[(String, Vec<&str>)], here: Option<&Machine>) -> Cores {
    let mut unknown = None;
    for (trace, hosts) in runs {
        let mut per_host: BTreeMap<&str, usize> = BTreeMap::new();
        for host in hosts {
            *per_host.entry(host).or_default() += 1;
        }
        for (host, ranks) in per_host {
            match here {
                Some(m) if m.host == host => {
                    if ranks > m.cores {
                        return Cores::Oversubscribed {
                            trace: trace.clone(),
                            host: host.to_string(),
                            ranks,
                            cores: m.cores,
                        };
                    }
                }
                Some(m) => {
                    unknown.get_or_insert_with(|| {
                        format!(
                            "host {host:?} of {trace} is not this machine ({:?}): its cores are not known",
                            m.host
                        )
                    });
                }
                None => {
                    unknown.get_or_insert_with(|| "this machine's cores are not known".into());
                }
            }
        }
    }
    match unknown {
        Some(why) => Cores::Unknown { why },
        None => Cores::Enough,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, hosts: &[&'static str]) -> (String, Vec<&'static str>) {
        (name.to_string(), hosts.to_vec())
    }

    #[test]
    fn ranks_are_counted_per_host_against_this_machine() {
        let here = Machine {
            host: "vm".into(),
            cores: 2,
        };
        let two = run("two.json", &["vm", "vm"]);
        let four = run("four.json", &["vm", "vm", "vm", "vm"]);
        let away = run("away.json", &["node7", "node7"]);
        assert_eq!(
            of_hosts(std::slice::from_ref(&two), Some(&here)),
            Cores::Enough
        );
        assert_eq!(
            of_hosts(&[two.clone(), four.clone()], Some(&here)),
            Cores::Oversubscribed {
                trace: "four.json".into(),
                host: "vm".into(),
                ranks: 4,
                cores: 2
            }
        );
        // Oversubscription found anywhere wins over a host not known.
        assert!(matches!(
            of_hosts(&[away.clone(), four], Some(&here)),
            Cores::Oversubscribed { .. }
        ));
        let Cores::Unknown { why } = of_hosts(&[two.clone(), away], Some(&here)) else {
            panic!("a host not this machine is not known");
        };
        assert!(why.contains("\"node7\" of away.json"), "{why}");
        assert!(matches!(of_hosts(&[two], None), Cores::Unknown { .. }));
    }
}
