//! System calls that hand the program's memory to the kernel. The kernel does not fault
//! on a protected page as the program would: the call fails with `EFAULT`. So the libc
//! functions that pass a buffer to the kernel without touching it in user mode first
//! are wrapped: each ends the watches over its buffers before the call, as their first
//! touch (a write when the kernel fills the buffer, `read(2)`; a read when it takes it,
//! `write(2)`), by the instruction that called it, and keeps its buffers from being
//! watched until it returns. `read(2)` into a send buffer then works as ever, and is
//! that buffer's first write.
//!
//! Wrapped: `read`, `pread(64)`, `readv`, `preadv(64)(v2)`, `recv`, `recvfrom`,
//! `recvmsg`, `recvmmsg`, `fread(_unlocked)`, `write`, `pwrite(64)`, `writev`,
//! `pwritev(64)(v2)`, `send`, `sendto`, `sendmsg`, `sendmmsg`, `fwrite(_unlocked)`,
//! `getrandom`, `getentropy`, `process_vm_readv`, `process_vm_writev`, and the
//! `_FORTIFY_SOURCE` forms a program compiled with it calls instead (`__read_chk`,
//! `__fread_chk`...). Not wrapped (docs/buffers.md says why): `ioctl`, raw `syscall`,
//! path names, `io_uring` and asynchronous I/O.
//!
//! Each wrapper is entered through a trampoline that notes its caller's return address
//! in the thread's `libc_site` word (as the MPI entry points do with theirs), so the
//! touch names the program's line.

use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use libc::{c_void, iovec, mmsghdr, msghdr, size_t, ssize_t, FILE};
use overlap_instrument::schema::Touch;

use super::memory::overlap;
use super::real::{call_next, Next};
use super::slots::{self, Ending};

/// Ranges inside a wrapped system call: (lo, hi), free while lo is 0.
const IN_CALLS: usize = 128;
static RANGES: [(AtomicU64, AtomicU64); IN_CALLS] =
    [const { (AtomicU64::new(0), AtomicU64::new(0)) }; IN_CALLS];
/// Ranges of one call looked at one by one.
const LISTED: usize = 64;
/// Calls that found no free entry: while any is running, nothing is armed.
static OVERFLOW: AtomicUsize = AtomicUsize::new(0);

/// True when a wrapped system call now running uses memory in `[lo, hi)`.
pub(super) fn in_system_call(lo: u64, hi: u64) -> bool {
    OVERFLOW.load(Ordering::SeqCst) != 0
        || RANGES.iter().any(|(a, b)| {
            let a = a.load(Ordering::SeqCst);
            // An entry whose end is not stored yet reaches to the end of memory.
            let b = match b.load(Ordering::SeqCst) {
                0 => u64::MAX,
                b => b,
            };
            a != 0 && overlap(lo, hi, a, b)
        })
}

/// A wrapped system call's buffers: registered while it runs, and the watches over them
/// ended when it starts.
struct Kernel {
    entry: Option<usize>,
    overflowed: bool,
}

impl Kernel {
    /// Before a system call in which the kernel does `touch` to `ranges`.
    #[inline]
    fn enter<const N: usize>(touch: Touch, ranges: impl Fn() -> [(u64, u64); N]) -> Kernel {
        if !super::on() {
            return Kernel {
                entry: None,
                overflowed: false,
            };
        }
        Kernel::register(touch, &ranges())
    }

