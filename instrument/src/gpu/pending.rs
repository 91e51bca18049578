//! GPU work issued whose times are not known yet: [`Pending`].
//!
//! A copy or a kernel is recorded once the device has finished it (its end is known
//! only then). Until then it waits here with a token its backend can ask about (the
//! op's timing events), and is recorded at the next poll, wait or flush that finds it
//! done. So records are not in time order in the stream: the reader and the merge sort.

use crate::recorder::{GpuWork, Recorder};
use crate::schema::GpuOp;

/// When a device operation ran, on the host clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Start, host ns since the recorder's epoch.
    pub start_ns: u64,
    /// End, host ns.
    pub end_ns: u64,
    /// How far `start_ns` and `end_ns` may be from the truth.
    pub error_ns: u64,
}

/// Operations issued, waiting for their times, each with its backend's token.
#[derive(Debug)]
pub struct Pending<T> {
    ops: Vec<(GpuWork, T)>,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending { ops: Vec::new() }
    }
}

impl<T> Pending<T> {
    /// Nothing pending.
    pub fn new() -> Pending<T> {
        Pending::default()
    }

    /// Keeps `work` (its times to be filled in) until `token` says it is done.
    pub fn push(&mut self, work: GpuWork, token: T) {
        self.ops.push((work, token));
    }

    /// How many are pending.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Records, in issue order, every operation whose `timing` is known (`Some`), and
    /// keeps the others; returns how many were recorded. The first error stops it,
    /// keeping what was not recorded yet.
    pub fn record_ready<E>(
        &mut self,
        recorder: &Recorder,
        mut timing: impl FnMut(&T) -> Result<Option<Timing>, E>,
    ) -> Result<usize, E> {
        let mut recorded = 0;
        let mut failure = None;
        self.ops.retain(|(work, token)| {
            if failure.is_some() {
                return true;
            }
            match timing(token) {
                Ok(Some(t)) => {
                    recorder.record_gpu(&GpuWork {
                        start_ns: t.start_ns,
                        end_ns: t.end_ns.max(t.start_ns),
                        clock_error_ns: t.error_ns,
                        ..*work
                    });
                    recorded += 1;
                    false
                }
                Ok(None) => true,
                Err(e) => {
                    failure = Some(e);
                    true
                }
            }
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(recorded),
        }
    }
}

/// What a device operation is, before its times are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceOp {
    /// A copy or a kernel (not a host wait).
    pub op: GpuOp,
    /// The device.
    pub device: u32,
    /// The stream it is enqueued on.
    pub stream: u32,
    /// Bytes copied (0 for a kernel).
    pub bytes: u64,
    /// Source address (a D2H: the device buffer; an H2D: the exact host buffer MPI
    /// received into).
    pub src: u64,
    /// Destination address (a D2H: the exact host buffer MPI sends from).
    pub dst: u64,
    /// The packet it belongs to.
    pub packet: Option<u32>,
    /// A kernel's name, or a label.
    pub name: &'static str,
}

impl DeviceOp {
    /// The record of this operation enqueued at host time `issued_ns`, its times to be
    /// filled in by [`Pending::record_ready`].
    pub fn issued(&self, issued_ns: u64) -> GpuWork {
        GpuWork {
            op: self.op,
            device: self.device,
            stream: self.stream,
            issued_ns,
            start_ns: 0,
            end_ns: 0,
            bytes: self.bytes,
            src: self.src,
            dst: self.dst,
            packet: self.packet,
            name: self.name,
            clock_error_ns: 0,
        }
    }
}

/// The record of a host thread blocked on GPU work from `start_ns` to `end_ns`: on
/// `stream` ([`crate::schema::ALL_STREAMS`]: the whole device), for what was marked at
/// `marked_ns` (the event's record, or the synchronize call), for `packet` when the
/// event was one packet's. Host waits are host readings: no clock error.
pub fn host_wait(
    device: u32,
    stream: u32,
    marked_ns: u64,
    start_ns: u64,
    end_ns: u64,
    packet: Option<u32>,
) -> GpuWork {
    GpuWork {
        op: GpuOp::HostWait,
        device,
        stream,
        issued_ns: marked_ns,
        start_ns,
        end_ns: end_ns.max(start_ns),
        bytes: 0,
        src: 0,
        dst: 0,
        packet,
        name: "",
        clock_error_ns: 0,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::recorder::{MemorySink, RecorderConfig};
    use crate::schema::Event;

    #[test]
    fn operations_are_recorded_once_their_times_are_known_and_kept_until_then() {
        let sink = MemorySink::new();
        let rec = Recorder::new(sink.clone(), RecorderConfig::default()).unwrap();
        let copy = DeviceOp {
            op: GpuOp::CopyD2H,
            device: 0,
            stream: 1,
            bytes: 4096,
            src: 0x1000,
            dst: 0x2000,
            packet: Some(3),
            name: "",
        };
        let mut p = Pending::new();
        p.push(copy.issued(100), 1u32);
        p.push(copy.issued(200), 2u32);
        let done = |limit: u32| {
            move |t: &u32| -> Result<Option<Timing>, ()> {
                Ok((*t <= limit).then_some(Timing {
                    start_ns: 1000 * u64::from(*t),
                    end_ns: 1000 * u64::from(*t) + 10,
                    error_ns: 7,
                }))
            }
        };
        assert_eq!(p.record_ready(&rec, done(1)), Ok(1));
        assert_eq!(p.len(), 1);
        assert_eq!(p.record_ready(&rec, |_| Err("driver")), Err("driver"));
        assert_eq!(p.len(), 1, "an error keeps the op");
        assert_eq!(p.record_ready(&rec, done(2)), Ok(1));
        assert!(p.is_empty());
        rec.record_gpu(&host_wait(0, 1, 150, 160, 150, Some(3)));
        rec.finish().unwrap();
        let gpu: Vec<_> = sink
            .recorded()
            .events
            .into_iter()
            .filter_map(|e| match e {
                Event::Gpu(g) => Some(g),
                _ => None,
            })
            .collect();
        assert_eq!(gpu.len(), 3);
        assert_eq!(gpu[0].issued.0, 100);
        assert_eq!((gpu[0].start.0, gpu[0].end.0), (1000, 1010));
        assert_eq!(gpu[0].clock_error.0, 7);
        assert_eq!(
            (gpu[0].src, gpu[0].dst, gpu[0].packet),
            (0x1000, 0x2000, Some(3))
        );
        assert_eq!(gpu[1].start.0, 2000);
        assert_eq!(gpu[2].op, GpuOp::HostWait);
        assert_eq!(
            gpu[2].end.0, 160,
            "an end before the start is clamped to it"
        );
    }
}
