//! Python programs' call sites. Under mpi4py every MPI call is made from the same few
//! lines of Cython-generated C (`mpi4py.MPI.c:113765`), so the return address the entry
//! trampoline keeps says nothing about the program. When the process runs a Python
//! interpreter (found at `MPI_Init` through its C API, [`api`]), each recorded call is
//! placed instead on the innermost Python frame of the calling thread that is the
//! program's own (not mpi4py's package, `runpy`, or the frozen import machinery:
//! [`cache::passed_over`]), as a source site with its function: `prog.py:12 (exchange)`.
//!
//! The frame is read after MPI returns, when the call is recorded, holding the GIL:
//! mpi4py releases it around every MPI call and takes it back as soon as the call
//! returns, so waiting for it there adds no wait the thread did not have already (taking
//! it before the call could wait on a thread that waits on this call). Every case where
//! the frame cannot be read safely keeps the native return address: no interpreter, or
//! one not initialized yet or finalizing (mpi4py's `MPI_Finalize` at exit runs after
//! the interpreter is torn down), a thread Python never ran on, `MPI_Abort` from a
//! thread without the GIL (the program is ending: it must not wait), a walk already
//! under way (a finalizer that calls MPI during it), a frame without a line.
//!
//! Cost: a process without Python pays one load and a predictable branch per call. With
//! it, a call takes and gives back the GIL, asks for the frame, its code and its
//! instruction (its line where the interpreter is older than 3.11), and looks the pair
//! up in [`cache::Cache`]: see docs/preload.md for the measured cost.
//! `OVERLAP_PYTHON_SITES=0` keeps native sites.

mod api;
mod cache;

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, OnceLock};

use overlap_instrument::recorder::{CallSite, NamedSite};

use api::{Api, Object};
use cache::{Cache, Described, Frame, Position};

/// Environment variable: `0` keeps the native return address as every call's site.
pub const PYTHON_SITES_ENV: &str = "OVERLAP_PYTHON_SITES";

/// Frames passed over at most before the walk gives up (mpi4py's own code is a few deep).
const MAX_FRAMES: usize = 64;

/// Whether a call may wait for the GIL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gil {
    /// Take it, waiting if another thread holds it (the thread takes it back right after
    /// the call anyway).
    Wait,
    /// Only when this thread holds it already (`MPI_Abort`).
    IfHeld,
}

/// The interpreter found at `MPI_Init`, and what the walk learnt.
struct Python {
    api: Api,
    cache: Mutex<Cache>,
    /// The package directories of the MPI bindings, once one is imported: looked for
    /// whenever a code object is met until then (an interpreter started after
    /// `MPI_Init` imports mpi4py later; a program without mpi4py never does).
    packages: OnceLock<Vec<String>>,
}

static PYTHON: AtomicPtr<Python> = AtomicPtr::new(std::ptr::null_mut());

/// Looks for a Python interpreter in the process (at the tracer's set-up, in
/// `MPI_Init`): from then on calls are placed on Python frames when there is one.
pub(crate) fn start() {
    if std::env::var(PYTHON_SITES_ENV).is_ok_and(|v| v.trim() == "0") {
        return;
    }
    let Some(api) = Api::find() else {
        return;
    };
    let python = Python {
        api,
        cache: Mutex::new(Cache::default()),
        packages: OnceLock::new(),
    };
    PYTHON.store(Box::into_raw(Box::new(python)), Ordering::Release);
}

/// Where the call just made by this thread, from return address `native`, is recorded:
/// its Python frame's line, or `native`.
#[inline]
pub(crate) fn site(native: u64, gil: Gil) -> CallSite {
    // SAFETY: null, or a leaked Python never freed.
    match unsafe { PYTHON.load(Ordering::Acquire).as_ref() } {
        None => CallSite::from(native),
        Some(python) => python
            .site(gil)
            .map_or(CallSite::from(native), CallSite::from),
    }
}

/// Gives the GIL back and restores the program's error indicator when dropped, so that
/// nothing of the walk (not even a panic) leaves the thread holding the GIL.
struct Held<'a> {
    api: &'a Api,
    state: std::ffi::c_int,
    error: [Object; 3],
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let [kind, value, traceback] = self.error;
        // SAFETY: the indicator taken by `with_gil`, then the state its Ensure returned,
        // on the same thread.
        unsafe {
            (self.api.err_restore)(kind, value, traceback);
            (self.api.gil_release)(self.state);
        }
    }
}

