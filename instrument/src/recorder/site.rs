//! Where a call was made from, as it sits in a ring: one word that is either a code
//! address (the preload's return addresses) or a source location (`#[track_caller]` in
//! the Rust layer), so recording a site costs a store, not a lookup. A thread defines
//! each source location once in its stream; readers number them as sites.

use std::panic::Location;

use overlap_format::stream::codec::SOURCE_SITE_TAG;

/// A call site, packed in one word. Only [`SiteWord::source`] sets the tag, and only
/// from a `&'static Location`, which is what makes [`SiteWord::decode`] sound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SiteWord(u64);

impl From<u64> for SiteWord {
    /// A code address: see [`SiteWord::address`].
    fn from(address: u64) -> SiteWord {
        SiteWord::address(address)
    }
}

/// A [`SiteWord`], unpacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SiteKind {
    /// Not known.
    Unknown,
    /// A code address.
    Address(u64),
    /// A source location.
    Source(&'static Location<'static>),
}

impl SiteWord {
    /// A code address (0: unknown). An address with the top bit set cannot be a
    /// user-space code address and is recorded as unknown.
    #[inline]
    pub(crate) fn address(address: u64) -> SiteWord {
        SiteWord(if address & SOURCE_SITE_TAG == 0 {
            address
        } else {
            0
        })
    }

    /// A source location.
    #[inline]
    pub(crate) fn source(location: &'static Location<'static>) -> SiteWord {
        SiteWord(std::ptr::from_ref(location) as usize as u64 | SOURCE_SITE_TAG)
    }

    /// The word as the stream records it.
    #[inline]
    pub(crate) fn word(self) -> u64 {
        self.0
    }

    /// True when the word holds a source location.
    #[inline]
    pub(crate) fn is_source(self) -> bool {
        self.0 & SOURCE_SITE_TAG != 0
    }

    /// What the word holds.
    pub(crate) fn decode(self) -> SiteKind {
        if self.0 & SOURCE_SITE_TAG != 0 {
            let pointer = (self.0 & !SOURCE_SITE_TAG) as usize as *const Location<'static>;
            // SAFETY: the tag is only set by `SiteWord::source`, from a `&'static
            // Location`; clearing it gives that reference's address back unchanged.
            SiteKind::Source(unsafe { &*pointer })
        } else if self.0 == 0 {
            SiteKind::Unknown
        } else {
            SiteKind::Address(self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        assert_eq!(SiteWord::address(0).decode(), SiteKind::Unknown);
        assert_eq!(
            SiteWord::address(0x55d0_1234).decode(),
            SiteKind::Address(0x55d0_1234)
        );
        assert_eq!(SiteWord::address(1 << 63 | 5).decode(), SiteKind::Unknown);
        let here = Location::caller();
        assert_eq!(SiteWord::source(here).decode(), SiteKind::Source(here));
    }

    #[test]
    fn recorded_calls_name_the_line_they_were_made_from() {
        use crate::recorder::{CallData, MemorySink, Recorder, RecorderConfig};
        use crate::schema::{Event, Op};
        let sink = MemorySink::new();
        let rec = Recorder::new(sink.clone(), RecorderConfig::default()).expect("recorder");
        let here = rec.for_this_thread();
        let mut lines = Vec::new();
        for _ in 0..3 {
            let t = rec.stamp();
            lines.push(line!() + 1);
            rec.record_call(Op::Barrier, t, t, CallData::Plain, &[]);
            here.record_call_from(Op::Barrier, t, t, 0x4242, CallData::Plain, 0, |_| {
                unreachable!("no completions")
            });
        }
        rec.finish().expect("finish");
        let got = sink.recorded();
        assert_eq!(got.sites.len(), 1, "one line, listed once: {:?}", got.sites);
        assert_eq!(
            (got.sites[0].file.as_str(), got.sites[0].line),
            (file!(), lines[0])
        );
        let sites: Vec<Option<u64>> = got
            .events
            .iter()
            .map(|e| match e {
                Event::Call(c) => c.args.site,
                _ => None,
            })
            .collect();
        assert_eq!(sites, [Some(1), Some(0x4242)].repeat(3));
    }
}
