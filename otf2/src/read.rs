//! Reading an archive: its definitions when it is opened ([`Archive::open`]), then the
//! events of each location in their order ([`Archive::read_events`]), in the location's
//! own ticks: the clock offsets are given in [`Definitions::clock_offsets`] for the
//! caller to apply, not applied by the library.

use std::collections::BTreeMap;
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use crate::defs::Definitions;
use crate::events::{Attr, AttrValue, Record};
use crate::ffi::{c_path, check, quiet_errors, text};
use crate::read_defs::{read_globals, read_offsets};
use crate::sys;
use crate::{Error, Result};

/// What a visitor of events returns: `Err(reason)` stops the reading.
pub type Visited = std::result::Result<(), String>;

/// An archive open for reading.
pub struct Archive {
    reader: *mut sys::OTF2_Reader,
    path: PathBuf,
    defs: Definitions,
    creator: String,
    evt: BTreeMap<u64, *mut sys::OTF2_EvtReader>,
}

impl Archive {
    /// Opens the archive whose anchor file is `anchor` and reads its definitions.
    pub fn open(anchor: &Path) -> Result<Archive> {
        quiet_errors();
        let c = c_path(anchor)?;
        // SAFETY: a valid C string.
        let reader = unsafe { sys::OTF2_Reader_Open(c.as_ptr()) };
        if reader.is_null() {
            return Err(Error::Invalid {
                path: anchor.to_path_buf(),
                reason: "the OTF2 library cannot open it as an archive's anchor file".into(),
            });
        }
        let mut a = Archive {
            reader,
            path: anchor.to_path_buf(),
            defs: Definitions::default(),
            creator: String::new(),
            evt: BTreeMap::new(),
        };
        let p = a.path.clone();
        // SAFETY (whole block): the reader is open; the steps are the library's order.
        unsafe {
            check(
                &p,
                "OTF2_Reader_SetSerialCollectiveCallbacks",
                sys::OTF2_Reader_SetSerialCollectiveCallbacks(reader),
            )?;
            let mut creator: *mut std::os::raw::c_char = std::ptr::null_mut();
            if sys::OTF2_Reader_GetCreator(reader, &mut creator) == sys::OTF2_SUCCESS {
                a.creator = text(creator);
                libc_free(creator.cast());
            }
            a.defs = read_globals(&p, reader)?;
            let locations: Vec<u64> = a.defs.locations.keys().copied().collect();
            for l in &locations {
                check(
                    &p,
                    "OTF2_Reader_SelectLocation",
                    sys::OTF2_Reader_SelectLocation(reader, *l),
                )?;
            }
            if !locations.is_empty() {
                let defs_open = sys::OTF2_Reader_OpenDefFiles(reader) == sys::OTF2_SUCCESS;
                check(
                    &p,
                    "OTF2_Reader_OpenEvtFiles",
                    sys::OTF2_Reader_OpenEvtFiles(reader),
                )?;
                for l in &locations {
                    if defs_open {
                        let offsets = read_offsets(&p, reader, *l)?;
                        if !offsets.is_empty() {
                            a.defs.clock_offsets.insert(*l, offsets);
                        }
                    }
                    let e = sys::OTF2_Reader_GetEvtReader(reader, *l);
                    let empty = a.defs.locations.get(l).is_some_and(|d| d.events == 0);
                    if e.is_null() && empty {
                        // A location without events may have no event file.
                        continue;
                    }
                    if e.is_null() {
                        return Err(Error::Invalid {
                            path: p.clone(),
                            reason: format!("no events can be read for location {l}"),
                        });
                    }
                    check(
                        &p,
                        "OTF2_EvtReader_ApplyClockOffsets",
                        sys::OTF2_EvtReader_ApplyClockOffsets(e, false),
                    )?;
                    a.evt.insert(*l, e);
                }
                if defs_open {
                    check(
                        &p,
                        "OTF2_Reader_CloseDefFiles",
                        sys::OTF2_Reader_CloseDefFiles(reader),
                    )?;
                }
            }
        }
        Ok(a)
    }

    /// The anchor file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its definitions.
    pub fn definitions(&self) -> &Definitions {
        &self.defs
    }

    /// What wrote it (`Score-P 8.1`, `overlap 0.1.0`), as the archive says.
    pub fn creator(&self) -> &str {
        &self.creator
    }

