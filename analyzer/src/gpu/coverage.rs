//! What a host wait covered, answered without scanning a rank's GPU work: per device
//! stream, the copies by the time they were enqueued with the latest end so far.

use std::collections::BTreeMap;

use overlap_format::schema::{GpuEvent, Nanos, ALL_STREAMS};

use crate::model::Timeline;

/// A rank's copies by (device, stream), each list by `issued`, with the running
/// maximum of their ends.
#[derive(Debug, Default)]
pub struct CopyCoverage {
    streams: BTreeMap<(u32, u32), Vec<(Nanos, Nanos)>>,
}

impl CopyCoverage {
    /// The coverage of `t`'s copies.
    pub fn new(t: &Timeline) -> CopyCoverage {
        let mut streams: BTreeMap<(u32, u32), Vec<(Nanos, Nanos)>> = BTreeMap::new();
        for g in t.gpu.iter().filter(|g| g.op.is_copy()) {
            streams
                .entry((g.device, g.stream))
                .or_default()
                .push((g.issued, g.end));
        }
        for list in streams.values_mut() {
            list.sort_unstable();
            let mut latest = Nanos::ZERO;
            for entry in list.iter_mut() {
                latest = latest.max(entry.1);
                entry.1 = latest;
            }
        }
        CopyCoverage { streams }
    }

    /// The latest end of the copies host wait `w` covered (same device, its stream or
    /// every stream, enqueued no later than the wait's `issued`); `None` when it covered
    /// none.
    pub fn latest_end(&self, w: &GpuEvent) -> Option<Nanos> {
        let streams = if w.stream == ALL_STREAMS {
            self.streams.range((w.device, 0)..=(w.device, u32::MAX))
        } else {
            self.streams
                .range((w.device, w.stream)..=(w.device, w.stream))
        };
        streams
            .filter_map(|(_, list)| {
                let n = list.partition_point(|(issued, _)| *issued <= w.issued);
                n.checked_sub(1).map(|i| list[i].1)
            })
            .max()
    }
}
