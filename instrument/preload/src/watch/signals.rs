//! SIGSEGV for the watch, and the program's own use of it left as it was.
//!
//! Our handler is installed at `MPI_Init` with `SA_SIGINFO` (it needs the fault's
//! address and the faulting context), `SA_ONSTACK` (a program that gave the thread an
//! alternate stack wants faults handled there: its stack may be the fault) and
//! `SA_NODEFER` (nothing of ours is blocked while it runs, so the mask a fault finds is
//! the program's). A fault on a watched page ends that watch and returns: the
//! instruction runs again. Any other fault is the program's: the watch stops for the
//! rest of the run, the program's disposition goes back to the kernel exactly as it set
//! it, and the handler returns, so the instruction faults again and the kernel delivers
//! it as if the preload were not there (a handler with its own flags and mask, the
//! default action with its core dump, `SIG_IGN`, which the kernel overrides for a fault).
//! A SIGSEGV sent by `kill` or `raise` is sent again to the same thread, with its
//! information, after the disposition is restored.
//!
//! Meanwhile the program's `sigaction`, `signal` and their System V and BSD twins for
//! SIGSEGV are remembered, not given to the kernel, and queries return what the program
//! set (a handler it installed before `MPI_Init`, or the MPI library's, is the one found
//! when ours is installed). A program that blocks SIGSEGV (`sigprocmask`,
//! `pthread_sigmask`, `sigblock`, `sighold`...), or installs a handler for another
//! signal that blocks SIGSEGV while it runs, would die on a watched page: the watch stops
//! first and the program's disposition goes back to the kernel.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use libc::{sigaction as SigAction, siginfo_t, sigset_t};
use overlap_instrument::schema::{Touch, WatchEnd};

use super::real::{call_next, Next};
use super::slots::{self, Fault};

/// `SA_RESTORER` (x86-64 Linux): glibc gives every disposition it sets its restorer.
const SA_RESTORER: c_int = 0x0400_0000;
/// `si_code` of a fault on a mapped page the access was not allowed to.
const SEGV_ACCERR: c_int = 2;

/// True while our handler is the kernel's SIGSEGV disposition.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The program's SIGSEGV disposition while ours is installed, readable from the
/// handler: a sequence count (odd while it is being written), the handler, the flags
/// and the mask's words.
static SEQ: AtomicU64 = AtomicU64::new(0);
static HANDLER: AtomicUsize = AtomicUsize::new(0);
static FLAGS: AtomicU64 = AtomicU64::new(0);
const MASK_WORDS: usize = std::mem::size_of::<sigset_t>() / 8;
static MASK: [AtomicU64; MASK_WORDS] = [const { AtomicU64::new(0) }; MASK_WORDS];
/// The restorer glibc gives every disposition it sets (copied from ours).
static RESTORER: AtomicUsize = AtomicUsize::new(0);

/// Serialises the writers of the program's disposition and the installation.
static WRITING: Mutex<()> = Mutex::new(());

static SIGACTION: Next = Next::new(c"sigaction");

fn next_sigaction(sig: c_int, act: *const SigAction, old: *mut SigAction) -> c_int {
    call_next!(
        SIGACTION,
        unsafe extern "C" fn(c_int, *const SigAction, *mut SigAction) -> c_int,
        -1,
        (sig, act, old)
    )
}

/// Notes `act` as the program's disposition (the caller holds [`WRITING`]).
fn remember(act: &SigAction, restorer: bool) {
    SEQ.fetch_add(1, Ordering::AcqRel);
    HANDLER.store(act.sa_sigaction, Ordering::Relaxed);
    let mut flags = act.sa_flags as u64;
    if restorer {
        flags |= SA_RESTORER as u64;
    }
    FLAGS.store(flags, Ordering::Relaxed);
    // SAFETY: sigset_t is plain words.
    let words: [u64; MASK_WORDS] = unsafe { std::mem::transmute_copy(&act.sa_mask) };
    for (w, v) in MASK.iter().zip(words) {
        w.store(v, Ordering::Relaxed);
    }
    SEQ.fetch_add(1, Ordering::AcqRel);
}

