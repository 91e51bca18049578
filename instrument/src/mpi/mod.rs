//! The traced communicator over the `mpi` crate, and the per-rank trace session.
//!
//! [`TraceSession::start`] creates the rank's trace file, writes its header and aligns
//! its clock with rank 0; [`TraceSession::comm`] wraps a communicator in a
//! [`TracedComm`] whose calls (isend, irecv, send, recv, sendrecv, wait, wait_all, test,
//! barrier, all_reduce) are recorded with entry and exit times and their arguments;
//! [`TraceSession::finish`] aligns the clock again and closes the file.
//!
//! Non-blocking calls return a [`TracedRequest`], which remembers the request id it was
//! recorded under, so the call that completes it can name it.
//!
//! Every method that records is `#[track_caller]`: a call is recorded with the source
//! line the program made it from (its `site`), which reports group findings by.
//!
//! Point-to-point calls accept [`proc_null`] as a peer, as MPI does: such a call
//! returns at once and moves no data (codes like MIDAPACK use it for the missing
//! neighbours at the ends of a line of ranks). It is recorded like any other call, with
//! the null rank as its peer.

use std::mem::{size_of_val, MaybeUninit};

use mpi::collective::{CommunicatorCollectives, Operation};
use mpi::datatype::Equivalence;
use mpi::ffi;
use mpi::point_to_point::{Destination, Source, Status};
use mpi::request::{Request, Scope, StaticScope};
use mpi::topology::{AsCommunicator, Communicator, Rank};
use smallvec::SmallVec;

use crate::clock::Stamp;
use crate::recorder::{CallData, Collective, Recorder, Transfer, WaitsOn};
use crate::schema::{CommId, Completion, Op, RequestId};

mod session;

pub use crate::schema::rank_file_name;
pub use session::{TraceConfig, TraceSession};

/// `MPI_PROC_NULL`: the peer of a send or receive that has no partner. Its value
/// depends on the MPI implementation (-1 in MPICH).
pub fn proc_null() -> Rank {
    // SAFETY: reads a constant the MPI library exports; no MPI call is made.
    unsafe { ffi::RSMPI_PROC_NULL }
}

/// One end of a point-to-point call: a rank of a communicator, or [`proc_null`]. The
/// `mpi` crate's `Process` cannot name the null rank, so the traced calls go through
/// this instead.
struct Peer<'c, C: Communicator> {
    comm: &'c C,
    rank: Rank,
}

impl<C: Communicator> AsCommunicator for Peer<'_, C> {
    type Out = C;
    fn as_communicator(&self) -> &C {
        self.comm
    }
}

// SAFETY: `source_rank` is a rank of the communicator or MPI_PROC_NULL (checked in
// `TracedComm::peer`, the only place a `Peer` is made), both valid sources for MPI.
unsafe impl<C: Communicator> Source for Peer<'_, C> {
    fn source_rank(&self) -> Rank {
        self.rank
    }
}

impl<C: Communicator> Destination for Peer<'_, C> {
    fn destination_rank(&self) -> Rank {
        self.rank
    }
}

/// A request posted through a [`TracedComm`]. Complete it with the same communicator's
/// `wait`, `wait_all` or `test`, so the completion is recorded.
#[must_use = "a request must be completed with wait, wait_all or test"]
pub struct TracedRequest<'b, D: ?Sized, S: Scope<'b>> {
    inner: Request<'b, D, S>,
    id: RequestId,
    /// A receive's requested source (`None`: a send).
    from: Option<i32>,
}

impl<'b, D: ?Sized, S: Scope<'b>> TracedRequest<'b, D, S> {
    /// The id the post was recorded under.
    pub fn id(&self) -> RequestId {
        self.id
    }
}

