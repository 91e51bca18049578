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

/// The interpreter's functions.
pub(crate) struct Api {
    pub(crate) is_initialized: unsafe extern "C" fn() -> c_int,
    /// `Py_IsFinalizing` or `_Py_IsFinalizing`, where the interpreter has either.
    pub(crate) is_finalizing: Option<unsafe extern "C" fn() -> c_int>,
    pub(crate) this_thread_state: unsafe extern "C" fn() -> Object,
    pub(crate) gil_check: unsafe extern "C" fn() -> c_int,
    /// `PyGILState_STATE` is a C enum: an `int`.
    pub(crate) gil_ensure: unsafe extern "C" fn() -> c_int,
    pub(crate) gil_release: unsafe extern "C" fn(c_int),
    pub(crate) thread_frame: unsafe extern "C" fn(Object) -> Object,
    pub(crate) frame_code: unsafe extern "C" fn(Object) -> Object,
    pub(crate) frame_back: unsafe extern "C" fn(Object) -> Object,
    pub(crate) frame_line: unsafe extern "C" fn(Object) -> c_int,
    /// `PyFrame_GetLasti`, where the interpreter has it.
    pub(crate) frame_lasti: Option<unsafe extern "C" fn(Object) -> c_int>,
    pub(crate) get_attr: unsafe extern "C" fn(Object, *const c_char) -> Object,
    pub(crate) utf8: unsafe extern "C" fn(Object, *mut isize) -> *const c_char,
    pub(crate) sys_get: unsafe extern "C" fn(*const c_char) -> Object,
    pub(crate) dict_get: unsafe extern "C" fn(Object, *const c_char) -> Object,
    pub(crate) err_fetch: unsafe extern "C" fn(*mut Object, *mut Object, *mut Object),
    pub(crate) err_restore: unsafe extern "C" fn(Object, Object, Object),
    pub(crate) err_clear: unsafe extern "C" fn(),
    pub(crate) incref: unsafe extern "C" fn(Object),
    pub(crate) decref: unsafe extern "C" fn(Object),
}

/// The address of `name` in the process, if any object defines it.
fn symbol(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: a lookup by a NUL-terminated name; nothing is called.
    let at = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!at.is_null()).then_some(at)
}

/// Looks up each `name` as the function type of its field, or returns `None`.
macro_rules! resolve {
    ($($field:ident = $name:literal;)+) => {
        Api {
            is_finalizing: symbol(c"Py_IsFinalizing")
                .or_else(|| symbol(c"_Py_IsFinalizing"))
                // SAFETY: `int (void)` in every version that defines either name.
                .map(|f| unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> c_int>(f) }),
            frame_lasti: symbol(c"PyFrame_GetLasti")
                // SAFETY: `int (PyFrameObject *)`, as documented.
                .map(|f| unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(Object) -> c_int>(f) }),
            $(
                // SAFETY: the C API's documented signature for that name, which the
                // field's type spells out.
                $field: unsafe { std::mem::transmute::<*mut c_void, _>(symbol($name)?) },
            )+
        }
    };
}

impl Api {
    /// The interpreter's functions, when the process has a Python 3.9 or later.
    pub(crate) fn find() -> Option<Api> {
        Some(resolve! {
            is_initialized = c"Py_IsInitialized";
            this_thread_state = c"PyGILState_GetThisThreadState";
            gil_check = c"PyGILState_Check";
            gil_ensure = c"PyGILState_Ensure";
            gil_release = c"PyGILState_Release";
            thread_frame = c"PyThreadState_GetFrame";
            frame_code = c"PyFrame_GetCode";
            frame_back = c"PyFrame_GetBack";
            frame_line = c"PyFrame_GetLineNumber";
            get_attr = c"PyObject_GetAttrString";
            utf8 = c"PyUnicode_AsUTF8AndSize";
            sys_get = c"PySys_GetObject";
            dict_get = c"PyDict_GetItemString";
            err_fetch = c"PyErr_Fetch";
            err_restore = c"PyErr_Restore";
            err_clear = c"PyErr_Clear";
            incref = c"Py_IncRef";
            decref = c"Py_DecRef";
        })
    }

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
