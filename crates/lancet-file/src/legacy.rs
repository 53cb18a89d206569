//! Legacy (v1, "0.1" storage) data files, read as Lance 14.0.2 reads them: pylance still
//! writes them with `data_storage_version="legacy"`, and tables written before Lance 0.11
//! hold nothing else. lance-file's v1 reader does the decoding (this crate never decodes
//! pages by hand); lancet gives it the columns asked for, with the table's field ids, and
//! the file's id range from its `DataFile` (Lance's `field_id_offset` and `max_field_id`).
//!
//! Only reading: lancet writes the 2.x formats.

use std::ops::Range;

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use lance_file::versions::v1::reader::FileReader;
use object_store::path::Path;

use crate::error::{lance_err, FileError, Result};
use crate::store::FileStore;

/// Whether a `DataFile` of this version is a legacy v1 file (`0.1`/`0.2`).
pub fn is_legacy(major: u32, minor: u32) -> bool {
    major == 0 && minor <= 2
}

/// The rows of a legacy file to read.
pub(crate) enum LegacyRows<'a> {
    Range(Range<u64>),
    /// Offsets, increasing.
    At(&'a [u64]),
}

/// The columns `columns` (with `ids`: their field ids and their descendants', depth first)
/// of the legacy file at `path` whose `DataFile` lists `file_fields`, the rows `rows`;
/// `physical_rows` is its fragment's. A panic in the v1 decoder (hostile bytes) is
/// `FileError::Corrupt`, as every lance-file read is.
pub(crate) async fn read_legacy(
    store: &FileStore,
    path: &Path,
    file_fields: &[i32],
    (columns, ids): (&Schema, &[i32]),
    physical_rows: u64,
    rows: LegacyRows<'_>,
) -> Result<RecordBatch> {
    let read = read_unguarded(
        store,
        path,
        file_fields,
        (columns, ids),
        physical_rows,
        rows,
    );
    crate::read::guard(path, read).await?
}

async fn read_unguarded(
    store: &FileStore,
    path: &Path,
    file_fields: &[i32],
    (columns, ids): (&Schema, &[i32]),
    physical_rows: u64,
    rows: LegacyRows<'_>,
) -> Result<RecordBatch> {
    let invalid = |rule: String| FileError::InvalidInput {
        path: path.clone(),
        rule,
    };
    let mut schema = lance_core::datatypes::Schema::try_from(columns).map_err(lance_err(path))?;
    crate::write::renumber(&mut schema, ids).map_err(invalid)?;
    let offset = file_fields
        .iter()
        .copied()
        .filter(|f| *f >= 0)
        .min()
        .unwrap_or(0);
    let max = file_fields.iter().copied().max().unwrap_or(0);
    let reader = FileReader::try_new_with_fragment_id(
        &store.store,
        path,
        schema.clone(),
        0,
        offset,
        max,
        None,
    )
    .await
    .map_err(lance_err(path))?;
    if reader.len() as u64 != physical_rows {
        return Err(FileError::Corrupt {
            at: lancet_proto::ObjectRef::new(path.to_string()),
            rule: format!(
                "holds {} rows; its fragment has {physical_rows}",
                reader.len()
            ),
        });
    }
    let outside = |what: String| invalid(format!("{what} outside 0..{physical_rows}"));
    match rows {
        LegacyRows::Range(r) => {
            if r.end > physical_rows || r.start > r.end {
                return Err(outside(format!("rows {r:?}")));
            }
            let usize_of = |v: u64| usize::try_from(v).map_err(|_| outside(format!("row {v}")));
            reader
                .read_range(usize_of(r.start)?..usize_of(r.end)?, &schema)
                .await
        }
        LegacyRows::At(offsets) => {
            let indices = (offsets.iter())
                .map(|o| {
                    u32::try_from(*o)
                        .ok()
                        .filter(|o| u64::from(*o) < physical_rows)
                        .ok_or_else(|| outside(format!("row {o}")))
                })
                .collect::<Result<Vec<u32>>>()?;
            reader.take(&indices, &schema).await
        }
    }
    .map_err(lance_err(path))
}
