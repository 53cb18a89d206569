//! Legacy (v1, "0.1" storage) data files, read as Lance 14.0.2 reads them: pylance still
//! writes them with `data_storage_version="legacy"`, and tables written before Lance 0.11
//! hold nothing else. lance-file's v1 reader does the decoding (this crate never decodes
//! pages by hand); lancet gives it the columns asked for, with the table's field ids, and
//! the file's id range from its `DataFile` (Lance's `field_id_offset` and `max_field_id`).
//!
//! Only reading: lancet writes the 2.x formats.

use arrow_array::ArrayRef;
use lance_file::versions::v1::reader::FileReader;

use crate::error::{lance_err, FileError, Result};
use crate::fragment::{Column, DataFileAt, Rows};

/// Whether a `DataFile` of this version is a legacy v1 file (`0.1`/`0.2`).
pub fn is_legacy(major: u32, minor: u32) -> bool {
    major == 0 && minor <= 2
}

/// The columns `wanted` (positions in `projection`) of the legacy file `file`, the rows
/// `rows`; `physical_rows` is its fragment's. A panic in the v1 decoder (hostile bytes) is
/// `FileError::Corrupt`, as every lance-file read is.
pub(crate) async fn read_legacy_columns(
    file: &DataFileAt,
    projection: &[Column],
    wanted: Vec<usize>,
    physical_rows: u64,
    rows: Rows<'_>,
) -> Result<Vec<(usize, ArrayRef)>> {
    let read = read_unguarded(file, projection, wanted, physical_rows, rows);
    crate::read::guard(&file.path, read).await?
}

async fn read_unguarded(
    file: &DataFileAt,
    projection: &[Column],
    wanted: Vec<usize>,
    physical_rows: u64,
    rows: Rows<'_>,
) -> Result<Vec<(usize, ArrayRef)>> {
    let invalid = |rule: String| FileError::InvalidInput {
        path: file.path.clone(),
        rule,
    };
    let mut fields = Vec::with_capacity(wanted.len());
    let mut ids = Vec::new();
    for &p in &wanted {
        let column = projection
            .get(p)
            .ok_or_else(|| invalid(format!("no projected field {p}")))?;
        fields.push(column.field.as_ref().clone());
        ids.extend_from_slice(&column.ids);
    }
    let arrow = arrow_schema::Schema::new(fields);
    let mut schema =
        lance_core::datatypes::Schema::try_from(&arrow).map_err(lance_err(&file.path))?;
    crate::write::renumber(&mut schema, &ids).map_err(invalid)?;
    let offset = file
        .fields
        .iter()
        .copied()
        .filter(|f| *f >= 0)
        .min()
        .unwrap_or(0);
    let max = file.fields.iter().copied().max().unwrap_or(0);
    let reader = FileReader::try_new_with_fragment_id(
        &file.store.store,
        &file.path,
        schema.clone(),
        0,
        offset,
        max,
        None,
    )
    .await
    .map_err(lance_err(&file.path))?;
    if reader.len() as u64 != physical_rows {
        return Err(FileError::Corrupt {
            at: lancet_proto::ObjectRef::new(file.path.to_string()),
            rule: format!(
                "holds {} rows; its fragment has {physical_rows}",
                reader.len()
            ),
        });
    }
    let usize_of =
        |v: u64| usize::try_from(v).map_err(|_| invalid(format!("row {v} is too large")));
    let batch = match rows {
        Rows::All => {
            reader
                .read_range(0..usize_of(physical_rows)?, &schema)
                .await
        }
        Rows::Range(r) => {
            if r.end > physical_rows {
                return Err(invalid(format!("rows {r:?} outside 0..{physical_rows}")));
            }
            reader
                .read_range(usize_of(r.start)?..usize_of(r.end)?, &schema)
                .await
        }
        Rows::At(offsets) => {
            let indices = offsets
                .iter()
                .map(|o| {
                    u32::try_from(*o)
                        .ok()
                        .filter(|o| u64::from(*o) < physical_rows)
                        .ok_or_else(|| invalid(format!("row {o} outside 0..{physical_rows}")))
                })
                .collect::<Result<Vec<u32>>>()?;
            reader.take(&indices, &schema).await
        }
    }
    .map_err(lance_err(&file.path))?;
    Ok(wanted
        .into_iter()
        .zip(batch.columns().iter().cloned())
        .collect())
}
