//! The exchange of `overlap analyze`'s workers over MPI. The `overlap` binary links no
//! MPI: a worker loads `liboverlap_exchange-<family>.so` (src/parallel/exchange.c, built
//! for each MPI installed by scripts/build-preloads.sh) at run time, the one of the MPI
//! its launcher started it under, so one binary serves MPICH and Open MPI alike.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;

use anyhow::{bail, Result};
use overlap_analyzer::exchange::{Exchange, Parts};

type Init = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
type ErrorText = unsafe extern "C" fn(c_int, *mut c_char, c_int);
type Sizes = unsafe extern "C" fn(*const u64, *mut u64) -> c_int;
type Bytes = unsafe extern "C" fn(*const u8, *const u64, *mut u8, *const u64) -> c_int;
type Abort = unsafe extern "C" fn(c_int) -> c_int;
type Finalize = unsafe extern "C" fn() -> c_int;

/// A worker of an MPI job: MPI started (and finished when dropped), its exchange one
/// `MPI_Alltoallv` over `MPI_COMM_WORLD` per call. Only the thread that made it calls
/// MPI (the analysis exchanges from its calling thread; its own threads never do).
pub struct MpiExchange {
    worker: usize,
    workers: usize,
    error_text: ErrorText,
    sizes: Sizes,
    bytes: Bytes,
    abort: Abort,
    finalize: Finalize,
}

/// The symbol `name` of the library `handle`, as a function of type `F`.
///
/// # Safety
/// `F` must be the symbol's true type.
unsafe fn symbol<F: Copy>(handle: *mut c_void, library: &Path, name: &str) -> Result<F> {
    let c_name = CString::new(name)?;
    // SAFETY: `handle` is a library dlopen gave; the name is a C string.
    let found = unsafe { libc::dlsym(handle, c_name.as_ptr()) };
    if found.is_null() {
        bail!("{}: no function {name}", library.display());
    }
    // SAFETY: a function pointer is the size of a data pointer here (POSIX), and the
    // caller vouches for its type.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&found) })
}

/// What `dlerror` says of the last failure.
fn dl_error() -> String {
    // SAFETY: dlerror gives a C string or null.
    let text = unsafe { libc::dlerror() };
    if text.is_null() {
        return "unknown error".into();
    }
    // SAFETY: non-null, ended by a zero.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

impl MpiExchange {
    /// Loads the exchange library at `library` and starts MPI in this process (the
    /// launcher's environment tells it its job).
    pub fn start(library: &Path) -> Result<MpiExchange> {
        let path = CString::new(library.as_os_str().as_encoded_bytes())?;
        // Global: Open MPI's own plugins, which it loads, look for MPI's symbols there.
        // SAFETY: a C string; the library's initialisers are MPI's.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if handle.is_null() {
            bail!(
                "the analysis workers' MPI library {} cannot be loaded: {}",
                library.display(),
                dl_error()
            );
        }
        // SAFETY: each type is the C function's (src/parallel/exchange.c).
        let (init, error_text, sizes, bytes, abort, finalize) = unsafe {
            (
                symbol::<Init>(handle, library, "overlap_exchange_init")?,
                symbol::<ErrorText>(handle, library, "overlap_exchange_error")?,
                symbol::<Sizes>(handle, library, "overlap_exchange_sizes")?,
                symbol::<Bytes>(handle, library, "overlap_exchange_bytes")?,
                symbol::<Abort>(handle, library, "overlap_exchange_abort")?,
                symbol::<Finalize>(handle, library, "overlap_exchange_finalize")?,
            )
        };
        let (mut rank, mut size) = (0, 0);
        // SAFETY: two ints to write.
        let code = unsafe { init(&mut rank, &mut size) };
        let exchange = MpiExchange {
            worker: usize::try_from(rank).unwrap_or(0),
            workers: usize::try_from(size).unwrap_or(1).max(1),
            error_text,
            sizes,
            bytes,
            abort,
            finalize,
        };
        if code != 0 {
            bail!("MPI did not start: {}", exchange.said(code));
        }
        Ok(exchange)
    }

    /// What MPI says of its error `code`.
    fn said(&self, code: c_int) -> String {
        let mut text = [0 as c_char; 512];
        // SAFETY: the buffer and its length.
        unsafe { (self.error_text)(code, text.as_mut_ptr(), text.len() as c_int) };
        // SAFETY: ended by a zero (the C side writes one).
        let said = unsafe { CStr::from_ptr(text.as_ptr()) }.to_string_lossy();
        format!("{said} (MPI error {code})")
    }

    /// What ends every worker of the job (exit status 1): for a worker that cannot go
    /// on and cannot tell the others through an exchange (a panic).
    pub fn abort_handle(&self) -> impl Fn() + Send + Sync + 'static {
        let abort = self.abort;
        // SAFETY: no argument but an int.
        move || unsafe {
            abort(1);
        }
    }
}

impl Exchange for MpiExchange {
    fn worker(&self) -> usize {
        self.worker
    }

    fn workers(&self) -> usize {
        self.workers
    }

    fn all_to_all(&self, to: Parts) -> std::result::Result<Parts, String> {
        if to.sizes.len() != self.workers {
            let parts = to.sizes.len();
            return Err(format!("{parts} parts for {} workers", self.workers));
        }
        if to.sizes.iter().sum::<usize>() != to.bytes.len() {
            return Err(format!(
                "parts of {} bytes counted as more or fewer",
                to.bytes.len()
            ));
        }
        let sizes: Vec<u64> = to.sizes.iter().map(|&n| n as u64).collect();
        let mut got = vec![0u64; self.workers];
        // SAFETY: one count per worker each way.
        let code = unsafe { (self.sizes)(sizes.as_ptr(), got.as_mut_ptr()) };
        if code != 0 {
            return Err(self.said(code));
        }
        let send = to.bytes;
        let total = usize::try_from(got.iter().sum::<u64>()).map_err(|e| e.to_string())?;
        let mut recv = vec![0u8; total];
        // SAFETY: `send` holds the bytes `sizes` counts, `recv` those `got` counts.
        let code = unsafe {
            (self.bytes)(
                send.as_ptr(),
                sizes.as_ptr(),
                recv.as_mut_ptr(),
                got.as_ptr(),
            )
        };
        if code != 0 {
            return Err(self.said(code));
        }
        Ok(Parts {
            bytes: recv,
            sizes: got.iter().map(|&n| n as usize).collect(),
        })
    }
}

impl Drop for MpiExchange {
    fn drop(&mut self) {
        // SAFETY: no argument; MPI was started by `start`.
        unsafe { (self.finalize)() };
    }
}
