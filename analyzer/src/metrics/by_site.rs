//! Findings and wait states summed by call site: one line of source that waits in a loop
//! makes thousands of instances, and what an engineer changes is the line. Each group is
//! one (site, MPI call) — and for wait states one kind — with its count, total and worst.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use super::false_overlap::Finding;
use super::request_metrics::RequestMetrics;
use super::wait_kind::{WaitInstance, WaitKind};
use crate::model::Trace;
use crate::sites::{Site, SiteTable};

/// The instances of one (site, call[, kind]), summed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SiteGroup {
    /// The site's label (see [`Site::label`]); `None` when the calls recorded no site.
    pub site: Option<String>,
    /// MPI function.
    pub call: &'static str,
    /// Wait states: the kind (absent for false overlap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<WaitKind>,
    /// Instances.
    pub count: u64,
    /// Ranks they happened on.
    pub ranks: u32,
    /// Time lost in all of them, ns.
    pub total_ns: u64,
    /// The largest single loss, ns.
    pub worst_ns: u64,
    /// Where the largest happened: rank.
    pub worst_rank: u32,
    /// ... and the call's index among that rank's events.
    pub worst_index: usize,
}

/// Everything the report says by site.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BySite {
    /// False-overlap findings by (site, waiting call), largest total first.
    pub false_overlap: Vec<SiteGroup>,
    /// Wait-state instances (those beyond the clock error bound) by (site, call, kind),
    /// largest total first.
    pub wait_states: Vec<SiteGroup>,
    /// Every distinct site of the run, with file, line, function, object and offset.
    pub sites: Vec<Site>,
    /// What could not be symbolized, and why.
    pub notes: Vec<String>,
}