/// A request that owns its buffer: the buffer goes to MPI when the request is posted and
/// comes back when it completes. Lets a program keep a send in flight across code that
/// reuses other buffers (the deferred-wait pattern) without borrowing across scopes.
/// Dropping it before completion waits for it (untraced), so the buffer is never freed
/// while MPI may still use it.
#[must_use = "a request must be completed with wait_owned or wait_all_owned"]
pub struct OwnedRequest<T: Equivalence + 'static> {
    traced: Option<TracedRequest<'static, [T], StaticScope>>,
    buf: Vec<T>,
}

impl<T: Equivalence + 'static> OwnedRequest<T> {
    /// The id the post was recorded under.
    pub fn id(&self) -> Option<RequestId> {
        self.traced.as_ref().map(TracedRequest::id)
    }
}

impl<T: Equivalence + 'static> Drop for OwnedRequest<T> {
    fn drop(&mut self) {
        if let Some(r) = self.traced.take() {
            r.inner.wait_without_status();
        }
    }
}

/// A communicator whose calls are recorded. Its methods mirror the `mpi` crate's.
pub struct TracedComm<'a, C: Communicator> {
    comm: &'a C,
    recorder: &'a Recorder,
    id: CommId,
    /// World rank of each rank of `comm`.
    to_world: Vec<i32>,
}

/// What a Wait on `n` requests waits on.
fn waiting_on(n: usize) -> WaitsOn {
    WaitsOn {
        requests: Some(u32::try_from(n).unwrap_or(u32::MAX)),
        ..WaitsOn::default()
    }
}

fn sent(request: RequestId) -> Completion {
    Completion {
        request: Some(request.0),
        source: None,
        tag: None,
        bytes: None,
    }
}

impl<'a, C: Communicator> TracedComm<'a, C> {
    /// The world rank of `rank` of this communicator; wildcards and null ranks (negative)
    /// stay as they are.
    fn world_rank(&self, rank: i32) -> i32 {
        usize::try_from(rank)
            .ok()
            .and_then(|i| self.to_world.get(i).copied())
            .unwrap_or(rank)
    }

    fn transfer<T>(&self, peer: i32, tag: i32, buf: &[T]) -> Transfer {
        let len = size_of_val(buf) as u64;
        Transfer {
            peer: self.world_rank(peer),
            tag,
            bytes: len,
            comm: self.id,
            buf: buf.as_ptr() as u64,
            buf_len: len,
        }
    }

    /// The completion of a receive from `requested` with its status. A receive from
    /// MPI_PROC_NULL is recorded as MPI defines it (source MPI_PROC_NULL, no data):
    /// MPICH does not always fill the status of such a request.
    fn received(&self, request: Option<RequestId>, requested: i32, status: &Status) -> Completion {
        if requested == proc_null() {
            return Completion {
                request: request.map(|r| r.0),
                source: Some(proc_null()),
                tag: None,
                bytes: Some(0),
            };
        }
        let count = status.count(u8::equivalent_datatype());
        Completion {
            request: request.map(|r| r.0),
            source: Some(self.world_rank(status.source_rank())),
            tag: Some(status.tag()),
            bytes: u64::try_from(count).ok(),
        }
    }

    /// The completion of request `id` (a receive from `from`, or a send) with its status.
    fn completed(&self, id: RequestId, from: Option<i32>, status: &Status) -> Completion {
        match from {
            Some(source) => self.received(Some(id), source, status),
            None => sent(id),
        }
    }

