//! Fragments as Python holds them: each its `DataFragment` protobuf, as bytes.

use lancet::proto::table::DataFragment;
use prost::Message;
use pyo3::prelude::*;
use pyo3::types::PyDict;

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

/// What a fragment's metadata says: id, physical rows, data files and their fields.
#[pyfunction]
pub fn fragment_info<'py>(py: Python<'py>, fragment: Vec<u8>) -> PyResult<Bound<'py, PyDict>> {
    let f = DataFragment::decode(fragment.as_slice())
        .map_err(|e| invalid(format!("not a fragment's metadata: {e}")))?;
    let out = PyDict::new(py);
    out.set_item("id", f.id)?;
    out.set_item("physical_rows", f.physical_rows)?;
    let files: Vec<(String, Vec<i32>)> = f
        .files
        .iter()
        .map(|d| (d.path.clone(), d.fields.clone()))
        .collect();
    out.set_item("files", files)?;
    out.set_item(
        "deleted_rows",
        f.deletion_file.as_ref().map_or(0, |d| d.num_deleted_rows),
    )?;
    Ok(out)
}
