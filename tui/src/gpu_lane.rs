//! A rank's GPU work as the Timeline draws it: when a lane has room for two rows of
//! activity and its ranks recorded GPU work, its second row shows the device instead of
//! repeating the host. A cell shows what the device did most of its time: kernels, copies,
//! or nothing. Sums over a cell cost two binary searches, whatever the zoom: the busy
//! time of each kind is kept as disjoint intervals with running sums.

use overlap_analyzer::gpu::findings::device_busy;
use overlap_analyzer::model::Timeline;
use overlap_format::schema::GpuOp;

/// Disjoint sorted intervals with the running sum of their lengths.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Busy {
    spans: Vec<(u64, u64)>,
    /// `before[i]`: summed lengths of `spans[..i]`.
    before: Vec<u64>,
}

impl Busy {
    fn new(spans: &[(u64, u64)]) -> Busy {
        let mut before = Vec::with_capacity(spans.len() + 1);
        let mut sum = 0;
        before.push(0);
        for (a, b) in spans {
            sum += b - a;
            before.push(sum);
        }
        Busy {
            spans: spans.to_vec(),
            before,
        }
    }

    /// Time covered before `t`, ns.
    fn until(&self, t: f64) -> f64 {
        let i = self.spans.partition_point(|(a, _)| (*a as f64) < t);
        let mut covered = self.before[i] as f64;
        if let Some((a, b)) = i.checked_sub(1).map(|k| self.spans[k]) {
            // The interval that started before `t` may not have ended by then.
            covered -= (b as f64 - t).max(0.0).min((b - a) as f64);
        }
        covered
    }

    /// Time covered in `[t0, t1)`, ns.
    pub fn covered(&self, t0: f64, t1: f64) -> f64 {
        (self.until(t1) - self.until(t0)).max(0.0)
    }
}

/// What a GPU cell shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuActivity {
    /// The device did nothing recorded.
    Idle,
    /// Copies took most of the cell.
    Copy,
    /// Kernels took most of the cell.
    Kernel,
}

/// A rank's device busy time, by kind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuLane {
    /// Copies of every direction.
    pub copies: Busy,
    /// Kernels.
    pub kernels: Busy,
}

impl GpuLane {
    /// The lane of `t`; `None` when it recorded no GPU work.
    pub fn build(t: &Timeline) -> Option<GpuLane> {
        if t.gpu.iter().all(|g| !g.op.is_work()) {
            return None;
        }
        Some(GpuLane {
            copies: Busy::new(device_busy(t, GpuOp::is_copy).spans()),
            kernels: Busy::new(device_busy(t, |op| op == GpuOp::Kernel).spans()),
        })
    }

    /// Copy and kernel time in `[t0, t1)`, ns.
    pub fn mix(&self, t0: f64, t1: f64) -> (f64, f64) {
        (self.copies.covered(t0, t1), self.kernels.covered(t0, t1))
    }
}

/// What dominates a cell of `width` ns given its (copy, kernel) time: the larger, unless
/// the time left (idle, copies and kernels counted apart) is larger than both. Ties go to
/// copies, the rarer and more telling.
pub fn dominant((copy, kernel): (f64, f64), width: f64) -> GpuActivity {
    let idle = (width - copy - kernel).max(0.0);
    if copy <= 0.0 && kernel <= 0.0 || idle > copy.max(kernel) {
        GpuActivity::Idle
    } else if copy >= kernel {
        GpuActivity::Copy
    } else {
        GpuActivity::Kernel
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ```text
    ///  busy:  [10----20)      [40--50)
    ///  cells: [0  15) [15  45) [45  60)
    /// ```
    #[test]
    fn covered_time_is_exact_at_any_cut() {
        let b = Busy::new(&[(10, 20), (40, 50)]);
        assert_eq!(b.covered(0.0, 15.0), 5.0);
        assert_eq!(b.covered(15.0, 45.0), 10.0);
        assert_eq!(b.covered(45.0, 60.0), 5.0);
        assert_eq!(b.covered(0.0, 100.0), 20.0);
        assert_eq!(b.covered(20.0, 40.0), 0.0);
        assert_eq!(Busy::new(&[]).covered(0.0, 10.0), 0.0);
    }

    #[test]
    fn a_cell_shows_what_the_device_did_most() {
        assert_eq!(dominant((0.0, 0.0), 10.0), GpuActivity::Idle);
        assert_eq!(dominant((2.0, 1.0), 10.0), GpuActivity::Idle);
        assert_eq!(dominant((6.0, 4.0), 10.0), GpuActivity::Copy);
        assert_eq!(dominant((3.0, 8.0), 10.0), GpuActivity::Kernel);
    }
}
