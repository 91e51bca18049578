//! How records reach a thread's ring: the ring looked up (one compare on the hot path)
//! or registered on a thread's first record, and a group of records appended to it,
//! waiting for the writer when the ring is full. Every record the recorder makes goes
//! through [`Recorder::push`], or [`Recorder::push_lean`] for a call that defines
//! nothing (the preload's), whose body is [`Recorder::push_call`].

use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use overlap_format::stream::codec::{encode_call, Deltas};

use super::encode::{NewDefs, ThreadEncoder};
use super::ring::{Cursor, Group, PushOutcome, Ring};
use super::{site, CallData, Recorder};
use crate::clock::Stamp;
use crate::schema::Op;

thread_local! {
    /// This thread's rings, one per live recorder, most recently used first.
    static LOCAL_RINGS: RefCell<Vec<(u64, Arc<Ring>)>> = const { RefCell::new(Vec::new()) };
    /// The ring last used on this thread and its recorder's id (0: none): the hot path's
    /// one-compare lookup.
    static LAST_RING: Cell<(u64, *const Ring)> = const { Cell::new((0, std::ptr::null())) };
}

impl Recorder {
    /// Runs `f` with this thread's ring, registering it on first use.
    #[inline]
    pub(super) fn with_ring(&self, f: impl FnOnce(&Ring)) {
        let (id, ring) = LAST_RING.get();
        if id == self.shared().id {
            // SAFETY: recorder ids are never reused, so the ring belongs to this
            // recorder, whose registry holds it (an Arc) for as long as `self` lives.
            return f(unsafe { &*ring });
        }
        let ring = self.register_thread();
        LAST_RING.set((self.shared().id, Arc::as_ptr(&ring)));
        f(&ring)
    }

    #[cold]
    pub(super) fn register_thread(&self) -> Arc<Ring> {
        let shared = self.shared();
        let cached = LOCAL_RINGS.try_with(|cell| {
            let mut rings = cell.borrow_mut();
            if let Some(pos) = rings.iter().position(|(id, _)| *id == shared.id) {
                let entry = rings.remove(pos);
                rings.insert(0, entry);
            } else {
                let name = std::thread::current().name().map(str::to_string);
                let ring = self.new_ring(name);
                // Forget rings of recorders that have finished.
                rings.retain(|(_, r)| Arc::strong_count(r) > 1);
                rings.insert(0, (shared.id, ring));
            }
            Arc::clone(&rings[0].1)
        });
        // A call made while this thread's locals are being destroyed (an MPI call from a
        // pthread key destructor or an atexit handler): its ring cannot be cached, but the
        // recorder keeps it, so the call is still recorded.
        cached.unwrap_or_else(|_| self.new_ring(None))
    }

    /// A new ring for the calling thread, registered with the writer.
    pub(super) fn new_ring(&self, name: Option<String>) -> Arc<Ring> {
        let shared = self.shared();
        let mut all = shared.lock_rings();
        let tid = all.len() as u32;
        let name = name.unwrap_or_else(|| format!("thread {tid}"));
        let ring = Arc::new(Ring::new(shared.ring_bytes, tid, name));
        all.push(Arc::clone(&ring));
        ring
    }

    /// Runs `f` with `ring` when the caller has it (a [`ThreadRecorder`]), else with
    /// this thread's ring.
    #[inline(always)]
    pub(super) fn on_ring(&self, ring: Option<&Ring>, f: impl FnOnce(&Ring)) {
        match ring {
            Some(r) => f(r),
            None => self.with_ring(f),
        }
    }

