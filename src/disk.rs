//! Whether a file system is full, so that what a full disk did (ranks whose files stop
//! short, a merge that cannot be written) is named as its doing, not mistaken for a
//! killed rank or a program that is not an MPI program.

use std::path::Path;

/// Below this many free bytes a file system counts as full: a rank's next page of
/// events (its flush) would not fit.
const FULL_BELOW: u64 = 1 << 20;

/// Free bytes (for an unprivileged writer) of the file system holding `path`, or of
/// its nearest existing ancestor.
fn free_bytes(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(existing.as_os_str()))
        .ok()?;
    // SAFETY: statvfs(3) into a zeroed struct, with a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

/// A line naming the full file system that holds `path`, when it is full.
pub(crate) fn full_note(path: &Path) -> Option<String> {
    let free = free_bytes(path)?;
    (free < FULL_BELOW).then(|| {
        format!(
            "the file system holding {} is full ({} KiB free): files written there stop \
             short (No space left on device)",
            path.display(),
            free / 1024
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roomy_file_system_is_not_full_and_a_missing_path_asks_its_parent() {
        let dir = std::env::temp_dir();
        assert!(free_bytes(&dir).is_some());
        assert_eq!(
            free_bytes(&dir.join("no/such/file")),
            free_bytes(&dir),
            "the nearest existing ancestor"
        );
    }
}
