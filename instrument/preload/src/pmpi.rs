//! Small helpers over the PMPI interface: the MPI constants the wrappers compare with,
//! handle keys, datatype sizes (cached in [`crate::types`]) and statuses. Everything here calls `PMPI_*` directly, so
//! nothing the preload does for itself is ever recorded.

use std::ffi::{c_int, c_void};
use std::mem::{size_of, MaybeUninit};

use mpi_sys::*;

/// The constants of the MPI library the preload was built against, read once (they are
/// link-time objects of `mpi-sys`'s shim, not compile-time values).
#[derive(Clone, Copy)]
pub(crate) struct Constants {
    pub(crate) comm_world: MPI_Comm,
    pub(crate) comm_null: MPI_Comm,
    pub(crate) request_null: MPI_Request,
    pub(crate) status_ignore: *mut MPI_Status,
    pub(crate) statuses_ignore: *mut MPI_Status,
    pub(crate) byte: MPI_Datatype,
    pub(crate) u64_type: MPI_Datatype,
    pub(crate) op_max: MPI_Op,
    pub(crate) proc_null: c_int,
    pub(crate) any_tag: c_int,
}

// The raw pointers are MPI's sentinels, never dereferenced by the preload.
unsafe impl Send for Constants {}
unsafe impl Sync for Constants {}

impl Constants {
    /// Reads the constants.
    pub(crate) fn read() -> Constants {
        // SAFETY: plain reads of initialised statics of the MPI shim.
        unsafe {
            Constants {
                comm_world: RSMPI_COMM_WORLD,
                comm_null: RSMPI_COMM_NULL,
                request_null: RSMPI_REQUEST_NULL,
                status_ignore: RSMPI_STATUS_IGNORE,
                statuses_ignore: RSMPI_STATUSES_IGNORE,
                byte: RSMPI_UINT8_T,
                u64_type: RSMPI_UINT64_T,
                op_max: RSMPI_MAX,
                proc_null: RSMPI_PROC_NULL,
                any_tag: RSMPI_ANY_TAG,
            }
        }
    }
}

/// A handle (an `int` in MPICH, a pointer in Open MPI) as a map key.
#[inline]
pub(crate) fn key<T: Copy>(handle: T) -> u64 {
    const { assert!(size_of::<T>() <= 8) };
    let mut k = 0u64;
    // SAFETY: copies the handle's bytes (at most 8) into a u64.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (&raw const handle).cast::<u8>(),
            (&raw mut k).cast::<u8>(),
            size_of::<T>(),
        );
    }
    k
}

/// True when two handles are the same.
#[inline]
pub(crate) fn same<T: Copy>(a: T, b: T) -> bool {
    key(a) == key(b)
}

/// The size and extent of `datatype` (the extent is the size when MPI cannot say), or
/// `None` when MPI does not know the type. Callers go through the cache in
/// [`crate::types`].
pub(crate) fn type_size_extent(datatype: MPI_Datatype) -> Option<(u64, u64)> {
    let mut size: c_int = 0;
    let (mut lb, mut extent): (MPI_Aint, MPI_Aint) = (0, 0);
    // SAFETY: out-pointers to locals.
    unsafe {
        if PMPI_Type_size(datatype, &mut size) != 0 {
            return None;
        }
        if PMPI_Type_get_extent(datatype, &mut lb, &mut extent) != 0 {
            extent = size as MPI_Aint;
        }
    }
    let size = u64::try_from(size).unwrap_or(0);
    Some((size, u64::try_from(extent).unwrap_or(size)))
}

/// A buffer address as recorded.
#[inline]
pub(crate) fn addr(buf: *const c_void) -> u64 {
    buf as u64
}

/// What a status says about a received message: `(source, tag, bytes)` with the source
/// as the communicator's rank. The size is read from the status itself, as
/// `MPI_Get_count` on `MPI_BYTE` reads it, without the call (a completion's largest
/// cost after the clock): MPICH and its derivatives keep the byte count in 63 bits
/// split over `count_lo` and `count_hi_and_cancelled` (whose lowest bit is the
/// cancelled flag), Open MPI in `_ucount`. Counts of 2 GiB or more are exact.
#[inline]
pub(crate) fn status_fields(status: &MPI_Status) -> (c_int, c_int, u64) {
    (status.MPI_SOURCE, status.MPI_TAG, status_bytes(status))
}

/// The bytes a status says were received.
#[cfg(not(openmpi))]
#[inline]
fn status_bytes(status: &MPI_Status) -> u64 {
    // The casts reinterpret the C ints' bits, as MPICH's MPIR_STATUS_GET_COUNT does.
    let low = u64::from(status.count_lo as u32);
    let high = u64::from((status.count_hi_and_cancelled as u32) >> 1);
    low | (high << 32)
}

/// The bytes a status says were received.
#[cfg(openmpi)]
#[inline]
fn status_bytes(status: &MPI_Status) -> u64 {
    status._ucount as u64
}

/// A status for MPI to fill in.
#[inline]
pub(crate) fn blank_status() -> MPI_Status {
    // SAFETY: MPI_Status is plain integers; all zeros is a valid value.
    unsafe { MaybeUninit::zeroed().assume_init() }
}

