//! The few functions of CPython's C API the frame walk needs, found at run time with
//! `dlsym(RTLD_DEFAULT, ...)` in whatever interpreter the process runs (a `python3`
//! that exports them, or a `libpython3.X.so`): the preload depends on no Python at build
//! time, and a process without one finds nothing and changes nothing. All of them are
//! in the stable C API since 3.9 (`PyThreadState_GetFrame`, `PyFrame_GetCode`,
//! `PyFrame_GetBack`), but two that are optional: `_Py_IsFinalizing` (3.7 to 3.12,
//! `Py_IsFinalizing` from 3.13) and `PyFrame_GetLasti` (3.11+).

use std::ffi::{c_char, c_int, c_void, CStr};

/// A `PyObject *` (or a `PyThreadState *`, `PyFrameObject *`): never dereferenced here.
pub(crate) type Object = *mut c_void;

/// The address of `name` in the process, if any object defines it.
fn symbol(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: a lookup by a NUL-terminated name; nothing is called.
    let at = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!at.is_null()).then_some(at)
}

/// `name`, which ends in its NUL, as a C string.
fn c_name(name: &'static str) -> Option<&'static CStr> {
    CStr::from_bytes_with_nul(name.as_bytes()).ok()
}

/// `symbol(name)` as a function of type `F`.
///
/// # Safety
///
/// `F` must be the C signature the interpreter gives `name`.
unsafe fn function<F: Copy>(name: &CStr) -> Option<F> {
    const { assert!(size_of::<F>() == size_of::<*mut c_void>()) };
    // SAFETY: a function pointer is a data pointer's size on the platforms the preload
    // builds for; the caller vouches for the signature.
    symbol(name).map(|at| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&at) })
}

/// Declares [`Api`], a field per function, each typed as its C signature, and
/// `Api::find`, which finds them all or gives `None`.
macro_rules! api {
    ($($field:ident: $ty:ty = $name:literal;)+) => {
        /// The interpreter's functions.
        pub(crate) struct Api {
            /// `Py_IsFinalizing` or `_Py_IsFinalizing`, where the interpreter has either.
            pub(crate) is_finalizing: Option<unsafe extern "C" fn() -> c_int>,
            /// `PyFrame_GetLasti`, where the interpreter has it.
            pub(crate) frame_lasti: Option<unsafe extern "C" fn(Object) -> c_int>,
            $(
                #[doc = concat!("`", $name, "`.")]
                pub(crate) $field: $ty,
            )+
        }

        impl Api {
            /// The interpreter's functions, when the process has a Python 3.9 or later.
            pub(crate) fn find() -> Option<Api> {
                // SAFETY: each type is the C API's documented signature for its name;
                // the two finalizing names have the same.
                unsafe {
                    Some(Api {
                        is_finalizing: function(c"Py_IsFinalizing")
                            .or_else(|| function(c"_Py_IsFinalizing")),
                        frame_lasti: function(c"PyFrame_GetLasti"),
                        $($field: function::<$ty>(c_name(concat!($name, "\0"))?)?,)+
                    })
                }
            }
        }
    };
}

api! {
    is_initialized: unsafe extern "C" fn() -> c_int = "Py_IsInitialized";
    this_thread_state: unsafe extern "C" fn() -> Object = "PyGILState_GetThisThreadState";
    gil_check: unsafe extern "C" fn() -> c_int = "PyGILState_Check";
    // `PyGILState_STATE` is a C enum: an `int`.
    gil_ensure: unsafe extern "C" fn() -> c_int = "PyGILState_Ensure";
    gil_release: unsafe extern "C" fn(c_int) = "PyGILState_Release";
    thread_frame: unsafe extern "C" fn(Object) -> Object = "PyThreadState_GetFrame";
    frame_code: unsafe extern "C" fn(Object) -> Object = "PyFrame_GetCode";
    frame_back: unsafe extern "C" fn(Object) -> Object = "PyFrame_GetBack";
    frame_line: unsafe extern "C" fn(Object) -> c_int = "PyFrame_GetLineNumber";
    get_attr: unsafe extern "C" fn(Object, *const c_char) -> Object = "PyObject_GetAttrString";
    utf8: unsafe extern "C" fn(Object, *mut isize) -> *const c_char = "PyUnicode_AsUTF8AndSize";
    sys_get: unsafe extern "C" fn(*const c_char) -> Object = "PySys_GetObject";
    dict_get: unsafe extern "C" fn(Object, *const c_char) -> Object = "PyDict_GetItemString";
    err_fetch: unsafe extern "C" fn(*mut Object, *mut Object, *mut Object) = "PyErr_Fetch";
    err_restore: unsafe extern "C" fn(Object, Object, Object) = "PyErr_Restore";
    err_clear: unsafe extern "C" fn() = "PyErr_Clear";
    incref: unsafe extern "C" fn(Object) = "Py_IncRef";
    decref: unsafe extern "C" fn(Object) = "Py_DecRef";
}

impl Api {
    /// The text of `object`'s attribute `name`, when it has one and it is a `str` (a
    /// new string; the caller holds the GIL and has set the program's error indicator
    /// aside, so clearing the error a missing attribute raises loses nothing).
    pub(crate) unsafe fn text_attr(&self, object: Object, name: &CStr) -> Option<String> {
        // SAFETY: the caller holds the GIL; `object` is a live object.
        unsafe {
            let value = (self.get_attr)(object, name.as_ptr());
            if value.is_null() {
                (self.err_clear)();
                return None;
            }
            let mut len: isize = 0;
            let text = (self.utf8)(value, &mut len);
            if text.is_null() {
                (self.err_clear)();
            }
            let out = (!text.is_null()).then(|| {
                let bytes = std::slice::from_raw_parts(text.cast::<u8>(), len.max(0) as usize);
                String::from_utf8_lossy(bytes).into_owned()
            });
            (self.decref)(value);
            out
        }
    }
}
