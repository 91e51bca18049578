//! One halo exchange through pinned host memory, in the seed's seven phases
//! (`pipelined`) or the common naive order (`bulk`), written against [`Device`].
//!
//! Pipelined:
//! 0. pack the send packets on the device and seal each with its salted checksum;
//! 1. post every `MPI_Irecv` into the pinned receive buffers and start one D2H copy per
//!    packet, each with its own event; launch the interior computation;
//! 2. poll the D2H events and fire each packet's `MPI_Isend` as soon as its own copy is
//!    done; then start the D2D copies of the packets that stay on the rank;
//! 3. `MPI_Test` each receive and start its H2D copy (and its verify kernel) as soon as
//!    it has arrived;
//! 4. `MPI_Waitall` the sends;
//! 5. wait for every H2D (and D2D) copy's event;
//! 6. wait for the interior computation, then run the boundary computation.
//!
//! Bulk: pack, all Irecvs, all D2H copies, synchronize the D2H stream, all Isends,
//! `MPI_Waitall` on everything, all H2D copies, synchronize the H2D and D2D streams, interior,
//! boundary.
//!
//! After the boundary computation the verify kernels' results are read back: a packet
//! whose checksum fails is named, with the packet its contents do check as, if any.

use mpi::request::scope;
use mpi::topology::Communicator;
use overlap_instrument::mpi::TracedComm;
use overlap_instrument::recorder::Recorder;

use super::device::{DevBuf, Device, GpuError, HostBuf, Launch, Op, Stream};
use super::packets::{Layout, Packet, TAG_BASE};
use crate::options::gpu_pipeline::Variant;
use crate::KernelError;

/// The buffers of a run, allocated once at the start at the largest packet size.
#[derive(Clone, Copy, Debug)]
pub struct Buffers {
    /// The send packets on the device.
    pub send_dev: DevBuf,
    /// The receive packets (the halo) on the device.
    pub recv_dev: DevBuf,
    /// The pinned host copies of the send packets, which MPI sends from.
    pub send_host: HostBuf,
    /// The pinned host receive buffers MPI receives into.
    pub recv_host: HostBuf,
    /// The verify kernels' results, one u64 per packet.
    pub status: DevBuf,
    /// The interior values.
    pub field: DevBuf,
    /// The boundary values.
    pub edge: DevBuf,
}

impl Buffers {
    /// Allocates the buffers for `layout`'s packets at `max_packet_bytes` each.
    pub fn new(
        dev: &mut dyn Device,
        packets: usize,
        max_packet_bytes: usize,
        interior_cells: usize,
    ) -> Result<Buffers, GpuError> {
        let all = packets * max_packet_bytes;
        Ok(Buffers {
            send_dev: dev.alloc(all)?,
            recv_dev: dev.alloc(all)?,
            send_host: dev.alloc_pinned(all)?,
            recv_host: dev.alloc_pinned(all)?,
            status: dev.alloc(packets * 8)?,
            field: dev.alloc(interior_cells * 8)?,
            edge: dev.alloc(max_packet_bytes)?,
        })
    }
}

/// How an exchange runs.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Pipelined or bulk.
    pub variant: Variant,
    /// Interior cells.
    pub cells: usize,
    /// Interior passes.
    pub sweeps: u32,
    /// Two received packets to swap in host memory before their H2D copies (the
    /// corruption test).
    pub swap: Option<(u32, u32)>,
}

/// What one exchange measured on this rank.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Measured {
    /// Host ns from phase 1 to the end of phase 5.
    pub exchange_ns: u64,
    /// Bytes copied device to host, and the copies' summed duration.
    pub d2h: (u64, u64),
    /// Bytes copied host to device, and the copies' summed duration.
    pub h2d: (u64, u64),
    /// Bytes sent through MPI.
    pub mpi_bytes: u64,
    /// Packets verified.
    pub verified: u64,
}

/// A rank's side of the run: the traced communicator, the recorder, the device.
pub struct Exchange<'a, 'c> {
    /// The traced world communicator.
    pub comm: &'a TracedComm<'c, mpi::topology::SimpleCommunicator>,
    /// The recorder.
    pub recorder: &'a Recorder,
    /// The device.
    pub dev: &'a mut dyn Device,
    /// The buffers.
    pub bufs: Buffers,
}

