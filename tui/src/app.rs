//! The TUI as a state machine: [`App`] holds what is on screen and [`App::handle`] turns
//! each key, mouse or resize event into a new state. Nothing here draws or touches the
//! terminal, so every key is unit-tested apart from drawing; the views read the state
//! ([`crate::view`]) and leave the geometry they drew in [`Geometry`] for the mouse.

use overlap_analyzer::check::{diff, DiffRow};
use overlap_analyzer::model::EventRef;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent};
use ratatui::layout::Rect;

use crate::filter::RankFilter;
use crate::lists::{Cursor, OverlapState, WaitsState};
use crate::nav::{self, Viewport};
use crate::profile::ProfileState;
use crate::run::Run;
use crate::search::Query;
use crate::selection::{Cause, Selection};
use crate::text::clean;

/// The views, in tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Ranks over time.
    Timeline,
    /// Wait-state instances, worst first.
    Waits,
    /// False-overlap findings and the requests table.
    Overlap,
    /// Time per rank, POP efficiencies, the clock.
    Summary,
    /// Time per MPI function and call site, the communication matrix, message sizes.
    Profile,
    /// Two runs: the diff and both timelines (only with two traces).
    Compare,
}

impl View {
    /// Every view, in tab order.
    pub const ALL: [View; 6] = [
        View::Timeline,
        View::Waits,
        View::Overlap,
        View::Summary,
        View::Profile,
        View::Compare,
    ];

    /// Its tab title.
    pub fn title(self) -> &'static str {
        match self {
            View::Timeline => "Timeline",
            View::Waits => "Waits",
            View::Overlap => "Overlap",
            View::Summary => "Summary",
            View::Profile => "Profile",
            View::Compare => "Compare",
        }
    }
}

/// What the user did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// A key.
    Key(KeyEvent),
    /// The mouse.
    Mouse(MouseEvent),
    /// The terminal's new size.
    Resize(u16, u16),
}

/// What a prompt at the bottom line asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptKind {
    /// Text to search for (`/`).
    Search,
    /// A time to go to (`g`).
    GoTo,
    /// The rank the Waits view shows (`R`; empty: every rank).
    WaitsRank,
    /// The ranks the Timeline shows (`F`; empty: every rank).
    RankFilter,
}

/// A line being typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    /// What for.
    pub kind: PromptKind,
    /// What was typed so far.
    pub text: String,
}

/// The Timeline's state.
#[derive(Clone, Debug)]
pub struct TimelineState {
    /// Which time each column shows.
    pub view: Viewport,
    /// The lane with the cursor.
    pub lane: usize,
    /// The first lane on screen.
    pub first_lane: usize,
    /// Ranks per lane (1: a lane per rank).
    pub group: usize,
    /// Which ranks are shown (`None`: all).
    pub filter: Option<RankFilter>,
    /// The positions (in `trace.ranks`) of the ranks shown, in their order.
    pub shown: Vec<usize>,
    /// The selected call, and what is known of it.
    pub selection: Option<Selection>,
    /// A drag in progress: the column it started at, and the view's start then.
    pub drag: Option<(u16, f64)>,
}

/// The Compare view's state.
#[derive(Clone, Debug)]
pub struct CompareState {
    /// Both timelines' columns (the same time scale).
    pub view: Viewport,
    /// `overlap diff`'s rows.
    pub rows: Vec<DiffRow>,
    /// The diff table's cursor.
    pub cursor: Cursor,
}

/// Where the last frame drew what the mouse can point at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Geometry {
    /// The tabs: each title's columns on the first row.
    pub tabs: Vec<(u16, u16, View)>,
    /// The Timeline's cells (without the lane labels), and rows per lane.
    pub lanes: Rect,
    /// Rows per lane.
    pub lane_rows: u16,
    /// Lanes on screen.
    pub lanes_shown: usize,
    /// The Compare view's two timelines' cells.
    pub compare: [Rect; 2],
    /// The rows of the table with the keys (Waits, Overlap, Compare): its data rows.
    pub table: Rect,
    /// How far the help can scroll on this terminal.
    pub help_scroll_max: u16,
}

