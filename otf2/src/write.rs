//! Writing an archive: events location by location ([`EventWriter`]), then the
//! definitions ([`ArchiveWriter::finish`]), in the order the OTF2 library asks for
//! (event files, local definitions with the clock offsets, global definitions).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::defs::Definitions;
use crate::events::{Attr, AttrValue, Record};
use crate::ffi::{c_path, c_string, check, quiet_errors};
use crate::sys;
use crate::write_defs::write_globals;
use crate::write_record::write_record;
use crate::{Error, Result};

/// Bytes of an event chunk (the unit the library buffers and writes).
const EVENT_CHUNK: u64 = 1 << 20;
/// Bytes of a definition chunk.
const DEF_CHUNK: u64 = 4 << 20;

unsafe extern "C" fn pre_flush(
    _user: *mut std::os::raw::c_void,
    _file: sys::OTF2_FileType,
    _location: sys::OTF2_LocationRef,
    _caller: *mut std::os::raw::c_void,
    _final: bool,
) -> sys::OTF2_FlushType {
    sys::OTF2_FLUSH as sys::OTF2_FlushType
}

unsafe extern "C" fn post_flush(
    _user: *mut std::os::raw::c_void,
    _file: sys::OTF2_FileType,
    _location: sys::OTF2_LocationRef,
) -> sys::OTF2_TimeStamp {
    0
}

static FLUSH: sys::OTF2_FlushCallbacks = sys::OTF2_FlushCallbacks {
    otf2_pre_flush: Some(pre_flush),
    otf2_post_flush: Some(post_flush),
};

/// An archive being written: `DIR/NAME.otf2`, `DIR/NAME.def` and `DIR/NAME/`.
pub struct ArchiveWriter {
    archive: *mut sys::OTF2_Archive,
    anchor: PathBuf,
    events: BTreeMap<u64, u64>,
}

impl ArchiveWriter {
    /// Creates the archive `dir/name.otf2` (the directory is created; the archive must
    /// not be there already), its event files open.
    pub fn create(dir: &Path, name: &str, creator: &str) -> Result<ArchiveWriter> {
        quiet_errors();
        let anchor = dir.join(format!("{name}.{}", crate::ANCHOR_EXTENSION));
        if anchor.exists() || dir.join(name).exists() {
            return Err(Error::Invalid {
                path: anchor,
                reason: "an archive of that name is there already: remove it or choose \
                         another"
                    .to_string(),
            });
        }
        let c_dir = c_path(dir)?;
        let c_name = c_string(name);
        // SAFETY: valid C strings; the library copies them.
        let archive = unsafe {
            sys::OTF2_Archive_Open(
                c_dir.as_ptr(),
                c_name.as_ptr(),
                sys::OTF2_FILEMODE_WRITE as sys::OTF2_FileMode,
                EVENT_CHUNK,
                DEF_CHUNK,
                sys::OTF2_SUBSTRATE_POSIX as sys::OTF2_FileSubstrate,
                sys::OTF2_COMPRESSION_NONE as sys::OTF2_Compression,
            )
        };
        if archive.is_null() {
            return Err(Error::Invalid {
                path: anchor,
                reason: "the OTF2 library could not create the archive (is the directory \
                         writable?)"
                    .to_string(),
            });
        }
        let w = ArchiveWriter {
            archive,
            anchor,
            events: BTreeMap::new(),
        };
        let creator = c_string(creator);
        // SAFETY: the archive is open; FLUSH is static.
        unsafe {
            check(
                &w.anchor,
                "OTF2_Archive_SetFlushCallbacks",
                sys::OTF2_Archive_SetFlushCallbacks(w.archive, &FLUSH, std::ptr::null_mut()),
            )?;
            check(
                &w.anchor,
                "OTF2_Archive_SetSerialCollectiveCallbacks",
                sys::OTF2_Archive_SetSerialCollectiveCallbacks(w.archive),
            )?;
            check(
                &w.anchor,
                "OTF2_Archive_SetCreator",
                sys::OTF2_Archive_SetCreator(w.archive, creator.as_ptr()),
            )?;
            check(
                &w.anchor,
                "OTF2_Archive_OpenEvtFiles",
                sys::OTF2_Archive_OpenEvtFiles(w.archive),
            )?;
        }
        Ok(w)
    }

    /// The anchor file.
    pub fn anchor(&self) -> &Path {
        &self.anchor
    }

