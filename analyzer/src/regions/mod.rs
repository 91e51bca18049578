//! The regions a program marked with `MPI_Pcontrol`, from each rank's Pcontrol calls
//! ([`RegionMark`]s, on the run's timeline) to instances, per-rank times and the
//! window of the run one region covers (`overlap merge --region NAME`).
//!
//! The conventions are [`overlap_format::region`]'s: IPM's named regions (level 1 with a
//! name enters it, -1 leaves it; they may nest, and a leave closes the latest open
//! instance of its name) and mpiP's unnamed on/off (an unnamed 1 opens the region
//! [`UNNAMED_REGION`], the next 0 closes it). Instance `k` of a region is the `k`-th
//! time a rank entered it; `NAME#k` is that instance on every rank that has it. An
//! instance still open when the rank's trace ends closes there and is counted open.

mod slices;
mod summary;

use std::collections::BTreeMap;

use overlap_format::region::{PcontrolMark, UNNAMED_REGION};
use overlap_format::schema::Nanos;
use serde::Serialize;

pub use slices::{rank_slices, RegionSlice};
pub use summary::{RankMarks, RegionSummary, Spread};

pub use crate::model::RegionMark;

/// One time one rank was in a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instance {
    /// The rank.
    pub rank: u32,
    /// Its order among the rank's instances of the region, from 1.
    pub index: u32,
    /// When the entering Pcontrol call was entered.
    pub enter: Nanos,
    /// When the leaving Pcontrol call returned (the rank's last event when `open`).
    pub leave: Nanos,
    /// True when the rank never left it.
    pub open: bool,
}

/// One region of the run, with its instances on every rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// Its name ([`UNNAMED_REGION`] for mpiP's on/off).
    pub name: String,
    /// Every instance, by rank then index.
    pub instances: Vec<Instance>,
}

/// A region's time on one rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RankTime {
    /// The rank.
    pub rank: u32,
    /// Its instances.
    pub instances: u32,
    /// Their time together.
    pub ns: u64,
}

impl Region {
    /// The region's time on each rank that entered it, by rank.
    pub fn per_rank(&self) -> Vec<RankTime> {
        let mut by_rank: BTreeMap<u32, RankTime> = BTreeMap::new();
        for i in &self.instances {
            let t = by_rank.entry(i.rank).or_insert(RankTime {
                rank: i.rank,
                instances: 0,
                ns: 0,
            });
            t.instances += 1;
            t.ns += i.leave.0.saturating_sub(i.enter.0);
        }
        by_rank.into_values().collect()
    }

    /// The most instances any rank has.
    pub fn instance_count(&self) -> u32 {
        self.instances.iter().map(|i| i.index).max().unwrap_or(0)
    }
}

/// The regions of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunRegions {
    /// Every region, in the order the run first entered them.
    pub regions: Vec<Region>,
    /// Every rank of the run, sorted: those that never entered a region are the others.
    pub ranks: Vec<u32>,
    /// Why the run's regions cannot be told, when they cannot ([`unrecorded_marks`]):
    /// `regions` is then empty, and that is not "no region".
    pub unknown: Option<String>,
}

/// Why the regions cannot be told from ranks whose files counted their `MPI_Pcontrol`
/// calls (`counts`, a rank's each) without recording them (files before format 11,
/// when the preload only counted the call), if any rank called it.
pub fn unrecorded_marks<'a>(
    counts: impl IntoIterator<Item = Option<&'a overlap_format::schema::CallCounts>>,
) -> Option<String> {
    let counted: u64 = counts
        .into_iter()
        .filter_map(|c| c?.unrecorded.get("MPI_Pcontrol"))
        .sum();
    (counted > 0).then(|| {
        format!(
            "the ranks called MPI_Pcontrol {counted} time(s), but their files (format 10 or \
             older) counted those calls without recording their levels or names: trace the \
             program again to see its regions"
        )
    })
}

/// Which part of a run `overlap merge --region` asked for: `NAME` (every instance) or
/// `NAME#K` (the K-th).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionChoice {
    /// The region's name.
    pub name: String,
    /// The instance, from 1 (`None`: all).
    pub instance: Option<u32>,
}

impl RegionChoice {
    /// `NAME` or `NAME#K` (K from 1); a `#` not followed by a number is part of the
    /// name.
    pub fn parse(text: &str) -> Result<RegionChoice, String> {
        if text.is_empty() {
            return Err("no region named".into());
        }
        if let Some((name, k)) = text.rsplit_once('#') {
            if let Ok(k) = k.parse::<u32>() {
                if k == 0 || name.is_empty() {
                    return Err(format!(
                        "`{text}`: instances are counted from 1 (NAME#1 is the first)"
                    ));
                }
                return Ok(RegionChoice {
                    name: name.to_string(),
                    instance: Some(k),
                });
            }
        }
        Ok(RegionChoice {
            name: text.to_string(),
            instance: None,
        })
    }
}

