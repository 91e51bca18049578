//! One request's figures as the report gives them ([`RequestMetrics`]), and what a
//! request does ([`RequestClass`]): the leaf that the per-request pass
//! ([`super::requests`]), its compact rows ([`super::request_row`]) and the summaries
//! share.

use serde::Serialize;

use super::call_ref::CallRef;

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestClass {
    /// A point-to-point send (Isend, a started Send_init).
    Send,
    /// A point-to-point receive.
    Receive,
    /// A non-blocking collective (Ibcast..., a started persistent collective).
    Collective,
    /// A request-based one-sided operation (Rput, Rget, Raccumulate...).
    OneSided,
}

/// One request's figures.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct RequestMetrics {
    /// Rank.
    pub rank: u32,
    /// Request id on that rank.
    pub request: u64,
    /// The post (`MPI_Isend`, `MPI_Irecv`, `MPI_Ibcast`, `MPI_Rput`, `MPI_Start`...).
    pub post: CallRef,
    /// True for a point-to-point send.
    pub is_send: bool,
    /// What the request does.
    pub kind: RequestClass,
    /// The call whose arguments describe the transfer (the post, or a started
    /// persistent request's init): index among the rank's events.
    #[serde(default, skip_serializing_if = "crate::exchange::wire::left_out")]
    pub args_index: usize,
    /// Peer (world rank; a one-sided operation's target), when known.
    pub peer: Option<i32>,
    /// Tag.
    pub tag: Option<i32>,
    /// Bytes (sent, or received when known, else the buffer's capacity; a collective's
    /// `bytes` argument; a one-sided operation's origin bytes).
    pub bytes: u64,
    /// The call that completed it, if one did.
    pub completion: Option<CallRef>,
    /// True when the program let go of it with `MPI_Request_free` before any call
    /// completed it (its end is unknown to the program, and to the trace).
    pub freed: bool,
    /// `E(wait) - X(post)`, ns (0 when the wait began inside the post).
    pub window_ns: u64,
    /// Compute inside the window, ns.
    pub cpu_ns: u64,
    /// Duration of the completing call, ns.
    pub exposed_wait_ns: u64,
    /// `X(wait) - E(post)`, ns: OSU's overall time.
    pub t_ovrl_ns: u64,
    /// Estimated pure transfer (communication) time, ns; none when no model gives one
    /// (a collective the collective model has no estimate for).
    pub t_pure_ns: Option<u64>,
    /// Overlap (0..1) by the IMB formula; none when `t_pure` is unknown or the request
    /// never completed.
    pub overlap: Option<f64>,
    /// Overlap (0..1) by the OSU formula; none when the IMB one is none.
    pub osu_overlap: Option<f64>,
    /// The wait's part not explained by a late partner, ns (see [`super::progress`]).
    pub progress_wait_ns: u64,
    /// Overlap written (compute in the window) but not achieved (the wait still took
    /// about the transfer): see [`super::progress`]; none when it cannot be told.
    pub written_not_achieved: Option<bool>,
}
