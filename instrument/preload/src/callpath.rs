//! Call paths (`overlap trace --callpath N`, `OVERLAP_CALLPATH=N`): each recorded call
//! names the N innermost frames of the program's stack at the call, not only the line
//! that made it, so that a wait inside a helper (`comm_wait_all`) is told apart by the
//! helper's callers, as mpiP's `-k N` does.
//!
//! The stack is unwound with the unwinder every C++ program already has
//! (`_Unwind_Backtrace`, libgcc_s, from the objects' `.eh_frame` tables): it needs no
//! frame pointers, which optimised code omits. It starts in the preload's own frames;
//! the program's frames begin at the call's return address, which the entry trampoline
//! noted (the site word), and the N frames are taken from there outwards. A path is
//! numbered once per rank ([`CALL_PATH_TAG`] set on its number) and its frames reach
//! the rank file in a call-paths frame at the writer's next drain
//! ([`payload_of_new`]). When the unwinder cannot find the call's frame, the call keeps
//! its bare site.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use overlap_instrument::fxhash::FxHashMap;
use overlap_instrument::recorder::{CALLPATH_ENV, CALL_PATH_TAG};
use overlap_instrument::schema::CallPath;

/// Frames of the program's stack to record; 1 (the call site alone) until
/// [`configure`] reads more from the environment.
static DEPTH: AtomicUsize = AtomicUsize::new(1);

/// The most frames a path holds (`overlap trace` accepts up to 16).
const MAX_DEPTH: usize = 16;

/// Frames the unwinder walks at most: the preload's own (a few) and the path's.
const MAX_WALK: usize = MAX_DEPTH + 32;

/// The paths numbered so far, and those not yet written.
struct Paths {
    ids: FxHashMap<Vec<u64>, u64>,
    unwritten: Vec<CallPath>,
}

static PATHS: Mutex<Option<Paths>> = Mutex::new(None);

/// Reads `OVERLAP_CALLPATH` (a number of frames, 1 to 16; anything else leaves the
/// call site alone).
pub(crate) fn configure() {
    let depth = std::env::var(CALLPATH_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|d| (2..=MAX_DEPTH).contains(d))
        .unwrap_or(1);
    DEPTH.store(depth, Ordering::Relaxed);
}

/// The site word to record for a call made from return address `site`: `site` itself,
/// or, when paths are asked for and the stack could be unwound to it, its path's word.
#[inline]
pub(crate) fn of(site: u64) -> u64 {
    let depth = DEPTH.load(Ordering::Relaxed);
    if depth <= 1 || site == 0 {
        return site;
    }
    path_of(site, depth).unwrap_or(site)
}

#[cold]
fn path_of(site: u64, depth: usize) -> Option<u64> {
    let frames = unwind_from(site, depth)?;
    let mut guard = PATHS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let paths = guard.get_or_insert_with(|| Paths {
        ids: FxHashMap::default(),
        unwritten: Vec::new(),
    });
    if let Some(&word) = paths.ids.get(&frames) {
        return Some(word);
    }
    let word = CALL_PATH_TAG | (paths.ids.len() as u64 + 1);
    paths.unwritten.push(CallPath {
        site: word,
        frames: frames.clone(),
    });
    paths.ids.insert(frames, word);
    Some(word)
}

/// The call-paths frame's payload of the paths numbered since the last one given.
pub(crate) fn payload_of_new() -> Option<Vec<u8>> {
    let mut guard = PATHS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let paths = guard.as_mut()?;
    if paths.unwritten.is_empty() {
        return None;
    }
    let new = std::mem::take(&mut paths.unwritten);
    Some(overlap_instrument::recorder::call_paths_payload(&new))
}

/// `_Unwind_Backtrace`'s callback result: go on, or stop.
const URC_NO_REASON: c_int = 0;
const URC_END_OF_STACK: c_int = 5;

#[allow(non_camel_case_types)]
type _Unwind_Trace_Fn = extern "C" fn(*mut c_void, *mut c_void) -> c_int;

unsafe extern "C" {
    fn _Unwind_Backtrace(trace: _Unwind_Trace_Fn, arg: *mut c_void) -> c_int;
    fn _Unwind_GetIP(context: *mut c_void) -> usize;
}

/// What the walk collects: return addresses, innermost first, until `depth` of them
/// from `site` on (the frames outside it are not walked: unwinding costs per frame).
struct Walk {
    ips: [u64; MAX_WALK],
    n: usize,
    site: u64,
    depth: usize,
    /// Where `site` was found among `ips`.
    found: Option<usize>,
}

extern "C" fn step(context: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Walk` `unwind_from` passed, alive for the walk; `context`
    // is the unwinder's, valid during this callback.
    let walk = unsafe { &mut *arg.cast::<Walk>() };
    if walk.n == MAX_WALK {
        return URC_END_OF_STACK;
    }
    // SAFETY: as above.
    let ip = unsafe { _Unwind_GetIP(context) } as u64;
    walk.ips[walk.n] = ip;
    if walk.found.is_none() && ip == walk.site {
        walk.found = Some(walk.n);
    }
    walk.n += 1;
    match walk.found {
        Some(at) if walk.n - at >= walk.depth => URC_END_OF_STACK,
        _ => URC_NO_REASON,
    }
}

/// The `depth` frames of the stack from the frame whose return address is `site`
/// outwards; `None` when the walk does not reach it.
#[inline(never)]
fn unwind_from(site: u64, depth: usize) -> Option<Vec<u64>> {
    let mut walk = Walk {
        ips: [0; MAX_WALK],
        n: 0,
        site,
        depth,
        found: None,
    };
    // SAFETY: `step` matches the unwinder's callback type and only writes `walk`.
    unsafe { _Unwind_Backtrace(step, (&raw mut walk).cast()) };
    let at = walk.found?;
    Some(
        walk.ips[at..walk.n]
            .iter()
            .take(depth)
            .copied()
            .filter(|&ip| ip != 0)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn inner() -> Option<Vec<u64>> {
        // The unwinder's first frames are this test's own: find one of them, the
        // return address into `outer`, by walking once with a large depth.
        let mut walk = Walk {
            ips: [0; MAX_WALK],
            n: 0,
            site: 0,
            depth: MAX_WALK,
            found: None,
        };
        // SAFETY: as in `unwind_from`.
        unsafe { _Unwind_Backtrace(step, (&raw mut walk).cast()) };
        let into_caller = *walk.ips.get(1)?;
        unwind_from(into_caller, 3)
    }

    #[test]
    fn the_walk_starts_at_the_site_and_takes_its_callers() {
        let path = std::hint::black_box(inner()).expect("the walk reaches the frame");
        assert!(!path.is_empty() && path.len() <= 3, "{path:?}");
        assert!(path.iter().all(|&ip| ip != 0));
        assert_eq!(unwind_from(0x10, 3), None, "an address on no frame");
    }
}
