//! A worker's rows of a Parquet table, encoded there: Parquet row groups, compressed as
//! worker 0's own, which worker 0 copies into its files as they are, their pages read
//! back and written again without being decoded. So each worker, not worker 0, pays for
//! encoding and compressing its rows; the files hold the rows one process writes, in row
//! groups cut at each worker's block as well as every [`super::write::ROWS`] rows.

use std::io::{Cursor, Write};

use polars::error::PolarsError;
use polars::io::parquet::write::BatchedWriter;
use polars::prelude::PolarsResult;
use polars_buffer::Buffer;
use polars_parquet::parquet::error::ParquetResult;
use polars_parquet::parquet::metadata::SchemaDescriptor;
use polars_parquet::parquet::page::CompressedPage;
use polars_parquet::parquet::read::{get_page_iterator, read_metadata};

use crate::{Error, Result};

/// The row groups of a Parquet file a worker encoded, read back: their columns, and each
/// group's rows and its columns' pages (compressed, sharing the file's bytes).
pub(super) struct Groups {
    columns: SchemaDescriptor,
    groups: Vec<(usize, Vec<Vec<CompressedPage>>)>,
}

impl Groups {
    /// The row groups of the Parquet file `file`.
    pub(super) fn read(file: Vec<u8>) -> Result<Groups> {
        let unreadable = |why: String| Error::Table {
            reason: format!("the row groups a worker handed to worker 0 could not be read: {why}"),
        };
        let metadata =
            read_metadata(&mut Cursor::new(&file)).map_err(|e| unreadable(e.to_string()))?;
        // Pages read back do not say their rows, which the writer needs: of a column
        // not nested (every column of the tables), a row per value.
        let mut columns = metadata.schema_descr.columns().iter();
        if let Some(c) = columns.find(|c| c.descriptor.max_rep_level > 0) {
            return Err(unreadable(format!(
                "the column {:?} is nested",
                c.path_in_schema
            )));
        }
        let file = Buffer::from(file);
        let with_rows = |mut page: CompressedPage| {
            if let CompressedPage::Data(data) = &mut page {
                data.num_rows = Some(data.num_values());
            }
            page
        };
        let pages = |column| -> ParquetResult<Vec<CompressedPage>> {
            let pages =
                get_page_iterator(column, Cursor::new(file.clone()), Vec::new(), usize::MAX)?;
            pages.map(|page| page.map(with_rows)).collect()
        };
        let mut groups = Vec::with_capacity(metadata.row_groups.len());
        for group in &metadata.row_groups {
            let columns = group.parquet_columns().iter().map(pages);
            let columns = columns.collect::<ParquetResult<Vec<_>>>();
            groups.push((
                group.num_rows(),
                columns.map_err(|e| unreadable(e.to_string()))?,
            ));
        }
        Ok(Groups {
            columns: metadata.schema_descr,
            groups,
        })
    }

    /// Writes every group into `writer`, in order, as it is; none when their columns are
    /// not the writer's.
    pub(super) fn write_into<W: Write>(&self, writer: &mut BatchedWriter<W>) -> PolarsResult<()> {
        if self.columns.columns() != writer.parquet_schema().columns() {
            return Err(PolarsError::SchemaMismatch(
                "the row groups a worker handed are not of the table's columns".into(),
            ));
        }
        for (rows, columns) in &self.groups {
            writer.write_row_group(*rows as u64, columns)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use polars::prelude::{DataFrame, NamedFrom, ParquetWriter, Series};

    use super::Groups;

    /// Rows of every kind the tables hold: numbers, text, and nulls of both.
    fn rows(from: i64, n: i64) -> DataFrame {
        let numbers: Vec<i64> = (from..from + n).collect();
        let maybe: Vec<Option<u32>> = (from..from + n)
            .map(|i| (i % 3 != 0).then_some(i as u32))
            .collect();
        let text: Vec<Option<String>> = (from..from + n)
            .map(|i| (i % 5 != 0).then(|| format!("site {}", i % 7)))
            .collect();
        DataFrame::new(
            n as usize,
            vec![
                Series::new("n".into(), numbers).into(),
                Series::new("maybe".into(), maybe).into(),
                Series::new("text".into(), text).into(),
            ],
        )
        .expect("a frame")
    }

    /// A Parquet file of `batches`, a row group each, written as the tables' writer
    /// writes one; then the groups `copied`.
    fn written(batches: &[DataFrame], copied: Option<&Groups>) -> Vec<u8> {
        let mut file = Vec::new();
        let writer = ParquetWriter::new(&mut file).batched(batches[0].schema());
        let mut writer = writer.expect("a writer");
        for batch in batches {
            writer.write_batch(batch).expect("written");
        }
        if let Some(groups) = copied {
            groups.write_into(&mut writer).expect("copied");
        }
        writer.finish().expect("ended");
        drop(writer);
        file
    }

    /// Row groups a worker encoded, copied into worker 0's file after its own, make the
    /// file worker 0 writes of the same rows itself, byte for byte (pages, statistics,
    /// footer); groups of other columns are refused, copying none.
    #[test]
    fn groups_copied_are_the_groups_written() {
        let (first, second, third) = (rows(0, 1000), rows(1000, 700), rows(1700, 5));
        let theirs = Groups::read(written(&[second.clone(), third.clone()], None));
        let theirs = theirs.expect("read back");
        let copied = written(std::slice::from_ref(&first), Some(&theirs));
        assert_eq!(copied, written(&[first, second, third], None));
        let other = rows(0, 4).drop("text").expect("a column fewer");
        let mut file = Vec::new();
        let writer = ParquetWriter::new(&mut file).batched(other.schema());
        let e = (theirs.write_into(&mut writer.expect("a writer")))
            .expect_err("refused")
            .to_string();
        assert!(e.contains("not of the table's columns"), "{e}");
        assert!(Groups::read(b"PAR1 not quite".to_vec()).is_err());
    }
}
