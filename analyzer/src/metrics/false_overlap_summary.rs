//! The report's false overlap: every finding counted, summed and grouped by call site,
//! the worst listed in full. A wait placed in a loop makes one finding per iteration
//! (about 450 B of JSON each, with its evidence): a run of millions of events makes
//! hundreds of thousands, and a report that listed them all would be hundreds of
//! megabytes that no one reads past the first screen. What an engineer acts on is the
//! site (`by_site.false_overlap`) and the worst instances; the count and the sums keep
//! every finding.
//!
//! [`Fold`] takes the findings as they are found, in any order and in as many parts as
//! wanted (the analysis that is given the trace finds them a few ranks at a time), and
//! gives what all of them at once give: the sums do not depend on the order, the worst
//! are chosen in the report's order, which is total ([`super::false_overlap::sort_findings`]),
//! and the site groups break ties by rank and call.

use serde::Serialize;

use super::by_site::{Groups, SiteGroup};
use super::false_overlap::{report_order, sort_findings, Finding};
use crate::model::Trace;
use crate::sites::SiteTable;

/// The run's false-overlap findings in the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct FalseOverlap {
    /// Findings in the run.
    pub count: u64,
    /// Time their waits lost, ns (Σ `lost_ns`).
    pub lost_ns: u64,
    /// Time moving them could hide, ns (Σ `possible.hideable_ns`): up to the possible
    /// points, which may need compute of unknown effect to leave the buffers alone.
    pub hideable_ns: u64,
    /// Of it, what moving them to their proven points could hide, ns (Σ
    /// `proven.hideable_ns`).
    pub proven_hideable_ns: u64,
    /// The findings with the largest losses, in full, largest first: at most
    /// [`super::Options::findings`] of them (all of them are in the sums above and in
    /// `by_site.false_overlap`).
    pub worst: Vec<Finding>,
}

impl FalseOverlap {
    /// True when the run has no finding.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Findings counted but not listed.
    pub fn unlisted(&self) -> u64 {
        self.count.saturating_sub(self.worst.len() as u64)
    }
}

/// Findings folded as they are found.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Fold {
    listed: usize,
    summary: FalseOverlap,
    groups: Groups,
}

impl Fold {
    /// A fold that lists at most `listed` findings.
    pub fn new(listed: usize) -> Fold {
        Fold {
            listed,
            summary: FalseOverlap::default(),
            groups: Groups::default(),
        }
    }

    /// Adds findings of `trace` (any, in any order; the whole run, or the part of it
    /// they were found in), grouped by the sites of `table`; only those that may be
    /// listed are copied, their sites named.
    pub fn add(&mut self, trace: &Trace, table: &SiteTable, findings: &[Finding]) {
        self.groups.add_findings(trace, table, findings);
        let s = &mut self.summary;
        for f in findings {
            s.count += 1;
            s.lost_ns += f.lost_ns;
            s.hideable_ns += f.possible.hideable_ns;
            s.proven_hideable_ns += f.proven.as_ref().map_or(0, |p| p.hideable_ns);
        }
        // The worst of these beside the worst so far: the report's order is total, so
        // the first `listed` of the two are the first of all.
        let mut worst: Vec<&Finding> = findings.iter().collect();
        if worst.len() > self.listed {
            worst.select_nth_unstable_by_key(self.listed, |f| report_order(f));
            worst.truncate(self.listed);
        }
        s.worst.extend(worst.into_iter().map(|f| {
            let mut f = f.clone();
            super::by_site::name_finding(trace, table, &mut f);
            f
        }));
        sort_findings(&mut s.worst);
        s.worst.truncate(self.listed);
    }

    /// Adds the fold of other findings: what adding those findings here gives.
    pub fn merge(&mut self, other: Fold) {
        self.groups.merge(other.groups);
        let (s, o) = (&mut self.summary, other.summary);
        s.count += o.count;
        s.lost_ns += o.lost_ns;
        s.hideable_ns += o.hideable_ns;
        s.proven_hideable_ns += o.proven_hideable_ns;
        s.worst.extend(o.worst);
        sort_findings(&mut s.worst);
        s.worst.truncate(self.listed);
    }

    /// The summary, and the findings grouped by site, largest total first.
    pub fn finish(self, table: &SiteTable) -> (FalseOverlap, Vec<SiteGroup>) {
        (self.summary, self.groups.finish(table))
    }
}

