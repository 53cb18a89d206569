//! Rows of fragments read: the table's schema, a projection of its columns, and the rows at
//! offsets or ranges of one fragment, the reader scans, searches and merges share.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use lancet_file::{Column, DataFileAt, Rows};
use lancet_proto::table::DataFragment;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::snapshot::Snapshot;

/// The table's Arrow schema (top-level fields in manifest order).
pub fn schema(snap: &Snapshot) -> Result<SchemaRef> {
    let columns = projection(snap, None)?;
    Ok(Arc::new(Schema::new(
        columns.into_iter().map(|c| c.field).collect::<Vec<_>>(),
    )))
}

/// The columns `columns` (every column when `None`), each with its field ids.
pub fn projection(snap: &Snapshot, columns: Option<&[String]>) -> Result<Vec<Column>> {
    let all = lancet_file::table_schema(&snap.manifest().fields, &snap.manifest_ref().object)?;
    let Some(columns) = columns else {
        return Ok(all);
    };
    columns
        .iter()
        .map(|c| {
            all.iter()
                .find(|col| col.field.name() == c)
                .cloned()
                .ok_or_else(|| Error::InvalidArgument {
                    what: format!("column {c:?}"),
                    reason: "the table has no such column".into(),
                })
        })
        .collect()
}

/// The columns `projection` of `fragment`'s rows `rows`.
pub async fn read_rows(
    snap: &Snapshot,
    fragment: &DataFragment,
    projection: &[Column],
    rows: Rows<'_>,
) -> Result<RecordBatch> {
    snap.require_no_overlays(fragment, "reading rows")?;
    let mut files = Vec::with_capacity(fragment.files.len());
    for (file, location) in fragment
        .files
        .iter()
        .zip(snap.data_file_locations(fragment)?)
    {
        let store = match location.base.base_id {
            None => snap.file_store().clone(),
            Some(_) => crate::snapshot::file_store_for(&snap.store_for(&location.base)?)?,
        };
        files.push(DataFileAt {
            path: snap.store_for(&location.base)?.path(&location.path),
            store,
            size: (file.file_size_bytes > 0).then_some(file.file_size_bytes),
            fields: file.fields.clone(),
            legacy: lancet_file::legacy::is_legacy(
                file.file_major_version,
                file.file_minor_version,
            ),
        });
    }
    Ok(Box::pin(lancet_file::read_fragment(
        &files,
        projection,
        fragment.physical_rows,
        rows,
    ))
    .await?)
}

/// Addresses matched by a search, by fragment.
pub type Matched = BTreeMap<u32, RoaringBitmap>;
