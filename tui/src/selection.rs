//! The selected call and what is known of it, made once when it is selected: the calls
//! linked to it (messages first), the analysis' rows about it, which link is marked (and
//! where `p` goes), and, for a wait opened from the Waits view, its cause. One value:
//! clearing the selection clears all of it.

use overlap_analyzer::model::EventRef;

use crate::run::{Link, Run};

/// Why a call other than the selection is marked: the cause of a wait opened from the
/// Waits view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// The rank that made the selection wait.
    pub rank: u32,
    /// Its call, when the analysis names it.
    pub event: Option<EventRef>,
    /// What the wait was, as the side panel says it.
    pub what: String,
}

/// The analysis' rows about a call: indices into the run's tables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// Its wait-state instances (`details.waits`).
    pub waits: Vec<usize>,
    /// The requests it posted (`details.requests`).
    pub requests: Vec<usize>,
    /// The false-overlap finding whose wait it is (`report.false_overlap`).
    pub finding: Option<usize>,
    /// The staging chains whose send or receive completion it is (`details.chains`).
    pub chains: Vec<usize>,
}

impl Facts {
    fn of(run: &Run, e: EventRef) -> Facts {
        let here = |rank: u32, index: usize| rank == e.rank && index == e.index;
        let d = &run.details;
        Facts {
            waits: (0..d.waits.len())
                .filter(|i| here(d.waits[*i].rank, d.waits[*i].index))
                .collect(),
            requests: (0..d.requests.len())
                .filter(|i| here(d.requests[*i].rank, d.requests[*i].post_index()))
                .collect(),
            finding: run
                .report
                .false_overlap
                .worst
                .iter()
                .position(|f| here(f.wait.rank, f.wait.index)),
            chains: (0..d.chains.len())
                .filter(|i| {
                    let c = &d.chains[*i];
                    here(c.from, c.send_index) || c.completion_index.is_some_and(|x| here(c.to, x))
                })
                .collect(),
        }
    }
}

/// The selected call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The call (or compute span).
    pub event: EventRef,
    /// The calls linked to it, the message's other end first.
    pub links: Vec<Link>,
    /// The analysis' rows about it.
    pub facts: Facts,
    /// The marked link (the one `p` goes to), an index into `links`.
    pub marked: usize,
    /// The cause of the wait, when it was opened from the Waits view.
    pub cause: Option<Cause>,
}

impl Selection {
    /// Selects `event` of `run`.
    pub fn of(run: &Run, event: EventRef, cause: Option<Cause>) -> Selection {
        let mut links = run.links(event);
        links.sort_by_key(|l| !l.kind.is_message());
        Selection {
            event,
            links,
            facts: Facts::of(run, event),
            marked: 0,
            cause,
        }
    }

    /// The marked link.
    pub fn marked_link(&self) -> Option<&Link> {
        self.links.get(self.marked)
    }

    /// Marks the next link.
    pub fn mark_next(&mut self) {
        if !self.links.is_empty() {
            self.marked = (self.marked + 1) % self.links.len();
        }
    }

    /// The call drawn with the selection and an arrow to it: the wait's cause, else the
    /// marked link.
    pub fn target(&self) -> Option<EventRef> {
        self.cause
            .as_ref()
            .and_then(|c| c.event)
            .or_else(|| self.marked_link().map(|l| l.to))
    }
}