    /// The events of `location` (written once, whole, before the next location's).
    pub fn events(&mut self, location: u64) -> Result<EventWriter<'_>> {
        // SAFETY: the archive is open in write mode with its event files open.
        let writer = unsafe { sys::OTF2_Archive_GetEvtWriter(self.archive, location) };
        if writer.is_null() {
            return Err(Error::Invalid {
                path: self.anchor.clone(),
                reason: format!("no event writer for location {location}"),
            });
        }
        // SAFETY: a fresh list, deleted on drop.
        let list = unsafe { sys::OTF2_AttributeList_New() };
        Ok(EventWriter {
            archive: self,
            writer,
            list,
            location,
        })
    }

    /// Events written to each location so far.
    pub fn event_counts(&self) -> &BTreeMap<u64, u64> {
        &self.events
    }

    /// Writes the definitions (each written location's event count is the one counted
    /// here, whatever `defs` says) and closes the archive.
    pub fn finish(mut self, defs: &Definitions) -> Result<PathBuf> {
        let a = self.archive;
        let path = self.anchor.clone();
        // SAFETY: the archive is open; every writer fetched is closed before the next.
        unsafe {
            check(
                &path,
                "OTF2_Archive_CloseEvtFiles",
                sys::OTF2_Archive_CloseEvtFiles(a),
            )?;
            check(
                &path,
                "OTF2_Archive_OpenDefFiles",
                sys::OTF2_Archive_OpenDefFiles(a),
            )?;
            for location in defs.locations.keys() {
                let w = sys::OTF2_Archive_GetDefWriter(a, *location);
                if w.is_null() {
                    return Err(no_writer(&path, "local definitions"));
                }
                for o in defs.clock_offsets.get(location).into_iter().flatten() {
                    check(
                        &path,
                        "OTF2_DefWriter_WriteClockOffset",
                        sys::OTF2_DefWriter_WriteClockOffset(w, o.time, o.offset, o.std_dev),
                    )?;
                }
                check(
                    &path,
                    "OTF2_Archive_CloseDefWriter",
                    sys::OTF2_Archive_CloseDefWriter(a, w),
                )?;
            }
            check(
                &path,
                "OTF2_Archive_CloseDefFiles",
                sys::OTF2_Archive_CloseDefFiles(a),
            )?;
            let g = sys::OTF2_Archive_GetGlobalDefWriter(a);
            if g.is_null() {
                return Err(no_writer(&path, "global definitions"));
            }
            write_globals(&path, g, defs, &self.events)?;
        }
        self.archive = std::ptr::null_mut();
        // SAFETY: closes the archive once (the pointer is cleared for drop).
        check(&path, "OTF2_Archive_Close", unsafe {
            sys::OTF2_Archive_Close(a)
        })?;
        Ok(path)
    }
}

impl Drop for ArchiveWriter {
    fn drop(&mut self) {
        if !self.archive.is_null() {
            // SAFETY: an archive never closed (an error on the way).
            unsafe { sys::OTF2_Archive_Close(self.archive) };
        }
    }
}

fn no_writer(path: &Path, what: &str) -> Error {
    Error::Invalid {
        path: path.to_path_buf(),
        reason: format!("the OTF2 library gave no writer of its {what}"),
    }
}

/// The events of one location, written in time order.
pub struct EventWriter<'a> {
    archive: &'a mut ArchiveWriter,
    writer: *mut sys::OTF2_EvtWriter,
    list: *mut sys::OTF2_AttributeList,
    location: u64,
}

impl EventWriter<'_> {
    /// Writes one record at `time` (ticks), with its attributes.
    pub fn write(&mut self, time: u64, record: &Record, attrs: &[Attr]) -> Result<()> {
        let path = &self.archive.anchor;
        let (w, l) = (self.writer, self.list);
        // SAFETY: the writer and the list are open; the list is emptied by each event
        // that takes it.
        unsafe {
            for a in attrs {
                let code = match a.value {
                    AttrValue::U64(v) => sys::OTF2_AttributeList_AddUint64(l, a.attribute, v),
                    AttrValue::I64(v) => sys::OTF2_AttributeList_AddInt64(l, a.attribute, v),
                    AttrValue::SourceCodeLocation(r) => {
                        sys::OTF2_AttributeList_AddSourceCodeLocationRef(l, a.attribute, r)
                    }
                    AttrValue::Other => sys::OTF2_SUCCESS,
                };
                check(path, "OTF2_AttributeList_Add", code)?;
            }
            let l = if attrs.is_empty() {
                std::ptr::null_mut()
            } else {
                l
            };
            let Some((call, code)) = write_record(w, l, time, record) else {
                return Err(Error::Invalid {
                    path: path.clone(),
                    reason: format!("a {} record cannot be written", record.kind()),
                });
            };
            check(path, call, code)
        }
    }

    /// Closes the location's events; returns how many were written.
    pub fn close(mut self) -> Result<u64> {
        self.close_now()
    }

    fn close_now(&mut self) -> Result<u64> {
        if self.writer.is_null() {
            return Ok(0);
        }
        let path = self.archive.anchor.clone();
        let mut n = 0u64;
        // SAFETY: the writer is open; closed once (the pointer is cleared).
        unsafe {
            check(
                &path,
                "OTF2_EvtWriter_GetNumberOfEvents",
                sys::OTF2_EvtWriter_GetNumberOfEvents(self.writer, &mut n),
            )?;
            let w = std::mem::replace(&mut self.writer, std::ptr::null_mut());
            check(
                &path,
                "OTF2_Archive_CloseEvtWriter",
                sys::OTF2_Archive_CloseEvtWriter(self.archive.archive, w),
            )?;
        }
        *self.archive.events.entry(self.location).or_insert(0) += n;
        Ok(n)
    }
}

impl Drop for EventWriter<'_> {
    fn drop(&mut self) {
        let _ = self.close_now();
        if !self.list.is_null() {
            // SAFETY: the list made in `events`, deleted once.
            unsafe { sys::OTF2_AttributeList_Delete(self.list) };
        }
    }
}
