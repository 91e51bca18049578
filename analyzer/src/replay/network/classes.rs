//! A network of size classes: where no line goes through the trace's class estimates
//! but every size class the replay transfers was measured, each message takes its
//! class's time as the run measured it. The replay needs no latency and bandwidth, only
//! each message's time; the table gives it, and [`super::Network`] stays `Copy`.
//!
//! ```text
//!  classes   8 KiB eager: median 67 µs     64 KiB eager: median 97 µs   (not on a line)
//!  replay    a 8 KiB message takes 67 µs, a 64 KiB one 97 µs; the fast end the
//!            classes' fastest clean transfers, the slow end their medians
//! ```

use std::fmt;

use serde::ser::{Serialize, SerializeSeq, SerializeStruct, Serializer};

use super::{EagerSource, Network, NetworkFit, NetworkSource};
use crate::metrics::eager::Protocol;
use crate::metrics::transfer::{class_of, SizeClass, TransferModel, Unfit};

/// Slots of the table: one per power-of-two class (bit length 0 to 64), and one more
/// because the class holding the eager limit holds eager and rendezvous messages.
const SLOTS: usize = 66;

/// A slot without a time.
const NONE: u64 = u64::MAX;

/// Each size class's transfer time, ns, by (class, protocol).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ClassTimes {
    /// The eager limit the classes were measured with: a message above it was of a
    /// rendezvous class, whatever limit the replay is later given.
    split: u64,
    /// Per slot ([`ClassTimes::slot`]), the class's time; [`NONE`] where none.
    ns: [u64; SLOTS],
}

impl ClassTimes {
    /// The table of `classes` (their protocols by the eager limit `split`), each class's
    /// time `time(class)`; none when a class has none.
    pub(super) fn of(
        classes: &[SizeClass],
        split: u64,
        time: impl Fn(&SizeClass) -> Option<u64>,
    ) -> Option<ClassTimes> {
        let mut table = ClassTimes {
            split,
            ns: [NONE; SLOTS],
        };
        for c in classes {
            let slot = table.slot(c.bytes);
            table.ns[slot] = time(c)?;
        }
        Some(table)
    }

    /// The slot of a `bytes` message: its class's bit length, one more above the split
    /// (the eager and the rendezvous part of the class holding it never share one).
    fn slot(&self, bytes: u64) -> usize {
        class_of(bytes) as usize + usize::from(bytes > self.split)
    }

    /// The measured time of a `bytes` message's class, when it has one.
    pub fn get(&self, bytes: u64) -> Option<u64> {
        Some(self.ns[self.slot(bytes)]).filter(|&ns| ns != NONE)
    }

    /// The time of a `bytes` message: its class's. A size of no measured class (never
    /// one of the run's own: the network is made only when they all are) takes the
    /// nearest measured class's, the larger one on a tie.
    pub fn ns(&self, bytes: u64) -> u64 {
        if let Some(ns) = self.get(bytes) {
            return ns;
        }
        let at = self.slot(bytes);
        (0..SLOTS)
            .filter(|&s| self.ns[s] != NONE)
            .min_by_key(|&s| (s.abs_diff(at), std::cmp::Reverse(s)))
            .map_or(0, |s| self.ns[s])
    }

    /// The measured classes: their smallest and largest size, protocol and time, by
    /// size.
    pub fn classes(&self) -> impl Iterator<Item = ClassTime> + '_ {
        let edge = class_of(self.split) as usize;
        (0..SLOTS).filter(|&s| self.ns[s] != NONE).map(move |s| {
            let (bits, protocol) = if s <= edge {
                (s as u32, Protocol::Eager)
            } else {
                (s as u32 - 1, Protocol::Rendezvous)
            };
            let (low, high) = match bits {
                0 => (0, 0),
                b => (1u64 << (b - 1), u64::MAX >> (64 - b)),
            };
            let (from_bytes, to_bytes) = match protocol {
                Protocol::Eager => (low, high.min(self.split)),
                Protocol::Rendezvous => (low.max(self.split.saturating_add(1)), high),
            };
            ClassTime {
                from_bytes,
                to_bytes,
                protocol,
                ns: self.ns[s],
            }
        })
    }
}