/// The program's disposition, as `sigaction` would report it. Async-signal-safe.
fn program() -> SigAction {
    loop {
        let before = SEQ.load(Ordering::Acquire);
        if before % 2 == 1 {
            std::hint::spin_loop();
            continue;
        }
        // SAFETY: an all-zero sigaction is valid.
        let mut act: SigAction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = HANDLER.load(Ordering::Relaxed);
        act.sa_flags = FLAGS.load(Ordering::Relaxed) as c_int;
        let words: [u64; MASK_WORDS] = std::array::from_fn(|i| MASK[i].load(Ordering::Relaxed));
        // SAFETY: sigset_t is plain words.
        act.sa_mask = unsafe { std::mem::transmute_copy(&words) };
        if act.sa_flags & SA_RESTORER != 0 {
            // SAFETY: the restorer glibc set for our handler, a function or 0 (None).
            act.sa_restorer =
                unsafe { std::mem::transmute_copy(&RESTORER.load(Ordering::Relaxed)) };
        }
        if SEQ.load(Ordering::Acquire) == before {
            return act;
        }
    }
}

/// Installs our handler, remembering the disposition it replaces; refused (with why)
/// when the program already blocks SIGSEGV on a thread or has a handler that blocks it.
pub(super) fn install() -> Result<(), String> {
    if let Some(thread) = thread_blocking_segv() {
        return Err(format!("thread {thread} blocks SIGSEGV"));
    }
    for sig in 1..libc::SIGRTMAX() {
        // SAFETY: a query into a zeroed struct.
        let mut d: SigAction = unsafe { std::mem::zeroed() };
        if sig != libc::SIGSEGV
            && next_sigaction(sig, std::ptr::null(), &mut d) == 0
            && is_function(d.sa_sigaction)
            && blocks_segv(&d.sa_mask)
        {
            return Err(format!("the handler of signal {sig} blocks SIGSEGV"));
        }
    }
    let _w = WRITING.lock().unwrap_or_else(PoisonError::into_inner);
    // SAFETY: zeroed structs, filled as sigaction(2) says.
    let mut ours: SigAction = unsafe { std::mem::zeroed() };
    ours.sa_sigaction = on_segv as extern "C" fn(c_int, *mut siginfo_t, *mut c_void) as usize;
    ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
    // SAFETY: as above.
    let mut old: SigAction = unsafe { std::mem::zeroed() };
    if next_sigaction(libc::SIGSEGV, std::ptr::null(), &mut old) != 0 {
        return Err("SIGSEGV's disposition cannot be read".into());
    }
    remember(&old, false);
    INSTALLED.store(true, Ordering::Release);
    if next_sigaction(libc::SIGSEGV, &ours, std::ptr::null_mut()) != 0 {
        INSTALLED.store(false, Ordering::Release);
        return Err("the SIGSEGV handler cannot be installed".into());
    }
    // SAFETY: as above.
    let mut now: SigAction = unsafe { std::mem::zeroed() };
    if next_sigaction(libc::SIGSEGV, std::ptr::null(), &mut now) == 0 {
        RESTORER.store(now.sa_restorer.map_or(0, |f| f as usize), Ordering::Relaxed);
    }
    Ok(())
}

/// Gives the program's disposition back to the kernel. Async-signal-safe (the handler
/// calls it; nothing is locked).
pub(super) fn uninstall() {
    if INSTALLED.swap(false, Ordering::AcqRel) {
        let act = program();
        next_sigaction(libc::SIGSEGV, &act, std::ptr::null_mut());
    }
}

/// Stops the watch and gives SIGSEGV back (async-signal-safe).
fn give_back(why: WatchEnd) {
    super::stop(why);
    uninstall();
}

fn is_function(handler: usize) -> bool {
    handler != libc::SIG_DFL && handler != libc::SIG_IGN && handler != libc::SIG_ERR
}

fn blocks_segv(mask: &sigset_t) -> bool {
    // SAFETY: a valid set.
    unsafe { libc::sigismember(mask, libc::SIGSEGV) == 1 }
}

