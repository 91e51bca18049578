//! One request's figures as analysis keeps them for every request of a run
//! ([`RequestRow`], 112 bytes), and the report's form of a few of them
//! ([`RequestMetrics`], with its calls named and timed), made only for the requests a
//! report lists or a table writes.
//!
//! A run has about as many requests as it has calls: at 280 bytes each, the report's
//! form held for every request was a third of analysis's memory. The row keeps the
//! event indices of its calls (their names, times and sites are in the trace) and
//! sentinels instead of `Option`s (`i32::MIN` for a missing peer or tag, `u64::MAX` for
//! an unknown `t_pure`, [`NO_OVERLAP`] for an overlap that is none: not NaN, which would
//! make a row unequal to itself).

use super::request_metrics::{RequestClass, RequestMetrics};
use super::CallRef;
use crate::model::compact::{index_u32, some_i32, some_index, some_u64, NO_I32, NO_INDEX, NO_U64};
use crate::model::{EventRef, Span, Trace};

/// One request's figures, compact (see the module; the fields mean what
/// [`RequestMetrics`]' fields of the same names mean).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RequestRow {
    /// Rank.
    pub rank: u32,
    post: u32,
    completion: u32,
    args: u32,
    /// Request id on that rank.
    pub request: u64,
    peer: i32,
    tag: i32,
    /// Bytes (see [`RequestMetrics::bytes`]).
    pub bytes: u64,
    /// `E(wait) - X(post)`, ns.
    pub window_ns: u64,
    /// Compute inside the window, ns.
    pub cpu_ns: u64,
    /// Duration of the completing call, ns.
    pub exposed_wait_ns: u64,
    /// `X(wait) - E(post)`, ns.
    pub t_ovrl_ns: u64,
    t_pure_ns: u64,
    overlap: f64,
    osu_overlap: f64,
    /// The wait's part not explained by a late partner, ns.
    pub progress_wait_ns: u64,
    /// What the request does.
    pub kind: RequestClass,
    /// Let go with `MPI_Request_free` before any call completed it.
    pub freed: bool,
    /// Overlap written but not achieved; none when it cannot be told.
    pub written_not_achieved: Option<bool>,
    /// Its completing call waited past what its transfer explains, on a host with more
    /// ranks than CPUs: the scheduler's wait ([`super::progress::ProgressEvidence::descheduled`]).
    pub descheduled: bool,
}

const _: () = assert!(std::mem::size_of::<RequestRow>() == 112);

/// The sentinel of an overlap that is none: overlaps lie in 0..1 (both formulas clamp).
const NO_OVERLAP: f64 = -1.0;

fn overlap_or_sentinel(v: Option<f64>) -> f64 {
    v.unwrap_or(NO_OVERLAP)
}

fn none_if_sentinel(v: f64) -> Option<f64> {
    (v != NO_OVERLAP).then_some(v)
}

/// What a request is, before its figures: who posted it, where, and what it moves.
#[derive(Clone, Copy, Debug)]
pub struct RequestIdentity {
    /// Rank.
    pub rank: u32,
    /// Request id on that rank.
    pub request: u64,
    /// What it does.
    pub kind: RequestClass,
    /// Its post: index among the rank's events.
    pub post: usize,
    /// The call whose arguments describe the transfer.
    pub args: usize,
    /// Peer.
    pub peer: Option<i32>,
    /// Tag.
    pub tag: Option<i32>,
    /// Bytes.
    pub bytes: u64,
    /// Pure transfer time, ns, when a model gives one.
    pub t_pure_ns: Option<u64>,
    /// Let go with `MPI_Request_free`.
    pub freed: bool,
}

/// A request among the worst so far: its row, which orders it, and what the report
/// lists of it, made when it was taken (its rank's events may be gone since).
pub(crate) type Listed = (RequestRow, Option<RequestMetrics>);

impl RequestRow {
    /// A request that no call completed (yet): every figure 0 or none.
    pub fn new(id: RequestIdentity) -> RequestRow {
        RequestRow {
            rank: id.rank,
            post: index_u32(id.post),
            completion: NO_INDEX,
            args: index_u32(id.args),
            request: id.request,
            peer: id.peer.unwrap_or(NO_I32),
            tag: id.tag.unwrap_or(NO_I32),
            bytes: id.bytes,
            window_ns: 0,
            cpu_ns: 0,
            exposed_wait_ns: 0,
            t_ovrl_ns: 0,
            t_pure_ns: id.t_pure_ns.unwrap_or(NO_U64),
            overlap: NO_OVERLAP,
            osu_overlap: NO_OVERLAP,
            progress_wait_ns: 0,
            kind: id.kind,
            freed: id.freed,
            written_not_achieved: None,
            descheduled: false,
        }
    }

    /// Its post: index among the rank's events.
    pub fn post_index(&self) -> usize {
        self.post as usize
    }

    /// The call that completed it (index among the rank's events), if one did.
    pub fn completion_index(&self) -> Option<usize> {
        some_index(self.completion)
    }

    /// `figure` if a call completed the request; `None`, unknown, if none did (the row
    /// keeps 0 there, so that sums over requests count only the completed ones).
    fn once_completed(&self, figure: u64) -> Option<u64> {
        self.completion_index().map(|_| figure)
    }

