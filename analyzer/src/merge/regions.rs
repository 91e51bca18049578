//! The regions of a directory of rank files, for `overlap merge --region NAME`: each
//! file is read once more, keeping only its `MPI_Pcontrol` calls and its last time, and
//! those are put on the run's timeline with the merge's own clock plan, so that a
//! region's window is in the times `--from` and `--to` take.

use std::path::Path;

use overlap_format::schema::{Event, Nanos, Op};

use super::{read_files_into, ClockPlan};
use crate::import::{rank_files, EventSink};
use crate::regions::{RegionMark, RunRegions};
use crate::Result;

/// A sink that keeps a rank's Pcontrol calls and its latest time.
#[derive(Default)]
struct Marks {
    marks: Vec<RegionMark>,
    last: Nanos,
    events: usize,
}

impl Extend<Event> for Marks {
    fn extend<I: IntoIterator<Item = Event>>(&mut self, events: I) {
        for e in events {
            self.push(e);
        }
    }
}

impl overlap_format::stream::EventStore for Marks {}

impl EventSink for Marks {
    fn push(&mut self, e: Event) {
        self.events += 1;
        if let Event::Call(c) = &e {
            self.last = self.last.max(c.end);
            if c.op == Op::Pcontrol {
                self.marks.push(RegionMark {
                    start: c.start,
                    end: c.end.max(c.start),
                    level: c.args.level.unwrap_or(0),
                    name: c.args.region.clone(),
                });
            }
        } else if let Event::Compute(s) = &e {
            self.last = self.last.max(s.end);
        }
    }
    fn len(&self) -> usize {
        self.events
    }
}

/// The regions the rank files of `dir` mark, on the run's timeline (the files the merge
/// would use; fails as it would when none can be).
pub fn regions_of_dir(dir: &Path) -> Result<RunRegions> {
    let (traces, _unreadable) = read_files_into::<Marks>(dir, rank_files(dir)?, |_| {})?;
    let plan = ClockPlan::new(&traces);
    let aligned: Vec<(u32, Vec<RegionMark>, Nanos)> = traces
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let align = plan.rank_align(i, t);
            let mut marks: Vec<RegionMark> = t
                .events
                .marks
                .iter()
                .map(|m| RegionMark {
                    start: align.apply(m.start),
                    end: align.apply(m.end).max(align.apply(m.start)),
                    level: m.level,
                    name: m.name.clone(),
                })
                .collect();
            marks.sort_by_key(|m| m.start);
            (t.rank(), marks, align.apply(t.events.last))
        })
        .collect();
    let mut regions = RunRegions::of(aligned.iter().map(|(r, m, end)| (*r, m.as_slice(), *end)));
    regions.unknown =
        crate::regions::unrecorded_marks(traces.iter().map(|t| t.call_counts.as_ref()));
    Ok(regions)
}