    /// Hands every event of `location` to `visit` in its order, with its time in the
    /// location's ticks; returns how many were read. A visitor's `Err` stops the
    /// reading with [`Error::Stopped`].
    pub fn read_events(
        &mut self,
        location: u64,
        visit: &mut dyn FnMut(u64, &Record, &[Attr]) -> Visited,
    ) -> Result<u64> {
        let Some(e) = self.evt.get(&location).copied() else {
            if self
                .defs
                .locations
                .get(&location)
                .is_some_and(|d| d.events == 0)
            {
                return Ok(0);
            }
            return Err(Error::Invalid {
                path: self.path.clone(),
                reason: format!("location {location} is not defined"),
            });
        };
        let mut v = Visit {
            visit,
            failed: None,
            attrs: Vec::new(),
        };
        let mut n = 0u64;
        let p = self.path.clone();
        // SAFETY: the reader and the event reader are open; `v` outlives the reading.
        let code = unsafe {
            let cbs = callbacks();
            let code = sys::OTF2_Reader_RegisterEvtCallbacks(
                self.reader,
                e,
                cbs,
                (&mut v as *mut Visit).cast(),
            );
            sys::OTF2_EvtReaderCallbacks_Delete(cbs);
            check(&p, "OTF2_Reader_RegisterEvtCallbacks", code)?;
            sys::OTF2_Reader_ReadAllLocalEvents(self.reader, e, &mut n)
        };
        if let Some(reason) = v.failed {
            return Err(Error::Stopped {
                path: p,
                location,
                reason,
            });
        }
        check(&p, "OTF2_Reader_ReadAllLocalEvents", code)?;
        Ok(n)
    }
}

impl Drop for Archive {
    fn drop(&mut self) {
        // SAFETY: closes what `open` opened, once.
        unsafe {
            sys::OTF2_Reader_Close(self.reader);
        }
    }
}

unsafe extern "C" {
    #[link_name = "free"]
    fn libc_free(p: *mut c_void);
}

/// Opens the archive, hands every location's events to `visit` (location by location,
/// each in its order) and returns its definitions.
pub fn read_archive(
    anchor: &Path,
    mut visit: impl FnMut(u64, u64, &Record, &[Attr]) -> Visited,
) -> Result<Definitions> {
    let mut a = Archive::open(anchor)?;
    let locations: Vec<u64> = a.defs.locations.keys().copied().collect();
    for l in locations {
        a.read_events(l, &mut |t, r, attrs| visit(l, t, r, attrs))?;
    }
    Ok(std::mem::take(&mut a.defs))
}

/// The visitor behind the event callbacks' user data.
struct Visit<'a> {
    visit: &'a mut dyn FnMut(u64, &Record, &[Attr]) -> Visited,
    failed: Option<String>,
    attrs: Vec<Attr>,
}

/// Hands one record to the visitor behind `user`.
///
/// # Safety
/// `user` is the `Visit` registered; `list` is null or the event's attribute list.
unsafe fn deliver(
    user: *mut c_void,
    time: u64,
    list: *mut sys::OTF2_AttributeList,
    record: Record,
) -> sys::OTF2_CallbackCode {
    // SAFETY: the caller's promise.
    let v = unsafe { &mut *user.cast::<Visit>() };
    v.attrs.clear();
    if !list.is_null() {
        // SAFETY: the list is the event's, valid during the callback.
        unsafe {
            let n = sys::OTF2_AttributeList_GetNumberOfElements(list);
            for i in 0..n {
                let (mut attribute, mut kind) = (0u32, 0u8);
                let mut value: sys::OTF2_AttributeValue = std::mem::zeroed();
                if sys::OTF2_AttributeList_GetAttributeByIndex(
                    list,
                    i,
                    &mut attribute,
                    &mut kind,
                    &mut value,
                ) != sys::OTF2_SUCCESS
                {
                    continue;
                }
                let value = match u32::from(kind) {
                    k if k == sys::OTF2_TYPE_UINT64 => AttrValue::U64(value.uint64),
                    k if k == sys::OTF2_TYPE_INT64 => AttrValue::I64(value.int64),
                    k if k == sys::OTF2_TYPE_SOURCE_CODE_LOCATION => {
                        AttrValue::SourceCodeLocation(value.sourceCodeLocationRef)
                    }
                    _ => AttrValue::Other,
                };
                v.attrs.push(Attr { attribute, value });
            }
        }
    }
    let attrs = std::mem::take(&mut v.attrs);
    let outcome = catch_unwind(AssertUnwindSafe(|| (v.visit)(time, &record, &attrs)));
    v.attrs = attrs;
    let failed = match outcome {
        Ok(Ok(())) => return sys::OTF2_CALLBACK_SUCCESS as sys::OTF2_CallbackCode,
        Ok(Err(reason)) => reason,
        Err(_) => "the reader panicked on this event".to_string(),
    };
    v.failed = Some(failed);
    sys::OTF2_CALLBACK_INTERRUPT as sys::OTF2_CallbackCode
}

