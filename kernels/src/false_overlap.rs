//! The false communication–computation overlap kernel.
//!
//! Even ranks pair with rank+1, odd ranks with rank-1 (with an odd rank count the last
//! rank has no neighbour). Each iteration has two halves; in each, a rank packs its send
//! buffer, posts `MPI_Irecv` and `MPI_Isend` to its neighbour, waits for the receives,
//! unpacks and computes. Message sizes are `size` and `size * ratio` words, swapped
//! between the partners each half, so one side always sends far more than it receives.
//! An `MPI_Barrier` ends each iteration.
//!
//! - `naive`: `MPI_Waitall` on the sends right after the one on the receives, before
//!   computing: the computation, which never touches the send buffer, waits for the
//!   large send to drain. This is the false overlap.
//! - `fixed`: the send `MPI_Waitall` is deferred until just before the send buffer is
//!   packed again, so the send drains while the rank computes.
//!
//! Each payload ends with a checksum of its words salted by the sender's rank, the
//! iteration and the half; the receiver recomputes it and fails on any mismatch.
//!
//! ```text
//!  naive: pack | Irecv Isend | Waitall(r) | Waitall(s) | unpack | compute | ... | Barrier
//!  fixed: Waitall(s, previous half) | pack | Irecv Isend | Waitall(r) | unpack | compute | ...
//! ```

use overlap_instrument::mpi::OwnedRequest;
use overlap_instrument::schema::{ParamValue, Params};

use crate::{access, Kernel, KernelContext, KernelError, KernelReport};

pub use crate::options::false_overlap::{Options, Variant};

/// The kernel.
#[derive(Clone, Debug, Default)]
pub struct FalseOverlap {
    /// Its options.
    pub options: Options,
}

/// The neighbour of `rank` among `size` ranks, if it has one.
pub fn neighbour(rank: i32, size: i32) -> Option<i32> {
    let n = if rank % 2 == 0 { rank + 1 } else { rank - 1 };
    (n < size).then_some(n)
}

/// `(receive words, send words)` of `rank` in `half` of `iteration`, as in the seed:
/// `rSIZE = ((rank+i) % 2) ? SIZE*RATIO : SIZE`, swapped in the second half.
pub fn message_words(rank: i32, iteration: usize, half: usize, o: &Options) -> (usize, usize) {
    let odd = (rank as usize + iteration) % 2 == 1;
    let large = o.size * o.ratio;
    let (recv, send) = if odd {
        (large, o.size)
    } else {
        (o.size, large)
    };
    if half == 0 {
        (recv, send)
    } else {
        (send, recv)
    }
}

/// The checksum that ends every payload: a multiply-rotate hash of the words, salted by
/// sender, iteration and half.
pub fn checksum(words: &[u64], sender: i32, iteration: usize, half: usize) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15u64
        ^ (sender as u64).wrapping_mul(0xff51_afd7_ed55_8ccd)
        ^ (iteration as u64).wrapping_mul(0xc4ce_b9fe_1a85_ec53)
        ^ (half as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
    for &w in words {
        h = (h ^ w).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
    }
    h
}

/// Fills `buf` from `data` and appends the salted checksum.
fn pack(data: &[f64], buf: &mut [u64], sender: i32, iteration: usize, half: usize) {
    let (body, tail) = buf.split_at_mut(buf.len() - 1);
    for (j, w) in body.iter_mut().enumerate() {
        *w = data[j % data.len()].to_bits() ^ (j as u64).wrapping_mul(0x9e37_79b9);
    }
    tail[0] = checksum(body, sender, iteration, half);
}

/// Folds a received payload into `data`.
fn unpack(buf: &[u64], data: &mut [f64]) {
    let n = data.len();
    for (j, &w) in buf[..buf.len() - 1].iter().enumerate() {
        let d = &mut data[j % n];
        *d = 0.5 * *d + (w & 0xffff) as f64 * 1e-6;
    }
}

