//! A table's key-value maps (config, table metadata, schema metadata, a field's metadata),
//! read and changed as pylance's `config()`, `metadata`, `schema_metadata` and
//! `update_config` / `update_metadata` / `update_schema_metadata` / `update_field_metadata`
//! change them (one UpdateConfig each), and the version facts pylance's properties show.

use std::collections::HashMap;

use lancet::MetadataTarget;
use pyo3::prelude::*;

use crate::dataset::PyDataset;
use crate::errors::IntoPy;
use crate::runtime::block_on;

/// A map as Python reads it (a value that is not UTF-8 read lossily).
type Map = HashMap<String, String>;

/// The maps of this version: `(config, table metadata, schema metadata)`.
#[pyfunction]
pub fn maps(ds: &PyDataset) -> (Map, Map, Map) {
    let m = ds.handle().storage().manifest();
    let text = |(k, v): (&String, &String)| (k.clone(), v.clone());
    let schema = (m.schema_metadata.iter())
        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
        .collect();
    (
        m.config.iter().map(text).collect(),
        m.table_metadata.iter().map(text).collect(),
        schema,
    )
}

/// Sets (a value) or removes (`None`) the keys of `entries` in the map `target` (`config`,
/// `table`, `schema`, or `field` with the field's path) — with `replace`, makes the map
/// exactly the entries that have a value — in one commit; returns the new handle.
#[pyfunction]
#[pyo3(signature = (ds, target, entries, replace, field=None))]
pub fn update_map(
    py: Python<'_>,
    ds: &PyDataset,
    target: &str,
    entries: Vec<(String, Option<String>)>,
    replace: bool,
    field: Option<String>,
) -> PyResult<PyDataset> {
    let handle = ds.handle().clone();
    let target = target.to_string();
    let committed = block_on(py, async move {
        let target = match (target.as_str(), field.as_deref()) {
            ("config", _) => MetadataTarget::Config,
            ("table", _) => MetadataTarget::Table,
            ("schema", _) => MetadataTarget::Schema,
            ("field", Some(path)) => MetadataTarget::Field(path),
            (other, _) => {
                return Err(lancet::Error::InvalidArgument {
                    what: "metadata target".into(),
                    reason: format!("{other:?} is none of config, table, schema, field"),
                })
            }
        };
        let entries: Vec<(&str, Option<&str>)> = entries
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        handle
            .storage()
            .update_metadata(target, &entries, replace)
            .await
    })
    .py_err()?;
    Ok(ds.after(committed.dataset))
}

/// Deletes every row (pylance's `truncate_table`); returns the new handle.
#[pyfunction]
pub fn truncate(py: Python<'_>, ds: &PyDataset) -> PyResult<PyDataset> {
    let handle = ds.handle().clone();
    let committed = block_on(py, async move { handle.storage().truncate().await }).py_err()?;
    Ok(ds.after(committed.dataset))
}

/// `(max_field_id, data_storage_version, fragment ids)` of this version: the highest field id
/// the table has allocated (-1 with none), the file version writes use, and every fragment's id.
#[pyfunction]
pub fn version_facts(py: Python<'_>, ds: &PyDataset) -> PyResult<(i64, String, Vec<u64>)> {
    let handle = ds.handle().clone();
    block_on(py, async move {
        let fragments = handle.fragments().await?;
        let storage = handle.storage();
        let manifest = storage.manifest();
        let max = lancet::txn::fields::max_field_id(manifest, fragments.iter());
        let version = (manifest.data_format.as_ref())
            .map_or("2.0", |f| f.version.as_str())
            .to_string();
        let ids = fragments.iter().map(|f| f.id).collect();
        Ok::<_, lancet::Error>((max.map_or(-1, i64::from), version, ids))
    })
    .py_err()
}