impl Python {
    #[cold]
    #[inline(never)]
    fn site(&self, gil: Gil) -> Option<&'static NamedSite> {
        // SAFETY: the API of the interpreter that runs in this process.
        unsafe { self.with_gil(gil, |thread| self.innermost(thread)) }?
    }

    /// Runs `f` with this thread's Python thread state, holding the GIL and with the
    /// program's error indicator set aside; `None` (without calling `f`) whenever the
    /// interpreter cannot be entered safely here.
    unsafe fn with_gil<R>(&self, gil: Gil, f: impl FnOnce(Object) -> R) -> Option<R> {
        let a = &self.api;
        // SAFETY: each of these may be called without the GIL, from any thread.
        unsafe {
            // Before Py_Initialize, or once Py_FinalizeEx began (a thread taking the GIL
            // then is ended by the interpreter, or hangs).
            if (a.is_initialized)() == 0 || a.is_finalizing.is_some_and(|f| f() != 0) {
                return None;
            }
            // A thread Python never ran on (a C thread of the program's): Ensure would
            // give it a thread state and make it wait on the GIL for nothing.
            let thread = (a.this_thread_state)();
            if thread.is_null() || (gil == Gil::IfHeld && (a.gil_check)() == 0) {
                return None;
            }
            let mut held = Held {
                api: a,
                state: (a.gil_ensure)(),
                error: [std::ptr::null_mut(); 3],
            };
            let [kind, value, traceback] = &mut held.error;
            (a.err_fetch)(kind, value, traceback);
            Some(f(thread))
        }
    }

    /// The site of the innermost frame of `thread` that is the program's. Holds the GIL.
    unsafe fn innermost(&self, thread: Object) -> Option<&'static NamedSite> {
        let a = &self.api;
        // Busy: this thread is already walking (a finalizer run by an allocation of the
        // walk called MPI), or another is (a free-threaded interpreter).
        let mut cache = self.cache.try_lock().ok()?;
        let mut found = None;
        // SAFETY: the GIL is held; every reference taken is given back.
        unsafe {
            let mut frame = (a.thread_frame)(thread);
            for _ in 0..MAX_FRAMES {
                if frame.is_null() {
                    break;
                }
                let code = (a.frame_code)(frame);
                let step = if code.is_null() {
                    None
                } else {
                    let at = match a.frame_lasti.map(|lasti| lasti(frame)) {
                        Some(i) if i >= 0 => Position::Instruction(i),
                        _ => Position::Line((a.frame_line)(frame)),
                    };
                    let line = || (a.frame_line)(frame);
                    let step = cache.frame(code as usize, at, line, || self.describe(code));
                    (a.decref)(code);
                    step
                };
                match step {
                    Some(Frame::PassedOver) => {
                        let back = (a.frame_back)(frame);
                        (a.decref)(frame);
                        frame = back;
                    }
                    Some(Frame::Site(site)) => {
                        found = Some(site);
                        break;
                    }
                    Some(Frame::NoLine) | None => break,
                }
            }
            if !frame.is_null() {
                (a.decref)(frame);
            }
        }
        found
    }

    /// A code object's file and (qualified, from 3.11) function name, and whether it
    /// is the program's; takes a reference on it, kept by the cache. Holds the GIL.
    unsafe fn describe(&self, code: Object) -> Option<Described> {
        let a = &self.api;
        // SAFETY: the GIL is held; `code` is a live code object.
        unsafe {
            let file = a.text_attr(code, c"co_filename")?;
            let function = a
                .text_attr(code, c"co_qualname")
                .or_else(|| a.text_attr(code, c"co_name"))?;
            let passed_over = cache::passed_over(&file, self.packages());
            (a.incref)(code);
            Some(Described {
                file,
                function,
                passed_over,
            })
        }
    }

    /// The bindings' package directories, once one is imported (else none yet). Holds
    /// the GIL.
    unsafe fn packages(&self) -> &[String] {
        if let Some(known) = self.packages.get() {
            return known;
        }
        // SAFETY: the GIL is held.
        let found = unsafe { self.binding_packages() };
        if found.is_empty() {
            return &[];
        }
        self.packages.get_or_init(|| found)
    }

    /// The package directories of the MPI bindings imported so far (mpi4py's). Holds
    /// the GIL.
    unsafe fn binding_packages(&self) -> Vec<String> {
        let a = &self.api;
        // SAFETY: the GIL is held; both lookups return borrowed references (or null,
        // without raising).
        unsafe {
            let modules = (a.sys_get)(c"modules".as_ptr());
            if modules.is_null() {
                return Vec::new();
            }
            let module = (a.dict_get)(modules, c"mpi4py".as_ptr());
            if module.is_null() {
                return Vec::new();
            }
            a.text_attr(module, c"__file__")
                .and_then(|init| cache::package_dir(&init))
                .into_iter()
                .collect()
        }
    }
}