/// A thread of the process whose mask blocks SIGSEGV (from `/proc/self/task`). A thread
/// being made has every signal blocked until it starts (glibc's `pthread_create`): one
/// that still blocks SIGSEGV 50 ms later does so for good.
fn thread_blocking_segv() -> Option<String> {
    let blocking = || -> Option<String> {
        let bit = 1u64 << (libc::SIGSEGV - 1);
        std::fs::read_dir("/proc/self/task")
            .ok()?
            .filter_map(Result::ok)
            .find_map(|task| {
                let status = std::fs::read_to_string(task.path().join("status")).ok()?;
                let blocked = status.lines().find_map(|l| l.strip_prefix("SigBlk:"))?;
                let blocked = u64::from_str_radix(blocked.trim(), 16).ok()?;
                (blocked & bit != 0).then(|| task.file_name().to_string_lossy().into_owned())
            })
    };
    for _ in 0..10 {
        blocking()?;
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    blocking()
}

extern "C" fn on_segv(sig: c_int, info: *mut siginfo_t, ctx: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo and ucontext to an SA_SIGINFO handler.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as u64) };
    let from_kernel = code > 0;
    if from_kernel {
        // SAFETY: as above; x86-64's general registers.
        let (err, rip) = unsafe {
            let gregs = &(*ctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs;
            (
                gregs[libc::REG_ERR as usize] as u64,
                gregs[libc::REG_RIP as usize] as u64,
            )
        };
        // Bit 1 of the page-fault error code: the access was a write.
        let touch = if err & 2 != 0 {
            Touch::Write
        } else {
            Touch::Read
        };
        match slots::fault(addr, touch, rip, super::now) {
            Fault::Ours | Fault::Busy => {
                crate::thread::swap_fault_retry(0);
                return;
            }
            Fault::NotOurs => {}
        }
        // A watch another thread just ended may have been what faulted: run the
        // instruction once more before taking it for the program's.
        if code == SEGV_ACCERR && crate::thread::swap_fault_retry(addr) != addr {
            return;
        }
        crate::thread::swap_fault_retry(0);
    }
    give_back(WatchEnd::Signals);
    if !from_kernel {
        // Sent by kill, raise or sigqueue: send it again, now to the program's
        // disposition, with the same information.
        // SAFETY: the thread's own ids and the siginfo the kernel gave us.
        unsafe {
            libc::syscall(
                libc::SYS_rt_tgsigqueueinfo,
                libc::getpid(),
                libc::gettid(),
                sig,
                info,
            );
        }
    }
}

/// `sigaction` for SIGSEGV while ours is installed: the program's disposition is
/// remembered and reported, ours stays. Other signals go to the kernel, after the watch
/// stops if their handler would block SIGSEGV.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const SigAction,
    old: *mut SigAction,
) -> c_int {
    if !super::asked() {
        return next_sigaction(sig, act, old);
    }
    if sig == libc::SIGSEGV {
        let _w = WRITING.lock().unwrap_or_else(PoisonError::into_inner);
        if INSTALLED.load(Ordering::Acquire) {
            // SAFETY: the program's pointers, each null or valid, as sigaction(2) says.
            unsafe {
                if let Some(old) = old.as_mut() {
                    *old = program();
                }
                if let Some(act) = act.as_ref() {
                    remember(act, true);
                }
            }
            return 0;
        }
    }
    // SAFETY: the program's pointer, null or valid.
    if let Some(a) = unsafe { act.as_ref() } {
        if sig != libc::SIGSEGV && is_function(a.sa_sigaction) && blocks_segv(&a.sa_mask) {
            give_back(WatchEnd::Signals);
        }
    }
    next_sigaction(sig, act, old)
}

/// `__sigaction`, glibc's other name for it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __sigaction(
    sig: c_int,
    act: *const SigAction,
    old: *mut SigAction,
) -> c_int {
    // SAFETY: the program's arguments, passed on.
    unsafe { sigaction(sig, act, old) }
}

/// `signal` and its kin for SIGSEGV while ours is installed, as glibc makes them:
/// `flags` and the mask holding the signal itself when `mask_self`.
fn set_by_signal(handler: usize, flags: c_int, mask_self: bool) -> usize {
    // SAFETY: a zeroed struct, filled as glibc's signal() fills it.
    let mut act: SigAction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler;
    act.sa_flags = flags;
    if mask_self {
        // SAFETY: a valid set.
        unsafe { libc::sigaddset(&mut act.sa_mask, libc::SIGSEGV) };
    }
    // SAFETY: as above.
    let mut old: SigAction = unsafe { std::mem::zeroed() };
    // SAFETY: valid structs.
    if unsafe { sigaction(libc::SIGSEGV, &act, &mut old) } != 0 {
        return libc::SIG_ERR;
    }
    old.sa_sigaction
}

