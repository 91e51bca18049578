//! What the reader and the writer share at the C boundary: the library's errors as
//! ours, C strings, and silencing the library's own error printing (errors are
//! returned to the caller, who says them with the archive's name).

use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::path::Path;
use std::sync::Once;

use crate::sys;
use crate::{Error, Result};

/// Ok when `code` is `OTF2_SUCCESS`, else the error of `call` on `path`.
pub(crate) fn check(path: &Path, call: &'static str, code: sys::OTF2_ErrorCode) -> Result<()> {
    if code == sys::OTF2_SUCCESS {
        return Ok(());
    }
    Err(call_error(path, call, code))
}

/// The error of `call` on `path`, failing with `code`.
pub(crate) fn call_error(path: &Path, call: &'static str, code: sys::OTF2_ErrorCode) -> Error {
    // SAFETY: both return static strings (or null) for any code.
    let (name, description) = unsafe {
        (
            text(sys::OTF2_Error_GetName(code)),
            text(sys::OTF2_Error_GetDescription(code)),
        )
    };
    Error::Call {
        path: path.to_path_buf(),
        call,
        name,
        description,
    }
}

/// A C string's text ("" for null).
///
/// # Safety
/// `p` is null or points to a NUL-terminated string.
pub(crate) unsafe fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the caller promises a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// `s` as a C string, its NUL bytes (which C cannot hold) replaced.
pub(crate) fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "\u{fffd}")).unwrap_or_default()
}

/// A path as a C string, or an error naming it.
pub(crate) fn c_path(path: &Path) -> Result<CString> {
    let text = path.to_str().ok_or_else(|| Error::Invalid {
        path: path.to_path_buf(),
        reason: "the path is not valid UTF-8, which the OTF2 library needs".to_string(),
    })?;
    CString::new(text).map_err(|_| Error::Invalid {
        path: path.to_path_buf(),
        reason: "the path holds a NUL byte".to_string(),
    })
}

#[cfg(target_arch = "x86_64")]
unsafe extern "C" fn silent(
    _user: *mut std::os::raw::c_void,
    _file: *const c_char,
    _line: u64,
    _function: *const c_char,
    code: sys::OTF2_ErrorCode,
    _format: *const c_char,
    _va: *mut sys::__va_list_tag,
) -> sys::OTF2_ErrorCode {
    code
}

/// Stops the library from printing its errors on stderr (they are returned and said by
/// the caller, with the archive's name); once per process.
pub(crate) fn quiet_errors() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: registers a callback that touches nothing.
        unsafe {
            sys::OTF2_Error_RegisterCallback(Some(silent), std::ptr::null_mut());
        }
    });
}
