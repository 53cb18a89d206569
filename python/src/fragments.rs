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
/// `DeletionFile` fields), and whether row ids and version sequences are stored.
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
    let created = matches!(
        f.created_at_version_sequence,
        Some(CreatedAtVersionSequence::InlineCreatedAtVersions(_))
    );
    let updated = matches!(
        f.last_updated_at_version_sequence,
        Some(LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(_))
    );
    out.set_item("has_version_sequences", created || updated)?;
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
