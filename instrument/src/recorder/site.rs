//! Where a call was made from, as it sits in a ring: one word that is either a code
//! address (the preload's return addresses) or a source location: a `#[track_caller]`
//! line of the Rust layer, or a [`NamedSite`] the preload found at run time (the Python
//! frame that called MPI), so recording a site costs a store, not a lookup. A thread
//! defines each source location once in its stream; readers number them as sites.

use std::panic::Location;

use overlap_format::stream::codec::SOURCE_SITE_TAG;

/// Set, with [`SOURCE_SITE_TAG`], on a word that points to a [`NamedSite`] rather than
/// a `Location`. Only this process reads it: on the wire the word is an opaque key.
const NAMED_TAG: u64 = 1 << 62;

/// A source location a recorder learns while the program runs (a Python frame's file,
/// line and function), made once per distinct location and kept for the life of the
/// process, as a `#[track_caller]` `Location` is.
#[derive(Debug, PartialEq, Eq)]
pub struct NamedSite {
    file: &'static str,
    line: u32,
    function: &'static str,
}

impl NamedSite {
    /// Leaks a new site, so that calls can name it by one word ([`CallSite`]). Make one
    /// per distinct location: each lives until the process ends. `file` and `function`
    /// are kept as given (leak each distinct string once: the thread's encoder defines
    /// a string once per address).
    pub fn leak(file: &'static str, line: u32, function: &'static str) -> &'static NamedSite {
        Box::leak(Box::new(NamedSite {
            file,
            line,
            function,
        }))
    }

    /// The source file.
    pub fn file(&self) -> &'static str {
        self.file
    }

    /// The line, from 1.
    pub fn line(&self) -> u32 {
        self.line
    }

    /// The function.
    pub fn function(&self) -> &'static str {
        self.function
    }
}

/// Where a call was made from, as the preload's recording methods take it
/// ([`super::ThreadRecorder::record_call_from`]): a code address or a [`NamedSite`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallSite(SiteWord);

impl From<u64> for CallSite {
    /// A code address (0: unknown).
    #[inline]
    fn from(address: u64) -> CallSite {
        CallSite(SiteWord::address(address))
    }
}

impl From<&'static NamedSite> for CallSite {
    #[inline]
    fn from(site: &'static NamedSite) -> CallSite {
        CallSite(SiteWord::named(site))
    }
}

impl From<CallSite> for SiteWord {
    #[inline]
    fn from(site: CallSite) -> SiteWord {
        site.0
    }
}

/// A call site, packed in one word. Only [`SiteWord::source`] and [`SiteWord::named`]
/// set the tag, each from a `'static` reference of its type (told apart by
/// `NAMED_TAG`), which is what makes [`SiteWord::decode`] sound.
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
    /// A source location found at run time, with its function.
    Named(&'static NamedSite),
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

    /// A source location found at run time. User-space pointers are far below 2^62.
    #[inline]
    pub(crate) fn named(site: &'static NamedSite) -> SiteWord {
        SiteWord(std::ptr::from_ref(site) as usize as u64 | SOURCE_SITE_TAG | NAMED_TAG)
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
        if self.0 & SOURCE_SITE_TAG == 0 {
            return if self.0 == 0 {
                SiteKind::Unknown
            } else {
                SiteKind::Address(self.0)
            };
        }
        let pointer = (self.0 & !(SOURCE_SITE_TAG | NAMED_TAG)) as usize;
        if self.0 & NAMED_TAG != 0 {
            // SAFETY: both tags are only set by `SiteWord::named`, from a `&'static
            // NamedSite`; clearing them gives that reference's address back unchanged.
            SiteKind::Named(unsafe { &*(pointer as *const NamedSite) })
        } else {
            // SAFETY: the tag alone is only set by `SiteWord::source`, from a `&'static
            // Location`; clearing it gives that reference's address back unchanged.
            SiteKind::Source(unsafe { &*(pointer as *const Location<'static>) })
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
        let named = NamedSite::leak("prog.py", 12, "exchange");
        let word = SiteWord::from(CallSite::from(named));
        assert!(word.is_source());
        assert_eq!(word.decode(), SiteKind::Named(named));
        assert_eq!(
            SiteWord::from(CallSite::from(0x4010)).decode(),
            SiteKind::Address(0x4010)
        );
    }

    #[test]
    fn named_sites_are_defined_once_with_their_function() {
        use crate::recorder::{CallData, MemorySink, Recorder, RecorderConfig};
        use crate::schema::{Event, Op};
        let sink = MemorySink::new();
        let rec = Recorder::new(sink.clone(), RecorderConfig::default()).expect("recorder");
        let here = rec.for_this_thread();
        let a = NamedSite::leak("prog.py", 12, "exchange");
        let b = NamedSite::leak("prog.py", 20, "main");
        for site in [a, b, a, b] {
            let t = rec.stamp();
            here.record_call_from(Op::Barrier, t, t, site, CallData::Plain, 0, |_| {
                unreachable!("no completions")
            });
        }
        rec.finish().expect("finish");
        let got = sink.recorded();
        let listed: Vec<(&str, u32, Option<&str>)> = got
            .sites
            .iter()
            .map(|s| (s.file.as_str(), s.line, s.function.as_deref()))
            .collect();
        assert_eq!(
            listed,
            [
                ("prog.py", 12, Some("exchange")),
                ("prog.py", 20, Some("main"))
            ]
        );
        let sites: Vec<Option<u64>> = got
            .events
            .iter()
            .map(|e| match e {
                Event::Call(c) => c.args.site,
                _ => None,
            })
            .collect();
        assert_eq!(sites, [Some(1), Some(2), Some(1), Some(2)]);
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