    /// [`Kernel::enter`] for buffers listed by `iovec`s (and `extra` ranges): the
    /// first [`LISTED`] are looked at one by one, the rest as one range (nothing is
    /// allocated: a signal handler may call these).
    #[inline]
    fn enter_iov(
        touch: Touch,
        lists: impl Iterator<Item = (*const iovec, usize)>,
        extra: &[(u64, u64)],
    ) -> Kernel {
        if !super::on() {
            return Kernel {
                entry: None,
                overflowed: false,
            };
        }
        let mut ranges = [(0u64, 0u64); LISTED];
        let mut k = 0;
        let mut add = |a: u64, n: u64| {
            if n == 0 || a == 0 {
                return;
            }
            if k < LISTED - 1 {
                ranges[k] = (a, n);
                k += 1;
            } else {
                let (lo, len) = ranges[LISTED - 1];
                let (lo2, hi2) = match len {
                    0 => (a, a.saturating_add(n)),
                    _ => (lo.min(a), (lo + len).max(a.saturating_add(n))),
                };
                ranges[LISTED - 1] = (lo2, hi2 - lo2);
            }
        };
        for (iov, n) in lists {
            if iov.is_null() {
                continue;
            }
            // SAFETY: the program's array of `n` iovecs, as the call it makes says.
            for v in unsafe { std::slice::from_raw_parts(iov, n) } {
                add(v.iov_base as u64, v.iov_len as u64);
            }
        }
        for &(a, n) in extra {
            add(a, n);
        }
        Kernel::register(touch, &ranges)
    }

