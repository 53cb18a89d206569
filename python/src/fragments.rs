//! Fragments as Python holds them: each its `DataFragment` protobuf, as bytes.

use lancet::proto::table::deletion_file::DeletionFileType;
use lancet::proto::table::{DataFile, DataFragment};
use prost::Message;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::errors::invalid;

/// Fragments as Python holds them (each its `DataFragment` protobuf), decoded.
pub fn decode_fragments(fragments: &[Vec<u8>]) -> PyResult<Vec<DataFragment>> {
    fragments
        .iter()
        .map(|b| {
            DataFragment::decode(b.as_slice())
                .map_err(|e| invalid(format!("not a fragment's metadata: {e}")))
        })
        .collect()
}

/// What a fragment's metadata says, by pylance's `FragmentMetadata` field names: id,
/// physical rows, data files (pylance's `DataFile` fields), deletion file (pylance's
/// `DeletionFile` fields), and the row ids and row versions stored inline.
#[pyfunction]
pub fn fragment_info<'py>(py: Python<'py>, fragment: Vec<u8>) -> PyResult<Bound<'py, PyDict>> {
    use lancet::proto::table::data_fragment::{
        CreatedAtVersionSequence, LastUpdatedAtVersionSequence, RowIdSequence,
    };
    let f = DataFragment::decode(fragment.as_slice())
        .map_err(|e| invalid(format!("not a fragment's metadata: {e}")))?;
    let out = PyDict::new(py);
    out.set_item("id", f.id)?;
    out.set_item("physical_rows", f.physical_rows)?;
    let files = f
        .files
        .iter()
        .map(|d| data_file(py, d))
        .collect::<PyResult<Vec<_>>>()?;
    out.set_item("files", files)?;
    let deletion = match &f.deletion_file {
        None => None,
        Some(d) => {
            let x = PyDict::new(py);
            let kind = match d.file_type() {
                DeletionFileType::ArrowArray => "array",
                DeletionFileType::Bitmap => "bitmap",
            };
            x.set_item("file_type", kind)?;
            x.set_item("read_version", d.read_version)?;
            x.set_item("id", d.id)?;
            x.set_item("num_deleted_rows", d.num_deleted_rows)?;
            x.set_item("base_id", d.base_id)?;
            Some(x)
        }
    };
    out.set_item("deletion_file", deletion)?;
    let row_ids = match &f.row_id_sequence {
        Some(RowIdSequence::InlineRowIds(b)) => Some(PyBytes::new(py, b)),
        Some(RowIdSequence::ColumnRowIds(_)) | None => None,
    };
    out.set_item("row_id_meta", row_ids)?;
    let inline = |b: Option<&Vec<u8>>| b.map(|b| PyBytes::new(py, b));
    out.set_item(
        "created_at_versions",
        inline(match &f.created_at_version_sequence {
            Some(CreatedAtVersionSequence::InlineCreatedAtVersions(b)) => Some(b),
            _ => None,
        }),
    )?;
    out.set_item(
        "last_updated_at_versions",
        inline(match &f.last_updated_at_version_sequence {
            Some(LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(b)) => Some(b),
            _ => None,
        }),
    )?;
    out.set_item("num_overlays", f.overlays.len())?;
    Ok(out)
}

/// pylance's `DataFile` fields.
pub fn data_file<'py>(py: Python<'py>, f: &DataFile) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("path", &f.path)?;
    d.set_item("fields", f.fields.clone())?;
    d.set_item("column_indices", f.column_indices.clone())?;
    d.set_item("file_major_version", f.file_major_version)?;
    d.set_item("file_minor_version", f.file_minor_version)?;
    d.set_item(
        "file_size_bytes",
        (f.file_size_bytes > 0).then_some(f.file_size_bytes),
    )?;
    d.set_item("base_id", f.base_id)?;
    Ok(d)
}

/// A data file as Python gives it (pylance's `DataFile` attributes).
#[derive(FromPyObject)]
pub struct FileFields {
    path: String,
    fields: Vec<i32>,
    column_indices: Vec<i32>,
    file_major_version: u32,
    file_minor_version: u32,
    file_size_bytes: Option<u64>,
    base_id: Option<u32>,
}

/// A deletion file as Python gives it (pylance's `DeletionFile` attributes).
#[derive(FromPyObject)]
pub struct DeletionFields {
    read_version: u64,
    id: u64,
    file_type: String,
    num_deleted_rows: Option<u64>,
    base_id: Option<u32>,
}

/// The `DataFragment` protobuf of a fragment given by its fields (pylance's
/// `FragmentMetadata(id, files, physical_rows, ...)`); row ids and row versions as Lance's
/// serialized sequences. A commit checks the result as it checks any fragment.
#[pyfunction]
#[pyo3(signature = (id, physical_rows, files, deletion_file, row_ids, created_at, last_updated_at))]
#[allow(clippy::too_many_arguments)] // pylance's fields, one argument each
pub fn fragment_from_fields<'py>(
    py: Python<'py>,
    id: u64,
    physical_rows: u64,
    files: Vec<FileFields>,
    deletion_file: Option<DeletionFields>,
    row_ids: Option<Vec<u8>>,
    created_at: Option<Vec<u8>>,
    last_updated_at: Option<Vec<u8>>,
) -> PyResult<Bound<'py, PyBytes>> {
    use lancet::proto::table::data_fragment::{
        CreatedAtVersionSequence, LastUpdatedAtVersionSequence, RowIdSequence,
    };
    use lancet::proto::table::DeletionFile;
    let files = files
        .into_iter()
        .map(|f| DataFile {
            path: f.path,
            fields: f.fields,
            column_indices: f.column_indices,
            file_major_version: f.file_major_version,
            file_minor_version: f.file_minor_version,
            file_size_bytes: f.file_size_bytes.unwrap_or(0),
            base_id: f.base_id,
        })
        .collect();
    let deletion_file = match deletion_file {
        None => None,
        Some(d) => {
            let file_type = match d.file_type.as_str() {
                "array" => DeletionFileType::ArrowArray,
                "bitmap" => DeletionFileType::Bitmap,
                other => {
                    return Err(invalid(format!(
                        "a deletion file's type is \"array\" or \"bitmap\", not {other:?}"
                    )))
                }
            };
            Some(DeletionFile {
                file_type: file_type as i32,
                read_version: d.read_version,
                id: d.id,
                num_deleted_rows: d.num_deleted_rows.unwrap_or(0),
                base_id: d.base_id,
            })
        }
    };
    let fragment = DataFragment {
        id,
        files,
        physical_rows,
        deletion_file,
        row_id_sequence: row_ids.map(RowIdSequence::InlineRowIds),
        created_at_version_sequence: created_at
            .map(CreatedAtVersionSequence::InlineCreatedAtVersions),
        last_updated_at_version_sequence: last_updated_at
            .map(LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions),
        ..Default::default()
    };
    Ok(PyBytes::new(py, &fragment.encode_to_vec()))
}