/// The world ranks of the members of `comm`'s group (the remote group for an
/// intercommunicator, whose point-to-point ranks name the remote side), or `None`.
pub(crate) fn world_ranks(comm: MPI_Comm, world: MPI_Comm) -> Option<Vec<c_int>> {
    // SAFETY: out-pointers to locals; groups are freed before returning.
    unsafe {
        let mut inter: c_int = 0;
        if PMPI_Comm_test_inter(comm, &mut inter) != 0 {
            return None;
        }
        let mut group = MaybeUninit::<MPI_Group>::uninit();
        let rc = if inter != 0 {
            PMPI_Comm_remote_group(comm, group.as_mut_ptr())
        } else {
            PMPI_Comm_group(comm, group.as_mut_ptr())
        };
        if rc != 0 {
            return None;
        }
        let mut group = group.assume_init();
        let out = group_world_ranks(group, world);
        PMPI_Group_free(&mut group);
        out
    }
}

/// The world ranks of the members of `group`, in group order, or `None`.
pub(crate) fn group_world_ranks(group: MPI_Group, world: MPI_Comm) -> Option<Vec<c_int>> {
    // SAFETY: out-pointers to locals; the world group is freed before returning.
    unsafe {
        let mut world_group = MaybeUninit::<MPI_Group>::uninit();
        if PMPI_Comm_group(world, world_group.as_mut_ptr()) != 0 {
            return None;
        }
        let mut world_group = world_group.assume_init();
        let mut n: c_int = 0;
        PMPI_Group_size(group, &mut n);
        let ranks: Vec<c_int> = (0..n).collect();
        let mut out = vec![0 as c_int; ranks.len()];
        let rc =
            PMPI_Group_translate_ranks(group, n, ranks.as_ptr(), world_group, out.as_mut_ptr());
        PMPI_Group_free(&mut world_group);
        (rc == 0).then_some(out)
    }
}

/// This process's rank in `comm` (-1 if MPI refuses).
pub(crate) fn rank_in(comm: MPI_Comm) -> c_int {
    let mut rank: c_int = -1;
    // SAFETY: out-pointer to a local.
    unsafe { PMPI_Comm_rank(comm, &mut rank) };
    rank
}

/// The size of `comm` (0 if MPI refuses).
pub(crate) fn size_of_comm(comm: MPI_Comm) -> c_int {
    let mut size: c_int = 0;
    // SAFETY: out-pointer to a local.
    unsafe { PMPI_Comm_size(comm, &mut size) };
    size
}

/// The MPI library's version string (`MPI_Get_library_version`).
pub(crate) fn library_version() -> String {
    let mut buf = vec![0u8; 8192];
    let mut len: c_int = 0;
    // SAFETY: the buffer is larger than MPI_MAX_LIBRARY_VERSION_STRING in both MPICH
    // (8192) and Open MPI (256).
    let rc = unsafe { PMPI_Get_library_version(buf.as_mut_ptr().cast(), &mut len) };
    if rc != 0 {
        return String::new();
    }
    buf.truncate(usize::try_from(len).unwrap_or(0));
    String::from_utf8_lossy(&buf)
        .trim_end_matches('\0')
        .trim()
        .to_string()
}

/// `MPI_Get_processor_name`.
pub(crate) fn processor_name() -> String {
    let mut buf = vec![0u8; 1024];
    let mut len: c_int = 0;
    // SAFETY: the buffer exceeds MPI_MAX_PROCESSOR_NAME in MPICH and Open MPI.
    let rc = unsafe { PMPI_Get_processor_name(buf.as_mut_ptr().cast(), &mut len) };
    if rc != 0 {
        return "unknown".into();
    }
    buf.truncate(usize::try_from(len).unwrap_or(0));
    String::from_utf8_lossy(&buf).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_ints_and_pointers() {
        assert_eq!(key(0x4400_0000_i32), 0x4400_0000);
        assert_eq!(key(-1_i32), 0xffff_ffff);
        let p = 0x1234_5678_9abc_usize as *const u8;
        assert_eq!(key(p), 0x1234_5678_9abc);
        assert!(same(3_i32, 3) && !same(3_i32, 4));
    }

    /// The byte counts of statuses as MPICH's `MPI_Status_set_elements_x` (on
    /// `MPI_BYTE`) leaves them, cancelled or not: 5 000 000 000 is count_lo
    /// 705 032 704 and count_hi_and_cancelled 2 (1 << 32, shifted up past the flag).
    #[cfg(not(openmpi))]
    #[test]
    fn a_status_byte_count_is_read_in_63_bits() {
        let status = |lo: u32, hi_and_cancelled: u32| {
            let mut s = blank_status();
            s.count_lo = lo as c_int;
            s.count_hi_and_cancelled = hi_and_cancelled as c_int;
            s
        };
        assert_eq!(status_fields(&status(8, 0)).2, 8);
        assert_eq!(
            status_fields(&status(8, 1)).2,
            8,
            "the cancelled flag is not size"
        );
        assert_eq!(status_fields(&status(0x8000_0000, 0)).2, 1 << 31);
        assert_eq!(status_fields(&status(u32::MAX, 0)).2, u64::from(u32::MAX));
        assert_eq!(status_fields(&status(705_032_704, 2)).2, 5_000_000_000);
        assert_eq!(status_fields(&status(705_032_704, 3)).2, 5_000_000_000);
        assert_eq!(status_fields(&status(0, 1 << 9)).2, 1 << 40);
    }
}
