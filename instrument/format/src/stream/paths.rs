//! The call-paths frame: the call paths (`overlap trace --callpath N`) a rank's calls
//! name by their site word. A call that recorded its path carries, as its site, a word
//! with [`CALL_PATH_TAG`] set whose low bits number the path; the path's frames (return
//! addresses, the call site first, then its callers outwards) are defined once, in the
//! frame written at the writer's first drain after the path was first used. A path is
//! a rank's, not a thread's: the frame may come after the first call naming it, so a
//! reader resolves paths once the whole file is read.
//!
//! ```text
//! payload := n u32 | n × (word u64 | k u16 | k × frame u64)   (LE)
//! ```

use crate::schema::CallPath;

/// Set on a site word that names a call path (the low bits its number), clear on a code
/// address (user-space addresses end far below 2^62) and on a source site
/// ([`super::codec::SOURCE_SITE_TAG`], bit 63).
pub const CALL_PATH_TAG: u64 = 1 << 62;

/// The payload of a call-paths frame of `paths`.
pub fn payload(paths: &[CallPath]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + paths.len() * 40);
    out.extend_from_slice(&(paths.len() as u32).to_le_bytes());
    for p in paths {
        out.extend_from_slice(&p.site.to_le_bytes());
        let frames = &p.frames[..p.frames.len().min(usize::from(u16::MAX))];
        out.extend_from_slice(&(frames.len() as u16).to_le_bytes());
        for f in frames {
            out.extend_from_slice(&f.to_le_bytes());
        }
    }
    out
}

/// The paths of a frame's payload, or why it is not one.
pub fn decode(payload: &[u8]) -> Result<Vec<CallPath>, String> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let bytes = payload
            .get(at..at + n)
            .ok_or_else(|| format!("a call-paths frame cut at byte {at} of {}", payload.len()))?;
        at += n;
        Ok(bytes)
    };
    let u64_of = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    let n = u32::from_le_bytes(take(4)?.try_into().unwrap_or([0; 4]));
    let mut paths = Vec::new();
    for _ in 0..n {
        let site = u64_of(take(8)?);
        let k = u16::from_le_bytes(take(2)?.try_into().unwrap_or([0; 2]));
        let frames = (0..k)
            .map(|_| take(8).map(u64_of))
            .collect::<Result<Vec<u64>, String>>()?;
        if site & CALL_PATH_TAG == 0 || frames.is_empty() {
            return Err(format!(
                "a call path with site word {site:#x} and {} frame(s): not a path",
                frames.len()
            ));
        }
        paths.push(CallPath { site, frames });
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip_and_bad_ones_are_refused() {
        let paths = vec![
            CallPath {
                site: CALL_PATH_TAG | 1,
                frames: vec![0x5555_0000_1234, 0x5555_0000_0abc],
            },
            CallPath {
                site: CALL_PATH_TAG | 2,
                frames: vec![0x7f00_0000_0001],
            },
        ];
        assert_eq!(decode(&payload(&paths)), Ok(paths.clone()));
        let p = payload(&paths);
        assert!(decode(&p[..p.len() - 1]).is_err(), "cut");
        let untagged = payload(&[CallPath {
            site: 0x1234,
            frames: vec![1],
        }]);
        assert!(decode(&untagged)
            .expect_err("untagged")
            .contains("not a path"));
    }
}
