//! The batches of a part's rows of the streamed tables (calls, requests, wait states),
//! made one way for whoever takes them: the tables' writer, which writes them
//! ([`super::TableStream`]), and a worker's recorder, which hands them to worker 0
//! ([`super::RowRecorder`]).

use polars::prelude::DataFrame;

use super::parts::Part;
use super::write::in_rows;
use super::{calls, requests, wait_states};
use crate::metrics::request_row::RequestRow;
use crate::metrics::WaitInstance;
use crate::model::Trace;
use crate::sites::SiteTable;
use crate::Result;

/// Takes a streamed table's rows a batch (at most [`super::write::ROWS`] rows) at a time.
pub(super) trait Batches {
    /// Takes the batch `df` of the streamed table `table`.
    fn batch(&mut self, table: Part, df: Result<DataFrame>);

    /// The batches of every call and compute span of `part`'s ranks.
    fn calls_of(&mut self, part: &Trace, sites: &SiteTable) {
        let rows = part.ranks.iter().map(|t| t.spans.len()).sum();
        in_rows(rows, |range| {
            self.batch(Part::Calls, calls(part, sites, range))
        });
    }

    /// The batches of the requests' rows `rows` of `part`.
    fn requests_of(&mut self, part: &Trace, rows: &[RequestRow]) {
        in_rows(rows.len(), |range| {
            self.batch(Part::Requests, requests(part, &rows[range]))
        });
    }

    /// The batches of the wait-state instances `waits` of `part`'s ranks.
    fn wait_states_of(&mut self, part: &Trace, sites: &SiteTable, waits: &[WaitInstance]) {
        in_rows(waits.len(), |range| {
            self.batch(Part::WaitStates, wait_states(part, sites, &waits[range]))
        });
    }
}
