//! Which GPU copy moved a message's buffer: the D2H that filled a send's buffer, the
//! H2D that took a receive's, each found on its own rank's timeline through an index of
//! its copies by the host range they touch. The GPU chains ([`crate::gpu`]) and the
//! merge's Perfetto links read them; kept here, below both.

use std::collections::BTreeMap;

use overlap_format::schema::{GpuOp, Nanos, Op};

use super::Timeline;

/// The send buffer's address of the call at `at`.
fn send_buffer(t: &Timeline, at: usize) -> Option<u64> {
    let (_, call) = t.call(at)?;
    call.buf().map(|b| b.addr)
}

/// The receive buffer's address of the call that posted a receive.
fn recv_buffer(t: &Timeline, at: usize) -> Option<u64> {
    let (op, call) = t.call(at)?;
    if op == Op::Sendrecv || op == Op::SendrecvReplace {
        return t.recv_half(call).and_then(|r| r.buf).map(|b| b.addr);
    }
    call.buf().map(|b| b.addr)
}

/// The D2H (an index of `t.gpu`) that filled the buffer of the send at `send`: the last
/// enqueued before the send whose destination range holds its buffer. `d2h` indexes
/// `t`'s D2H copies.
pub fn send_copy(t: &Timeline, d2h: &CopyIndex, send: usize) -> Option<usize> {
    let start = t.spans.get(send)?.start;
    d2h.last_before(send_buffer(t, send)?, start)
}

/// The H2D (an index of `t.gpu`) that took the data of the receive posted at `post`
/// and completed at `completion`: the first enqueued after the completing call started
/// whose source range holds the receive buffer. `h2d` indexes `t`'s H2D copies.
pub fn recv_copy(
    t: &Timeline,
    h2d: &CopyIndex,
    post: usize,
    completion: Option<usize>,
) -> Option<usize> {
    let done = t.spans.get(completion?)?;
    h2d.first_after(recv_buffer(t, post)?, done.start)
}

/// A rank's copies of one direction by the host range they touch (a D2H's destination,
/// an H2D's source), each range's copies by the time they were enqueued: a lookup costs
/// a few ranges and a binary search, not a scan of the rank's GPU work.
#[derive(Debug, Default)]
pub struct CopyIndex {
    /// (host base, bytes) -> (issued, index in the timeline's `gpu`), by issued.
    ranges: BTreeMap<(u64, u64), Vec<(Nanos, usize)>>,
    /// The longest range, bytes.
    longest: u64,
}

impl CopyIndex {
    /// The index of `t`'s copies of direction `op` (D2H or H2D) with a known host
    /// address.
    pub fn new(t: &Timeline, op: GpuOp) -> CopyIndex {
        let mut index = CopyIndex::default();
        for (i, g) in t.gpu.iter().enumerate().filter(|(_, g)| g.op == op) {
            let base = if op == GpuOp::CopyD2H { g.dst } else { g.src };
            if base == 0 {
                continue;
            }
            let bytes = g.bytes.max(1);
            index.longest = index.longest.max(bytes);
            index
                .ranges
                .entry((base, bytes))
                .or_default()
                .push((g.issued, i));
        }
        for copies in index.ranges.values_mut() {
            copies.sort_unstable();
        }
        index
    }

    /// The indexes of `t`'s D2H and of its H2D copies.
    pub fn both(t: &Timeline) -> (CopyIndex, CopyIndex) {
        (
            CopyIndex::new(t, GpuOp::CopyD2H),
            CopyIndex::new(t, GpuOp::CopyH2D),
        )
    }

    /// The copies' lists whose range holds `addr`.
    fn holding(&self, addr: u64) -> impl Iterator<Item = &Vec<(Nanos, usize)>> {
        let lowest = addr.saturating_sub(self.longest.saturating_sub(1));
        self.ranges
            .range((lowest, 0)..=(addr, u64::MAX))
            .filter(move |((base, bytes), _)| addr < base.saturating_add(*bytes))
            .map(|(_, copies)| copies)
    }

    /// The last copy enqueued at or before `at` whose range holds `addr`.
    pub fn last_before(&self, addr: u64, at: Nanos) -> Option<usize> {
        self.holding(addr)
            .filter_map(|c| c[..c.partition_point(|x| x.0 <= at)].last().copied())
            .max()
            .map(|(_, i)| i)
    }

    /// The first copy enqueued at or after `at` whose range holds `addr`.
    pub fn first_after(&self, addr: u64, at: Nanos) -> Option<usize> {
        self.holding(addr)
            .filter_map(|c| c.get(c.partition_point(|x| x.0 < at)).copied())
            .min()
            .map(|(_, i)| i)
    }
}
