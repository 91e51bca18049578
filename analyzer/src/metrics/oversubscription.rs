//! More ranks than CPUs on a host: a run-level fact every prediction depends on. The
//! replay gives each rank a core of its own; where ranks shared CPUs, the scheduler
//! made waits (a rank descheduled inside its wait, or while its partner waited for it)
//! that no network model reproduces, so no prediction on such a run can be confirmed.
//!
//! Each rank's header says the CPUs its affinity allowed and its host's online CPUs
//! ([`overlap_format::schema::CPU_AFFINITY_PARAM`]); the ranks of one host (by host
//! name) could run on the union of their affinities. A host is oversubscribed when it
//! has more ranks than that union has CPUs. A rank that did not say (a trace recorded
//! before format 8, or an OTF2 archive, which has no place for them) makes its host
//! unknown.
//!
//! ```text
//!  host vm: rank 0 cpus 0-1, rank 1 cpus 0-1, rank 2 cpus 0-1, rank 3 cpus 0-1
//!           4 ranks on 2 CPUs: oversubscribed
//!  host a:  rank 0 cpus 0, rank 1 cpus 1: 2 ranks on 2 CPUs: not
//! ```

use std::collections::BTreeMap;

use overlap_format::schema::{parse_cpu_list, MergedInfo};
use serde::Serialize;

/// The ranks of one host and the CPUs they could run on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostCpus {
    /// The host.
    pub host: String,
    /// Its ranks.
    pub ranks: Vec<u32>,
    /// The CPUs their affinities allowed, together; none when a rank did not say.
    pub cpus: Option<u32>,
    /// The host's online CPUs, when a rank said.
    pub online: Option<u32>,
    /// More ranks than CPUs; none when unknown.
    pub oversubscribed: Option<bool>,
    /// Ranks per CPU of the union (2.0: each CPU time-shared by two ranks, on average);
    /// none when unknown.
    pub ranks_per_cpu: Option<f64>,
}

impl HostCpus {
    /// `4 ranks ran on 2 CPUs of host vm (2×)`.
    fn said(&self) -> String {
        let cpus = self
            .cpus
            .map_or_else(|| "an unknown number of".to_string(), |c| c.to_string());
        let times = self
            .ranks_per_cpu
            .map_or(String::new(), |f| format!(" ({}×)", times(f)));
        format!(
            "{} ranks ran on {cpus} CPU(s) of host {}{times}",
            self.ranks.len(),
            self.host
        )
    }
}

