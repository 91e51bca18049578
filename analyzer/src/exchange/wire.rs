//! How a worker's part is written where the report's writing will not do. Fields the
//! report leaves out (the arguments' call of a listed request, the message classes a
//! transfer model does not fit) that a worker's part must carry all the same are
//! written only while a part is written for another worker, and read back as their
//! default when absent (`#[serde(default, skip_serializing_if =
//! "crate::exchange::wire::left_out")]`). A part written by position keeps the values
//! of types that leave fields out or are read by key written by name inside it
//! ([`named`]), and its long columns in bins, each encoded and read on any thread
//! ([`chunked`]).

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
    writing(true, write)
}

/// `write` run on this thread as a writing for another worker (`for_a_worker`) or not,
/// this thread's way of writing restored after it (a writing may run inside another).
fn writing<R>(for_a_worker: bool, write: impl FnOnce() -> R) -> R {
    let before = FOR_A_WORKER.with(|w| w.replace(for_a_worker));
    let written = write();
    FOR_A_WORKER.with(|w| w.set(before));
    written
}

/// A long column written as a sequence of bins, each the MessagePack of up to
/// [`chunked::ITEMS`] of its items encoded on its own
/// (`#[serde(with = "crate::exchange::wire::chunked")]`), so that a batch of bins is
/// encoded on every thread at once (what is held beside the column: one batch), and
/// read back likewise. Written one item at a time through the part's writer, a view's
/// columns kept worker 0 on one thread while the worker it was for waited.
///
/// ```text
///  column of 10 000 items   [bin: items 0..4096][bin: 4096..8192][bin: 8192..10000]
/// ```
pub(crate) mod chunked {
    use std::marker::PhantomData;
    use std::ops::Range;

    use rayon::prelude::*;
    use serde::de::{self, DeserializeOwned, Deserializer, SeqAccess, Visitor};
    use serde::ser::{self, Serialize, SerializeSeq, Serializer};

    use super::{writing, Bytes, FOR_A_WORKER};

    /// The items of a bin (but the column's last).
    pub(crate) const ITEMS: usize = 1 << 12;

    /// How many bins are encoded, or read, at once.
    fn batch() -> usize {
        4 * rayon::current_num_threads().max(1)
    }

    pub(crate) fn serialize<T: Serialize + Sync, S: Serializer>(
        items: &[T],
        to: S,
    ) -> Result<S::Ok, S::Error> {
        column(items).serialize(to)
    }

    pub(crate) fn deserialize<'de, T: DeserializeOwned + Send, D: Deserializer<'de>>(
        from: D,
    ) -> Result<Vec<T>, D::Error> {
        from.deserialize_seq(ReadBins(PhantomData))
    }

    /// A column of `len` items as [`chunked`] writes it, `bin(range)` the MessagePack of
    /// its items in `range` (a sequence of them).
    pub(crate) struct Bins<F> {
        pub len: usize,
        pub bin: F,
    }

    /// What a bin's encoding gives.
    type Encoded = Result<Vec<u8>, rmp_serde::encode::Error>;

