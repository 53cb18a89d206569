//! One fragment of a table version, read and edited without a commit (pylance's
//! `LanceFragment.metadata`, `delete`, `delete_rows`): the edit writes its deletion file and
//! returns the fragment's new record, which a `LanceOperation.Delete` commits later.

use lancet::proto::table::DataFragment;
use prost::Message;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use roaring::RoaringBitmap;

use crate::dataset::PyDataset;
use crate::errors::IntoPy;
use crate::runtime::block_on;

fn bytes<'py>(py: Python<'py>, f: &DataFragment) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &f.encode_to_vec())
}

/// The record of fragment `id` of this handle's version (`None`: the version has none).
#[pyfunction]
pub fn fragment_metadata<'py>(
    py: Python<'py>,
    ds: &PyDataset,
    id: u64,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let handle = ds.handle().clone();
    let fragment = block_on(py, async move { handle.storage().fragment(id).await }).py_err()?;
    Ok(fragment.map(|f| bytes(py, &f)))
}

/// Fragment `id` with the rows at physical `offsets` deleted as well as those it deletes
/// already: its new deletion file written (Lance's choice of `.arrow` or `.bin`), nothing
/// committed. `None` when no row is left (the fragment is to be removed). An offset past
/// the fragment's rows is `InvalidInputError`.
#[pyfunction]
pub fn fragment_delete_rows<'py>(
    py: Python<'py>,
    ds: &PyDataset,
    id: u64,
    offsets: Vec<u32>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let handle = ds.handle().clone();
    let rows: RoaringBitmap = offsets.into_iter().collect();
    let delete = block_on(py, async move {
        handle.storage().delete_operation(&[(id, rows)], "").await
    })
    .py_err()?;
    Ok(delete.updated_fragments.first().map(|f| bytes(py, f)))
}

/// Fragment `id` with `file` (a `DataFile` protobuf `write_column_file` wrote for it, of
/// columns the table has) answering for its fields, nothing committed (pylance's
/// `LanceFragment.update_columns`): the fields become tombstones in the files that held
/// them, a file left with none goes, and the file is appended, by lancet-txn's replacement
/// rule. Returns the new record and the field ids the file holds (`fields_modified`).
#[pyfunction]
pub fn fragment_with_file<'py>(
    py: Python<'py>,
    ds: &PyDataset,
    id: u64,
    file: Vec<u8>,
) -> PyResult<(Bound<'py, PyBytes>, Vec<u32>)> {
    let file = lancet::proto::table::DataFile::decode(file.as_slice())
        .map_err(|e| crate::errors::invalid(format!("not a data file's metadata: {e}")))?;
    let modified = (file.fields.iter())
        .filter_map(|f| u32::try_from(*f).ok())
        .collect();
    let handle = ds.handle().clone();
    let fragment = block_on(py, async move {
        let fragment = (handle.storage().fragment(id).await?)
            .ok_or_else(|| lancet::Error::Internal(format!("the version has no fragment {id}")))?;
        let manifest = handle.storage().manifest();
        Ok(lancet::txn::replacement::replace_data_file(
            &fragment,
            &file,
            &manifest.fields,
            handle.version(),
        )?)
    })
    .py_err()?;
    Ok((bytes(py, &fragment), modified))
}

/// pylance's `LanceFragment.create_from_file`: the record of fragment `id` made of the data
/// file `filename` under the table's `data/` (written apart, by `LanceFileWriter` say), as
/// Lance 14.0.2 makes it: the table's field ids, the file's columns as its version lays
/// them out, its rows. A file whose schema is not the table's is refused; nothing is
/// committed.
#[pyfunction]
pub fn fragment_from_file<'py>(
    py: Python<'py>,
    ds: &PyDataset,
    filename: String,
    id: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    let handle = ds.handle().clone();
    let fragment = block_on(py, async move {
        let storage = handle.storage();
        let path = storage.store().path(&format!("data/{filename}"));
        let file = lancet::file::LanceFile::open(storage.file_store(), &path, None).await?;
        file.check_schema(handle.schema()?.as_ref()).map_err(|e| {
            lancet::Error::InvalidArgument {
                what: format!("data file {filename:?}"),
                reason: format!("its schema is not the table's: {e}"),
            }
        })?;
        let fields = lancet::file::table_schema(&storage.manifest().fields, &filename)?
            .into_iter()
            .flat_map(|c| c.ids)
            .collect();
        let (_, column_indices) = file.whole_file_columns();
        let (major, minor) = file.summary().version();
        Ok::<_, lancet::Error>(DataFragment {
            id,
            physical_rows: file.num_rows(),
            files: vec![lancet::proto::table::DataFile {
                path: filename,
                fields,
                column_indices,
                file_major_version: major,
                file_minor_version: minor,
                file_size_bytes: file.size_bytes(),
                ..Default::default()
            }],
            ..Default::default()
        })
    })
    .py_err()?;
    Ok(bytes(py, &fragment))
}

/// `offsets` (a fragment's physical row offsets) as the portable RoaringBitmap bytes Lance's
/// `updated_fragment_offsets` carry.
#[pyfunction]
pub fn offsets_bitmap<'py>(py: Python<'py>, offsets: Vec<u32>) -> Bound<'py, PyBytes> {
    let bitmap: RoaringBitmap = offsets.into_iter().collect();
    PyBytes::new(py, &lancet::proto::roaring_wire::encode_roaring32(&bitmap))
}

/// How many offsets portable RoaringBitmap `bytes` hold, and the first `limit` of them,
/// ascending (never expanded past `limit`: a few bytes can hold 2^32 offsets); bytes that
/// are not one are `InvalidInputError`.
#[pyfunction]
#[pyo3(signature = (bytes, limit=0))]
pub fn bitmap_offsets(bytes: &[u8], limit: usize) -> PyResult<(u64, Vec<u32>)> {
    let bitmap = lancet::proto::roaring_wire::decode_roaring32(bytes)
        .map_err(|e| crate::errors::invalid(format!("an offsets bitmap: {e}")))?;
    Ok((bitmap.len(), bitmap.iter().take(limit).collect()))
}
