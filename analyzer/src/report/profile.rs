//! The profile in text (`overlap analyze --profile`): mpiP's tables by function and by
//! call site, the communication matrix, the message sizes and the phases. Each table is
//! cut to `top` rows; `--json` has them whole.

use std::fmt::Write as _;

use super::style::Style;
use crate::profile::{CallStats, CommMatrix, Phases, Profile, SizeClasses};
use crate::units::{bytes, count, duration, fit};

/// The matrix is drawn whole up to this many ranks; beyond, its largest pairs are listed.
const MATRIX_SIDE: u32 = 16;

/// The profile's sections, each at most `top` rows.
pub fn render_profile(p: &Profile, style: Style, top: usize) -> String {
    let mut o = String::new();
    functions(&mut o, p, style, top);
    sites(&mut o, p, style, top);
    matrix(&mut o, &p.matrix, style, top);
    sizes(&mut o, &p.sizes, style);
    phases(&mut o, &p.phases, style);
    o
}

const HEADER: &str =
    "  calls  ranks      total       mean        min        max  MPI%    wait st.      sent  received";

fn row(s: &CallStats) -> String {
    format!(
        "{:>7} {:>6} {:>10} {:>10} {:>10} {:>10} {:>5} {:>11} {:>9} {:>9}",
        count(s.count),
        s.ranks,
        duration(s.total_ns),
        duration(s.mean_ns),
        duration(s.min_ns),
        duration(s.max_ns),
        s.mpi_share
            .map_or_else(|| "-".to_string(), |f| format!("{:.1}", f * 100.0)),
        duration(s.wait_state_ns),
        bytes(s.sent_bytes),
        bytes(s.received_bytes),
    )
}

fn more(o: &mut String, shown: usize, all: usize, what: &str) {
    if all > shown {
        let _ = writeln!(o, "  ... and {} more {what} (see --json)", all - shown);
    }
}

fn functions(o: &mut String, p: &Profile, style: Style, top: usize) {
    let _ = writeln!(o, "\n{}", style.bold("Time per MPI function"));
    if p.functions.is_empty() {
        let _ = writeln!(o, "  no MPI calls recorded");
        return;
    }
    let _ = writeln!(o, "  {:<22}{HEADER}", "function");
    for s in p.functions.iter().take(top) {
        let _ = writeln!(o, "  {:<22}{}", fit(s.call, 22), row(s));
    }
    more(o, top, p.functions.len(), "function(s)");
}

fn sites(o: &mut String, p: &Profile, style: Style, top: usize) {
    if p.sites.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n{}", style.bold("Time per call site"));
    for s in p.sites.iter().take(top) {
        let site = s.site.as_deref().unwrap_or("(site unknown)");
        let _ = writeln!(o, "  {}  {}", fit(site, 70), s.stats.call);
        let _ = writeln!(o, "  {:<22}{}", "", row(&s.stats));
    }
    more(o, top, p.sites.len(), "site(s)");
}

fn matrix(o: &mut String, m: &CommMatrix, style: Style, top: usize) {
    let _ = writeln!(
        o,
        "\n{}",
        style.bold("Communication matrix (point-to-point bytes, sender down, receiver across)")
    );
    if m.pairs.is_empty() {
        let _ = writeln!(o, "  no matched messages");
        return;
    }
    if m.ranks <= MATRIX_SIDE {
        let _ = write!(o, "  {:>6}", "");
        for to in 0..m.ranks {
            let _ = write!(o, " {:>9}", format!("to {to}"));
        }
        let _ = writeln!(o);
        for from in 0..m.ranks {
            let _ = write!(o, "  {:>6}", format!("{from}"));
            for to in 0..m.ranks {
                let cell = m
                    .pairs
                    .iter()
                    .find(|p| p.from == from && p.to == to)
                    .map_or_else(|| ".".to_string(), |p| bytes(p.bytes));
                let _ = write!(o, " {cell:>9}");
            }
            let _ = writeln!(o);
        }
    } else {
        let mut largest: Vec<_> = m.pairs.iter().collect();
        largest.sort_by(|a, b| {
            b.bytes
                .cmp(&a.bytes)
                .then((a.from, a.to).cmp(&(b.from, b.to)))
        });
        for p in largest.iter().take(top) {
            let _ = writeln!(
                o,
                "  {:>6} -> {:<6} {:>9} in {} message(s)",
                p.from,
                p.to,
                bytes(p.bytes),
                count(p.messages)
            );
        }
        more(o, top, m.pairs.len(), "pair(s)");
    }
    for c in &m.by_comm {
        let name = if c.comm == 0 {
            "MPI_COMM_WORLD".to_string()
        } else {
            format!("communicator {}", c.comm)
        };
        let _ = writeln!(
            o,
            "  {name}: {} message(s), {}, {} pair(s) of ranks",
            count(c.messages),
            bytes(c.bytes),
            c.pairs
        );
    }
}

fn sizes(o: &mut String, s: &[SizeClasses], style: Style) {
    if s.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\n{}",
        style.bold("Message sizes (per sending function)")
    );
    for f in s {
        let _ = writeln!(o, "  {}", f.call);
        for c in &f.classes {
            let class = if c.max_bytes == 0 {
                "0 B".to_string()
            } else {
                format!("{} to {}", bytes(c.min_bytes), bytes(c.max_bytes))
            };
            let _ = writeln!(
                o,
                "    {class:<22} {:>9} message(s) {:>10}",
                count(c.messages),
                bytes(c.bytes)
            );
        }
    }
}

fn phases(o: &mut String, p: &Phases, style: Style) {
    let _ = writeln!(
        o,
        "\n{}",
        style.bold(
            "Phases (setup: MPI_Init until the first call after it that communicates returns; body; MPI_Finalize)"
        )
    );
    let known = |v: Option<u64>| v.map_or_else(|| "unknown".to_string(), duration);
    let _ = writeln!(
        o,
        "  longest over the ranks: setup {}, body {}, finalize {}",
        known(p.setup_max_ns),
        known(p.body_max_ns),
        known(p.finalize_max_ns)
    );
    for r in p.ranks.iter().filter(|r| !r.unknown.is_empty()).take(3) {
        let _ = writeln!(o, "  rank {}: {}", r.rank, r.unknown.join("; "));
    }
    let unknown = p.ranks.iter().filter(|r| !r.unknown.is_empty()).count();
    more(o, 3, unknown, "rank(s) with unknown phases");
}