    /// The column of `items`, as [`chunked`] writes it.
    pub(crate) fn column<T: Serialize + Sync>(
        items: &[T],
    ) -> Bins<impl Fn(Range<usize>) -> Encoded + Sync + '_> {
        Bins {
            len: items.len(),
            bin: move |range: Range<usize>| rmp_serde::to_vec(&items[range]),
        }
    }

    /// The column of `f` of each of `items`, as [`chunked`] writes it: each bin's items
    /// mapped as the bin is written, no column of them made beside `items` (a block's
    /// share of a run's column, renumbered or picked by index).
    pub(crate) fn mapped<'i, T: Sync, U: Serialize>(
        items: &'i [T],
        f: impl Fn(&'i T) -> U + Sync + 'i,
    ) -> Bins<impl Fn(Range<usize>) -> Encoded + Sync + 'i> {
        Bins {
            len: items.len(),
            bin: move |range: Range<usize>| {
                rmp_serde::to_vec(&super::Each(|| items[range.clone()].iter().map(&f)))
            },
        }
    }

    impl<F: Fn(Range<usize>) -> Encoded + Sync> Serialize for Bins<F> {
        fn serialize<S: Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
            // Each thread writes its bins as this one writes (for a worker or not).
            let for_a_worker = FOR_A_WORKER.with(std::cell::Cell::get);
            let bins = self.len.div_ceil(ITEMS);
            let mut seq = to.serialize_seq(Some(bins))?;
            let mut first = 0;
            while first < bins {
                let last = (first + batch()).min(bins);
                let encoded: Vec<Encoded> = (first..last)
                    .into_par_iter()
                    .map(|b| {
                        let range = b * ITEMS..((b + 1) * ITEMS).min(self.len);
                        writing(for_a_worker, || (self.bin)(range))
                    })
                    .collect();
                for bin in encoded {
                    seq.serialize_element(&Bytes(bin.map_err(ser::Error::custom)?))?;
                }
                first = last;
            }
            seq.end()
        }
    }

    /// Reads a column's bins a batch at a time, each batch on every thread.
    struct ReadBins<T>(PhantomData<T>);

    impl<'de, T: DeserializeOwned + Send> Visitor<'de> for ReadBins<T> {
        type Value = Vec<T>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a column's bins")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let (mut items, batch) = (Vec::new(), batch());
            loop {
                let mut bins: Vec<Bytes> = Vec::with_capacity(batch);
                while bins.len() < batch {
                    match seq.next_element::<Bytes>()? {
                        Some(bin) => bins.push(bin),
                        None => break,
                    }
                }
                let last = bins.len() < batch;
                let read: Vec<Vec<T>> = (bins.par_iter())
                    .map(|bin| rmp_serde::from_slice(&bin.0))
                    .collect::<Result<_, _>>()
                    .map_err(de::Error::custom)?;
                read.into_iter().for_each(|bin| items.extend(bin));
                if last {
                    return Ok(items);
                }
            }
        }
    }
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

/// The items an iterator gives, written as a sequence (read back as a `Vec`): a column
/// made as it is written, never held beside the one it is made of.
pub(crate) struct Each<F>(pub F);

impl<I, F> serde::Serialize for Each<F>
where
    I: Iterator,
    I::Item: serde::Serialize,
    F: Fn() -> I,
{
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        to.collect_seq((self.0)())
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

#[cfg(test)]
mod tests {
    use super::{chunked, for_a_worker, left_out};

    /// A record with a field the report leaves out, written only for another worker.
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Record {
        kept: u32,
        #[serde(default, skip_serializing_if = "super::left_out")]
        for_workers: u32,
    }

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Column {
        #[serde(with = "chunked")]
        items: Vec<Record>,
    }

    fn column(n: u32) -> Column {
        let items = (0..n)
            .map(|k| Record {
                kept: k,
                for_workers: 7 * k + 1,
            })
            .collect();
        Column { items }
    }

    /// A column of two and a half bins reads back whole and in order, as does an empty
    /// one; written for another worker, the field the report leaves out is written in
    /// every bin (each encoded on its own thread), and left out otherwise.
    #[test]
    fn a_column_written_in_bins_reads_back_whole() {
        let n = (chunked::ITEMS * 5 / 2) as u32;
        let written = for_a_worker(|| rmp_serde::to_vec(&column(n))).expect("written");
        let read: Column = rmp_serde::from_slice(&written).expect("read");
        assert_eq!(read, column(n));
        let empty = for_a_worker(|| rmp_serde::to_vec(&column(0))).expect("written");
        assert_eq!(
            rmp_serde::from_slice::<Column>(&empty).expect("read"),
            column(0)
        );
        // For the report: the field left out in every bin, read back as its default.
        let written = rmp_serde::to_vec(&column(n)).expect("written");
        let read: Column = rmp_serde::from_slice(&written).expect("read");
        assert!(read
            .items
            .iter()
            .enumerate()
            .all(|(k, r)| r.kept == k as u32));
        assert!(read.items.iter().all(|r| r.for_workers == 0));
    }

    /// A writing for another worker inside another leaves the outer one's way of
    /// writing as it was (a column's bins may be encoded on the writing thread).
    #[test]
    fn a_writing_inside_another_restores_its_way() {
        assert!(left_out(&()));
        for_a_worker(|| {
            for_a_worker(|| assert!(!left_out(&())));
            assert!(!left_out(&()), "still for a worker");
        });
        assert!(left_out(&()));
    }
}
