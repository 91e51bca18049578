//! The human report of `overlap analyze`: tables that fit a 100-column terminal, worst
//! offenders first, colour only when asked for (the CLI asks when stdout is a terminal
//! and `NO_COLOR` is unset). One file per field of the [`Report`], in the order the text
//! gives them; [`render`] only calls them in turn.

mod calls;
mod clock;
mod false_overlap;
mod finding;
mod gpu;
pub mod hang;
mod network;
mod pop;
mod profile;
mod regions;
mod requests;
mod run;
mod sites;
mod style;
mod summary;
mod wait_states;
mod window;

pub use network::{hockney, network_line};
pub use profile::render_profile;
pub use regions::{render_regions, WithRegions};
pub use style::Style;
pub use summary::render_summary;
pub use window::render_window;

use crate::analysis::Report;

/// Renders the whole report (`overlap analyze --full`): every section.
pub fn render(r: &Report, style: Style) -> String {
    let mut o = String::new();
    run::head(&mut o, r, style);
    run::ranks_table(&mut o, r, style, usize::MAX);
    wait_states::section(&mut o, r, style);
    requests::section(&mut o, r, style);
    false_overlap::section(&mut o, r, style);
    sites::by_site(&mut o, r, style);
    let run = &r.run;
    let whole =
        run.missing_ranks.is_empty() && run.incomplete_ranks.is_empty() && run.completeness_known;
    gpu::section(&mut o, r.gpu.as_ref(), whole, style);
    pop::section(&mut o, r, style);
    clock::section(&mut o, r);
    o
}
