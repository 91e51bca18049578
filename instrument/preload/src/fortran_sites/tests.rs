use std::sync::atomic::Ordering;

use super::names::{c_entries, defined, fortran_names};
use super::*;

#[test]
fn lib_rs_entries_are_read_with_their_cfg() {
    let entries = c_entries(include_str!("../lib.rs"));
    assert!(entries.contains(&(None, "MPI_Isend".to_string())));
    assert!(entries.contains(&(Some("mpi4".to_string()), "MPI_Barrier_init".to_string())));
    assert!(entries.contains(&(None, "MPI_Win_sync".to_string())));
    // Only the attribute right above an entry applies to it.
    assert!(entries.contains(&(None, "MPI_Finalize".to_string())));
    assert!(entries.len() > 100, "{}", entries.len());
}

#[test]
fn mpich_names_every_mangling_and_the_f08_buffer_forms() {
    let taken = vec!["mpi_wait_f08_".to_string()];
    let names = fortran_names("MPI_Isend", false, &taken);
    for want in [
        "mpi_isend",
        "mpi_isend_",
        "mpi_isend__",
        "MPI_ISEND",
        "pmpi_isend",
        "pmpi_isend_",
        "pmpi_isend__",
        "PMPI_ISEND",
        "mpi_isend_f08ts_",
        "pmpir_isend_f08ts_",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    assert_eq!(
        fortran_names("MPI_Isend_c", false, &taken),
        ["mpi_isend_f08ts_large_", "pmpir_isend_f08ts_large_"]
    );
    assert_eq!(
        fortran_names("MPI_Wait_c", false, &taken),
        ["mpi_wait_f08_large_", "pmpir_wait_f08_large_"]
    );
    assert_eq!(
        fortran_names("MPI_Neighbor_alltoallw", false, &taken)[3],
        "MPI_NEIGHBOR_ALLTOALLW"
    );
    assert!(fortran_names("MPI_Type_free", false, &taken).is_empty());
    // A call src/f08 wraps has no buffer form.
    let wait = fortran_names("MPI_Wait", false, &taken);
    assert!(wait.contains(&"mpi_wait_".to_string()));
    assert!(!wait.iter().any(|n| n.contains("f08")), "{wait:?}");
}

#[test]
fn open_mpi_names_its_f08_bindings() {
    let taken = vec!["mpi_test_f08_".to_string()];
    assert_eq!(
        fortran_names("MPI_Waitall", true, &taken),
        ["mpi_waitall_f08_", "pmpi_waitall_f08_"]
    );
    assert_eq!(fortran_names("MPI_Test", true, &taken), ["pmpi_test_f08_"]);
    assert!(fortran_names("MPI_Isend_c", true, &taken).is_empty());
}

#[test]
fn names_the_preload_defines_are_read_from_entry_blocks() {
    let source = "macro_rules! m { ($x:ident) => {} }\ncrate::entry::entry! {\n    \
                  mpi_test_f08_ => test;\n    ompi_init_f => init;\n}\n";
    assert_eq!(defined(source), ["mpi_test_f08_", "ompi_init_f"]);
}

#[test]
fn generated_names_leave_out_what_the_preload_wraps_itself() {
    let names: Vec<&str> = exported::NAMES
        .iter()
        .map(|n| n.trim_end_matches('\0'))
        .collect();
    if cfg!(openmpi) {
        assert!(names.contains(&"mpi_isend_f08_"));
        assert!(!names.contains(&"mpi_test_f08_"), "src/fortran wraps it");
        assert!(!names.contains(&"mpi_isend_"), "src/fortran wraps it");
    } else {
        assert!(names.contains(&"mpi_isend_"));
        assert!(names.contains(&"mpi_allreduce_f08ts_"));
        assert!(
            !names.iter().any(|n| n.ends_with("_f08_")),
            "src/f08 wraps those"
        );
    }
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len());
}

#[test]
fn the_binding_caller_is_used_only_inside_its_binding() {
    let here = 0x7000_0000;
    // From inside a binding library, the binding entered above the current frame: its
    // caller.
    assert_eq!(choose(0x10, true, 0x400, here + 0x100, here), 0x400);
    // Not from inside one (a C call of the program's), none noted, or one noted deeper
    // than the current frame (a call that returned): the address noted.
    assert_eq!(choose(0x10, false, 0x400, here + 0x100, here), 0x10);
    assert_eq!(choose(0x10, true, 0, 0, here), 0x10);
    assert_eq!(choose(0x10, true, 0x400, here - 0x100, here), 0x10);
}

/// Stands in for the MPI's binding: returns what the trampoline noted and the sum of
/// its arguments, two of them on the stack.
extern "C" fn fake_binding(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64, g: u64, h: u64) -> u64 {
    let (site, sp) = crate::thread::take_outer();
    assert!(site != 0 && sp != 0);
    crate::thread::set_outer(site, sp);
    a + b + c + d + e + f + g + h
}

type Eight = extern "C" fn(u64, u64, u64, u64, u64, u64, u64, u64) -> u64;

#[test]
fn the_trampoline_notes_its_caller_and_passes_every_argument() {
    let name = if cfg!(openmpi) {
        "mpi_barrier_f08_\0"
    } else {
        "mpi_barrier_\0"
    };
    let index = exported::NAMES
        .iter()
        .position(|n| *n == name)
        .expect("exported");
    REAL[index].store(fake_binding as *const () as usize, Ordering::Release);
    #[cfg(openmpi)]
    let trampoline = exported::mpi_barrier_f08_ as *const () as usize;
    #[cfg(not(openmpi))]
    let trampoline = exported::mpi_barrier_ as *const () as usize;
    // SAFETY: the trampoline jumps to `fake_binding`, whose signature this is.
    let call: Eight = unsafe { std::mem::transmute(trampoline) };
    crate::thread::set_outer(0, 0);
    assert_eq!(call(1, 2, 3, 4, 5, 6, 7, 8), 36);
    let (site, sp) = crate::thread::take_outer();
    let frame = 0u8;
    let frame = std::ptr::addr_of!(frame) as u64;
    // The return address is in this test's code, the stack pointer just below this frame.
    assert!(site > 0x1000, "{site:#x}");
    assert!(sp < frame && frame - sp < 1 << 16, "{sp:#x} vs {frame:#x}");
}

#[test]
fn a_site_inside_a_binding_library_becomes_the_binding_caller() {
    // This test's own text stands for the binding library.
    note_library(
        a_site_inside_a_binding_library_becomes_the_binding_caller as *const () as usize as u64,
    );
    let inside = fake_binding as *const () as usize as u64;
    let above = 0u8;
    let above = std::ptr::addr_of!(above) as u64 + 64;
    // No binding entered: the thread word is 0 and the site is as noted.
    crate::thread::set_outer(0, 0);
    crate::thread::set_site(inside);
    assert_eq!(crate::thread::site(), inside);
    // A binding entered, and the call came from inside it: the binding's caller.
    crate::thread::set_outer(0x1234, above);
    assert_eq!(crate::thread::site(), 0x1234);
    // Taken: a second call from inside the library has no binding caller left.
    assert_eq!(crate::thread::site(), inside);
    // A C call from outside the library takes the words too, and keeps its site.
    crate::thread::set_outer(0x1234, above);
    crate::thread::set_site(0x10);
    assert_eq!(crate::thread::site(), 0x10);
    crate::thread::set_site(inside);
    assert_eq!(crate::thread::site(), inside);
}
