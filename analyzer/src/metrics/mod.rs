//! The figures an engineer acts on, computed from a [`crate::model::Trace`]: where each
//! rank's time goes, the wait states that waste it (Scalasca's catalogue), how much each
//! non-blocking request overlapped, which waits are false overlap, and the POP
//! efficiencies of the run. Every figure is defined in `docs/metrics.md`.
//!
//! Each part is its own module, and each reads the leaves it needs ([`options`],
//! [`call_ref`]) by their own paths: this file only names them, so that nothing below
//! imports it. [`crate::analysis`] runs them all and assembles the report.

pub mod budget;
pub mod by_site;
pub mod call_ref;
pub mod clean;
pub mod collective_ends;
pub mod collective_model;
mod collective_waits;
pub mod collectives;
pub mod cross_rank;
pub mod descheduled;
pub mod digest;
pub mod digest_share;
pub mod eager;
pub mod exact_sum;
pub mod false_overlap;
mod false_overlap_limit;
pub mod false_overlap_summary;
pub mod message_ends;
pub mod one_sided;
pub mod options;
pub mod oversubscription;
pub mod pop;
pub mod progress;
pub mod request_metrics;
pub mod request_parts;
pub mod request_row;
pub mod request_summary;
pub mod requests;
pub(crate) mod side;
pub mod split;
pub mod transfer;
pub mod wait_kind;
pub mod wait_states;
pub mod worst;

pub use budget::{RankBudget, RunBudget};
pub use call_ref::CallRef;
pub use false_overlap::Finding;
pub use false_overlap_summary::FalseOverlap;
pub use options::Options;
pub use pop::Pop;
pub use request_metrics::RequestMetrics;
pub use request_row::RequestRow;
pub use request_summary::RequestSummary;
pub use transfer::TransferModel;
pub use wait_kind::WaitInstance;
pub use wait_kind::WaitKind;
pub use wait_states::WaitStates;
