//! The report's `clock` field as text: how far apart the ranks' clocks may be, and what
//! that makes uncertain.

use std::fmt::Write as _;

use crate::analysis::Report;
use crate::units::duration;

/// Appends the clock line.
pub(super) fn section(o: &mut String, r: &Report) {
    let c = &r.clock;
    let _ = writeln!(
        o,
        "\nclock: {}; {} clock-suspect message(s); {} wait(s) within the error bound ({})",
        if c.shared_clock {
            "all ranks read one clock (exact)".to_string()
        } else {
            format!("error bound up to {}", duration(c.max_error_ns))
        },
        c.suspect_messages,
        c.indeterminate_waits,
        duration(c.indeterminate_wait_ns)
    );
}