/// Ends the job from inside an exchange, where MPI requests are pending and cannot be
/// abandoned: says why, keeps what was recorded, and aborts.
fn abort_inside(x: &Exchange<'_, '_>, e: &GpuError) -> ! {
    let rank = x.comm.rank();
    overlap_instrument::stderr_line!("rank {rank}: error: during the exchange: {e}");
    if let Err(fe) = x.recorder.finish() {
        overlap_instrument::stderr_line!("rank {rank}: error: {fe}");
    }
    x.comm.raw().abort(1)
}

/// `bytes` of host buffer `base` from `offset`, for MPI.
///
/// # Safety
/// The range must lie in one pinned buffer, and nothing else may use it while MPI does
/// (the phases' order: a send buffer is handed to MPI after its D2H copy is done, and a
/// receive buffer is read by its H2D copy after its receive completed).
unsafe fn host_slice<'b>(base: *mut u8, offset: usize, bytes: usize) -> &'b mut [u8] {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(base.add(offset), bytes) }
}

/// As [`host_slice`], read-only (a send buffer).
///
/// # Safety
/// As [`host_slice`].
unsafe fn host_bytes<'b>(base: *const u8, offset: usize, bytes: usize) -> &'b [u8] {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(base.add(offset), bytes) }
}

impl Exchange<'_, '_> {
    /// Phase 0: the packets packed and sealed; the D2H and D2D streams wait for them.
    fn pack(&mut self, layout: &Layout, iteration: u64) -> Result<(), GpuError> {
        let (packets, packet_bytes) = (layout.packets.len() as u32, layout.packet_bytes);
        let buf = self.bufs.send_dev;
        let rank = layout.rank as u32;
        self.dev.launch(
            Stream::Compute,
            Launch::Pack {
                buf,
                packets,
                packet_bytes,
                rank,
                iteration,
            },
        )?;
        let sealed = self.dev.launch(
            Stream::Compute,
            Launch::Checksum {
                buf,
                packets,
                packet_bytes,
                tag_base: TAG_BASE,
            },
        )?;
        self.dev.stream_wait(Stream::D2H, sealed)?;
        self.dev.stream_wait(Stream::D2D, sealed)
    }

    fn d2h(&mut self, layout: &Layout, p: &Packet) -> Result<Op, GpuError> {
        let at = layout.offset(p.index);
        let (src, dst) = ((self.bufs.send_dev, at), (self.bufs.send_host, at));
        self.dev
            .copy_d2h(Stream::D2H, src, dst, layout.packet_bytes, Some(p.index))
    }

    /// The H2D copy of a received packet, and its verify kernel after it on the same
    /// stream; returns the copy.
    fn h2d(&mut self, layout: &Layout, p: &Packet) -> Result<(Op, Op), GpuError> {
        let at = layout.offset(p.index);
        let (src, dst) = ((self.bufs.recv_host, at), (self.bufs.recv_dev, at));
        let copy = self
            .dev
            .copy_h2d(Stream::H2D, src, dst, layout.packet_bytes, Some(p.index))?;
        let checked = self.dev.launch(Stream::H2D, self.verify(layout, p))?;
        Ok((copy, checked))
    }

    /// The D2D copies of the packets that stay on the rank, each verified after it.
    fn local(&mut self, layout: &Layout) -> Result<Vec<(Op, Op)>, GpuError> {
        let mut ops = Vec::new();
        for p in layout.local() {
            let at = layout.offset(p.index);
            let (src, dst) = ((self.bufs.send_dev, at), (self.bufs.recv_dev, at));
            let copy =
                self.dev
                    .copy_d2d(Stream::D2D, src, dst, layout.packet_bytes, Some(p.index))?;
            let checked = self.dev.launch(Stream::D2D, self.verify(layout, p))?;
            ops.push((copy, checked));
        }
        Ok(ops)
    }

    fn verify(&self, layout: &Layout, p: &Packet) -> Launch {
        Launch::Verify {
            buf: self.bufs.recv_dev,
            packet: p.index,
            packet_bytes: layout.packet_bytes,
            tag_base: TAG_BASE,
            status: self.bufs.status,
        }
    }

    fn interior(&mut self, plan: &Plan) -> Result<Op, GpuError> {
        let field = self.bufs.field;
        self.dev.launch(
            Stream::Compute,
            Launch::Interior {
                field,
                cells: plan.cells,
                sweeps: plan.sweeps,
            },
        )
    }

