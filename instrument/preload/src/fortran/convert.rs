//! Fortran arguments as C ones, and back: one type per kind of argument, each made from
//! the Fortran pointer before the call ([`Arg::new`]), giving the C value ([`Arg::c`])
//! and writing back what MPI wrote ([`Arg::back`]), as Open MPI's own `mpif.h`
//! bindings do.

use std::ffi::{c_int, c_void, CStr};
use std::mem::size_of;
use std::sync::OnceLock;

use mpi_sys::*;
use smallvec::SmallVec;

use crate::fint::{index_from, symbol, Fint};

/// Fortran `INTEGER`s in one `MPI_Status` (`MPI_STATUS_SIZE`).
pub(crate) const STATUS_SIZE: usize = size_of::<MPI_Status>() / size_of::<Fint>();

/// The addresses Open MPI's Fortran sentinels live at, under each name mangling.
struct Sentinels {
    bottom: Vec<usize>,
    in_place: Vec<usize>,
    status_ignore: Vec<usize>,
    statuses_ignore: Vec<usize>,
}

fn sentinels() -> &'static Sentinels {
    static S: OnceLock<Sentinels> = OnceLock::new();
    S.get_or_init(|| {
        let find = |stem: &str| -> Vec<usize> {
            let upper = stem.to_ascii_uppercase();
            [
                format!("{stem}\0"),
                format!("{stem}_\0"),
                format!("{stem}__\0"),
                format!("{upper}\0"),
            ]
            .iter()
            .filter_map(|name| CStr::from_bytes_with_nul(name.as_bytes()).ok())
            .map(symbol)
            .filter(|&at| at != 0)
            .collect()
        };
        Sentinels {
            bottom: find("mpi_fortran_bottom"),
            in_place: find("mpi_fortran_in_place"),
            status_ignore: find("mpi_fortran_status_ignore"),
            statuses_ignore: find("mpi_fortran_statuses_ignore"),
        }
    })
}

/// One argument of a Fortran call, as its C wrapper takes it.
pub(crate) trait Arg: Sized {
    /// The Fortran argument (a pointer: Fortran passes by reference).
    type F;
    /// The C argument.
    type C;
    /// # Safety
    /// `f` is the program's argument, valid for this call.
    unsafe fn new(f: Self::F) -> Self;
    fn c(&mut self) -> Self::C;
    /// Writes back what the call wrote (only when it succeeded, as Open MPI's bindings).
    fn back(self) {}
}

/// An `INTEGER` passed in.
pub(crate) struct Int(c_int);
impl Arg for Int {
    type F = *const Fint;
    type C = c_int;
    unsafe fn new(f: *const Fint) -> Self {
        // SAFETY: the caller's promise.
        Int(unsafe { *f })
    }
    fn c(&mut self) -> c_int {
        self.0
    }
}

/// An `INTEGER(KIND=MPI_ADDRESS_KIND)` passed in (a window's size, a displacement).
pub(crate) struct Aint(MPI_Aint);
impl Arg for Aint {
    type F = *const MPI_Aint;
    type C = MPI_Aint;
    unsafe fn new(f: *const MPI_Aint) -> Self {
        // SAFETY: the caller's promise.
        Aint(unsafe { *f })
    }
    fn c(&mut self) -> MPI_Aint {
        self.0
    }
}

/// Where MPI writes an address (`baseptr` of `MPI_Win_allocate`): passed as it is, as
/// Open MPI's binding does.
pub(crate) struct Ptr(*mut c_void);
impl Arg for Ptr {
    type F = *mut c_void;
    type C = *mut c_void;
    unsafe fn new(f: *mut c_void) -> Self {
        Ptr(f)
    }
    fn c(&mut self) -> *mut c_void {
        self.0
    }
}

/// An `INTEGER` array passed in (counts, displacements), or a `LOGICAL` one (periods,
/// remaining dimensions: gfortran's are `INTEGER`s of 1 and 0, as C's): the same ints.
pub(crate) struct Ints(*const Fint);
impl Arg for Ints {
    type F = *const Fint;
    type C = *const c_int;
    unsafe fn new(f: *const Fint) -> Self {
        Ints(f)
    }
    fn c(&mut self) -> *const c_int {
        const { assert!(size_of::<Fint>() == size_of::<c_int>()) };
        self.0.cast()
    }
}

/// Open MPI's C `MPI_BOTTOM` and `MPI_IN_PLACE` (`((void *) 0)` and `((void *) 1)` in
/// its `mpi.h`: macros, which the bindings do not carry).
const C_BOTTOM: usize = 0;
const C_IN_PLACE: usize = 1;