/// Declares an event callback that builds a [`Record`] from its arguments.
macro_rules! callback {
    ($name:ident ($($arg:ident: $ty:ty),*) => $record:expr) => {
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $name(
            _location: u64,
            time: u64,
            _position: u64,
            user: *mut c_void,
            list: *mut sys::OTF2_AttributeList,
            $($arg: $ty),*
        ) -> sys::OTF2_CallbackCode {
            // SAFETY: registered with a `Visit`; the list is the event's.
            unsafe { deliver(user, time, list, $record) }
        }
    };
}

callback!(on_enter(region: u32) => Record::Enter { region });
callback!(on_leave(region: u32) => Record::Leave { region });
callback!(on_send(receiver: u32, comm: u32, tag: u32, bytes: u64) => Record::MpiSend { receiver, comm, tag, bytes });
callback!(on_isend(receiver: u32, comm: u32, tag: u32, bytes: u64, request: u64) => Record::MpiIsend { receiver, comm, tag, bytes, request });
callback!(on_isend_complete(request: u64) => Record::MpiIsendComplete { request });
callback!(on_irecv_request(request: u64) => Record::MpiIrecvRequest { request });
callback!(on_recv(sender: u32, comm: u32, tag: u32, bytes: u64) => Record::MpiRecv { sender, comm, tag, bytes });
callback!(on_irecv(sender: u32, comm: u32, tag: u32, bytes: u64, request: u64) => Record::MpiIrecv { sender, comm, tag, bytes, request });
callback!(on_test(request: u64) => Record::MpiRequestTest { request });
callback!(on_cancelled(request: u64) => Record::MpiRequestCancelled { request });
callback!(on_collective_begin() => Record::MpiCollectiveBegin);
callback!(on_collective_end(op: u8, comm: u32, root: u32, sent: u64, received: u64) => Record::MpiCollectiveEnd { op, comm, root, sent, received });
callback!(on_nbc_request(request: u64) => Record::NonBlockingCollectiveRequest { request });
callback!(on_nbc_complete(op: u8, comm: u32, root: u32, sent: u64, received: u64, request: u64) => Record::NonBlockingCollectiveComplete { op, comm, root, sent, received, request });
callback!(on_win_create(win: u32) => Record::RmaWinCreate { win });
callback!(on_win_destroy(win: u32) => Record::RmaWinDestroy { win });
callback!(on_rma_collective_begin() => Record::RmaCollectiveBegin);
callback!(on_rma_collective_end(op: u8, sync_level: u32, win: u32, root: u32, sent: u64, received: u64) => Record::RmaCollectiveEnd { op, sync_level, win, root, sent, received });
callback!(on_group_sync(sync_level: u32, win: u32, group: u32) => Record::RmaGroupSync { sync_level, win, group });
callback!(on_request_lock(win: u32, remote: u32, lock_id: u64, lock_type: u8) => Record::RmaRequestLock { win, remote, lock_id, lock_type });
callback!(on_acquire_lock(win: u32, remote: u32, lock_id: u64, lock_type: u8) => Record::RmaAcquireLock { win, remote, lock_id, lock_type });
callback!(on_release_lock(win: u32, remote: u32, lock_id: u64) => Record::RmaReleaseLock { win, remote, lock_id });
callback!(on_rma_sync(win: u32, remote: u32, sync_type: u8) => Record::RmaSync { win, remote, sync_type });
callback!(on_put(win: u32, remote: u32, bytes: u64, matching_id: u64) => Record::RmaPut { win, remote, bytes, matching_id });
callback!(on_get(win: u32, remote: u32, bytes: u64, matching_id: u64) => Record::RmaGet { win, remote, bytes, matching_id });
callback!(on_atomic(win: u32, remote: u32, kind: u8, sent: u64, received: u64, matching_id: u64) => Record::RmaAtomic { win, remote, kind, sent, received, matching_id });
callback!(on_complete_blocking(win: u32, matching_id: u64) => Record::RmaOpCompleteBlocking { win, matching_id });
callback!(on_complete_non_blocking(win: u32, matching_id: u64) => Record::RmaOpCompleteNonBlocking { win, matching_id });
callback!(on_op_test(win: u32, matching_id: u64) => Record::RmaOpTest { win, matching_id });
callback!(on_complete_remote(win: u32, matching_id: u64) => Record::RmaOpCompleteRemote { win, matching_id });

