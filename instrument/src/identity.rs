//! The run's identity, as every per-rank header carries it: a run id that rank 0
//! chooses at `MPI_Init` and broadcasts (so that every file of one run says the same,
//! and the analyzer can refuse a directory mixing runs), and the wall-clock time at
//! which recording started. Both recording layers (the preload and `TraceSession`)
//! use these, each broadcasting with its own MPI binding.

/// `CLOCK_REALTIME` now, in ns since the Unix epoch (0 if the clock cannot be read).
pub fn realtime_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    if rc != 0 || ts.tv_sec < 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A fresh run id (rank 0 picks it): the wall-clock time, this process's id and a hash
/// of `host` mixed into 64 bits, so two runs differ even when started in the same
/// nanosecond on different hosts, or by different processes on one. Never 0.
pub fn choose_run_id(host: &str) -> u64 {
    let host_hash = host.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let mixed = mix(realtime_now_ns())
        ^ mix(u64::from(std::process::id()).rotate_left(32))
        ^ mix(host_hash);
    mixed.max(1)
}

/// The run id as the header writes it: 16 lowercase hex digits.
pub fn run_id_text(id: u64) -> String {
    format!("{id:016x}")
}

/// SplitMix64's finaliser: every input bit moves about half the output bits.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_16_hex_digits_and_differ() {
        let a = run_id_text(choose_run_id("node1"));
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        // Different hosts at (about) the same time give different ids.
        assert_ne!(choose_run_id("node1"), choose_run_id("node2"));
        assert_eq!(run_id_text(0x1c), "000000000000001c");
    }

    #[test]
    fn the_wall_clock_is_after_2020() {
        assert!(realtime_now_ns() > 1_577_836_800_000_000_000);
    }
}