    /// Swaps the host receive buffers of packets `a` and `b` (the corruption test).
    fn swap(&self, layout: &Layout, a: u32, b: u32) {
        let base = self.dev.host_ptr(self.bufs.recv_host);
        let bytes = layout.packet_bytes;
        // SAFETY: two distinct whole packets of the receive buffer, both received and
        // not yet copied.
        unsafe {
            std::ptr::swap_nonoverlapping(
                base.add(layout.offset(a)),
                base.add(layout.offset(b)),
                bytes,
            );
        }
    }

    /// One exchange (see the module's documentation): its figures, or the first packet
    /// that failed verification.
    pub fn run(
        &mut self,
        layout: &Layout,
        plan: &Plan,
        iteration: u64,
    ) -> Result<Measured, KernelError> {
        let gpu = |e: GpuError| KernelError::Gpu(e.to_string());
        self.pack(layout, iteration).map_err(gpu)?;
        let t0 = self.recorder.now_ns();
        let (copies, interior) = match plan.variant {
            Variant::Pipelined => self.pipelined(layout, plan),
            Variant::Bulk => self.bulk(layout, plan),
        };
        // Phase 5: every H2D (and D2D) copy's own event (bulk synchronized its streams).
        if plan.variant == Variant::Pipelined {
            for &(copy, _) in copies.h2d.iter().chain(&copies.local) {
                self.dev.wait(copy).map_err(gpu)?;
            }
        }
        let t1 = self.recorder.now_ns();
        // Phase 6: the interior done, the boundary from the halo.
        self.dev.wait(interior).map_err(gpu)?;
        let boundary = Launch::Boundary {
            edge: self.bufs.edge,
            recv: self.bufs.recv_dev,
            packets: layout.packets.len() as u32,
            packet_bytes: layout.packet_bytes,
        };
        let b = self.dev.launch(Stream::Compute, boundary).map_err(gpu)?;
        self.dev.wait(b).map_err(gpu)?;
        let verified = self.check(layout, &copies, iteration)?;
        let mut m = Measured {
            exchange_ns: t1.saturating_sub(t0),
            mpi_bytes: (layout.remote().count() * layout.packet_bytes) as u64,
            verified,
            ..Measured::default()
        };
        let bytes = layout.packet_bytes as u64;
        for &op in &copies.d2h {
            m.d2h = add(m.d2h, bytes, self.dev.times(op).map_err(gpu)?);
        }
        for &(op, _) in &copies.h2d {
            m.h2d = add(m.h2d, bytes, self.dev.times(op).map_err(gpu)?);
        }
        self.dev.release_ops().map_err(gpu)?;
        Ok(m)
    }

    /// Phase 1's device work, in both orders: one D2H copy per packet sent through MPI,
    /// each with its own event, then the interior computation. A failure ends the job
    /// (receives are posted).
    fn copies_out(&mut self, layout: &Layout, remote: &[Packet], plan: &Plan) -> (Vec<Op>, Op) {
        let d2h = remote
            .iter()
            .map(|p| {
                self.d2h(layout, p)
                    .unwrap_or_else(|e| abort_inside(self, &e))
            })
            .collect();
        let interior = self
            .interior(plan)
            .unwrap_or_else(|e| abort_inside(self, &e));
        (d2h, interior)
    }