/// A buffer: `MPI_BOTTOM` and `MPI_IN_PLACE` are Fortran variables, C's are constants.
fn buffer(p: *mut c_void) -> *mut c_void {
    let s = sentinels();
    let at = p as usize;
    if s.bottom.contains(&at) {
        std::ptr::without_provenance_mut(C_BOTTOM)
    } else if s.in_place.contains(&at) {
        std::ptr::without_provenance_mut(C_IN_PLACE)
    } else {
        p
    }
}

/// A buffer MPI reads.
pub(crate) struct SendBuf(*const c_void);
impl Arg for SendBuf {
    type F = *mut c_void;
    type C = *const c_void;
    unsafe fn new(f: *mut c_void) -> Self {
        SendBuf(buffer(f))
    }
    fn c(&mut self) -> *const c_void {
        self.0
    }
}

/// A buffer MPI writes.
pub(crate) struct RecvBuf(*mut c_void);
impl Arg for RecvBuf {
    type F = *mut c_void;
    type C = *mut c_void;
    unsafe fn new(f: *mut c_void) -> Self {
        RecvBuf(buffer(f))
    }
    fn c(&mut self) -> *mut c_void {
        self.0
    }
}

/// Handles passed in, each by its `f2c` conversion.
macro_rules! handle_in {
    ($($name:ident: $c:ty = $f2c:ident;)+) => {$(
        pub(crate) struct $name($c);
        impl Arg for $name {
            type F = *const Fint;
            type C = $c;
            unsafe fn new(f: *const Fint) -> Self {
                // SAFETY: the caller's promise; the conversion takes any value.
                $name(unsafe { $f2c(*f) })
            }
            fn c(&mut self) -> $c {
                self.0
            }
        }
    )+};
}

handle_in! {
    Comm: MPI_Comm = PMPI_Comm_f2c;
    Type: MPI_Datatype = PMPI_Type_f2c;
    Op: MPI_Op = PMPI_Op_f2c;
    Group: MPI_Group = PMPI_Group_f2c;
    Info: MPI_Info = PMPI_Info_f2c;
    Win: MPI_Win = PMPI_Win_f2c;
}

/// Handles MPI writes (`newcomm`, a post's request): the program's variable is not
/// read, as Open MPI's bindings do not read it.
macro_rules! handle_out {
    ($($name:ident: $c:ty = $null:ident, $c2f:ident;)+) => {$(
        pub(crate) struct $name(*mut Fint, $c);
        impl Arg for $name {
            type F = *mut Fint;
            type C = *mut $c;
            unsafe fn new(f: *mut Fint) -> Self {
                // SAFETY: a plain read of the MPI shim's constant.
                $name(f, unsafe { $null })
            }
            fn c(&mut self) -> *mut $c {
                &raw mut self.1
            }
            fn back(self) {
                // SAFETY: the program's argument.
                unsafe { *self.0 = $c2f(self.1) };
            }
        }
    )+};
}

handle_out! {
    NewComm: MPI_Comm = RSMPI_COMM_NULL, PMPI_Comm_c2f;
    NewRequest: MPI_Request = RSMPI_REQUEST_NULL, PMPI_Request_c2f;
    NewWin: MPI_Win = RSMPI_WIN_NULL, PMPI_Win_c2f;
    NewMessage: MPI_Message = RSMPI_MESSAGE_NULL, PMPI_Message_c2f;
}

/// Handles MPI reads and writes back (`MPI_Comm_free`'s communicator; a request that
/// Wait, Test, Start or Request_free may complete or free).
macro_rules! handle_in_out {
    ($($name:ident: $c:ty = $f2c:ident, $c2f:ident;)+) => {$(
        pub(crate) struct $name(*mut Fint, $c);
        impl Arg for $name {
            type F = *mut Fint;
            type C = *mut $c;
            unsafe fn new(f: *mut Fint) -> Self {
                // SAFETY: the caller's promise; the conversion takes any value.
                $name(f, unsafe { $f2c(*f) })
            }
            fn c(&mut self) -> *mut $c {
                &raw mut self.1
            }
            fn back(self) {
                // SAFETY: the program's argument.
                unsafe { *self.0 = $c2f(self.1) };
            }
        }
    )+};
}

handle_in_out! {
    FreedComm: MPI_Comm = PMPI_Comm_f2c, PMPI_Comm_c2f;
    FreedWin: MPI_Win = PMPI_Win_f2c, PMPI_Win_c2f;
    Request: MPI_Request = PMPI_Request_f2c, PMPI_Request_c2f;
    Message: MPI_Message = PMPI_Message_f2c, PMPI_Message_c2f;
}

