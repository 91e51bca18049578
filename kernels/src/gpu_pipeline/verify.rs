//! After an exchange: the verify kernels' results read back, and a packet that failed
//! diagnosed (its contents read back and checked against every packet's salt, so that
//! two transposed packets are named as such).

use super::checksum::verify;
use super::device::{GpuError, Stream};
use super::packets::{Layout, Packet};
use super::phases::{Copies, Exchange};
use crate::KernelError;

impl Exchange<'_, '_> {
    /// Reads the verify kernels' results back: the packets verified, or the first that
    /// failed, diagnosed.
    pub(super) fn check(
        &mut self,
        layout: &Layout,
        c: &Copies,
        iteration: u64,
    ) -> Result<u64, KernelError> {
        let gpu = |e: GpuError| KernelError::Gpu(e.to_string());
        // The status buffer is written by the verify kernels on the H2D and D2D streams.
        for &(_, checked) in c.h2d.iter().chain(&c.local) {
            self.dev.stream_wait(Stream::D2H, checked).map_err(gpu)?;
        }
        let n = layout.packets.len();
        let mut raw = vec![0u8; n * 8];
        self.dev
            .download(self.bufs.status, 0, &mut raw)
            .map_err(gpu)?;
        let status: Vec<u64> = raw
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0xff; 8])))
            .collect();
        for p in &layout.packets {
            if status[p.index as usize] != 0 {
                return Err(self.diagnose(layout, p, iteration));
            }
        }
        Ok(n as u64)
    }

    /// The error for packet `p`, which failed verification: its contents read back,
    /// and the packet (if any) whose salt they check with.
    fn diagnose(&mut self, layout: &Layout, p: &Packet, iteration: u64) -> KernelError {
        let mut raw = vec![0u8; layout.packet_bytes];
        let read = self
            .dev
            .download(self.bufs.recv_dev, layout.offset(p.index), &mut raw);
        let words: Vec<u64> = raw
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])))
            .collect();
        let (trailer, computed, carries) = match read {
            Err(e) => (0, 0, format!("(its contents could not be read back: {e})")),
            Ok(()) => {
                let got = verify(&words, p.salt());
                let trailer = words.last().copied().unwrap_or(0);
                let other = layout
                    .packets
                    .iter()
                    .find(|q| q.index != p.index && verify(&words, q.salt()) == 0);
                let carries = match other {
                    Some(q) => format!(
                        "its contents check as packet {} (tag {}, from rank {}): the two \
                         were transposed",
                        q.index, q.tag, q.from
                    ),
                    None => "its contents check as no packet of this rank".to_string(),
                };
                (trailer, got ^ trailer, carries)
            }
        };
        KernelError::CorruptPacket {
            packet: p.index,
            tag: p.tag,
            from: p.from,
            iteration,
            trailer,
            computed,
            carries,
        }
    }
}
