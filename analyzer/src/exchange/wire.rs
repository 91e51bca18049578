//! How a worker's part is written where the report's writing will not do. Fields the
//! report leaves out (the arguments' call of a listed request, the message classes a
//! transfer model does not fit) that a worker's part must carry all the same are
//! written only while a part is written for another worker, and read back as their
//! default when absent (`#[serde(default, skip_serializing_if =
//! "crate::exchange::wire::left_out")]`). A part written by position keeps the values
//! of types that leave fields out or are read by key written by name inside it
//! ([`named`]).

use std::cell::Cell;

thread_local! {
    /// True while this thread writes a part for another worker.
    static FOR_A_WORKER: Cell<bool> = const { Cell::new(false) };
}

/// Whether a field the report leaves out is left out of what is being written: always
/// but in a part for another worker.
pub(crate) fn left_out<T>(_: &T) -> bool {
    !FOR_A_WORKER.with(Cell::get)
}

/// `write` run as the writing of a part for another worker: every field written.
pub(super) fn for_a_worker<R>(write: impl FnOnce() -> R) -> R {
    FOR_A_WORKER.with(|w| w.set(true));
    let written = write();
    FOR_A_WORKER.with(|w| w.set(false));
    written
}

/// A field written by name inside a part written by position
/// (`#[serde(with = "crate::exchange::wire::named")]`): a value of the file formats' or
/// the report's types, which leave fields out (a reading by position would misplace
/// what follows) or are read by key, inside a part whose many small records (messages,
/// requests, their ends) are written by position, their field names left out.
pub(crate) mod named {
    use std::marker::PhantomData;

    use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
    use serde::ser::{self, Serialize, Serializer};

    pub(crate) fn serialize<T: Serialize, S: Serializer>(
        value: &T,
        to: S,
    ) -> Result<S::Ok, S::Error> {
        let bytes = rmp_serde::to_vec_named(value).map_err(ser::Error::custom)?;
        to.serialize_bytes(&bytes)
    }

    pub(crate) fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        from: D,
    ) -> Result<T, D::Error> {
        from.deserialize_bytes(ByName(PhantomData))
    }

    struct ByName<T>(PhantomData<T>);

    impl<T: DeserializeOwned> Visitor<'_> for ByName<T> {
        type Value = T;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("the bytes of a value written by name")
        }

        fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<T, E> {
            rmp_serde::from_slice(bytes).map_err(E::custom)
        }
    }
}

/// Bytes another part of the analysis wrote, carried as they are (MessagePack's bin:
/// serde writes a `Vec<u8>` as an array of numbers, up to twice its bytes).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Bytes(pub Vec<u8>);

impl serde::Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        to.serialize_bytes(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(from: D) -> Result<Bytes, D::Error> {
        struct Read;
        impl serde::de::Visitor<'_> for Read {
            type Value = Bytes;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }

            fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Bytes, E> {
                Ok(Bytes(bytes.to_vec()))
            }

            fn visit_byte_buf<E: serde::de::Error>(self, bytes: Vec<u8>) -> Result<Bytes, E> {
                Ok(Bytes(bytes))
            }
        }
        from.deserialize_byte_buf(Read)
    }
}
