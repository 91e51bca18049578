//! The OTF2 C API as bindgen generated it from the system's `otf2/otf2.h` (build.rs).
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code,
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::all
)]

include!(concat!(env!("OUT_DIR"), "/otf2_bindings.rs"));

/// `OTF2_UNDEFINED_UINT32`: an undefined reference (a function-like macro bindgen skips).
pub const UNDEFINED_U32: u32 = u32::MAX;
/// `OTF2_UNDEFINED_UINT64`.
pub const UNDEFINED_U64: u64 = u64::MAX;
