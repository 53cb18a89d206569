//! `lancet.debug`: a table's manifest, schema, fragments and transactions printed as lancet
//! decodes them (Rust's pretty `Debug` of the Lance protobuf messages, field by field), as
//! pylance's `lance.debug` prints Lance's in-memory types. The text is for people: its
//! layout is lancet's own, not pylance's.

use std::collections::BTreeMap;

use lancet::proto::file::Field;
use lancet::proto::table::DataFragment;
use prost::Message;
use pyo3::prelude::*;

use crate::dataset::PyDataset;
use crate::errors::{invalid, IntoPy};
use crate::runtime::block_on;
use crate::transactions::walk_back;

/// A table's schema as the manifest records it: fields (ids, parents, logical types) and
/// the schema's metadata.
#[derive(Debug)]
#[allow(dead_code)] // read through `Debug`
struct Schema<'a> {
    fields: &'a [Field],
    metadata: BTreeMap<&'a str, String>,
}

/// The schema of this handle's version.
#[pyfunction]
pub fn format_schema(ds: &PyDataset) -> String {
    let manifest = ds.handle().storage().manifest();
    let schema = Schema {
        fields: &manifest.fields,
        metadata: manifest
            .schema_metadata
            .iter()
            .map(|(k, v)| (k.as_str(), String::from_utf8_lossy(v).into_owned()))
            .collect(),
    };
    format!("{schema:#?}")
}

/// The manifest of this handle's version, with its fragments (a tree table's read from its
/// tree) in place of the fragment list.
#[pyfunction]
pub fn format_manifest(py: Python<'_>, ds: &PyDataset) -> PyResult<String> {
    let handle = ds.handle().clone();
    let fragments = block_on(py, async move { handle.fragments().await }).py_err()?;
    let mut manifest = ds.handle().storage().manifest().clone();
    manifest.fragments = fragments.to_vec();
    Ok(format!("{manifest:#?}"))
}

/// One fragment (its `DataFragment` protobuf bytes), as recorded.
#[pyfunction]
pub fn format_fragment(fragment: Vec<u8>) -> PyResult<String> {
    let fragment = DataFragment::decode(fragment.as_slice())
        .map_err(|e| invalid(format!("not a Lance DataFragment: {e}")))?;
    Ok(format!("{fragment:#?}"))
}

/// The transactions of this version and the ones before it, newest first, at most
/// `max_transactions` (`None` for a version that records none).
#[pyfunction]
pub fn list_transactions(
    py: Python<'_>,
    ds: &PyDataset,
    max_transactions: usize,
) -> PyResult<Vec<Option<String>>> {
    let handle = ds.handle().clone();
    let stored = block_on(py, async move { walk_back(handle, max_transactions).await }).py_err()?;
    Ok(stored
        .into_iter()
        .map(|(_, t)| t.map(|t| format!("{:#?}", t.transaction)))
        .collect())
}
