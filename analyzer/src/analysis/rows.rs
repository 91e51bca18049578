//! What the analysis of a directory in parts ([`super::analyze_dir`]) hands out of each
//! part as it goes, for whoever writes the figures' rows (the tables of
//! `overlap analyze --csv/--parquet`): every call, request, wait-state instance and
//! false-overlap finding of the part's ranks, each part once, in rank order; then the
//! run's messages and staging chains. The analysis holds none of them afterwards; a sink
//! that needs them in another order keeps what it needs.
//!
//! In a job of several workers each worker is handed its own block's rows: a worker
//! but worker 0 writes them into pieces of bytes ([`RowSink::written`]) that worker 0's
//! sink takes after its own block's, worker after worker ([`RowSink::take_written`]), as
//! if it had been handed them itself.

use crate::gpu::ChainRow;
use crate::metrics::message_ends::MessageEnds;
use crate::metrics::request_row::RequestRow;
use crate::metrics::{Finding, WaitInstance};
use crate::model::Trace;
use crate::sites::SiteTable;
use crate::Result;

/// Takes the rows of a run analysed in parts. Each `part` is a part trace
/// ([`Trace`]: its ranks whole, the run's messages and requests); the parts come in rank
/// order, each method called for a part before the next part is read.
pub trait RowSink: Send {
    /// Every call and compute span of the part's ranks, their sites named by `sites`.
    fn calls(&mut self, part: &Trace, sites: &SiteTable);
    /// Rows of the part's requests, in request order: every request of the run once,
    /// over the parts, in the run's order.
    fn requests(&mut self, part: &Trace, rows: &[RequestRow]);
    /// Every wait-state instance of the part's ranks, sorted by (rank, call, kind).
    fn wait_states(&mut self, part: &Trace, sites: &SiteTable, waits: &[WaitInstance]);
    /// False-overlap findings of the part's ranks, in no order (every finding of the run
    /// once, over the calls).
    fn findings(&mut self, part: &Trace, sites: &SiteTable, found: &[Finding]);
    /// The run's messages (those of `run`, which holds no rank), their ends `ends`.
    fn messages(&mut self, run: &Trace, ends: &MessageEnds);
    /// The run's staging chains (none without GPU work).
    fn chains(&mut self, chains: &[ChainRow]);
    /// The rows taken so far, written for worker 0's sink to take, a piece a batch in
    /// the order taken, and given up here (what a worker but worker 0 sends); the error
    /// that stopped them being written, or that this sink hands no rows on.
    fn written(&mut self) -> Result<Written>;
    /// Takes the rows of a piece another worker's sink wrote ([`RowSink::written`]), as
    /// if handed them here; a piece that cannot be read fails the sink as its other rows
    /// would.
    fn take_written(&mut self, piece: &[u8]);
}

/// The pieces a sink wrote for worker 0 ([`RowSink::written`]), given one at a time as
/// they are sent, so that the worker never holds them all at once.
pub struct Written {
    /// How many bytes each piece is, in order.
    pub lengths: Vec<usize>,
    /// The pieces, in order: each read when asked for, or the error of reading it.
    pub pieces: Box<dyn Iterator<Item = Result<Vec<u8>>> + Send>,
}

impl std::fmt::Debug for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Written {{ lengths: {:?} }}", self.lengths)
    }
}

impl Written {
    /// Pieces held already.
    pub fn held(pieces: Vec<Vec<u8>>) -> Written {
        Written {
            lengths: pieces.iter().map(Vec::len).collect(),
            pieces: Box::new(pieces.into_iter().map(Ok)),
        }
    }
}

/// Where the rows of a run analysed in parts go, when anywhere.
pub type Rows<'s> = Option<&'s mut (dyn RowSink + 'static)>;