impl NetworkFit {
    /// The network of `t`'s classes, whose line is unknown for `reason`, when every
    /// class the replay transfers has an estimate and there are two or more (one is
    /// [`NetworkSource::OneClass`]): each class's median clean transfer, its fastest for
    /// the fast end, its median again for the slow end (as on a line, where the
    /// estimate is the line through the medians).
    pub(super) fn of_classes(
        t: &TransferModel,
        reason: &Unfit,
        eager: &(u64, EagerSource),
    ) -> Option<NetworkFit> {
        let split = t.eager.limit();
        let [low, mid] = [
            |c: &SizeClass| c.fastest_ns,
            |c: &SizeClass| c.typical_ns.filter(|_| c.estimate_ns.is_some()),
        ]
        .map(|time| ClassTimes::of(&t.classes, split, time));
        let (low, mid) = (low?, mid?);
        let covered = t
            .unfitted
            .iter()
            .all(|&(bytes, _)| mid.get(bytes).is_some());
        if t.classes.len() < 2 || !covered {
            return None;
        }
        let network = |classes: ClassTimes| Network {
            classes: Some(classes),
            ..Network::timeless(eager.0)
        };
        let source = NetworkSource::Classes {
            classes: t.classes.clone(),
            line: reason.clone(),
        };
        Some(NetworkFit {
            mid: network(mid),
            low: network(low),
            high: network(mid),
            source,
            latency_given: false,
            bandwidth_given: false,
            eager: eager.1.clone(),
        })
    }
}

/// One measured class of a [`ClassTimes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassTime {
    /// The smallest size of the class, bytes.
    pub from_bytes: u64,
    /// The largest.
    pub to_bytes: u64,
    /// Its protocol.
    pub protocol: Protocol,
    /// Its time, ns.
    pub ns: u64,
}

impl Serialize for ClassTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut c = s.serialize_struct("ClassTime", 4)?;
        c.serialize_field("from_bytes", &self.from_bytes)?;
        c.serialize_field("to_bytes", &self.to_bytes)?;
        c.serialize_field("protocol", &self.protocol)?;
        c.serialize_field("ns", &self.ns)?;
        c.end()
    }
}

/// The measured classes, as a list.
impl Serialize for ClassTimes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for c in self.classes() {
            seq.serialize_element(&c)?;
        }
        seq.end()
    }
}

impl fmt::Debug for ClassTimes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.classes()).finish()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn class(bytes: u64, protocol: Protocol, ns: u64) -> SizeClass {
        SizeClass::of(bytes, protocol, 3, vec![ns, ns, ns])
    }

    /// Eager limit 100 000 B: 8 KiB eager takes 40 µs, 64 KiB eager (65 536 to 100 000)
    /// 50 µs, 96 KiB rendezvous (100 001 to 131 071, the same power of two) 90 µs, 1 MiB
    /// rendezvous 300 µs. Each size its class's time; a size of no class the nearest
    /// class's (16 KiB: between 8 KiB and 64 KiB, the larger).
    #[test]
    fn each_size_takes_its_class_time() {
        let classes = [
            class(8192, Protocol::Eager, 40_000),
            class(65_536, Protocol::Eager, 50_000),
            class(100_001, Protocol::Rendezvous, 90_000),
            class(1 << 20, Protocol::Rendezvous, 300_000),
        ];
        let t = ClassTimes::of(&classes, 100_000, |c| c.estimate_ns).unwrap();
        assert_eq!(t.get(8192), Some(40_000));
        assert_eq!(t.get(16_383), Some(40_000));
        assert_eq!(t.get(100_000), Some(50_000));
        assert_eq!(t.get(100_001), Some(90_000));
        assert_eq!(t.get(131_071), Some(90_000));
        assert_eq!(t.get(1 << 20), Some(300_000));
        assert_eq!(t.get(16_384), None);
        assert_eq!(t.ns(16_384), 40_000);
        assert_eq!(t.ns(40_000), 50_000);
        let listed: Vec<(u64, u64, Protocol)> = t
            .classes()
            .map(|c| (c.from_bytes, c.to_bytes, c.protocol))
            .collect();
        assert_eq!(
            listed,
            vec![
                (8192, 16_383, Protocol::Eager),
                (65_536, 100_000, Protocol::Eager),
                (100_001, 131_071, Protocol::Rendezvous),
                (1 << 20, (1 << 21) - 1, Protocol::Rendezvous),
            ]
        );
        let unmeasured = SizeClass::of(64, Protocol::Eager, 5, vec![]);
        assert!(ClassTimes::of(&[unmeasured], 100_000, |c| c.estimate_ns).is_none());
    }

    /// The largest sizes and empty messages have slots of their own.
    #[test]
    fn the_ends_of_the_sizes_have_slots() {
        let classes = [
            class(0, Protocol::Eager, 1_000),
            class(u64::MAX, Protocol::Rendezvous, 9_000),
        ];
        let t = ClassTimes::of(&classes, 64, |c| c.estimate_ns).unwrap();
        assert_eq!((t.get(0), t.get(1)), (Some(1_000), None));
        assert_eq!(t.get(u64::MAX), Some(9_000));
        let last = t.classes().last().unwrap();
        assert_eq!((last.from_bytes, last.to_bytes), (1 << 63, u64::MAX));
    }
}