/// True when `signal`-like calls on `sig` are ours to answer.
fn ours(sig: c_int) -> bool {
    sig == libc::SIGSEGV && INSTALLED.load(Ordering::Acquire)
}

macro_rules! signal_like {
    ($($name:ident, $c:literal, $flags:expr, $mask_self:expr;)+) => {$(
        #[unsafe(no_mangle)]
        #[allow(missing_docs)]
        pub unsafe extern "C" fn $name(sig: c_int, handler: usize) -> usize {
            static NEXT: Next = Next::new($c);
            if super::asked() && ours(sig) {
                return set_by_signal(handler, $flags, $mask_self);
            }
            call_next!(NEXT, unsafe extern "C" fn(c_int, usize) -> usize, libc::SIG_ERR, (sig, handler))
        }
    )+};
}

signal_like! {
    signal, c"signal", libc::SA_RESTART, true;
    bsd_signal, c"bsd_signal", libc::SA_RESTART, true;
    ssignal, c"ssignal", libc::SA_RESTART, true;
    sysv_signal, c"sysv_signal", libc::SA_RESETHAND | libc::SA_NODEFER, false;
    __sysv_signal, c"__sysv_signal", libc::SA_RESETHAND | libc::SA_NODEFER, false;
}

/// The System V calls that change SIGSEGV's disposition or block it (`sigset`,
/// `sigignore`, `sighold`): rare enough that the watch simply stops first.
macro_rules! system_v {
    ($($name:ident, $c:literal;)+) => {$(
        #[unsafe(no_mangle)]
        #[allow(missing_docs)]
        pub unsafe extern "C" fn $name(sig: c_int, handler: usize) -> usize {
            static NEXT: Next = Next::new($c);
            if super::asked() && sig == libc::SIGSEGV {
                give_back(WatchEnd::Signals);
            }
            call_next!(NEXT, unsafe extern "C" fn(c_int, usize) -> usize, libc::SIG_ERR, (sig, handler))
        }
    )+};
}

system_v! {
    sigset, c"sigset";
    sigignore, c"sigignore";
    sighold, c"sighold";
}

/// True when `how` with `set` leaves SIGSEGV blocked.
fn would_block(how: c_int, set: *const sigset_t) -> bool {
    // SAFETY: the program's set, null or valid.
    let Some(set) = (unsafe { set.as_ref() }) else {
        return false;
    };
    (how == libc::SIG_BLOCK || how == libc::SIG_SETMASK) && blocks_segv(set)
}

macro_rules! masks {
    ($($name:ident, $c:literal;)+) => {$(
        #[unsafe(no_mangle)]
        #[allow(missing_docs)]
        pub unsafe extern "C" fn $name(how: c_int, set: *const sigset_t, old: *mut sigset_t) -> c_int {
            static NEXT: Next = Next::new($c);
            if super::asked() && would_block(how, set) {
                give_back(WatchEnd::Signals);
            }
            call_next!(
                NEXT,
                unsafe extern "C" fn(c_int, *const sigset_t, *mut sigset_t) -> c_int,
                -1,
                (how, set, old)
            )
        }
    )+};
}

masks! {
    sigprocmask, c"sigprocmask";
    pthread_sigmask, c"pthread_sigmask";
}

/// `sigblock` and `sigsetmask` (BSD): a mask of the first 32 signals.
macro_rules! bsd_masks {
    ($($name:ident, $c:literal;)+) => {$(
        #[unsafe(no_mangle)]
        #[allow(missing_docs)]
        pub unsafe extern "C" fn $name(mask: c_int) -> c_int {
            static NEXT: Next = Next::new($c);
            if super::asked() && mask & (1 << (libc::SIGSEGV - 1)) != 0 {
                give_back(WatchEnd::Signals);
            }
            call_next!(NEXT, unsafe extern "C" fn(c_int) -> c_int, -1, (mask))
        }
    )+};
}

bsd_masks! {
    sigblock, c"sigblock";
    sigsetmask, c"sigsetmask";
}