#[cfg(test)]
mod tests {
    use super::{FalseOverlap, Fold};
    use crate::metrics::false_overlap::{Finding, Limit, WaitMove};
    use crate::metrics::CallRef;
    use std::path::Path;

    use crate::merge::from_events;
    use crate::sites::SiteTable;

    /// A finding of `rank` whose wait is its event `index`, losing `lost` ns of which
    /// `hideable` could be hidden.
    fn finding(rank: u32, index: usize, lost: u64, hideable: u64) -> Finding {
        let wait = CallRef {
            rank,
            index,
            call: "MPI_Waitall",
            start_ns: 0,
            duration_ns: lost,
            site: None,
        };
        Finding {
            rank,
            wait,
            requests: Vec::new(),
            mixed: false,
            lost_ns: lost,
            possible: WaitMove {
                move_before: None,
                before_compute: None,
                move_after: None,
                limit: Limit::EndOfTrace,
                first_use: None,
                independent_work_ns: hideable,
                independent_spans: 1,
                independent_names: Vec::new(),
                hideable_ns: hideable,
            },
            proven: None,
            needs: None,
        }
    }

    /// Seven findings, three of them tied at 50 ns lost:
    ///
    /// ```text
    ///  rank  wait  lost  hideable      report's order (lost desc, rank, wait)
    ///   0     4     20     20           1. rank 2 wait 7   80
    ///   1    30     50     10           2. rank 1 wait 12  50
    ///   1    12     50     50           3. rank 1 wait 30  50
    ///   2     7     80     30           4. rank 3 wait 9   50
    ///   2    40     10      5           5. rank 0 wait 4   20
    ///   3     9     50     50           6. rank 2 wait 40  10
    ///   3    11     10     10           7. rank 3 wait 11  10
    /// ```
    /// Σ lost 270, Σ hideable 175. Listing three keeps 1-3, whatever the order and the
    /// parts the findings come in.
    fn seven() -> Vec<Finding> {
        [
            (0, 4, 20, 20),
            (1, 30, 50, 10),
            (1, 12, 50, 50),
            (2, 7, 80, 30),
            (2, 40, 10, 5),
            (3, 9, 50, 50),
            (3, 11, 10, 10),
        ]
        .into_iter()
        .map(|(r, i, l, h)| finding(r, i, l, h))
        .collect()
    }

    fn folded(parts: &[&[Finding]], listed: usize) -> FalseOverlap {
        let trace = from_events("none", Path::new("none"), Vec::new());
        let table = SiteTable::default();
        let mut fold = Fold::new(listed);
        for part in parts {
            fold.add(&trace, &table, part);
        }
        let (summary, groups) = fold.finish(&table);
        // No site recorded: one group, of every finding.
        assert_eq!(groups.len(), 1);
        let g = &groups[0];
        assert_eq!((g.count, g.total_ns, g.ranks), (7, 270, 4));
        assert_eq!((g.worst_ns, g.worst_rank, g.worst_index), (80, 2, 7));
        summary
    }

    #[test]
    fn the_worst_listed_and_every_finding_summed_in_any_parts() {
        let all = seven();
        let mut reversed = all.clone();
        reversed.reverse();
        let want = FalseOverlap {
            count: 7,
            lost_ns: 270,
            hideable_ns: 175,
            proven_hideable_ns: 0,
            worst: vec![all[3].clone(), all[2].clone(), all[1].clone()],
        };
        for findings in [&all, &reversed] {
            assert_eq!(folded(&[findings], 3), want);
            for cut in 0..=findings.len() {
                let (a, b) = findings.split_at(cut);
                assert_eq!(folded(&[a, b], 3), want, "cut at {cut}");
            }
            let one_at_a_time: Vec<&[Finding]> = findings.chunks(1).collect();
            assert_eq!(folded(&one_at_a_time, 3), want);
        }
        // None listed, or all: the sums are the same.
        let none = folded(&[&all], 0);
        assert_eq!((none.count, none.lost_ns, none.worst.len()), (7, 270, 0));
        assert_eq!(none.unlisted(), 7);
        let every = folded(&[&reversed[..2], &reversed[2..]], usize::MAX);
        let mut sorted = all.clone();
        crate::metrics::false_overlap::sort_findings(&mut sorted);
        assert_eq!(every.worst, sorted);
        assert_eq!(every.unlisted(), 0);
    }
}
