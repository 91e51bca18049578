//! The call-counts frame: what the recorder counted besides the calls it recorded
//! ([`CallCounts`]), since the rank began. The preload counts every call of every MPI
//! function its MPI's header declares and it does not record, and the completions of
//! requests no recorded call posted; its writer puts a frame of the totals on the page
//! whenever they changed, so the last frame of a file holds them (a rank killed keeps
//! those of its last flush).
//!
//! ```text
//! payload := unseen_completions u64 | n u32 | n × (len u16 | name [len] | calls u64)   (LE)
//! ```

use std::collections::BTreeMap;

use crate::schema::CallCounts;

/// The payload of a call-counts frame: `unseen_completions`, then each function's
/// name (at most 65 535 bytes: cut there) and calls.
pub fn payload<'a>(
    unseen_completions: u64,
    calls: impl ExactSizeIterator<Item = (&'a str, u64)>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(12 + calls.len() * 32);
    out.extend_from_slice(&unseen_completions.to_le_bytes());
    out.extend_from_slice(&(calls.len() as u32).to_le_bytes());
    for (name, n) in calls {
        let name = &name.as_bytes()[..name.len().min(usize::from(u16::MAX))];
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(&n.to_le_bytes());
    }
    out
}

/// The counts of a frame's payload, or why it is not one.
pub fn decode(payload: &[u8]) -> Result<CallCounts, String> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let bytes = payload
            .get(at..at + n)
            .ok_or_else(|| format!("a call-counts frame cut at byte {at} of {}", payload.len()))?;
        at += n;
        Ok(bytes)
    };
    let u64_of = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    let unseen_completions = u64_of(take(8)?);
    let n = u32::from_le_bytes(take(4)?.try_into().unwrap_or([0; 4]));
    let mut unrecorded = BTreeMap::new();
    for _ in 0..n {
        let len = u16::from_le_bytes(take(2)?.try_into().unwrap_or([0; 2]));
        let name = String::from_utf8_lossy(take(usize::from(len))?).into_owned();
        let calls = u64_of(take(8)?);
        *unrecorded.entry(name).or_insert(0) += calls;
    }
    Ok(CallCounts {
        unrecorded,
        unseen_completions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_round_trip_and_a_cut_frame_is_refused() {
        let calls = [("MPI_Pack", 12u64), ("MPI_Comm_idup", 1)];
        let p = payload(3, calls.iter().map(|(n, c)| (*n, *c)));
        let back = decode(&p).expect("decodes");
        assert_eq!(back.unseen_completions, 3);
        assert_eq!(back.unrecorded["MPI_Pack"], 12);
        assert_eq!(back.unrecorded["MPI_Comm_idup"], 1);
        let cut = decode(&p[..p.len() - 3]).expect_err("cut");
        assert!(cut.contains("cut at byte"), "{cut}");
        assert_eq!(
            decode(&payload(0, std::iter::empty())),
            Ok(CallCounts::default())
        );
    }
}