type Key = (Option<u32>, &'static str, Option<WaitKind>);

#[derive(serde::Serialize, serde::Deserialize)]
struct Sum {
    count: u64,
    ranks: BTreeSet<u32>,
    total: u64,
    worst: (u64, u32, usize),
}

impl Sum {
    /// Keeps `(lost, rank, index)` as the worst when it is: the largest loss, and of
    /// equals the earliest call by rank and index.
    fn take_worst(&mut self, candidate: (u64, u32, usize)) {
        let (lost, rank, index) = candidate;
        let (w, wr, wi) = self.worst;
        if lost > w || (lost == w && (rank, index) < (wr, wi)) {
            self.worst = candidate;
        }
    }
}

/// Instances summed by (site, call[, kind]) as they come, in any order and in as many
/// parts as wanted: the groups do not depend on either (of equal largest losses, the
/// earliest call by rank and index is the worst).
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub struct Groups {
    #[serde(deserialize_with = "read_sums")]
    sums: HashMap<Key, Sum>,
}

/// Reads the sums of [`Groups`] written by another worker.
fn read_sums<'de, D: serde::Deserializer<'de>>(d: D) -> Result<HashMap<Key, Sum>, D::Error> {
    use serde::Deserialize;
    type Written = HashMap<(Option<u32>, String, Option<WaitKind>), Sum>;
    let written = Written::deserialize(d)?;
    let key = |(site, call, kind): (Option<u32>, String, Option<WaitKind>)| {
        (site, crate::static_names::intern(&call), kind)
    };
    Ok(written.into_iter().map(|(k, s)| (key(k), s)).collect())
}

impl Groups {
    fn add(&mut self, key: Key, rank: u32, index: usize, lost: u64) {
        let s = self.sums.entry(key).or_insert_with(|| Sum {
            count: 0,
            ranks: BTreeSet::new(),
            total: 0,
            worst: (lost, rank, index),
        });
        s.count += 1;
        s.ranks.insert(rank);
        s.total += lost;
        s.take_worst((lost, rank, index));
    }

    /// Adds the groups of other instances: what adding those instances here gives.
    pub fn merge(&mut self, other: Groups) {
        for (key, o) in other.sums {
            let Some(s) = self.sums.get_mut(&key) else {
                self.sums.insert(key, o);
                continue;
            };
            s.count += o.count;
            s.ranks.extend(o.ranks);
            s.total += o.total;
            s.take_worst(o.worst);
        }
    }

    /// Adds wait-state instances of `trace`'s ranks (the whole run, or a part of it),
    /// by the site of their call; those within the clock error or the scheduler's are
    /// left out.
    pub fn add_waits(&mut self, trace: &Trace, table: &SiteTable, waits: &[WaitInstance]) {
        for w in waits.iter().filter(|w| !w.indeterminate && !w.descheduled) {
            let site = table.id_of_call(trace, w.rank, w.index);
            self.add((site, w.call, Some(w.kind)), w.rank, w.index, w.amount_ns);
        }
    }

    /// Adds false-overlap findings, by the site of their waiting call.
    pub fn add_findings(&mut self, trace: &Trace, table: &SiteTable, findings: &[Finding]) {
        for f in findings {
            let site = table.id_of_call(trace, f.wait.rank, f.wait.index);
            self.add(
                (site, f.wait.call, None),
                f.wait.rank,
                f.wait.index,
                f.lost_ns,
            );
        }
    }

    /// The groups, largest total first.
    pub fn finish(self, table: &SiteTable) -> Vec<SiteGroup> {
        let mut out: Vec<SiteGroup> = self
            .sums
            .into_iter()
            .map(|((site, call, kind), s)| SiteGroup {
                site: site
                    .and_then(|id| table.sites().get(id as usize))
                    .map(|s| s.label.clone()),
                call,
                kind,
                count: s.count,
                ranks: s.ranks.len() as u32,
                total_ns: s.total,
                worst_ns: s.worst.0,
                worst_rank: s.worst.1,
                worst_index: s.worst.2,
            })
            .collect();
        out.sort_by(|a, b| {
            (b.total_ns, &a.site, a.call, a.kind).cmp(&(a.total_ns, &b.site, b.call, b.kind))
        });
        out
    }
}

/// Wait-state instances by the site of the call that waited (instances within the clock
/// error bound are left out, as in the totals).
pub fn wait_states(trace: &Trace, table: &SiteTable, waits: &[WaitInstance]) -> Vec<SiteGroup> {
    let mut groups = Groups::default();
    groups.add_waits(trace, table, waits);
    groups.finish(table)
}

/// The by-site part of the report, from the false-overlap findings already grouped
/// ([`Groups::add_findings`]: the report lists only the worst of them).
pub fn by_site(
    trace: &Trace,
    table: &SiteTable,
    false_overlap: Vec<SiteGroup>,
    waits: &[WaitInstance],
) -> BySite {
    BySite::of_groups(table, false_overlap, wait_states(trace, table, waits))
}

impl BySite {
    /// The by-site part of the report, both groupings made.
    pub fn of_groups(
        table: &SiteTable,
        false_overlap: Vec<SiteGroup>,
        wait_states: Vec<SiteGroup>,
    ) -> BySite {
        BySite {
            false_overlap,
            wait_states,
            sites: table.sites().to_vec(),
            notes: table.notes().to_vec(),
        }
    }
}

/// Names the site of every call a finding the report lists refers to: its wait, the
/// posts of its requests, where the wait may move, and its first uses. `trace` holds the
/// finding's rank (the whole run or the part it was found in).
pub fn name_finding(trace: &Trace, table: &SiteTable, f: &mut Finding) {
    let rank = f.rank;
    for c in f.calls_mut() {
        c.site = table.label_of_call(trace, c.rank, c.index);
    }
    for u in f.first_uses_mut() {
        u.site = u.ip.and_then(|ip| table.touch(rank, ip)).map(Site::place);
    }
}

/// Names the sites of the post and the completion of a request the report lists.
/// `trace` holds the request's rank (the whole run or the part it was made in).
pub fn name_request(trace: &Trace, table: &SiteTable, r: &mut RequestMetrics) {
    r.post.site = table.label_of_call(trace, r.post.rank, r.post.index);
    if let Some(c) = r.completion.as_mut() {
        c.site = table.label_of_call(trace, c.rank, c.index);
    }
}

#[cfg(test)]
mod tests {
    use super::{Groups, Key};
    use crate::metrics::WaitKind;
    use crate::sites::SiteTable;

    /// Three Late Senders of one call (no site), two tied at the largest loss:
    ///
    /// ```text
    ///  rank  index  lost
    ///   3      5     40
    ///   1      9     40    <- the worst: of equal losses, the earliest by (rank, index)
    ///   1      2     10
    /// ```
    /// count 3 on 2 ranks, total 90, in whatever order they are added.
    #[test]
    fn a_group_is_the_same_in_any_order() {
        let key: Key = (None, "MPI_Recv", Some(WaitKind::LateSender));
        let items = [(3, 5, 40), (1, 9, 40), (1, 2, 10)];
        let mut orders = vec![items.to_vec()];
        orders.push(items.iter().rev().copied().collect());
        orders.push(vec![items[1], items[0], items[2]]);
        for order in orders {
            let mut groups = Groups::default();
            for (rank, index, lost) in &order {
                groups.add(key, *rank, *index, *lost);
            }
            let g = groups.finish(&SiteTable::default());
            assert_eq!(g.len(), 1);
            let g = &g[0];
            assert_eq!((g.count, g.ranks, g.total_ns), (3, 2, 90), "{order:?}");
            assert_eq!(
                (g.worst_ns, g.worst_rank, g.worst_index),
                (40, 1, 9),
                "{order:?}"
            );
        }
    }
}