/// The event callbacks, fresh (the caller deletes them).
///
/// # Safety
/// Calls the library.
unsafe fn callbacks() -> *mut sys::OTF2_EvtReaderCallbacks {
    // SAFETY: fresh callbacks, each set once.
    unsafe {
        let c = sys::OTF2_EvtReaderCallbacks_New();
        sys::OTF2_EvtReaderCallbacks_SetEnterCallback(c, Some(on_enter));
        sys::OTF2_EvtReaderCallbacks_SetLeaveCallback(c, Some(on_leave));
        sys::OTF2_EvtReaderCallbacks_SetMpiSendCallback(c, Some(on_send));
        sys::OTF2_EvtReaderCallbacks_SetMpiIsendCallback(c, Some(on_isend));
        sys::OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(c, Some(on_isend_complete));
        sys::OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback(c, Some(on_irecv_request));
        sys::OTF2_EvtReaderCallbacks_SetMpiRecvCallback(c, Some(on_recv));
        sys::OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(c, Some(on_irecv));
        sys::OTF2_EvtReaderCallbacks_SetMpiRequestTestCallback(c, Some(on_test));
        sys::OTF2_EvtReaderCallbacks_SetMpiRequestCancelledCallback(c, Some(on_cancelled));
        sys::OTF2_EvtReaderCallbacks_SetMpiCollectiveBeginCallback(c, Some(on_collective_begin));
        sys::OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(c, Some(on_collective_end));
        sys::OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveRequestCallback(
            c,
            Some(on_nbc_request),
        );
        sys::OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveCompleteCallback(
            c,
            Some(on_nbc_complete),
        );
        sys::OTF2_EvtReaderCallbacks_SetRmaWinCreateCallback(c, Some(on_win_create));
        sys::OTF2_EvtReaderCallbacks_SetRmaWinDestroyCallback(c, Some(on_win_destroy));
        sys::OTF2_EvtReaderCallbacks_SetRmaCollectiveBeginCallback(
            c,
            Some(on_rma_collective_begin),
        );
        sys::OTF2_EvtReaderCallbacks_SetRmaCollectiveEndCallback(c, Some(on_rma_collective_end));
        sys::OTF2_EvtReaderCallbacks_SetRmaGroupSyncCallback(c, Some(on_group_sync));
        sys::OTF2_EvtReaderCallbacks_SetRmaRequestLockCallback(c, Some(on_request_lock));
        sys::OTF2_EvtReaderCallbacks_SetRmaAcquireLockCallback(c, Some(on_acquire_lock));
        sys::OTF2_EvtReaderCallbacks_SetRmaReleaseLockCallback(c, Some(on_release_lock));
        sys::OTF2_EvtReaderCallbacks_SetRmaSyncCallback(c, Some(on_rma_sync));
        sys::OTF2_EvtReaderCallbacks_SetRmaPutCallback(c, Some(on_put));
        sys::OTF2_EvtReaderCallbacks_SetRmaGetCallback(c, Some(on_get));
        sys::OTF2_EvtReaderCallbacks_SetRmaAtomicCallback(c, Some(on_atomic));
        sys::OTF2_EvtReaderCallbacks_SetRmaOpCompleteBlockingCallback(
            c,
            Some(on_complete_blocking),
        );
        sys::OTF2_EvtReaderCallbacks_SetRmaOpCompleteNonBlockingCallback(
            c,
            Some(on_complete_non_blocking),
        );
        sys::OTF2_EvtReaderCallbacks_SetRmaOpTestCallback(c, Some(on_op_test));
        sys::OTF2_EvtReaderCallbacks_SetRmaOpCompleteRemoteCallback(c, Some(on_complete_remote));
        c
    }
}