    /// Appends one group to this thread's ring (`ring`, or the one looked up): `body`
    /// encodes its records (with the thread's encoder for definitions, and a copy of its
    /// deltas that is kept only if the group is published). `events` is how many calls
    /// and spans the group holds.
    #[inline]
    pub(super) fn push(
        &self,
        ring: Option<&Ring>,
        events: u64,
        body: impl FnOnce(
            &ThreadEncoder,
            &mut Deltas,
            &mut Group<'_, &mut dyn FnMut() -> bool>,
            &mut NewDefs,
        ),
    ) {
        let shared = self.shared();
        if shared.finished.load(Ordering::Relaxed) {
            return;
        }
        self.on_ring(ring, |ring| {
            // SAFETY: only the thread that owns the ring touches its encoder, and rings
            // are only handed to their own thread.
            let encoder = unsafe { &mut *ring.encoder.get() };
            // SAFETY: as for the encoder. The deltas are encoded against in place (a copy
            // updated field by field and then copied back whole would stall the store
            // buffer). A group is dropped only once the recorder is finishing, when
            // `finished` is already set: nothing is published after it, so the deltas it
            // changed are never used.
            let deltas = unsafe { &mut *ring.deltas.get() };
            let mut defs = NewDefs::default();
            let mut wait = || shared.wait_for_room();
            let mut group = ring.group(&mut wait as &mut dyn FnMut() -> bool);
            body(encoder, deltas, &mut group, &mut defs);
            match group.publish(events) {
                PushOutcome::Dropped => {}
                outcome => {
                    encoder.commit(&defs);
                    if outcome == PushOutcome::AppendedWakeWriter {
                        shared.wake_writer();
                    }
                }
            }
        });
    }

    /// [`Recorder::push`] of one call whose group defines nothing (its site is a code
    /// address): no definitions to look up, collect or commit.
    #[inline(always)]
    pub(super) fn push_lean(
        &self,
        ring: Option<&Ring>,
        body: impl FnOnce(&mut Deltas, &mut Group<'_, &mut dyn FnMut() -> bool>),
    ) {
        let shared = self.shared();
        if shared.finished.load(Ordering::Relaxed) {
            return;
        }
        self.on_ring(ring, |ring| {
            // SAFETY: as in `push`: the owning thread's deltas, encoded against in place.
            let deltas = unsafe { &mut *ring.deltas.get() };
            let mut wait = || shared.wait_for_room();
            let mut group = ring.group(&mut wait as &mut dyn FnMut() -> bool);
            body(deltas, &mut group);
            if group.publish(1) == PushOutcome::AppendedWakeWriter {
                shared.wake_writer();
            }
        });
    }

    /// Appends a call and the `count` records that follow it (at most what half a ring
    /// holds), `follow(i, buf, deltas)` encoding the i-th: the one body of every call
    /// record, this thread's ring looked up (`ring` None) or given (a [`ThreadRecorder`]).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_call(
        &self,
        ring: Option<&Ring>,
        op: Op,
        start: Stamp,
        end: Stamp,
        site: impl Into<site::SiteWord>,
        data: CallData,
        count: usize,
        mut follow: impl FnMut(usize, &mut Cursor, &mut Deltas),
    ) {
        let max_follow = self.shared().max_follow;
        let (count, site) = (count.min(max_follow), site.into());
        // The two branches write the same records on purpose: folded into one closure
        // shared by both, the lean path was no longer inlined (+70 instructions per
        // recorded MPI_Test under callgrind, scripts/bench-instructions.sh).
        if !site.is_source() {
            // A code address (every call the preload records) defines nothing: the
            // group is the call and what follows it, without the encoder's definitions.
            self.push_lean(ring, |deltas, group| {
                group.record(|c| {
                    encode_call(
                        c,
                        deltas,
                        op,
                        start.raw(),
                        end.raw(),
                        site.word(),
                        &data,
                        count as u32,
                    )
                });
                for i in 0..count {
                    group.record(|c| follow(i, c, deltas));
                }
            });
            return;
        }
        self.push(ring, 1, |encoder, deltas, group, defs| {
            encoder.site(site, group, defs);
            group.record(|c| {
                encode_call(
                    c,
                    deltas,
                    op,
                    start.raw(),
                    end.raw(),
                    site.word(),
                    &data,
                    count as u32,
                )
            });
            for i in 0..count {
                group.record(|c| follow(i, c, deltas));
            }
        });
    }
}
