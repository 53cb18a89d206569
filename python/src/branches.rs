//! A table's branches from Python, as pylance's `create_branch` and `branches`: listed,
//! created from a version of the main line or of a branch, deleted. Each call opens the
//! main line at `uri` (the references live there), whatever handle Python holds.

use lancet::Dataset;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::dataset::PyDataset;
use crate::errors::IntoPy;
use crate::runtime::block_on;

/// Every branch of the table at `uri`, by pylance's `Branch` fields (and `name`).
#[pyfunction]
pub fn branch_list<'py>(py: Python<'py>, uri: String) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let list = block_on(py, async move {
        Dataset::open(&uri).await?.branches().list().await
    })
    .py_err()?;
    list.into_iter()
        .map(|b| {
            let d = PyDict::new(py);
            d.set_item("name", &b.name)?;
            d.set_item("parent_branch", &b.parent_branch)?;
            d.set_item("branch_identifier", b.identifier.clone())?;
            d.set_item("parent_version", b.parent_version)?;
            d.set_item("create_at", b.create_at)?;
            d.set_item("manifest_size", b.manifest_size)?;
            d.set_item("metadata", b.metadata.clone())?;
            Ok(d)
        })
        .collect()
}

/// Creates branch `name` of the table at `uri` from `version` (the latest when `None`) of
/// branch `parent` (the main line when `None`); returns the branch's first version.
#[pyfunction]
#[pyo3(signature = (uri, name, parent=None, version=None))]
pub fn branch_create(
    py: Python<'_>,
    uri: String,
    name: String,
    parent: Option<String>,
    version: Option<u64>,
) -> PyResult<PyDataset> {
    let committed = block_on(py, async move {
        let main = Dataset::open(&uri).await?;
        match parent {
            None => main.branches().create(&name, version).await,
            Some(p) => main.branches().create_from(&name, &p, version).await,
        }
    })
    .py_err()?;
    Ok(PyDataset::new(committed.dataset))
}

/// Deletes branch `name` of the table at `uri` (Lance's `branches.delete`).
#[pyfunction]
pub fn branch_delete(py: Python<'_>, uri: String, name: String) -> PyResult<()> {
    block_on(py, async move {
        Dataset::open(&uri).await?.branches().delete(&name).await
    })
    .py_err()
}

/// The branch this handle's version belongs to (`None`: the main line).
#[pyfunction]
pub fn branch_of(ds: &PyDataset) -> Option<String> {
    ds.handle().storage().manifest().branch.clone()
}
