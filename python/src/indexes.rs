//! A table's indexes from Python beyond building them: pylance's `drop_index`.

use pyo3::prelude::*;

use crate::dataset::PyDataset;
use crate::errors::IntoPy;
use crate::runtime::block_on;

/// Drops index `name` (every segment) in one CreateIndex; returns the new handle. No index
/// of that name is `lancet.errors.IndexNotFoundError` (a `RuntimeError`, as pylance's).
#[pyfunction]
pub fn drop_index(py: Python<'_>, ds: &PyDataset, name: String) -> PyResult<PyDataset> {
    let handle = ds.handle().clone();
    let committed =
        block_on(py, async move { handle.storage().drop_index(&name).await }).py_err()?;
    Ok(ds.after(committed.dataset))
}