/// The part of the run a region covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionWindow {
    /// From the first rank's enter...
    pub from: Nanos,
    /// ...to the last rank's leave.
    pub to: Nanos,
    /// The ranks that have the chosen instance(s).
    pub entered: Vec<u32>,
    /// The ranks of the run that do not.
    pub never_entered: Vec<u32>,
}

impl RunRegions {
    /// The regions of the ranks' marks (`ranks`: rank, its Pcontrol calls in time
    /// order, and when its trace ends).
    pub fn of<'a>(ranks: impl IntoIterator<Item = (u32, &'a [RegionMark], Nanos)>) -> RunRegions {
        let mut all: Vec<u32> = Vec::new();
        // Region name -> instances; names in the order first entered (by time).
        let mut found: BTreeMap<String, (Nanos, Vec<Instance>)> = BTreeMap::new();
        for (rank, marks, end) in ranks {
            all.push(rank);
            for (name, instance) in rank_instances(rank, marks, end) {
                let e = found.entry(name).or_insert((instance.enter, Vec::new()));
                e.0 = e.0.min(instance.enter);
                e.1.push(instance);
            }
        }
        all.sort_unstable();
        all.dedup();
        let mut regions: Vec<(Nanos, Region)> = found
            .into_iter()
            .map(|(name, (first, mut instances))| {
                instances.sort_by_key(|i| (i.rank, i.index));
                (first, Region { name, instances })
            })
            .collect();
        regions.sort_by(|a, b| (a.0, &a.1.name).cmp(&(b.0, &b.1.name)));
        RunRegions {
            regions: regions.into_iter().map(|(_, r)| r).collect(),
            ranks: all,
            unknown: None,
        }
    }

    /// True when the run marked no region.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// The region called `name`.
    pub fn get(&self, name: &str) -> Option<&Region> {
        self.regions.iter().find(|r| r.name == name)
    }

    /// The window `choice` covers, or why there is none: an unknown region (the
    /// message lists the run's), or an instance no rank has.
    pub fn window(&self, choice: &RegionChoice) -> Result<RegionWindow, String> {
        let Some(region) = self.get(&choice.name) else {
            if let Some(why) = self.unknown.as_deref().filter(|_| self.is_empty()) {
                return Err(format!("no region `{}` can be found: {why}", choice.name));
            }
            return Err(if self.is_empty() {
                format!(
                    "no region `{}`: the run marks no region with MPI_Pcontrol",
                    choice.name
                )
            } else {
                format!(
                    "no region `{}` in the run; its regions: {}",
                    choice.name,
                    self.describe()
                )
            });
        };
        let chosen: Vec<&Instance> = region
            .instances
            .iter()
            .filter(|i| choice.instance.is_none_or(|k| i.index == k))
            .collect();
        let (Some(from), Some(to)) = (
            chosen.iter().map(|i| i.enter).min(),
            chosen.iter().map(|i| i.leave).max(),
        ) else {
            return Err(format!(
                "region `{}` has {} instance(s) on its ranks, not {}",
                region.name,
                region.instance_count(),
                choice.instance.unwrap_or(0)
            ));
        };
        let mut entered: Vec<u32> = chosen.iter().map(|i| i.rank).collect();
        entered.dedup();
        let never_entered = self
            .ranks
            .iter()
            .copied()
            .filter(|r| entered.binary_search(r).is_err())
            .collect();
        Ok(RegionWindow {
            from,
            to,
            entered,
            never_entered,
        })
    }

    /// `solve (3 instances), pcontrol (1 instance)`.
    pub fn describe(&self) -> String {
        self.regions
            .iter()
            .map(|r| {
                let n = r.instance_count();
                format!("{} ({n} instance{})", r.name, if n == 1 { "" } else { "s" })
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One rank's instances, with their region's name, from its marks in time order.
fn rank_instances(rank: u32, marks: &[RegionMark], end: Nanos) -> Vec<(String, Instance)> {
    let mut out = Vec::new();
    // Per name: the open instances' (index, enter), latest last; and how many so far.
    let mut open: BTreeMap<String, Vec<(u32, Nanos)>> = BTreeMap::new();
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    let mut enter = |name: &str, at: Nanos, open: &mut BTreeMap<String, Vec<(u32, Nanos)>>| {
        let k = counts.entry(name.to_string()).or_insert(0);
        *k += 1;
        open.entry(name.to_string()).or_default().push((*k, at));
    };
    let leave = |name: &str,
                 at: Nanos,
                 open: &mut BTreeMap<String, Vec<(u32, Nanos)>>,
                 out: &mut Vec<_>| {
        if let Some((index, enter)) = open.get_mut(name).and_then(Vec::pop) {
            out.push((
                name.to_string(),
                Instance {
                    rank,
                    index,
                    enter,
                    leave: at.max(enter),
                    open: false,
                },
            ));
        }
    };
    for m in marks {
        match PcontrolMark::of(m.level, m.name.as_deref()) {
            PcontrolMark::Enter(name) => enter(name, m.start, &mut open),
            PcontrolMark::Leave(name) => leave(name, m.end, &mut open, &mut out),
            // mpiP's "on" while on already opens nothing more.
            PcontrolMark::On => {
                if open.get(UNNAMED_REGION).is_none_or(Vec::is_empty) {
                    enter(UNNAMED_REGION, m.start, &mut open);
                }
            }
            PcontrolMark::Off => leave(UNNAMED_REGION, m.end, &mut open, &mut out),
            PcontrolMark::Other => {}
        }
    }
    for (name, left) in open {
        for (index, enter) in left {
            out.push((
                name.clone(),
                Instance {
                    rank,
                    index,
                    enter,
                    leave: end.max(enter),
                    open: true,
                },
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(at: u64, level: i32, name: Option<&str>) -> RegionMark {
        RegionMark {
            start: Nanos(at),
            end: Nanos(at + 1),
            level,
            name: name.map(str::to_string),
        }
    }

    fn run() -> RunRegions {
        let r0 = vec![
            mark(0, 0, None),
            mark(10, 1, Some("solve")),
            mark(20, 1, Some("inner")),
            mark(30, -1, Some("inner")),
            mark(40, -1, Some("solve")),
            mark(50, 1, Some("solve")),
            mark(60, -1, Some("solve")),
            mark(70, 1, None),
            mark(80, 0, None),
            mark(90, 1, None),
        ];
        let r1 = vec![mark(15, 1, Some("solve")), mark(45, -1, Some("solve"))];
        RunRegions::of([
            (0, r0.as_slice(), Nanos(100)),
            (1, r1.as_slice(), Nanos(100)),
            (2, [].as_slice(), Nanos(100)),
        ])
    }

    #[test]
    fn named_and_unnamed_regions_pair_up_and_nest() {
        let r = run();
        let names: Vec<&str> = r.regions.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["solve", "inner", "pcontrol"]);
        let solve = r.get("solve").expect("known");
        assert_eq!(solve.instance_count(), 2);
        assert_eq!(
            solve.per_rank(),
            [
                RankTime {
                    rank: 0,
                    instances: 2,
                    ns: 31 + 11
                },
                RankTime {
                    rank: 1,
                    instances: 1,
                    ns: 31
                },
            ]
        );
        let unnamed = r.get("pcontrol").expect("known");
        assert_eq!(unnamed.instances.len(), 2);
        assert!(unnamed.instances[1].open, "on at 90, never off");
        assert_eq!(unnamed.instances[1].leave, Nanos(100));
    }

    #[test]
    fn windows_span_the_chosen_instances() {
        let r = run();
        let all = r
            .window(&RegionChoice::parse("solve").expect("known"))
            .expect("known");
        assert_eq!((all.from, all.to), (Nanos(10), Nanos(61)));
        assert_eq!(
            (all.entered.clone(), all.never_entered.clone()),
            (vec![0, 1], vec![2])
        );
        let second = r
            .window(&RegionChoice::parse("solve#2").expect("known"))
            .expect("known");
        assert_eq!(
            (second.from, second.to, second.entered),
            (Nanos(50), Nanos(61), vec![0])
        );
        let first = r
            .window(&RegionChoice::parse("pcontrol#1").expect("known"))
            .expect("known");
        assert_eq!((first.from, first.to), (Nanos(70), Nanos(81)));
    }

    #[test]
    fn unknown_regions_and_instances_are_told() {
        let r = run();
        let e = r
            .window(&RegionChoice::parse("nope").expect("known"))
            .expect_err("refused");
        assert!(
            e.contains("solve (2 instances)") && e.contains("inner (1 instance)"),
            "{e}"
        );
        let e = r
            .window(&RegionChoice::parse("inner#3").expect("known"))
            .expect_err("refused");
        assert!(e.contains("not 3"), "{e}");
        assert!(RegionChoice::parse("solve#0").is_err());
        assert_eq!(RegionChoice::parse("a#b").expect("known").name, "a#b");
        let empty = RunRegions::of([(0, [].as_slice(), Nanos(1))]);
        assert!(empty
            .window(&RegionChoice::parse("x").expect("known"))
            .expect_err("refused")
            .contains("marks no region"));
    }
}