/// A ratio as the text says it: `2`, `1.5`, `1.33`.
fn times(f: f64) -> String {
    let s = format!("{f:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Hosts listed by name in a line; more are counted.
const HOSTS_LISTED: usize = 3;

/// `a, b and c`, or the first [`HOSTS_LISTED`] and how many more.
fn listed(items: Vec<String>) -> String {
    let more = items.len().saturating_sub(HOSTS_LISTED);
    let mut shown: Vec<String> = items.into_iter().take(HOSTS_LISTED).collect();
    if more > 0 {
        shown.push(format!("{more} more host(s)"));
    }
    match shown.len() {
        0 | 1 => shown.concat(),
        n => format!("{} and {}", shown[..n - 1].join(", "), shown[n - 1]),
    }
}

/// Whether the run had more ranks than CPUs on a host.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Oversubscription {
    /// True when some host had more ranks than CPUs; false when no host had; none when
    /// unknown (a rank did not record its CPUs, and no known host was).
    pub oversubscribed: Option<bool>,
    /// Per host, by name.
    pub hosts: Vec<HostCpus>,
}

impl Oversubscription {
    /// The fact of the run `info` describes.
    pub fn of(info: &MergedInfo) -> Oversubscription {
        /// A host's ranks, the union of their CPUs (none once one did not say), and
        /// its online CPUs.
        struct Seen {
            ranks: Vec<u32>,
            union: Option<Vec<u32>>,
            online: Option<u32>,
        }
        let mut by_host: BTreeMap<&str, Seen> = BTreeMap::new();
        for r in &info.ranks {
            let e = by_host.entry(r.host.as_str()).or_insert_with(|| Seen {
                ranks: Vec::new(),
                union: Some(Vec::new()),
                online: None,
            });
            e.ranks.push(r.rank);
            let allowed = r.cpu_affinity.as_deref().and_then(parse_cpu_list);
            e.union = match (e.union.take(), allowed) {
                (Some(mut union), Some(cpus)) => {
                    union.extend(cpus);
                    Some(union)
                }
                _ => None,
            };
            e.online = e.online.or(r.online_cpus);
        }
        let hosts: Vec<HostCpus> = by_host
            .into_iter()
            .map(
                |(
                    host,
                    Seen {
                        ranks,
                        union,
                        online,
                    },
                )| {
                    let cpus = union.map(|mut u| {
                        u.sort_unstable();
                        u.dedup();
                        u.len() as u32
                    });
                    HostCpus {
                        host: host.to_string(),
                        oversubscribed: cpus.map(|c| ranks.len() as u32 > c),
                        ranks_per_cpu: cpus
                            .filter(|c| *c > 0)
                            .map(|c| ranks.len() as f64 / f64::from(c)),
                        ranks,
                        cpus,
                        online,
                    }
                },
            )
            .collect();
        let any = |v: Option<bool>| hosts.iter().any(|h| h.oversubscribed == v);
        let oversubscribed = if any(Some(true)) {
            Some(true)
        } else if any(None) || hosts.is_empty() {
            None
        } else {
            Some(false)
        };
        Oversubscription {
            oversubscribed,
            hosts,
        }
    }

    /// Whether `rank`'s host had more ranks than CPUs (none: unknown).
    pub fn of_rank(&self, rank: u32) -> Option<bool> {
        self.hosts
            .iter()
            .find(|h| h.ranks.contains(&rank))
            .and_then(|h| h.oversubscribed)
    }

    /// The ranks on hosts with more ranks than CPUs.
    pub fn ranks(&self) -> impl Iterator<Item = u32> + '_ {
        self.hosts
            .iter()
            .filter(|h| h.oversubscribed == Some(true))
            .flat_map(|h| h.ranks.iter().copied())
    }

    /// What a reader of a report or a prediction must hear, one line: the hosts with
    /// more ranks than CPUs, and that their waits include time-sharing; or that whether
    /// they had is unknown; none when no host had.
    pub fn warning(&self) -> Option<String> {
        match self.oversubscribed {
            Some(false) => None,
            Some(true) => {
                let hosts: Vec<String> = self
                    .hosts
                    .iter()
                    .filter(|h| h.oversubscribed == Some(true))
                    .map(HostCpus::said)
                    .collect();
                Some(format!(
                    "oversubscribed: {}: waits include time-sharing (a rank descheduled while \
                     its partners wait for it), which the replay cannot model: predictions \
                     are not confirmable",
                    listed(hosts)
                ))
            }
            None => Some(format!(
                "CPUs per rank unknown: {}: whether ranks time-shared CPUs (their waits would \
                 then include it) cannot be told",
                self.unknown_why()
            )),
        }
    }

    /// One line whatever the run: [`Self::warning`], or that every rank had a CPU.
    pub fn summary(&self) -> String {
        self.warning().unwrap_or_else(|| {
            let ranks: usize = self.hosts.iter().map(|h| h.ranks.len()).sum();
            let place = match self.hosts.as_slice() {
                [one] => one.said(),
                many => format!("{ranks} ranks on {} hosts", many.len()),
            };
            format!("not oversubscribed: a CPU for every rank ({place})")
        })
    }

    /// Why the CPUs per rank are unknown: the hosts whose ranks did not record them.
    fn unknown_why(&self) -> String {
        if self.hosts.is_empty() {
            return "no rank in the trace".to_string();
        }
        let hosts: Vec<String> = self
            .hosts
            .iter()
            .filter(|h| h.oversubscribed.is_none())
            .map(|h| format!("host {}", h.host))
            .collect();
        format!(
            "not recorded by the ranks of {} (a trace before format 8, or by another tool: \
             OTF2 does not keep them)",
            listed(hosts)
        )
    }
}

#[cfg(test)]
mod tests {
    use overlap_format::schema::{MergedInfo, RankClock};
    use overlap_format::testing::{merged_info, rank_clock};

