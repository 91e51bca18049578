//! The build without the OTF2 library: the same API, each call saying that overlap was
//! built without OTF2.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};

use crate::defs::Definitions;
use crate::events::{Attr, Record};
use crate::{Error, Result};

/// What a visitor of events returns: `Err(reason)` stops the reading.
pub type Visited = std::result::Result<(), String>;

/// An archive open for reading (never, in this build).
pub struct Archive {
    defs: Definitions,
}

impl Archive {
    /// Says that this build cannot read OTF2.
    pub fn open(_anchor: &Path) -> Result<Archive> {
        Err(Error::NotBuilt {
            what: "read OTF2 archives",
        })
    }
    /// Its definitions.
    pub fn definitions(&self) -> &Definitions {
        &self.defs
    }
    /// What wrote it.
    pub fn creator(&self) -> &str {
        ""
    }
    /// Never reached in this build.
    pub fn read_events(
        &mut self,
        _location: u64,
        _visit: &mut dyn FnMut(u64, &Record, &[Attr]) -> Visited,
    ) -> Result<u64> {
        Err(Error::NotBuilt {
            what: "read OTF2 archives",
        })
    }
}

/// Says that this build cannot read OTF2.
pub fn read_archive(
    _anchor: &Path,
    _visit: impl FnMut(u64, u64, &Record, &[Attr]) -> Visited,
) -> Result<Definitions> {
    Err(Error::NotBuilt {
        what: "read OTF2 archives",
    })
}

/// An archive being written (never, in this build).
pub struct ArchiveWriter {
    never: Infallible,
}

impl ArchiveWriter {
    /// Says that this build cannot write OTF2.
    pub fn create(_dir: &Path, _name: &str, _creator: &str) -> Result<ArchiveWriter> {
        Err(Error::NotBuilt {
            what: "write OTF2 archives",
        })
    }
    /// Never reached in this build.
    pub fn events(&mut self, _location: u64) -> Result<EventWriter<'_>> {
        Err(Error::NotBuilt {
            what: "write OTF2 archives",
        })
    }
    /// Never reached in this build: no writer exists.
    pub fn event_counts(&self) -> &BTreeMap<u64, u64> {
        match self.never {}
    }
    /// Never reached in this build.
    pub fn finish(self, _defs: &Definitions) -> Result<PathBuf> {
        Err(Error::NotBuilt {
            what: "write OTF2 archives",
        })
    }
}

/// The events of one location (never, in this build).
pub struct EventWriter<'a> {
    _archive: &'a mut ArchiveWriter,
}

impl EventWriter<'_> {
    /// Never reached in this build.
    pub fn write(&mut self, _time: u64, _record: &Record, _attrs: &[Attr]) -> Result<()> {
        Err(Error::NotBuilt {
            what: "write OTF2 archives",
        })
    }
    /// Never reached in this build.
    pub fn close(self) -> Result<u64> {
        Err(Error::NotBuilt {
            what: "write OTF2 archives",
        })
    }
}
