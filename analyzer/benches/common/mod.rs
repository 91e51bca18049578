//! What the analyzer's benches share (each bench is its own crate: they include this
//! file with `#[path]`).

/// Peak resident memory of this process, bytes (Linux's VmHWM). An error, never 0,
/// when it cannot be read: a bench must not print a peak it did not measure.
pub fn peak_rss() -> Result<u64, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("peak memory unknown: /proc/self/status: {e}"))?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| "peak memory unknown: no VmHWM line in /proc/self/status".to_string())
}

/// A clock synchronisation of a generated rank: every rank of a generated run reads one
/// clock, so its offset, error and round trip are 0.
pub fn zero_sync(phase: overlap_format::schema::SyncPhase) -> overlap_format::schema::ClockSync {
    overlap_format::schema::ClockSync {
        phase,
        local_ns: 0,
        offset_ns: 0,
        error_ns: 0,
        rtt_ns: 0,
        rounds: 0,
    }
}