    use super::*;

    fn rank(rank: u32, host: &str, cpus: Option<&str>) -> RankClock {
        RankClock {
            host: host.into(),
            cpu_affinity: cpus.map(str::to_string),
            online_cpus: cpus.map(|_| 2),
            ..rank_clock(rank)
        }
    }

    fn info(ranks: Vec<RankClock>) -> MergedInfo {
        merged_info(4, ranks)
    }

    /// Host vm: four ranks allowed CPUs 0-1 each (union 2): oversubscribed. Host a: two
    /// ranks bound to CPU 0 and 1: not. Host b, one rank that did not say: unknown.
    #[test]
    fn a_host_with_more_ranks_than_the_union_of_their_cpus_is_oversubscribed() {
        let vm: Vec<RankClock> = (0..4).map(|r| rank(r, "vm", Some("0-1"))).collect();
        let o = Oversubscription::of(&info(vm.clone()));
        assert_eq!(o.oversubscribed, Some(true));
        assert_eq!((o.hosts[0].cpus, o.hosts[0].online), (Some(2), Some(2)));
        assert_eq!(o.of_rank(3), Some(true));
        assert_eq!(o.ranks().count(), 4);
        let w = o.warning().expect("a warning");
        assert!(
            w.starts_with(
                "oversubscribed: 4 ranks ran on 2 CPU(s) of host vm (2×): waits include \
                 time-sharing"
            ),
            "{w}"
        );
        assert_eq!(o.hosts[0].ranks_per_cpu, Some(2.0));
        assert_eq!(o.summary(), w);
        let bound = vec![rank(0, "a", Some("0")), rank(1, "a", Some("1"))];
        let o = Oversubscription::of(&info(bound.clone()));
        assert_eq!((o.oversubscribed, o.warning()), (Some(false), None));
        assert_eq!(
            o.summary(),
            "not oversubscribed: a CPU for every rank (2 ranks ran on 2 CPU(s) of host a (1×))"
        );
        let mut unknown = bound;
        unknown.push(rank(2, "b", None));
        let o = Oversubscription::of(&info(unknown.clone()));
        assert_eq!(
            (o.oversubscribed, o.of_rank(2), o.of_rank(0)),
            (None, None, Some(false))
        );
        assert_eq!(
            o.warning().expect("a warning"),
            "CPUs per rank unknown: not recorded by the ranks of host b (a trace before \
             format 8, or by another tool: OTF2 does not keep them): whether ranks time-shared CPUs (their waits would then include it) \
             cannot be told"
        );
        assert_eq!(o.hosts[1].ranks_per_cpu, None, "never 0");
        // An oversubscribed host decides the run, whatever another does not say.
        unknown.extend(vm.into_iter().map(|mut r| {
            r.rank += 10;
            r
        }));
        assert_eq!(
            Oversubscription::of(&info(unknown)).oversubscribed,
            Some(true)
        );
    }

    /// Three ranks on two CPUs is 1.5×; past three hosts the line counts the rest.
    #[test]
    fn hosts_are_said_with_their_ratio_and_many_are_counted() {
        let mut ranks = Vec::new();
        for (h, host) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            for r in 0..3 {
                ranks.push(rank(h as u32 * 3 + r, host, Some("0-1")));
            }
        }
        let o = Oversubscription::of(&info(ranks));
        let w = o.warning().expect("a warning");
        assert!(
            w.starts_with(
                "oversubscribed: 3 ranks ran on 2 CPU(s) of host a (1.5×), 3 ranks ran on 2 \
                 CPU(s) of host b (1.5×), 3 ranks ran on 2 CPU(s) of host c (1.5×) and 2 more \
                 host(s): "
            ),
            "{w}"
        );
        assert_eq!(
            (times(4.0 / 3.0), times(2.0), times(0.5)),
            ("1.33".into(), "2".into(), "0.5".into())
        );
        let apart: Vec<RankClock> = (0..4)
            .map(|r| rank(r, &format!("n{r}"), Some("0")))
            .collect();
        assert_eq!(
            Oversubscription::of(&info(apart)).summary(),
            "not oversubscribed: a CPU for every rank (4 ranks on 4 hosts)"
        );
    }
}
