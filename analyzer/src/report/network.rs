//! A replay's network in words, for every command that prints one (`whatif`,
//! `suggest`): its latency and bandwidth, or, for a network of one size class, that
//! class's time and that the two are not told apart, or, for a network of classes,
//! each class's time and why no line goes through them.

use crate::replay::{Network, NetworkFit, NetworkSource};
use crate::units::{bytes, duration, rate};

/// The estimate of `fit`, in one line.
pub fn network_line(fit: &NetworkFit) -> String {
    match &fit.source {
        NetworkSource::OneClass { class } if !(fit.latency_given || fit.bandwidth_given) => {
            format!(
                "{} ({}) in {}, the one size class of the run (latency and bandwidth not \
                 told apart; the replay holds for that size)",
                bytes(class.bytes),
                class.protocol.name(),
                duration(fit.mid.transfer_ns(class.bytes)),
            )
        }
        NetworkSource::Classes { classes, line } => {
            let each: Vec<String> = (classes.iter())
                .map(|c| {
                    format!(
                        "{} ({}) {}",
                        bytes(c.bytes),
                        c.protocol.name(),
                        duration(fit.mid.transfer_ns(c.bytes))
                    )
                })
                .collect();
            format!(
                "per size class as measured: {}; no line: {line}",
                each.join(", ")
            )
        }
        NetworkSource::NoMessages if !(fit.latency_given || fit.bandwidth_given) => {
            "none needed (no point-to-point message between two ranks)".to_string()
        }
        _ => hockney(&fit.mid),
    }
}

/// `latency L, bandwidth B` of a network.
pub fn hockney(n: &Network) -> String {
    let bw = n
        .bandwidth_bytes_per_s()
        .map_or("infinite".to_string(), rate);
    format!("latency {}, bandwidth {bw}", duration(n.latency()))
}