    /// Phases 1 to 4, pipelined. Returns the copies and the interior kernel.
    fn pipelined(&mut self, layout: &Layout, plan: &Plan) -> (Copies, Op) {
        let remote: Vec<Packet> = layout.remote().copied().collect();
        let bytes = layout.packet_bytes;
        let send_base = self.dev.host_ptr(self.bufs.send_host);
        let recv_base = self.dev.host_ptr(self.bufs.recv_host);
        scope(|s| {
            let comm = self.comm;
            // Phase 1.
            let mut recvs: Vec<_> = remote
                .iter()
                .map(|p| {
                    // SAFETY: packet p's receive buffer, MPI's until the receive completes.
                    let buf = unsafe { host_slice(recv_base, layout.offset(p.index), bytes) };
                    Some(comm.irecv(s, p.from, p.tag, buf))
                })
                .collect();
            let (d2h, interior) = self.copies_out(layout, &remote, plan);
            // Phase 2.
            let mut sends = Vec::with_capacity(remote.len());
            let mut sent = vec![false; remote.len()];
            while sends.len() < remote.len() {
                let mut progressed = false;
                for (i, p) in remote.iter().enumerate() {
                    if sent[i]
                        || !self
                            .dev
                            .query(d2h[i])
                            .unwrap_or_else(|e| abort_inside(self, &e))
                    {
                        continue;
                    }
                    // SAFETY: packet p's send buffer, its D2H copy done; read by MPI only.
                    let buf = unsafe { host_bytes(send_base, layout.offset(p.index), bytes) };
                    sends.push(comm.isend(s, p.to, p.tag, buf));
                    sent[i] = true;
                    progressed = true;
                }
                if !progressed {
                    std::thread::yield_now();
                }
            }
            let local = self
                .local(layout)
                .unwrap_or_else(|e| abort_inside(self, &e));
            // Phase 3.
            let mut h2d = Vec::with_capacity(remote.len());
            let mut held = Vec::new();
            while recvs.iter().any(Option::is_some) {
                let mut progressed = false;
                for (i, p) in remote.iter().enumerate() {
                    let Some(r) = recvs[i].take() else { continue };
                    match comm.test(r) {
                        Err(r) => recvs[i] = Some(r),
                        Ok(_) => {
                            progressed = true;
                            match plan.swap {
                                Some((a, b)) if p.index == a || p.index == b => {
                                    held.push(*p);
                                    if held.len() < 2 {
                                        continue;
                                    }
                                    self.swap(layout, a, b);
                                    for q in std::mem::take(&mut held) {
                                        let ops = self.h2d(layout, &q);
                                        h2d.push(ops.unwrap_or_else(|e| abort_inside(self, &e)));
                                    }
                                }
                                _ => {
                                    let ops = self.h2d(layout, p);
                                    h2d.push(ops.unwrap_or_else(|e| abort_inside(self, &e)));
                                }
                            }
                        }
                    }
                }
                if !progressed {
                    std::thread::yield_now();
                }
            }
            // Phase 4.
            comm.wait_all(&mut sends);
            (Copies { d2h, h2d, local }, interior)
        })
    }

    /// The same exchange in bulk: all D2H, synchronize, all Isends, Waitall, all H2D.
    fn bulk(&mut self, layout: &Layout, plan: &Plan) -> (Copies, Op) {
        let remote: Vec<Packet> = layout.remote().copied().collect();
        let bytes = layout.packet_bytes;
        let send_base = self.dev.host_ptr(self.bufs.send_host);
        let recv_base = self.dev.host_ptr(self.bufs.recv_host);
        scope(|s| {
            let comm = self.comm;
            let mut requests: Vec<_> = remote
                .iter()
                .map(|p| {
                    // SAFETY: as in `pipelined`.
                    let buf = unsafe { host_slice(recv_base, layout.offset(p.index), bytes) };
                    comm.irecv(s, p.from, p.tag, buf)
                })
                .collect();
            let (d2h, interior) = self.copies_out(layout, &remote, plan);
            if let Err(e) = self.dev.sync_stream(Stream::D2H) {
                abort_inside(self, &e);
            }
            for p in &remote {
                // SAFETY: every D2H copy is done (the stream was synchronized).
                let buf = unsafe { host_bytes(send_base, layout.offset(p.index), bytes) };
                requests.push(comm.isend(s, p.to, p.tag, buf));
            }
            let local = self
                .local(layout)
                .unwrap_or_else(|e| abort_inside(self, &e));
            comm.wait_all(&mut requests);
            if let Some((a, b)) = plan.swap {
                self.swap(layout, a, b);
            }
            let mut h2d = Vec::with_capacity(remote.len());
            for p in &remote {
                h2d.push(
                    self.h2d(layout, p)
                        .unwrap_or_else(|e| abort_inside(self, &e)),
                );
            }
            for stream in [Stream::H2D, Stream::D2D] {
                if let Err(e) = self.dev.sync_stream(stream) {
                    abort_inside(self, &e);
                }
            }
            (Copies { d2h, h2d, local }, interior)
        })
    }
}

/// The copies of one exchange: D2H, H2D with its verify kernel, D2D with its verify
/// kernel.
pub(super) struct Copies {
    pub(super) d2h: Vec<Op>,
    pub(super) h2d: Vec<(Op, Op)>,
    pub(super) local: Vec<(Op, Op)>,
}

fn add(acc: (u64, u64), bytes: u64, t: Option<overlap_instrument::gpu::Timing>) -> (u64, u64) {
    match t {
        Some(t) => (acc.0 + bytes, acc.1 + t.end_ns.saturating_sub(t.start_ns)),
        None => acc,
    }
}