    /// [`RequestRow::window_ns`], unknown without a completion.
    pub fn window(&self) -> Option<u64> {
        self.once_completed(self.window_ns)
    }

    /// [`RequestRow::cpu_ns`], unknown without a completion.
    pub fn cpu(&self) -> Option<u64> {
        self.once_completed(self.cpu_ns)
    }

    /// [`RequestRow::exposed_wait_ns`], unknown without a completion.
    pub fn exposed_wait(&self) -> Option<u64> {
        self.once_completed(self.exposed_wait_ns)
    }

    /// [`RequestRow::t_ovrl_ns`], unknown without a completion.
    pub fn t_ovrl(&self) -> Option<u64> {
        self.once_completed(self.t_ovrl_ns)
    }

    /// [`RequestRow::progress_wait_ns`], unknown without a completion.
    pub fn progress_wait(&self) -> Option<u64> {
        self.once_completed(self.progress_wait_ns)
    }

    /// Its post's span in `trace`.
    pub fn post_span<'t>(&self, trace: &'t Trace) -> Option<&'t Span> {
        trace.span(EventRef {
            rank: self.rank,
            index: self.post_index(),
        })
    }

    /// The span in `trace` of the call that completed it, if one did.
    pub fn completion_span<'t>(&self, trace: &'t Trace) -> Option<&'t Span> {
        trace.span(EventRef {
            rank: self.rank,
            index: self.completion_index()?,
        })
    }

    /// Marks it completed by the call at `index`.
    pub fn set_completion(&mut self, index_of_call: usize) {
        self.completion = index_u32(index_of_call);
    }

    /// The call whose arguments describe the transfer (the post, or a started
    /// persistent request's init): index among the rank's events.
    pub fn args_index(&self) -> usize {
        self.args as usize
    }

    /// True for a point-to-point send.
    pub fn is_send(&self) -> bool {
        self.kind == RequestClass::Send
    }

    /// Peer (world rank), when known.
    pub fn peer(&self) -> Option<i32> {
        some_i32(self.peer)
    }

    /// Tag.
    pub fn tag(&self) -> Option<i32> {
        some_i32(self.tag)
    }

    /// Estimated pure transfer time, ns; none when no model gives one.
    pub fn t_pure_ns(&self) -> Option<u64> {
        some_u64(self.t_pure_ns)
    }

    /// Overlap (0..1) by the IMB formula, when there is one.
    pub fn overlap(&self) -> Option<f64> {
        none_if_sentinel(self.overlap)
    }

    /// Overlap (0..1) by the OSU formula, when there is one.
    pub fn osu_overlap(&self) -> Option<f64> {
        none_if_sentinel(self.osu_overlap)
    }

    /// Sets both overlap figures (none: unknown).
    pub fn set_overlaps(&mut self, imb: Option<f64>, osu: Option<f64>) {
        self.overlap = overlap_or_sentinel(imb);
        self.osu_overlap = overlap_or_sentinel(osu);
    }

    /// The report's form, its post and completion named and timed from `trace`; none
    /// when its post is not a call of the trace.
    pub fn metrics(&self, trace: &Trace) -> Option<RequestMetrics> {
        let post = CallRef::of(trace, self.rank, self.post_index())?;
        let completion = self
            .completion_index()
            .and_then(|i| CallRef::of(trace, self.rank, i));
        Some(RequestMetrics {
            rank: self.rank,
            request: self.request,
            post,
            is_send: self.is_send(),
            kind: self.kind,
            args_index: self.args_index(),
            peer: self.peer(),
            tag: self.tag(),
            bytes: self.bytes,
            completion,
            freed: self.freed,
            window_ns: self.window_ns,
            cpu_ns: self.cpu_ns,
            exposed_wait_ns: self.exposed_wait_ns,
            t_ovrl_ns: self.t_ovrl_ns,
            t_pure_ns: self.t_pure_ns(),
            overlap: self.overlap(),
            osu_overlap: self.osu_overlap(),
            progress_wait_ns: self.progress_wait_ns,
            written_not_achieved: self.written_not_achieved,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinels_read_back_as_none_and_values_as_themselves() {
        let id = RequestIdentity {
            rank: 3,
            request: 9,
            kind: RequestClass::Receive,
            post: 4,
            args: 4,
            peer: None,
            tag: Some(-1),
            bytes: 64,
            t_pure_ns: None,
            freed: false,
        };
        let mut r = RequestRow::new(id);
        assert_eq!((r.peer(), r.tag(), r.t_pure_ns()), (None, Some(-1), None));
        assert_eq!(
            (r.completion_index(), r.overlap(), r.osu_overlap()),
            (None, None, None)
        );
        r.set_completion(7);
        r.set_overlaps(Some(0.0), None);
        assert_eq!(
            (r.completion_index(), r.overlap(), r.osu_overlap()),
            (Some(7), Some(0.0), None)
        );
        assert!(!r.is_send());
        // A row with no overlap is equal to itself (a NaN sentinel was not).
        let none = RequestRow::new(id);
        assert_eq!(none, none);
        let sent = RequestRow::new(RequestIdentity {
            kind: RequestClass::Send,
            peer: Some(0),
            t_pure_ns: Some(0),
            ..id
        });
        assert_eq!(
            (sent.peer(), sent.t_pure_ns(), sent.is_send()),
            (Some(0), Some(0), true)
        );
    }
}
