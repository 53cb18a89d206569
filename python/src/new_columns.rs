//! New columns whose values Python computes for every fragment, published in one Merge
//! (pylance's `LanceDataset.merge`): each fragment's file is written first under the new
//! fields' ids, then one Merge publishes the fields and every file, as Lance 14.0.2 commits a
//! merge. The binding composes the facade's parts: lancet-txn numbers the new fields after
//! every id the table has allocated and lists the Merge's fragments, lancet-file writes the
//! files, and the commit is judged by the invariants as every commit is.

use std::collections::HashMap;

use arrow_array::ffi_stream::ArrowArrayStreamReader;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::Schema;
use futures::TryStreamExt;
use lancet::file::{FileVersion, FragmentOptions};
use lancet::proto::file::Field;
use lancet::proto::table::transaction::Merge;
use lancet::proto::table::{DataFile, DataFragment};
use lancet::{Dataset, Error, Operation};
use prost::Message;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::arrow_ffi::{batches, import_stream};
use crate::dataset::PyDataset;
use crate::errors::IntoPy;
use crate::runtime::block_on;

/// `schema`'s fields as the Merge adding them on this version records them: numbered after
/// every field id the table (with its fragments' files) has allocated.
fn numbered(
    ds: &Dataset,
    fragments: &[DataFragment],
    schema: &Schema,
) -> lancet::Result<Vec<Field>> {
    let first = lancet::txn::columns::next_field_id(ds.storage().manifest(), fragments);
    let fields = lancet::file::manifest_fields(schema)?;
    Ok(lancet::txn::columns::numbered_from(fields, first))
}

fn bad(what: String, reason: String) -> Error {
    Error::InvalidArgument { what, reason }
}

/// Writes `data` (the new columns, one value per physical row of fragment `fragment_id`,
/// deleted rows included) as that fragment's file for them, unpublished; its `DataFile`
/// protobuf. A column the table has, or another row count, is refused with nothing written.
#[pyfunction]
pub fn write_new_column_file<'py>(
    py: Python<'py>,
    ds: &PyDataset,
    fragment_id: u64,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let reader = import_stream(data)?;
    let handle = ds.handle().clone();
    let file = block_on(py, async move {
        new_column_file(&handle, fragment_id, concatenated(reader).await?).await
    })
    .py_err()?;
    Ok(PyBytes::new(py, &file.encode_to_vec()))
}

/// Every batch of `reader` (new columns) as one batch.
async fn concatenated(reader: ArrowArrayStreamReader) -> lancet::Result<RecordBatch> {
    let schema = reader.schema();
    let parts: Vec<RecordBatch> = batches(reader).try_collect().await?;
    arrow_select::concat::concat_batches(&schema, &parts)
        .map_err(|e| bad("new columns".into(), e.to_string()))
}

async fn new_column_file(ds: &Dataset, id: u64, batch: RecordBatch) -> lancet::Result<DataFile> {
    let what = || format!("new columns for fragment {id}");
    let fragments = ds.storage().fragments_with_known_rows().await?;
    let fragment = lancet::proto::fragment_by_id(&fragments, id)
        .ok_or_else(|| bad(what(), "the version has no such fragment".into()))?;
    if batch.num_rows() as u64 != fragment.physical_rows {
        return Err(bad(
            what(),
            format!(
                "{} values for a fragment of {} rows (deleted rows included)",
                batch.num_rows(),
                fragment.physical_rows
            ),
        ));
    }
    let table = ds.schema()?;
    if let Some(f) =
        (batch.schema().fields().iter()).find(|f| table.field_with_name(f.name()).is_ok())
    {
        return Err(bad(
            what(),
            format!("the table has a column {:?}", f.name()),
        ));
    }
    let schema = batch.schema();
    let ids: Vec<i32> = numbered(ds, &fragments, &schema)?
        .iter()
        .map(|f| f.id)
        .collect();
    let manifest = ds.storage().manifest();
    let version = manifest
        .data_format
        .as_ref()
        .map_or("2.0", |f| f.version.as_str());
    let version = FileVersion::parse(version).ok_or_else(|| Error::Unsupported {
        uri: ds.uri().to_string(),
        version: ds.version(),
        rule: format!("lancet writes data files of 2.0, 2.1 and 2.2, not {version:?}"),
    })?;
    let storage = ds.storage();
    let written = lancet::file::write_fragments(
        storage.file_store(),
        &storage.store().path("data"),
        &schema,
        &ids,
        futures::stream::iter([Ok::<_, Error>(batch)]),
        FragmentOptions {
            version,
            max_rows_per_file: fragment.physical_rows.max(1),
            ..Default::default()
        },
    )
    .await?;
    (written.into_iter().next())
        .and_then(|f| f.files.into_iter().next())
        .ok_or_else(|| Error::Internal(format!("fragment {id} wrote no file")))
}