    /// `rank` of this communicator (or [`proc_null`]) as an end of a call; panics, as
    /// `Communicator::process_at_rank` does, on any other rank.
    fn peer(&self, rank: Rank) -> Peer<'a, C> {
        let size = self.to_world.len();
        assert!(
            usize::try_from(rank).is_ok_and(|r| r < size) || rank == proc_null(),
            "rank {rank} is neither a rank of the communicator (size {size}) nor MPI_PROC_NULL"
        );
        Peer {
            comm: self.comm,
            rank,
        }
    }

    /// This rank in the communicator.
    pub fn rank(&self) -> i32 {
        self.comm.rank()
    }

    /// Size of the communicator.
    pub fn size(&self) -> i32 {
        self.comm.size()
    }

    /// The untraced communicator.
    pub fn raw(&self) -> &C {
        self.comm
    }

    #[inline]
    fn now(&self) -> Stamp {
        self.recorder.stamp()
    }

    /// Runs the blocking `call` between two stamps, published meanwhile as this thread's
    /// call in flight (`op`, waiting on `waits`), for an in-flight dump.
    #[inline]
    #[track_caller]
    fn inside<R>(&self, op: Op, waits: WaitsOn, call: impl FnOnce() -> R) -> (Stamp, R, Stamp) {
        let start = self.now();
        self.recorder.enter(op, start, &waits);
        let r = call();
        let end = self.now();
        self.recorder.leave();
        (start, r, end)
    }

    /// What a collective on this communicator waits on.
    fn collective(&self) -> WaitsOn {
        WaitsOn {
            comm: Some(self.id.0),
            ..WaitsOn::default()
        }
    }

    /// What a call on this communicator with the peers of `transfers` waits on (the
    /// second, a Sendrecv's receive half).
    fn waits(&self, peer: &Transfer, recv: Option<&Transfer>) -> WaitsOn {
        WaitsOn {
            comm: Some(self.id.0),
            peer: Some((peer.peer, peer.tag)),
            recv: recv.map(|r| (r.peer, r.tag)),
            ..WaitsOn::default()
        }
    }

    /// `MPI_Isend` of `buf` to `dest`.
    #[track_caller]
    pub fn isend<'b, T: Equivalence, S: Scope<'b>>(
        &self,
        scope: S,
        dest: i32,
        tag: i32,
        buf: &'b [T],
    ) -> TracedRequest<'b, [T], S> {
        let id = self.recorder.next_request_id();
        let t = self.transfer(dest, tag, buf);
        let start = self.now();
        let inner = self.peer(dest).immediate_send_with_tag(scope, buf, tag);
        let end = self.now();
        let data = CallData::Post {
            transfer: t,
            request: id,
        };
        self.recorder.record_call(Op::Isend, start, end, data, &[]);
        TracedRequest {
            inner,
            id,
            from: None,
        }
    }

    /// `MPI_Irecv` into `buf` from `source`.
    #[track_caller]
    pub fn irecv<'b, T: Equivalence, S: Scope<'b>>(
        &self,
        scope: S,
        source: i32,
        tag: i32,
        buf: &'b mut [T],
    ) -> TracedRequest<'b, [T], S> {
        let id = self.recorder.next_request_id();
        let t = self.transfer(source, tag, buf);
        let start = self.now();
        let inner = self
            .peer(source)
            .immediate_receive_into_with_tag(scope, buf, tag);
        let end = self.now();
        let data = CallData::Post {
            transfer: t,
            request: id,
        };
        self.recorder.record_call(Op::Irecv, start, end, data, &[]);
        TracedRequest {
            inner,
            id,
            from: Some(source),
        }
    }

    /// `MPI_Isend` of an owned buffer; [`TracedComm::wait_owned`] or
    /// [`TracedComm::wait_all_owned`] give it back.
    #[track_caller]
    pub fn isend_owned<T: Equivalence + 'static>(
        &self,
        dest: i32,
        tag: i32,
        buf: Vec<T>,
    ) -> OwnedRequest<T> {
        // SAFETY: the slice points into `buf`'s heap block, which the returned request
        // owns and neither touches nor frees until MPI has completed the request (on
        // wait, or in its Drop). Moving a Vec does not move its heap block.
        let view: &'static [T] = unsafe { std::slice::from_raw_parts(buf.as_ptr(), buf.len()) };
        let traced = self.isend(StaticScope, dest, tag, view);
        OwnedRequest {
            traced: Some(traced),
            buf,
        }
    }

    /// `MPI_Irecv` into an owned buffer; [`TracedComm::wait_owned`] or
    /// [`TracedComm::wait_all_owned`] give it back, filled.
    #[track_caller]
    pub fn irecv_owned<T: Equivalence + 'static>(
        &self,
        source: i32,
        tag: i32,
        mut buf: Vec<T>,
    ) -> OwnedRequest<T> {
        // SAFETY: as in `isend_owned`; nothing reads `buf` until the receive completed.
        let view: &'static mut [T] =
            unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr(), buf.len()) };
        let traced = self.irecv(StaticScope, source, tag, view);
        OwnedRequest {
            traced: Some(traced),
            buf,
        }
    }

    /// `MPI_Wait` on an owned request: its buffer and status.
    #[track_caller]
    pub fn wait_owned<T: Equivalence + 'static>(
        &self,
        mut request: OwnedRequest<T>,
    ) -> (Vec<T>, Status) {
        let traced = request
            .traced
            .take()
            .expect("an OwnedRequest is pending until waited");
        let status = self.wait(traced);
        (std::mem::take(&mut request.buf), status)
    }

    /// `MPI_Waitall` on owned requests, which are left empty; their buffers are appended
    /// to `buffers` in order.
    #[track_caller]
    pub fn wait_all_owned<T: Equivalence + 'static>(
        &self,
        requests: &mut Vec<OwnedRequest<T>>,
        buffers: &mut Vec<Vec<T>>,
    ) {
        let mut traced = Vec::with_capacity(requests.len());
        let mut taken = Vec::with_capacity(requests.len());
        for mut r in requests.drain(..) {
            traced.push(
                r.traced
                    .take()
                    .expect("an OwnedRequest is pending until waited"),
            );
            taken.push(std::mem::take(&mut r.buf));
        }
        self.wait_all(&mut traced);
        buffers.append(&mut taken);
    }

    /// `MPI_Send` of `buf` to `dest`.
    #[track_caller]
    pub fn send<T: Equivalence>(&self, dest: i32, tag: i32, buf: &[T]) {
        let t = self.transfer(dest, tag, buf);
        let (start, (), end) = self.inside(Op::Send, self.waits(&t, None), || {
            self.peer(dest).send_with_tag(buf, tag);
        });
        let data = CallData::Blocking { transfer: t };
        self.recorder.record_call(Op::Send, start, end, data, &[]);
    }

    /// `MPI_Recv` into `buf` from `source`.
    #[track_caller]
    pub fn recv<T: Equivalence>(&self, source: i32, tag: i32, buf: &mut [T]) -> Status {
        let t = self.transfer(source, tag, buf);
        let (start, status, end) = self.inside(Op::Recv, self.waits(&t, None), || {
            self.peer(source).receive_into_with_tag(buf, tag)
        });
        let data = CallData::Blocking { transfer: t };
        let done = [self.received(None, source, &status)];
        self.recorder.record_call(Op::Recv, start, end, data, &done);
        status
    }

    /// `MPI_Sendrecv`: sends `send` to `dest` and receives `recv` from `source`.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    pub fn sendrecv<T: Equivalence, U: Equivalence>(
        &self,
        dest: i32,
        send_tag: i32,
        send: &[T],
        source: i32,
        recv_tag: i32,
        recv: &mut [U],
    ) -> Status {
        let (s, r) = (
            self.transfer(dest, send_tag, send),
            self.transfer(source, recv_tag, recv),
        );
        let data = CallData::Sendrecv { send: s, recv: r };
        let (start, status, end) = self.inside(Op::Sendrecv, self.waits(&s, Some(&r)), || {
            mpi::point_to_point::send_receive_into_with_tags(
                send,
                &self.peer(dest),
                send_tag,
                recv,
                &self.peer(source),
                recv_tag,
            )
        });
        let done = [self.received(None, source, &status)];
        self.recorder
            .record_call(Op::Sendrecv, start, end, data, &done);
        status
    }

    /// `MPI_Wait` on one request.
    #[track_caller]
    pub fn wait<'b, D: ?Sized, S: Scope<'b>>(&self, request: TracedRequest<'b, D, S>) -> Status {
        let TracedRequest { inner, id, from } = request;
        let (start, status, end) = self.inside(Op::Wait, waiting_on(1), || inner.wait());
        let done = [self.completed(id, from, &status)];
        let data = CallData::Complete { flag: None };
        self.recorder.record_call(Op::Wait, start, end, data, &done);
        status
    }

    /// `MPI_Waitall` on every request of `requests`, which is left empty.
    #[track_caller]
    pub fn wait_all<'b, D: ?Sized, S: Scope<'b>>(
        &self,
        requests: &mut Vec<TracedRequest<'b, D, S>>,
    ) {
        let n = requests.len();
        let mut raw: SmallVec<[ffi::MPI_Request; 8]> = SmallVec::with_capacity(n);
        let mut meta: SmallVec<[(RequestId, Option<i32>); 8]> = SmallVec::with_capacity(n);
        let mut statuses: SmallVec<[MaybeUninit<ffi::MPI_Status>; 8]> =
            (0..n).map(|_| MaybeUninit::uninit()).collect();
        for r in requests.drain(..) {
            // SAFETY: the raw request is completed by MPI_Waitall below, before the
            // buffers it refers to (borrowed for 'b) can be released.
            let (handle, _, _) = unsafe { r.inner.into_raw() };
            raw.push(handle);
            meta.push((r.id, r.from));
        }
        let (start, (), end) = self.inside(Op::Waitall, waiting_on(n), || {
            // SAFETY: `raw` holds `n` active requests and `statuses` room for `n` statuses.
            unsafe {
                ffi::MPI_Waitall(
                    n as i32,
                    raw.as_mut_ptr(),
                    statuses.as_mut_ptr().cast::<ffi::MPI_Status>(),
                );
            }
        });
        let data = CallData::Complete { flag: None };
        self.recorder
            .record_call_with(Op::Waitall, start, end, data, n, |i| {
                let (id, from) = meta[i];
                // SAFETY: MPI_Waitall filled every status.
                let status = Status::from_raw(unsafe { statuses[i].assume_init() });
                self.completed(id, from, &status)
            });
    }

    /// `MPI_Test` on one request: its status when it completed, the request otherwise.
    #[track_caller]
    pub fn test<'b, D: ?Sized, S: Scope<'b>>(
        &self,
        request: TracedRequest<'b, D, S>,
    ) -> std::result::Result<Status, TracedRequest<'b, D, S>> {
        let TracedRequest { inner, id, from } = request;
        let start = self.now();
        let outcome = inner.test();
        let end = self.now();
        match outcome {
            Ok(status) => {
                let done = [self.completed(id, from, &status)];
                let data = CallData::Complete { flag: Some(true) };
                self.recorder.record_call(Op::Test, start, end, data, &done);
                Ok(status)
            }
            Err(inner) => {
                let data = CallData::Complete { flag: Some(false) };
                self.recorder.record_call(Op::Test, start, end, data, &[]);
                Err(TracedRequest { inner, id, from })
            }
        }
    }

    /// `MPI_Barrier`.
    #[track_caller]
    pub fn barrier(&self) {
        let (start, (), end) = self.inside(Op::Barrier, self.collective(), || self.comm.barrier());
        let data = CallData::Collective(Collective {
            comm: self.id,
            send_bytes: 0,
            recv_bytes: 0,
            root: None,
        });
        self.recorder
            .record_call(Op::Barrier, start, end, data, &[]);
    }

    /// `MPI_Allreduce` of `send` into `recv` with `op`.
    #[track_caller]
    pub fn all_reduce_into<T: Equivalence, O: Operation>(&self, send: &[T], recv: &mut [T], op: O) {
        let (start, (), end) = self.inside(Op::Allreduce, self.collective(), || {
            self.comm.all_reduce_into(send, recv, op);
        });
        let data = CallData::Collective(Collective {
            comm: self.id,
            send_bytes: size_of_val(send) as u64,
            recv_bytes: size_of_val(recv) as u64,
            root: None,
        });
        self.recorder
            .record_call(Op::Allreduce, start, end, data, &[]);
    }
}