/// `units * 1024` multiply-adds over `data`; returns a value so it is not optimised away.
fn compute(data: &mut [f64], units: u64) -> f64 {
    let block = data.len().min(1024);
    let mut acc = 0.0;
    for u in 0..units {
        let a = 1.0 + (u % 7) as f64 * 1e-9;
        for x in data[..block].iter_mut() {
            *x = x.mul_add(a, 1e-9);
            acc += *x;
        }
        for _ in block..1024 {
            acc = acc.mul_add(a, 1e-9);
        }
    }
    std::hint::black_box(acc)
}

/// `buf` resized to `words` (within its capacity: buffers are allocated at the largest
/// message size once).
fn sized(mut buf: Vec<u64>, words: usize) -> Vec<u64> {
    buf.resize(words, 0);
    buf
}

impl FalseOverlap {
    fn verify(
        &self,
        buf: &[u64],
        peer: i32,
        iteration: usize,
        half: usize,
    ) -> Result<(), KernelError> {
        let bytes = buf.len() as u64 * 8;
        let (body, tail) = buf.split_at(buf.len() - 1);
        let expected = checksum(body, peer, iteration, half);
        if tail[0] != expected {
            return Err(KernelError::CorruptPayload {
                iteration,
                half,
                peer,
                expected,
                got: tail[0],
                bytes,
            });
        }
        Ok(())
    }
}

impl Kernel for FalseOverlap {
    type Output = KernelReport;