/// The whole state of the TUI.
pub struct App {
    /// One run, or two to compare.
    pub runs: Vec<Run>,
    /// Which run the single-run views show (0 or 1).
    pub current: usize,
    /// The view on screen.
    pub view: View,
    /// The Timeline.
    pub timeline: TimelineState,
    /// The Waits view.
    pub waits: WaitsState,
    /// The Overlap view.
    pub overlap: OverlapState,
    /// The Summary's first line.
    pub summary_scroll: u16,
    /// The Profile view.
    pub profile: ProfileState,
    /// The Compare view (two runs only).
    pub compare: Option<CompareState>,
    /// The help overlay is open.
    pub help: bool,
    /// The help's first line shown (it scrolls where the terminal is shorter).
    pub help_scroll: u16,
    /// A line being typed.
    pub prompt: Option<Prompt>,
    /// The last search.
    pub query: Option<Query>,
    /// A message for the status bar.
    pub status: Option<String>,
    /// The user asked to quit.
    pub quit: bool,
    /// What the last frame drew where.
    pub geometry: Geometry,
}

/// The width assumed before the first frame.
const FIRST_WIDTH: u16 = 100;

impl TimelineState {
    /// The selected call.
    pub fn selected(&self) -> Option<EventRef> {
        self.selection.as_ref().map(|s| s.event)
    }
}

impl App {
    /// The TUI over one run, or two to compare.
    pub fn new(runs: Vec<Run>) -> App {
        assert!(!runs.is_empty(), "the TUI needs a run");
        let compare = (runs.len() > 1).then(|| CompareState {
            view: Viewport::fit(0, longest_run(&runs), FIRST_WIDTH),
            rows: diff(&runs[0].report, &runs[1].report),
            cursor: Cursor::default(),
        });
        let run = &runs[0];
        let mut app = App {
            timeline: timeline_for(run),
            waits: WaitsState::new(run),
            overlap: OverlapState::new(run),
            summary_scroll: 0,
            profile: ProfileState::new(&run.report.profile),
            compare,
            current: 0,
            view: View::Timeline,
            help: false,
            help_scroll: 0,
            prompt: None,
            query: None,
            status: None,
            quit: false,
            geometry: Geometry::default(),
            runs,
        };
        app.geometry.lanes.width = FIRST_WIDTH;
        app.geometry.compare[0].width = FIRST_WIDTH;
        app
    }

    /// The length of the longer run, ns: the Compare view's time scale.
    pub fn longest_run(&self) -> u64 {
        longest_run(&self.runs)
    }

    /// The run the single-run views show.
    pub fn run(&self) -> &Run {
        &self.runs[self.current]
    }

    /// The views this session has (Compare only with two runs).
    pub fn views(&self) -> Vec<View> {
        View::ALL
            .into_iter()
            .filter(|v| *v != View::Compare || self.compare.is_some())
            .collect()
    }

    /// Handles one input.
    pub fn handle(&mut self, input: Input) {
        match input {
            Input::Key(k) if k.kind != KeyEventKind::Release => self.key(k),
            Input::Key(_) => {}
            Input::Mouse(m) => crate::mouse::handle(self, m),
            Input::Resize(..) => {}
        }
    }

