//! The host backend's kernels: the Rust definitions of `super::super::checksum` and
//! `super::super::device`, run on a stream's thread over the emulated device memory.

use super::super::checksum::{fill, fill_seed, salt, seal, verify};
use super::super::device::{boundary, interior, GpuError, Launch};
use super::HostDevice;

/// The job running `kernel` on the host, its buffers checked.
pub(super) fn host_kernel(
    d: &HostDevice,
    kernel: Launch,
) -> Result<Box<dyn FnOnce() + Send>, GpuError> {
    Ok(match kernel {
        Launch::Pack {
            buf,
            packets,
            packet_bytes,
            rank,
            iteration,
        } => {
            let base = d.dev_ptr((buf, 0), packets as usize * packet_bytes)?;
            Box::new(move || {
                for p in 0..packets {
                    // SAFETY: in the block (checked above), this stream's alone.
                    let words =
                        unsafe { base.at(p as usize * packet_bytes).words(packet_bytes / 8) };
                    fill(words, fill_seed(rank, p, iteration));
                }
            })
        }
        Launch::Checksum {
            buf,
            packets,
            packet_bytes,
            tag_base,
        } => {
            let base = d.dev_ptr((buf, 0), packets as usize * packet_bytes)?;
            Box::new(move || {
                for p in 0..packets {
                    // SAFETY: as for Pack.
                    let words =
                        unsafe { base.at(p as usize * packet_bytes).words(packet_bytes / 8) };
                    seal(words, salt(p, tag_base + p as i32));
                }
            })
        }
        Launch::Verify {
            buf,
            packet,
            packet_bytes,
            tag_base,
            status,
        } => {
            let words = d.dev_ptr((buf, packet as usize * packet_bytes), packet_bytes)?;
            let slot = d.dev_ptr((status, packet as usize * 8), 8)?;
            Box::new(move || {
                // SAFETY: as for Pack; the packet is only read.
                let w = unsafe { words.words(packet_bytes / 8) };
                let result = verify(w, salt(packet, tag_base + packet as i32));
                // SAFETY: one checked, aligned word of the status buffer.
                unsafe { slot.words(1)[0] = result };
            })
        }
        Launch::Interior {
            field,
            cells,
            sweeps,
        } => {
            let base = d.dev_ptr((field, 0), cells * 8)?;
            Box::new(move || {
                // SAFETY: as for Pack.
                let values = unsafe { base.values(cells) };
                for v in values.iter_mut() {
                    let mut x = *v;
                    for _ in 0..sweeps {
                        x = interior(x);
                    }
                    *v = x;
                }
            })
        }
        Launch::Boundary {
            edge,
            recv,
            packets,
            packet_bytes,
        } => {
            let words = packet_bytes / 8;
            let n = words.saturating_sub(1);
            let e = d.dev_ptr((edge, 0), n * 8)?;
            let r = d.dev_ptr((recv, 0), packets as usize * packet_bytes)?;
            Box::new(move || {
                // SAFETY: as for Pack; the received packets are only read.
                let (edge, recv) = unsafe { (e.values(n), r.words(packets as usize * words)) };
                for (i, v) in edge.iter_mut().enumerate() {
                    *v = boundary(*v, (0..packets as usize).map(|p| recv[p * words + i]));
                }
            })
        }
    })
}