    #[cold]
    fn register(touch: Touch, ranges: &[(u64, u64)]) -> Kernel {
        let spans = ranges
            .iter()
            .filter(|(a, n)| *a != 0 && *n != 0)
            .map(|&(a, n)| (a, a.saturating_add(n)));
        let lo = spans.clone().map(|s| s.0).min();
        let hi = spans.clone().map(|s| s.1).max();
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Kernel {
                entry: None,
                overflowed: false,
            };
        };
        let entry = RANGES.iter().position(|(a, _)| {
            a.compare_exchange(0, lo, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
        });
        match entry {
            Some(i) => RANGES[i].1.store(hi, Ordering::SeqCst),
            None => {
                OVERFLOW.fetch_add(1, Ordering::SeqCst);
            }
        }
        if slots::maybe_watched(lo, hi) {
            // The return address: the call instruction ends just before it.
            let ip = crate::thread::libc_site().saturating_sub(1);
            let at = super::now();
            let mut ended = false;
            for (a, b) in spans {
                ended |= slots::end_overlapping(a, b, at, |buf_lo, _| Ending::Touched {
                    touch,
                    addr: a.max(buf_lo),
                    ip,
                });
            }
            if ended {
                // A checkpoint for the other watches' edges, as a fault is.
                slots::checkpoint(at);
            }
        }
        Kernel {
            entry,
            overflowed: entry.is_none(),
        }
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        if let Some(i) = self.entry {
            RANGES[i].1.store(0, Ordering::SeqCst);
            RANGES[i].0.store(0, Ordering::SeqCst);
        }
        if self.overflowed {
            OVERFLOW.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn fail_ssize() -> ssize_t {
    // SAFETY: errno is the calling thread's.
    unsafe { *libc::__errno_location() = libc::ENOSYS };
    -1
}

fn fail_int() -> c_int {
    fail_ssize() as c_int
}

/// One range: `n` bytes at `p`.
fn one(p: *const c_void, n: size_t) -> [(u64, u64); 1] {
    [(p as u64, n as u64)]
}

/// The buffers a message header names: its data, its control data and its address.
fn of_msg(m: *const msghdr, touch: Touch) -> Kernel {
    // SAFETY: the program's header, null or valid.
    let Some(m) = (unsafe { m.as_ref() }) else {
        return Kernel::enter(touch, || [(0, 0)]);
    };
    let extra = [
        (m.msg_name as u64, u64::from(m.msg_namelen)),
        (m.msg_control as u64, m.msg_controllen as u64),
    ];
    Kernel::enter_iov(
        touch,
        std::iter::once((m.msg_iov.cast_const(), m.msg_iovlen)),
        &extra,
    )
}

/// The buffers of `n` message headers.
fn of_mmsg(v: *const mmsghdr, n: u32, touch: Touch) -> Kernel {
    if v.is_null() {
        return Kernel::enter(touch, || [(0, 0)]);
    }
    // SAFETY: the program's array of `n` headers.
    let v = unsafe { std::slice::from_raw_parts(v, n as usize) };
    let lists = v
        .iter()
        .map(|m| (m.msg_hdr.msg_iov.cast_const(), m.msg_hdr.msg_iovlen));
    Kernel::enter_iov(touch, lists, &[])
}

/// Exports each `$name` as a trampoline that notes its caller's return address, then
/// jumps to `$wrapper`.
macro_rules! trampolines {
    ($($name:ident => $wrapper:ident;)+) => {$(
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        #[allow(non_snake_case, missing_docs)]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                "mov r11, qword ptr [rsp]",
                "mov r10, qword ptr [rip + overlap_preload_thread@GOTTPOFF]",
                "mov qword ptr fs:[r10 + {offset}], r11",
                "jmp {wrapper}",
                offset = const crate::thread::LIBC_SITE_OFFSET,
                wrapper = sym $wrapper,
            )
        }
    )+};
}

/// Defines each wrapper: `name(args) -> ret, fail, guard;` where `guard` (evaluated with
/// the arguments in scope) registers the buffers, and `fail` is returned when libc has
/// no such function.
macro_rules! wrappers {
    ($($wrapper:ident = $c:literal ($($arg:ident: $ty:ty),*) -> $ret:ty, $fail:expr, $guard:expr;)+) => {$(
        unsafe extern "C" fn $wrapper($($arg: $ty),*) -> $ret {
            static NEXT: Next = Next::new($c);
            let _kernel = $guard;
            call_next!(NEXT, unsafe extern "C" fn($($ty),*) -> $ret, $fail, ($($arg),*))
        }
    )+};
}

use Touch::{Read as R, Write as W};

wrappers! {
    w_read = c"read" (fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t,
        fail_ssize(), Kernel::enter(W, || one(buf, n));
    w_read_chk = c"__read_chk" (fd: c_int, buf: *mut c_void, n: size_t, len: size_t) -> ssize_t,
        fail_ssize(), Kernel::enter(W, || one(buf, n));
    w_pread = c"pread" (fd: c_int, buf: *mut c_void, n: size_t, off: i64) -> ssize_t,
        fail_ssize(), Kernel::enter(W, || one(buf, n));
    w_pread64 = c"pread64" (fd: c_int, buf: *mut c_void, n: size_t, off: i64) -> ssize_t,
        fail_ssize(), Kernel::enter(W, || one(buf, n));
    w_pread_chk = c"__pread_chk" (fd: c_int, buf: *mut c_void, n: size_t, off: i64, len: size_t) -> ssize_t,
        fail_ssize(), Kernel::enter(W, || one(buf, n));
    w_pread64_chk = c"__pread64_chk" (fd: c_int, buf: *mut c_void, n: size_t, off: i64, len: size_t) -> ssize_t,
        fail_ssize(), Kernel::enter(W, || one(buf, n));
    w_readv = c"readv" (fd: c_int, iov: *const iovec, n: c_int) -> ssize_t,
        fail_ssize(), Kernel::enter_iov(W, std::iter::once((iov, n.max(0) as usize)), &[]);
    w_preadv = c"preadv" (fd: c_int, iov: *const iovec, n: c_int, off: i64) -> ssize_t,
        fail_ssize(), Kernel::enter_iov(W, std::iter::once((iov, n.max(0) as usize)), &[]);
    w_preadv64 = c"preadv64" (fd: c_int, iov: *const iovec, n: c_int, off: i64) -> ssize_t,
        fail_ssize(), Kernel::enter_iov(W, std::iter::once((iov, n.max(0) as usize)), &[]);
    w_preadv2 = c"preadv2" (fd: c_int, iov: *const iovec, n: c_int, off: i64, flags: c_int) -> ssize_t,
        fail_ssize(), Kernel::enter_iov(W, std::iter::once((iov, n.max(0) as usize)), &[]);
    w_preadv64v2 = c"preadv64v2" (fd: c_int, iov: *const iovec, n: c_int, off: i64, flags: c_int) -> ssize_t,
        fail_ssize(), Kernel::enter_iov(W, std::iter::once((iov, n.max(0) as usize)), &[]);
    w_recv = c"recv" (fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t,
        fail_ssize(), Kernel::enter(W, || one(buf, n));
    w_recv_chk = c"__recv_chk" (fd: c_int, buf: *mut c_void, n: size_t, len: size_t, flags: c_int) -> ssize_t,
        fail_ssize(), Kernel::enter(W, || one(buf, n));
    w_recvfrom = c"recvfrom" (fd: c_int, buf: *mut c_void, n: size_t, flags: c_int, addr: *mut c_void, alen: *mut u32) -> ssize_t,
        fail_ssize(), Kernel::enter(W, || one(buf, n));
    w_recvfrom_chk = c"__recvfrom_chk" (fd: c_int, buf: *mut c_void, n: size_t, len: size_t, flags: c_int, addr: *mut c_void, alen: *mut u32) -> ssize_t,
        fail_ssize(), Kernel::enter(W, || one(buf, n));
    w_recvmsg = c"recvmsg" (fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t,
        fail_ssize(), of_msg(msg, W);
    w_recvmmsg = c"recvmmsg" (fd: c_int, v: *mut mmsghdr, n: u32, flags: c_int, t: *mut c_void) -> c_int,
        fail_int(), of_mmsg(v, n, W);
    w_fread = c"fread" (p: *mut c_void, size: size_t, n: size_t, f: *mut FILE) -> size_t,
        0, Kernel::enter(W, || one(p, size.saturating_mul(n)));
    w_fread_unlocked = c"fread_unlocked" (p: *mut c_void, size: size_t, n: size_t, f: *mut FILE) -> size_t,
        0, Kernel::enter(W, || one(p, size.saturating_mul(n)));
    w_fread_chk = c"__fread_chk" (p: *mut c_void, len: size_t, size: size_t, n: size_t, f: *mut FILE) -> size_t,
        0, Kernel::enter(W, || one(p, size.saturating_mul(n)));
    w_fread_unlocked_chk = c"__fread_unlocked_chk" (p: *mut c_void, len: size_t, size: size_t, n: size_t, f: *mut FILE) -> size_t,
        0, Kernel::enter(W, || one(p, size.saturating_mul(n)));
    w_getrandom = c"getrandom" (buf: *mut c_void, n: size_t, flags: u32) -> ssize_t,
        fail_ssize(), Kernel::enter(W, || one(buf, n));
    w_getentropy = c"getentropy" (buf: *mut c_void, n: size_t) -> c_int,
        fail_int(), Kernel::enter(W, || one(buf, n));
    w_process_vm_readv = c"process_vm_readv" (pid: c_int, local: *const iovec, nl: u64, remote: *const iovec, nr: u64, flags: u64) -> ssize_t,
        fail_ssize(), Kernel::enter_iov(W, std::iter::once((local, nl as usize)), &[]);
    w_write = c"write" (fd: c_int, buf: *const c_void, n: size_t) -> ssize_t,
        fail_ssize(), Kernel::enter(R, || one(buf, n));
    w_pwrite = c"pwrite" (fd: c_int, buf: *const c_void, n: size_t, off: i64) -> ssize_t,
        fail_ssize(), Kernel::enter(R, || one(buf, n));
    w_pwrite64 = c"pwrite64" (fd: c_int, buf: *const c_void, n: size_t, off: i64) -> ssize_t,
        fail_ssize(), Kernel::enter(R, || one(buf, n));
    w_writev = c"writev" (fd: c_int, iov: *const iovec, n: c_int) -> ssize_t,
        fail_ssize(), Kernel::enter_iov(R, std::iter::once((iov, n.max(0) as usize)), &[]);
    w_pwritev = c"pwritev" (fd: c_int, iov: *const iovec, n: c_int, off: i64) -> ssize_t,
        fail_ssize(), Kernel::enter_iov(R, std::iter::once((iov, n.max(0) as usize)), &[]);
    w_pwritev64 = c"pwritev64" (fd: c_int, iov: *const iovec, n: c_int, off: i64) -> ssize_t,
        fail_ssize(), Kernel::enter_iov(R, std::iter::once((iov, n.max(0) as usize)), &[]);
    w_pwritev2 = c"pwritev2" (fd: c_int, iov: *const iovec, n: c_int, off: i64, flags: c_int) -> ssize_t,
        fail_ssize(), Kernel::enter_iov(R, std::iter::once((iov, n.max(0) as usize)), &[]);
    w_pwritev64v2 = c"pwritev64v2" (fd: c_int, iov: *const iovec, n: c_int, off: i64, flags: c_int) -> ssize_t,
        fail_ssize(), Kernel::enter_iov(R, std::iter::once((iov, n.max(0) as usize)), &[]);
    w_send = c"send" (fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t,
        fail_ssize(), Kernel::enter(R, || one(buf, n));
    w_sendto = c"sendto" (fd: c_int, buf: *const c_void, n: size_t, flags: c_int, addr: *const c_void, alen: u32) -> ssize_t,
        fail_ssize(), Kernel::enter(R, || one(buf, n));
    w_sendmsg = c"sendmsg" (fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t,
        fail_ssize(), of_msg(msg, R);
    w_sendmmsg = c"sendmmsg" (fd: c_int, v: *mut mmsghdr, n: u32, flags: c_int) -> c_int,
        fail_int(), of_mmsg(v, n, R);
    w_fwrite = c"fwrite" (p: *const c_void, size: size_t, n: size_t, f: *mut FILE) -> size_t,
        0, Kernel::enter(R, || one(p, size.saturating_mul(n)));
    w_fwrite_unlocked = c"fwrite_unlocked" (p: *const c_void, size: size_t, n: size_t, f: *mut FILE) -> size_t,
        0, Kernel::enter(R, || one(p, size.saturating_mul(n)));
    w_process_vm_writev = c"process_vm_writev" (pid: c_int, local: *const iovec, nl: u64, remote: *const iovec, nr: u64, flags: u64) -> ssize_t,
        fail_ssize(), Kernel::enter_iov(R, std::iter::once((local, nl as usize)), &[]);
}

trampolines! {
    read => w_read;
    __read_chk => w_read_chk;
    pread => w_pread;
    pread64 => w_pread64;
    __pread_chk => w_pread_chk;
    __pread64_chk => w_pread64_chk;
    readv => w_readv;
    preadv => w_preadv;
    preadv64 => w_preadv64;
    preadv2 => w_preadv2;
    preadv64v2 => w_preadv64v2;
    recv => w_recv;
    __recv_chk => w_recv_chk;
    recvfrom => w_recvfrom;
    __recvfrom_chk => w_recvfrom_chk;
    recvmsg => w_recvmsg;
    recvmmsg => w_recvmmsg;
    fread => w_fread;
    fread_unlocked => w_fread_unlocked;
    __fread_chk => w_fread_chk;
    __fread_unlocked_chk => w_fread_unlocked_chk;
    getrandom => w_getrandom;
    getentropy => w_getentropy;
    process_vm_readv => w_process_vm_readv;
    write => w_write;
    pwrite => w_pwrite;
    pwrite64 => w_pwrite64;
    writev => w_writev;
    pwritev => w_pwritev;
    pwritev64 => w_pwritev64;
    pwritev2 => w_pwritev2;
    pwritev64v2 => w_pwritev64v2;
    send => w_send;
    sendto => w_sendto;
    sendmsg => w_sendmsg;
    sendmmsg => w_sendmmsg;
    fwrite => w_fwrite;
    fwrite_unlocked => w_fwrite_unlocked;
    process_vm_writev => w_process_vm_writev;
}