/// Publishes the columns of `schema` (an Arrow stream's schema) with `files`
/// (`write_new_column_file`'s, by fragment id) in one Merge; the new handle.
#[pyfunction]
pub fn commit_new_columns(
    py: Python<'_>,
    ds: &PyDataset,
    schema: &Bound<'_, PyAny>,
    files: Vec<(u64, Vec<u8>)>,
) -> PyResult<PyDataset> {
    let schema = import_stream(schema)?.schema();
    let files = (files.into_iter())
        .map(|(id, b)| {
            Ok((
                id,
                DataFile::decode(b.as_slice())
                    .map_err(|e| crate::errors::invalid(e.to_string()))?,
            ))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let handle = ds.handle().clone();
    let committed = block_on(py, async move {
        let fragments = handle.storage().fragments_with_known_rows().await?;
        let added = numbered(&handle, &fragments, &schema)?;
        let manifest = handle.storage().manifest();
        let mut fields = manifest.fields.clone();
        let preserves_nullability = lancet::txn::columns::preserves_nullability(&added);
        fields.extend(added);
        let merge = Merge {
            fragments: lancet::txn::columns::with_written(&fragments, &files),
            schema: fields,
            schema_metadata: manifest.schema_metadata.clone(),
            preserves_nullability,
        };
        handle.commit(Operation::Merge(merge)).await
    })
    .py_err()?;
    Ok(ds.after(committed.dataset))
}

/// A fragment's record with its new file, and the table's fields with the new ones and its
/// schema metadata.
type MergedFragment<'py> = (
    Bound<'py, PyBytes>,
    Vec<Bound<'py, PyBytes>>,
    HashMap<String, Bound<'py, PyBytes>>,
);

/// pylance's `LanceFragment.merge_columns`: `data` (new columns, one value per physical row
/// of fragment `fragment_id`) written as its file, unpublished; the fragment's record with
/// the file, and the table's fields with the new ones (`LanceSchema`'s fields and metadata),
/// for a `LanceOperation.Merge` to commit.
#[pyfunction]
pub fn merge_fragment_columns<'py>(
    py: Python<'py>,
    ds: &PyDataset,
    fragment_id: u64,
    data: &Bound<'py, PyAny>,
) -> PyResult<MergedFragment<'py>> {
    let reader = import_stream(data)?;
    let handle = ds.handle().clone();
    let (fragment, fields) = block_on(py, async move {
        let batch = concatenated(reader).await?;
        let schema = batch.schema();
        let file = new_column_file(&handle, fragment_id, batch).await?;
        let fragments = handle.storage().fragments_with_known_rows().await?;
        let added = numbered(&handle, &fragments, &schema)?;
        let mut fragment = lancet::proto::fragment_by_id(&fragments, fragment_id)
            .cloned()
            .ok_or_else(|| Error::Internal(format!("fragment {fragment_id} not found")))?;
        fragment.files.push(file);
        let mut fields = handle.storage().manifest().fields.clone();
        fields.extend(added);
        Ok((fragment, fields))
    })
    .py_err()?;
    let metadata = (ds.handle().storage().manifest().schema_metadata.iter())
        .map(|(k, v)| (k.clone(), PyBytes::new(py, v)))
        .collect();
    Ok((
        PyBytes::new(py, &fragment.encode_to_vec()),
        fields
            .iter()
            .map(|f| PyBytes::new(py, &f.encode_to_vec()))
            .collect(),
        metadata,
    ))
}
