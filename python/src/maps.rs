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

/// Keys to set (a value) or remove (`None`), as Python passes them.
type Entries = Vec<(String, Option<String>)>;

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
    entries: Entries,
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

/// `(max_field_id, fragment ids)` of this version: the highest field id the table has
/// allocated (-1 with none; data files' ids count, so the fragments are read) and every
/// fragment's id.
#[pyfunction]
pub fn version_facts(py: Python<'_>, ds: &PyDataset) -> PyResult<(i64, Vec<u64>)> {
    let handle = ds.handle().clone();
    block_on(py, async move {
        let fragments = handle.fragments().await?;
        let manifest = handle.storage().manifest();
        let max = lancet::txn::fields::max_field_id(manifest, fragments.iter());
        let ids = fragments.iter().map(|f| f.id).collect();
        Ok::<_, lancet::Error>((max.map_or(-1, i64::from), ids))
    })
    .py_err()
}

/// The data file version writes use when they name none (the manifest's; 2.0 where a
/// manifest records none). Reads nothing.
#[pyfunction]
pub fn data_storage_version(ds: &PyDataset) -> String {
    let storage = ds.handle().storage();
    (storage.manifest().data_format.as_ref())
        .map_or("2.0", |f| f.version.as_str())
        .to_string()
}

/// The metadata of several fields (`(path, entries)`) changed in one commit, as pylance's
/// `update_field_metadata`; returns the new handle.
#[pyfunction]
pub fn update_field_maps(
    py: Python<'_>,
    ds: &PyDataset,
    updates: Vec<(String, Entries)>,
    replace: bool,
) -> PyResult<PyDataset> {
    let handle = ds.handle().clone();
    let committed = block_on(py, async move {
        let fields: Vec<lancet::FieldEntries<'_>> = updates
            .iter()
            .map(|(path, entries)| {
                let entries = entries
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_deref()))
                    .collect();
                (path.as_str(), entries)
            })
            .collect();
        handle
            .storage()
            .update_field_metadata(&fields, replace)
            .await
    })
    .py_err()?;
    Ok(ds.after(committed.dataset))
}

/// What pylance's `get_version()` summarizes of this version's manifest, as Lance 14.0.2's
/// `Manifest::summary` counts it from the records alone (a count a record leaves unknown
/// adds nothing): fragments, rows, data files, deletion files and the rows they delete, the
/// data files' recorded bytes, and the data files' rows (live plus deleted rows); with the
/// version's commit time (milliseconds), from the manifest already read.
#[pyfunction]
pub fn version_summary(py: Python<'_>, ds: &PyDataset) -> PyResult<(HashMap<String, u64>, i64)> {
    let handle = ds.handle().clone();
    block_on(py, async move {
        let fragments = handle.fragments().await?;
        let mut s: HashMap<String, u64> = HashMap::new();
        let mut add = |k: &str, n: u64| *s.entry(k.to_string()).or_default() += n;
        add("total_fragments", fragments.len() as u64);
        for f in fragments.iter() {
            let counts = lancet::FragmentSummary::of(f);
            if let (Some(p), Some(d)) = (counts.physical_rows, counts.num_deleted_rows) {
                add("total_rows", p.saturating_sub(d));
            }
            add("total_data_files", f.files.len() as u64);
            add("total_deletion_files", u64::from(f.deletion_file.is_some()));
            if f.deletion_file.is_some() {
                add(
                    "total_deletion_file_rows",
                    counts.num_deleted_rows.unwrap_or(0),
                );
            }
            add(
                "total_files_size",
                f.files.iter().map(|d| d.file_size_bytes).sum(),
            );
        }
        for k in ["total_rows", "total_deletion_file_rows"] {
            add(k, 0);
        }
        let count = |k: &str| s.get(k).copied().unwrap_or(0);
        let rows = count("total_rows") + count("total_deletion_file_rows");
        s.insert("total_data_file_rows".into(), rows);
        let committed_ms = lancet::paths::manifest::timestamp_ms(handle.storage().manifest());
        Ok::<_, lancet::Error>((s, committed_ms))
    })
    .py_err()
}

/// A shallow clone of `version` (this handle's when `None`) at `target`; its first version.
#[pyfunction]
#[pyo3(signature = (ds, target, version=None))]
pub fn shallow_clone(
    py: Python<'_>,
    ds: &PyDataset,
    target: String,
    version: Option<u64>,
) -> PyResult<PyDataset> {
    let handle = ds.handle().clone();
    let committed = block_on(
        py,
        async move { handle.shallow_clone(&target, version).await },
    )
    .py_err()?;
    Ok(PyDataset::new(committed.dataset))
}