    fn name(&self) -> &'static str {
        "false-overlap"
    }

    fn params(&self) -> Params {
        let o = &self.options;
        let mut p = Params::new();
        p.insert("kernel".into(), ParamValue::Text(self.name().into()));
        p.insert("variant".into(), ParamValue::Text(o.variant.name().into()));
        p.insert("size_words".into(), ParamValue::Int(o.size as i64));
        p.insert("ratio".into(), ParamValue::Int(o.ratio as i64));
        p.insert("iterations".into(), ParamValue::Int(o.iterations as i64));
        p.insert("compute_units".into(), ParamValue::Int(o.compute as i64));
        p
    }

    fn run(&self, ctx: &KernelContext<'_>) -> Result<KernelReport, KernelError> {
        let o = &self.options;
        if o.size < 2 || o.ratio < 1 {
            return Err(KernelError::InvalidOption(format!(
                "size must be at least 2 words and ratio at least 1 (got size {}, ratio {})",
                o.size, o.ratio
            )));
        }
        let comm = &ctx.comm;
        let rec = ctx.recorder;
        let rank = comm.rank();
        let peer = neighbour(rank, comm.size());
        let large = o.size * o.ratio;
        let mut data: Vec<f64> = (0..o.size)
            .map(|j| (rank as f64) + j as f64 * 1e-3)
            .collect();
        let mut recv_buf = vec![0u64; large];
        // The send buffer is in MPI's hands (`None`) from its Isend to its Waitall.
        let send_vec = vec![0u64; large];
        // Bound once: the buffers keep their allocation (resized within capacity) as
        // they go to MPI and come back.
        rec.bind_vec("data", &data);
        rec.bind_vec("recvbuf", &recv_buf);
        rec.bind_vec("sendbuf", &send_vec);
        let mut send_buf = Some(send_vec);
        let packs = access(&["data"], &["sendbuf"])?;
        let unpacks = access(&["recvbuf"], &["data"])?;
        let computes = access(&["data"], &["data"])?;
        let mut sends: Vec<OwnedRequest<u64>> = Vec::with_capacity(1);
        let mut back: Vec<Vec<u64>> = Vec::with_capacity(1);
        let mut wait_sends = |sends: &mut Vec<OwnedRequest<u64>>| {
            comm.wait_all_owned(sends, &mut back);
            sized(back.pop().expect("one send per half"), large)
        };
        let mut report = KernelReport::default();
        const TAG: i32 = 17;

        for iteration in 0..o.iterations {
            if o.kill_rank == Some(rank) && iteration == o.kill_at_iteration {
                // SAFETY: plain libc calls on our own pid; SIGKILL does not return.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            }
            for half in 0..2 {
                let (recv_words, send_words) = message_words(rank, iteration, half, o);
                // fixed: the send still in flight is waited for only now, just before
                // its buffer is packed again.
                let mut sbuf = match send_buf.take() {
                    Some(b) => b,
                    None => wait_sends(&mut sends),
                };
                {
                    let _g = rec.compute_with("pack", packs);
                    pack(&data, &mut sbuf[..send_words], rank, iteration, half);
                }
                let Some(peer) = peer else {
                    send_buf = Some(sbuf);
                    let _g = rec.compute_with("compute", computes);
                    compute(&mut data, o.compute);
                    continue;
                };
                let mut receives = vec![comm.irecv_owned(peer, TAG, sized(recv_buf, recv_words))];
                sends.push(comm.isend_owned(peer, TAG, sized(sbuf, send_words)));
                let mut received = Vec::with_capacity(1);
                comm.wait_all_owned(&mut receives, &mut received);
                let rbuf = received.pop().expect("one receive per half");
                if o.variant == Variant::Naive {
                    send_buf = Some(wait_sends(&mut sends));
                }
                self.verify(&rbuf, peer, iteration, half)?;
                report.messages_verified += 1;
                report.bytes_received += recv_words as u64 * 8;
                {
                    let _g = rec.compute_with("unpack", unpacks);
                    unpack(&rbuf, &mut data);
                }
                {
                    let _g = rec.compute_with("compute", computes);
                    compute(&mut data, o.compute);
                }
                recv_buf = sized(rbuf, large);
            }
            comm.barrier();
        }
        if send_buf.is_none() {
            wait_sends(&mut sends);
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partners_and_sizes_match_the_seed() {
        assert_eq!(neighbour(0, 4), Some(1));
        assert_eq!(neighbour(1, 4), Some(0));
        assert_eq!(neighbour(2, 3), None);
        let o = Options {
            size: 10,
            ratio: 4,
            ..Options::default()
        };
        // What rank 0 sends, rank 1 receives, in both halves of even and odd iterations.
        for it in 0..2 {
            for half in 0..2 {
                let (r0, s0) = message_words(0, it, half, &o);
                let (r1, s1) = message_words(1, it, half, &o);
                assert_eq!((s0, s1), (r1, r0));
                assert_eq!(r0.max(s0), 40);
                assert_eq!(r0.min(s0), 10);
            }
        }
        // Rank 0, iteration 0: receives SIZE, sends SIZE*RATIO first, then swapped.
        assert_eq!(message_words(0, 0, 0, &o), (10, 40));
        assert_eq!(message_words(0, 0, 1, &o), (40, 10));
    }

    #[test]
    fn checksum_is_salted_and_catches_corruption() {
        let data = vec![1.5, 2.5, 3.5];
        let mut buf = vec![0u64; 9];
        pack(&data, &mut buf, 3, 5, 1);
        let body = &buf[..8];
        assert_eq!(checksum(body, 3, 5, 1), buf[8]);
        assert_ne!(checksum(body, 2, 5, 1), buf[8]);
        assert_ne!(checksum(body, 3, 4, 1), buf[8]);
        assert_ne!(checksum(body, 3, 5, 0), buf[8]);
        let mut bad = buf.clone();
        bad[2] ^= 1;
        let k = FalseOverlap::default();
        assert!(k.verify(&buf, 3, 5, 1).is_ok());
        let err = k.verify(&bad, 3, 5, 1).expect_err("corrupt");
        assert!(
            err.to_string().contains("payload from rank 3 is corrupt"),
            "{err}"
        );
    }
}
