//! More ranks than CPUs on a host: a run-level fact every prediction depends on. The
//! replay gives each rank a core of its own; where ranks shared CPUs, the scheduler
//! made waits (a rank descheduled inside its wait, or while its partner waited for it)
//! that no network model reproduces, so no prediction on such a run can be confirmed.
//!
//! Each rank's header says the CPUs its affinity allowed and its host's online CPUs
//! ([`overlap_format::schema::CPU_AFFINITY_PARAM`]); the ranks of one host (by host
//! name) could run on the union of their affinities. A host is oversubscribed when it
//! has more ranks than that union has CPUs. A rank that did not say (a trace recorded
//! before format 8) makes its host unknown.
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
}

/// Whether the run had more ranks than CPUs on a host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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

    /// What a reader of a prediction must hear, one line: the hosts with more ranks
    /// than CPUs, or that it is unknown; none when no host had.
    pub fn warning(&self) -> Option<String> {
        match self.oversubscribed {
            Some(false) => None,
            Some(true) => {
                let hosts: Vec<String> = self
                    .hosts
                    .iter()
                    .filter(|h| h.oversubscribed == Some(true))
                    .map(|h| {
                        format!(
                            "{} ranks on {} CPU(s) of host {}",
                            h.ranks.len(),
                            h.cpus.unwrap_or(0),
                            h.host
                        )
                    })
                    .collect();
                Some(format!(
                    "oversubscribed: {}: the replay cannot model the scheduler; predictions \
                     are not confirmable",
                    hosts.join(", ")
                ))
            }
            None => Some(
                "CPUs per rank not recorded (a trace before format 8): whether ranks shared \
                 CPUs, which the replay cannot model, is unknown"
                    .to_string(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use overlap_format::schema::{MergedInfo, RankClock};

    use super::*;

    fn rank(rank: u32, host: &str, cpus: Option<&str>) -> RankClock {
        RankClock {
            rank,
            host: host.into(),
            shared_clock: true,
            init_offset_ns: 0,
            init_error_ns: 0,
            final_offset_ns: None,
            final_error_ns: None,
            drift_ppb: None,
            code_maps: None,
            cpu_affinity: cpus.map(str::to_string),
            online_cpus: cpus.map(|_| 2),
            source_sites: Vec::new(),
            events: 0,
            complete: true,
            in_flight: None,
            call_counts: None,
            call_paths: Vec::new(),
        }
    }

    fn info(ranks: Vec<RankClock>) -> MergedInfo {
        let mut i: MergedInfo = serde_json::from_value(serde_json::json!({
            "format": "overlap-trace", "format_version": 8, "program": "p", "params": {},
            "world_size": 4, "ranks": [], "max_clock_error_ns": 0, "messages": 0,
            "unmatched_sends": 0, "unmatched_receives": 0, "clock_suspect": [],
            "incomplete": [], "missing_ranks": []
        }))
        .expect("an info");
        i.ranks = ranks;
        i
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
            w.starts_with("oversubscribed: 4 ranks on 2 CPU(s) of host vm: the replay cannot"),
            "{w}"
        );
        let bound = vec![rank(0, "a", Some("0")), rank(1, "a", Some("1"))];
        let o = Oversubscription::of(&info(bound.clone()));
        assert_eq!((o.oversubscribed, o.warning()), (Some(false), None));
        let mut unknown = bound;
        unknown.push(rank(2, "b", None));
        let o = Oversubscription::of(&info(unknown.clone()));
        assert_eq!(
            (o.oversubscribed, o.of_rank(2), o.of_rank(0)),
            (None, None, Some(false))
        );
        assert!(o.warning().expect("a warning").contains("unknown"));
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
}