    fn key(&mut self, k: KeyEvent) {
        if k.modifiers.contains(KeyModifiers::CONTROL) && matches!(k.code, KeyCode::Char('c' | 'd'))
        {
            self.quit = true;
            return;
        }
        if self.prompt.is_some() {
            self.prompt_key(k);
            return;
        }
        if self.help {
            match k.code {
                KeyCode::Char('?' | 'q') | KeyCode::Esc | KeyCode::Enter => self.help = false,
                KeyCode::Char('j') | KeyCode::Down => {
                    let max = self.geometry.help_scroll_max;
                    self.help_scroll = self.help_scroll.saturating_add(1).min(max);
                }
                KeyCode::Char('k') | KeyCode::Up => {
                    self.help_scroll = self.help_scroll.saturating_sub(1)
                }
                KeyCode::Char('g') | KeyCode::Home => self.help_scroll = 0,
                _ => {}
            }
            return;
        }
        self.status = None;
        match k.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('?') => {
                self.help = true;
                self.help_scroll = 0;
            }
            KeyCode::Char('/') => self.ask(PromptKind::Search),
            KeyCode::Char('n') => self.search_again(true),
            KeyCode::Char('N') => self.search_again(false),
            KeyCode::Char(c @ '1'..='6') => {
                let v = View::ALL[c as usize - '1' as usize];
                if self.views().contains(&v) {
                    self.view = v;
                } else {
                    self.status = Some("Compare needs two traces: overlap tui A B".into());
                }
            }
            KeyCode::Tab | KeyCode::BackTab => {
                let views = self.views();
                let i = views.iter().position(|v| *v == self.view).unwrap_or(0);
                let n = views.len();
                let next = if k.code == KeyCode::Tab {
                    i + 1
                } else {
                    i + n - 1
                };
                self.view = views[next % n];
            }
            KeyCode::Char('t') if self.runs.len() > 1 => self.switch_run(),
            _ => match self.view {
                View::Timeline => crate::keys::timeline(self, k),
                View::Waits => crate::keys::waits(self, k),
                View::Overlap => crate::keys::overlap(self, k),
                View::Summary => crate::keys::summary(self, k),
                View::Profile => crate::keys::profile(self, k),
                View::Compare => crate::keys::compare(self, k),
            },
        }
    }

    /// Opens a prompt.
    pub fn ask(&mut self, kind: PromptKind) {
        self.prompt = Some(Prompt {
            kind,
            text: String::new(),
        });
    }

    fn prompt_key(&mut self, k: KeyEvent) {
        let Some(p) = self.prompt.as_mut() else {
            return;
        };
        match k.code {
            KeyCode::Esc => self.prompt = None,
            KeyCode::Backspace => {
                p.text.pop();
            }
            KeyCode::Char(c) if !c.is_control() => p.text.push(c),
            KeyCode::Enter => {
                let Prompt { kind, text } = self.prompt.take().unwrap_or(Prompt {
                    kind: PromptKind::Search,
                    text: String::new(),
                });
                match kind {
                    PromptKind::Search if text.is_empty() => {}
                    PromptKind::Search => {
                        self.query = Some(Query::new(self.run(), &text));
                        self.search_again(true);
                    }
                    PromptKind::RankFilter => {
                        let run = &self.runs[self.current];
                        let filter = match text.trim() {
                            "" | "all" => Ok(None),
                            t => RankFilter::parse(t).map(Some),
                        };
                        self.status = Some(match filter {
                            Ok(f) => self.timeline.set_filter(run, f),
                            Err(e) => e,
                        });
                    }
                    PromptKind::WaitsRank => {
                        let run = &self.runs[self.current];
                        match text.trim() {
                            "" | "all" => self.waits.set_rank(run, None),
                            t => match t.parse::<u32>() {
                                Ok(r) if run.trace.rank(r).is_some() => {
                                    self.waits.set_rank(run, Some(r))
                                }
                                _ => {
                                    self.status = Some(format!(
                                        "no traced rank {:?} (0 to {}, empty for all)",
                                        crate::text::clean(t),
                                        run.trace.ranks.len().saturating_sub(1)
                                    ))
                                }
                            },
                        }
                    }
                    PromptKind::GoTo => match crate::text::parse_time(&text) {
                        Some(ns) => {
                            self.view = View::Timeline;
                            let w = self.geometry.lanes.width;
                            self.timeline.view.center(ns, w);
                        }
                        // Not a time: a region, fitted to the view.
                        None => match self.run().region_span(text.trim()) {
                            Ok((a, b)) => {
                                self.view = View::Timeline;
                                let w = self.geometry.lanes.width;
                                self.timeline.view = Viewport::fit(a, b, w);
                                self.status = Some(format!("region {}", clean(&text)));
                            }
                            Err(why) => {
                                self.status = Some(format!(
                                    "not a time (1.5, 250ms, 12us) nor a region: {}",
                                    clean(&why)
                                ))
                            }
                        },
                    },
                }
            }
            _ => {}
        }
    }

    fn search_again(&mut self, forward: bool) {
        let Some(q) = &self.query else {
            self.status = Some("no search yet: / to search".into());
            return;
        };
        match q.next(self.run(), self.timeline.selected(), forward) {
            Some(e) => self.select(e, None),
            None => {
                self.status = Some(format!(
                    "no {} match for {:?}",
                    if forward { "later" } else { "earlier" },
                    crate::text::clean(&q.text)
                ))
            }
        }
    }

    /// Shows the other run in the single-run views.
    fn switch_run(&mut self) {
        self.current = 1 - self.current;
        let run = &self.runs[self.current];
        let width = self.geometry.lanes.width;
        self.timeline = timeline_for(run);
        self.timeline.view = Viewport::fit(run.extent.0, run.extent.1, width);
        self.waits = WaitsState::new(run);
        self.overlap = OverlapState::new(run);
        self.profile = ProfileState::new(&run.report.profile);
        self.query = None;
        self.status = Some(format!("showing {}", crate::text::clean(&run.label)));
    }

    /// Selects event `e` on the Timeline and brings it into view, with the cause of a
    /// wait when there is one.
    pub fn select(&mut self, e: EventRef, cause: Option<Cause>) {
        self.view = View::Timeline;
        let run = &self.runs[self.current];
        let width = self.geometry.lanes.width;
        let tl = &mut self.timeline;
        let selection = Selection::of(run, e, cause);
        if tl.filter.is_some() && nav::lane_of(run, &tl.lanes(), e.rank).is_none() {
            // A call on a rank the filter hides: every rank is shown again.
            tl.set_filter(run, None);
            self.status = Some(format!("rank {} was not shown: showing every rank", e.rank));
        }
        if let Some(lane) = nav::lane_of(run, &tl.lanes(), e.rank) {
            tl.lane = lane;
        }
        let mut range = nav::bounds(run, e).unwrap_or((0.0, 0.0));
        let other = selection.cause.as_ref().and_then(|c| c.event).or_else(|| {
            selection
                .links
                .first()
                .filter(|l| l.kind.is_message())
                .map(|l| l.to)
        });
        if let Some((a, b)) = other.and_then(|o| nav::bounds(run, o)) {
            // Both ends in view when they are not too far apart.
            if (b.max(range.1) - a.min(range.0)) < 50.0 * (range.1 - range.0).max(tl.view.per_cell)
            {
                range = (range.0.min(a), range.1.max(b));
            }
        }
        tl.view.show(range.0, range.1, width);
        tl.selection = Some(selection);
        self.keep_lane_visible();
    }

    /// Scrolls the lanes so the cursor's lane is on screen.
    pub fn keep_lane_visible(&mut self) {
        let shown = self.geometry.lanes_shown.max(1);
        let tl = &mut self.timeline;
        if tl.lane < tl.first_lane {
            tl.first_lane = tl.lane;
        } else if tl.lane >= tl.first_lane + shown {
            tl.first_lane = tl.lane + 1 - shown;
        }
    }
}

fn longest_run(runs: &[Run]) -> u64 {
    runs.iter()
        .map(|r| r.extent.1 - r.extent.0)
        .max()
        .unwrap_or(1)
}

/// The Timeline of a run before the first frame: the whole run, a lane per rank.
fn timeline_for(run: &Run) -> TimelineState {
    TimelineState {
        view: Viewport::fit(run.extent.0, run.extent.1, FIRST_WIDTH),
        lane: 0,
        first_lane: 0,
        group: 1,
        filter: None,
        shown: nav::every_rank(run),
        selection: None,
        drag: None,
    }
}