/// A status MPI writes, or `MPI_STATUS_IGNORE`.
pub(crate) struct Status(*mut Fint, Option<MPI_Status>);
impl Arg for Status {
    type F = *mut Fint;
    type C = *mut MPI_Status;
    unsafe fn new(f: *mut Fint) -> Self {
        let ignored = sentinels().status_ignore.contains(&(f as usize));
        // SAFETY: an all-zero MPI_Status is a valid value.
        Status(f, (!ignored).then(|| unsafe { std::mem::zeroed() }))
    }
    fn c(&mut self) -> *mut MPI_Status {
        match &mut self.1 {
            Some(s) => s,
            // SAFETY: a plain read of the MPI shim's constant.
            None => unsafe { RSMPI_STATUS_IGNORE },
        }
    }
    fn back(self) {
        if let Some(s) = self.1 {
            // SAFETY: the program's status, MPI_STATUS_SIZE integers.
            unsafe { PMPI_Status_c2f(&s, self.0) };
        }
    }
}

/// A `LOGICAL` MPI writes (a flag).
pub(crate) struct Flag(*mut Fint, c_int);
impl Arg for Flag {
    type F = *mut Fint;
    type C = *mut c_int;
    unsafe fn new(f: *mut Fint) -> Self {
        Flag(f, 0)
    }
    fn c(&mut self) -> *mut c_int {
        &raw mut self.1
    }
    fn back(self) {
        // SAFETY: the program's argument. gfortran's .TRUE. is 1 (what Open MPI is built
        // for: ifort's is -1, but it reads the low bit).
        unsafe { *self.0 = Fint::from(self.1 != 0) };
    }
}

/// An `INTEGER` MPI writes (`provided`, an outcount).
pub(crate) struct IntOut(*mut Fint, c_int);
impl Arg for IntOut {
    type F = *mut Fint;
    type C = *mut c_int;
    unsafe fn new(f: *mut Fint) -> Self {
        IntOut(f, 0)
    }
    fn c(&mut self) -> *mut c_int {
        &raw mut self.1
    }
    fn back(self) {
        // SAFETY: the program's argument.
        unsafe { *self.0 = self.1 };
    }
}

/// An array of requests, read and written back.
pub(crate) struct Requests {
    f: *mut Fint,
    c: SmallVec<[MPI_Request; 16]>,
}

impl Requests {
    /// # Safety
    /// `f` holds `n` Fortran requests.
    pub(crate) unsafe fn new(f: *mut Fint, n: c_int) -> Self {
        let n = usize::try_from(n).unwrap_or(0);
        // SAFETY: the caller's promise.
        let c = (0..n)
            .map(|i| unsafe { PMPI_Request_f2c(*f.add(i)) })
            .collect();
        Requests { f, c }
    }
    pub(crate) fn c(&mut self) -> *mut MPI_Request {
        self.c.as_mut_ptr()
    }
    pub(crate) fn back(self) {
        for (i, r) in self.c.iter().enumerate() {
            // SAFETY: the program's array of n requests.
            unsafe { *self.f.add(i) = PMPI_Request_c2f(*r) };
        }
    }
}

/// An array of statuses MPI writes, or `MPI_STATUSES_IGNORE`.
pub(crate) struct Statuses {
    f: *mut Fint,
    c: Option<SmallVec<[MPI_Status; 8]>>,
}

impl Statuses {
    /// # Safety
    /// `f` is `MPI_STATUSES_IGNORE` or holds `n` Fortran statuses.
    pub(crate) unsafe fn new(f: *mut Fint, n: c_int) -> Self {
        let ignored = sentinels().statuses_ignore.contains(&(f as usize));
        let n = usize::try_from(n).unwrap_or(0);
        // SAFETY: an all-zero MPI_Status is a valid value.
        let c = (!ignored).then(|| (0..n).map(|_| unsafe { std::mem::zeroed() }).collect());
        Statuses { f, c }
    }
    pub(crate) fn c(&mut self) -> *mut MPI_Status {
        match &mut self.c {
            Some(s) => s.as_mut_ptr(),
            // SAFETY: a plain read of the MPI shim's constant.
            None => unsafe { RSMPI_STATUSES_IGNORE },
        }
    }
    /// Writes back the first `n` statuses.
    pub(crate) fn back(self, n: usize) {
        if let Some(c) = self.c {
            for (i, s) in c.iter().take(n).enumerate() {
                // SAFETY: the program's array, MPI_STATUS_SIZE integers per status.
                unsafe { PMPI_Status_c2f(s, self.f.add(i * STATUS_SIZE)) };
            }
        }
    }
}

/// A C index (0-based, or `MPI_UNDEFINED`) as Fortran's (1-based).
pub(crate) fn fortran_index(i: c_int) -> Fint {
    index_from(i, 1)
}
