//! [`ThreadRecorder`]: the recording methods of the preload's hot path, bound to one
//! thread's ring, so that a call records without this crate's thread-local lookup (which
//! in a shared library goes through `__tls_get_addr`).

use std::marker::PhantomData;
use std::sync::Arc;

use overlap_format::stream::codec::{
    encode_completion, encode_members, encode_started, MEMBERS_PER_RECORD,
};

use super::inflight::WaitsOn;
use super::ring::Ring;
use super::site::CallSite;
use super::{CallData, Recorder};
use crate::clock::Stamp;
use crate::schema::{Completion, Op, RequestId, Started};

/// A recorder bound to the ring of the thread that made it ([`Recorder::for_this_thread`]).
/// It is neither `Send` nor `Sync`: it records for its own thread only.
pub struct ThreadRecorder {
    recorder: Recorder,
    ring: Arc<Ring>,
    _this_thread: PhantomData<*const ()>,
}

impl ThreadRecorder {
    pub(super) fn new(recorder: Recorder, ring: Arc<Ring>) -> ThreadRecorder {
        ThreadRecorder {
            recorder,
            ring,
            _this_thread: PhantomData,
        }
    }

    /// Now, as a stamp of the recorder's clock.
    #[inline]
    pub fn stamp(&self) -> Stamp {
        self.recorder.stamp()
    }

    /// Publishes that this thread entered `op` at `start`, called from `site`, waiting
    /// on `waits` (read by an in-flight dump until [`ThreadRecorder::leave`]).
    #[inline(always)]
    pub fn enter(&self, op: Op, start: Stamp, site: u64, waits: &WaitsOn) {
        self.ring.in_flight.enter(op, start.raw(), site, waits);
    }

    /// This thread left the call it entered.
    #[inline(always)]
    pub fn leave(&self) {
        self.ring.in_flight.leave();
    }

    /// A fresh request id: see [`Recorder::next_request_id`].
    #[inline]
    pub fn next_request_id(&self) -> RequestId {
        RequestId(self.ring.next_request_id())
    }

    /// Records an MPI call made from `site` (a code address, the caller's return
    /// address, 0 when unknown; or a [`super::NamedSite`]), with the `count` requests or statuses it completed produced by
    /// `completion(i)` (at most half a ring's worth).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn record_call_from(
        &self,
        op: Op,
        start: Stamp,
        end: Stamp,
        site: impl Into<CallSite>,
        data: CallData,
        count: usize,
        mut completion: impl FnMut(usize) -> Completion,
    ) {
        self.recorder.push_call(
            Some(&self.ring),
            op,
            start,
            end,
            site.into(),
            data,
            count,
            |i, buf, d| encode_completion(buf, d, &completion(i)),
        );
    }

    /// Records a Start or Startall made from `site`, with the requests it
    /// started produced by `started(i)` for `i` in `0..count`.
    #[inline]
    pub fn record_start(
        &self,
        op: Op,
        start: Stamp,
        end: Stamp,
        site: impl Into<CallSite>,
        count: usize,
        mut started: impl FnMut(usize) -> Started,
    ) {
        self.recorder.push_call(
            Some(&self.ring),
            op,
            start,
            end,
            site.into(),
            CallData::Start,
            count,
            |i, buf, d| encode_started(buf, d, &started(i)),
        );
    }

    /// Records a call made from `site` on a group of world ranks (Win_start, Win_post):
    /// the members follow the call in members records.
    #[inline]
    pub fn record_group(
        &self,
        op: Op,
        start: Stamp,
        end: Stamp,
        site: impl Into<CallSite>,
        data: CallData,
        group: &[i32],
    ) {
        let count = group.len().div_ceil(MEMBERS_PER_RECORD);
        self.recorder.push_call(
            Some(&self.ring),
            op,
            start,
            end,
            site.into(),
            data,
            count,
            |i, buf, _| {
                let from = (i * MEMBERS_PER_RECORD).min(group.len());
                encode_members(
                    buf,
                    &group[from..(from + MEMBERS_PER_RECORD).min(group.len())],
                );
            },
        );
    }
}
