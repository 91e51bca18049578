//! A rank's code maps (its executable mappings, `start-end offset path` per line as the
//! preload lists them from `/proc/self/maps`) and the arithmetic that turns a code
//! address of that process into a place in a file: which object, at which file offset,
//! and at which virtual address of the object's own layout (what DWARF and the symbol
//! table are indexed by), for position-independent and fixed-address objects alike.

use std::fmt;

/// One executable mapping: `[start, end)` of the process maps file offset `offset` of
/// `path` onwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeMap {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset mapped at `start`.
    pub offset: u64,
    /// The object file.
    pub path: String,
}

/// A line of code maps that is not `start-end offset path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapsError {
    /// Line, from 1.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for MapsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "code maps line {}: {}", self.line, self.reason)
    }
}

/// Parses code maps: one `start-end offset path` per line (hex numbers without `0x`,
/// as in `/proc/<pid>/maps`); blank lines are skipped. The path is the rest of the
/// line, so it may hold spaces.
pub fn parse(text: &str) -> Result<Vec<CodeMap>, MapsError> {
    let mut maps = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let err = |reason: String| MapsError {
            line: i + 1,
            reason,
        };
        let (range, rest) = line
            .split_once(' ')
            .ok_or_else(|| err(format!("'{line}' is not 'start-end offset path'")))?;
        let (offset, path) = rest
            .trim_start()
            .split_once(' ')
            .ok_or_else(|| err(format!("'{line}' has no path")))?;
        let (start, end) = range
            .split_once('-')
            .ok_or_else(|| err(format!("'{range}' is not a 'start-end' range")))?;
        let hex = |s: &str| {
            u64::from_str_radix(s, 16).map_err(|_| err(format!("'{s}' is not a hex number")))
        };
        let (start, end, offset) = (hex(start)?, hex(end)?, hex(offset)?);
        if end <= start {
            return Err(err(format!("range {range} is empty or reversed")));
        }
        maps.push(CodeMap {
            start,
            end,
            offset,
            path: path.trim().to_string(),
        });
    }
    Ok(maps)
}

/// The mapping holding `address`, and the file offset `address` is at in its object.
pub fn locate(maps: &[CodeMap], address: u64) -> Option<(&CodeMap, u64)> {
    let m = maps
        .iter()
        .find(|m| m.start <= address && address < m.end)?;
    Some((m, address - m.start + m.offset))
}

/// A loadable segment of an object: file bytes `[offset, offset + size)` are loaded at
/// the object's virtual address `address` (ELF `PT_LOAD`: `p_offset`, `p_filesz`,
/// `p_vaddr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// File offset.
    pub offset: u64,
    /// Bytes of the file it holds.
    pub size: u64,
    /// Virtual address in the object's layout.
    pub address: u64,
}

/// The object's virtual address of file offset `offset`: the same for a
/// position-independent object (whose layout starts near 0 and is moved as a whole when
/// loaded) and a fixed-address executable (whose layout is where it is loaded).
pub fn virtual_address(segments: &[Segment], offset: u64) -> Option<u64> {
    segments
        .iter()
        .find(|s| s.offset <= offset && offset - s.offset < s.size)
        .map(|s| offset - s.offset + s.address)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d4c2a01000-55d4c2a02000 1000 /tmp/run/calls
7f3e10228000-7f3e103bd000 28000 /usr/lib/x86_64-linux-gnu/libc.so.6

7f3e10500000-7f3e10510000 0 /opt/my app/lib x.so";

    #[test]
    fn parses_lines_and_paths_with_spaces() {
        let maps = parse(MAPS).expect("valid");
        assert_eq!(maps.len(), 3);
        assert_eq!(
            maps[0],
            CodeMap {
                start: 0x55d4_c2a0_1000,
                end: 0x55d4_c2a0_2000,
                offset: 0x1000,
                path: "/tmp/run/calls".into()
            }
        );
        assert_eq!(maps[2].path, "/opt/my app/lib x.so");
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse("1000-2000 0 /a\nzz-2000 0 /b").expect_err("bad hex");
        assert_eq!(e.line, 2);
        assert!(e.reason.contains("'zz'"), "{e}");
        assert!(parse("2000-1000 0 /a").is_err());
        assert!(parse("1000-2000 0").is_err());
    }

    #[test]
    fn an_address_becomes_a_file_offset_then_a_virtual_address() {
        let maps = parse(MAPS).expect("valid");
        // The call's return address, 0x234 into the executable's code mapping.
        let (m, offset) = locate(&maps, 0x55d4_c2a0_1234).expect("mapped");
        assert_eq!((m.path.as_str(), offset), ("/tmp/run/calls", 0x1234));
        assert!(
            locate(&maps, 0x55d4_c2a0_2000).is_none(),
            "end is exclusive"
        );
        // A PIE: file offset 0x1000 is loaded at virtual address 0x1000.
        let pie = [
            Segment {
                offset: 0,
                size: 0x6b8,
                address: 0,
            },
            Segment {
                offset: 0x1000,
                size: 0x2f5,
                address: 0x1000,
            },
        ];
        assert_eq!(
            virtual_address(&pie, 0x12f5),
            None,
            "past the segment's file bytes"
        );
        assert_eq!(virtual_address(&pie, 0x1200), Some(0x1200));
        // A fixed-address executable: the same file offset at 0x401000.
        let fixed = [Segment {
            offset: 0x1000,
            size: 0x2f5,
            address: 0x40_1000,
        }];
        assert_eq!(virtual_address(&fixed, 0x1200), Some(0x40_1200));
        // A library whose text segment is not at its file offset.
        let shifted = [Segment {
            offset: 0x28000,
            size: 0x195000,
            address: 0x29000,
        }];
        assert_eq!(virtual_address(&shifted, 0x28010), Some(0x29010));
    }
}
