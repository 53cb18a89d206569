//! What a scan would read and what it did read, for lancet's own plan text (pylance's
//! `LanceScanner.explain_plan` / `analyze_plan`): the columns a filter reads, and one scan
//! run with its own counters (index pages, fragments read directly, indexes that answered
//! and for which fragments, rows, batches, time).

use std::sync::Arc;
use std::time::Instant;

use futures::TryStreamExt;
use lancet::{Filter, ScanMetrics};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::dataset::PyDataset;
use crate::errors::{to_py, IntoPy};
use crate::runtime::block_on;

/// The top-level columns `filter` reads, in the order it names them first.
#[pyfunction]
pub fn filter_columns(filter: &str) -> PyResult<Vec<String>> {
    let filter = Filter::parse(filter).map_err(|e| to_py(e.into()))?;
    Ok(filter.columns().into_iter().map(str::to_string).collect())
}

/// Runs the scan `scan` would (the same arguments) to its end with counters of its own, and
/// returns what it read: `rows`, `batches`, `elapsed_ms`, `index_pages_read`,
/// `filter_fragments_scanned`, `fragments_read` and `indexed` (index name to the fragment
/// ids it answered for).
#[pyfunction]
#[pyo3(signature = (ds, columns=None, filter=None, limit=None, offset=None, with_row_id=false, with_row_address=false, fragments=None))]
#[allow(clippy::too_many_arguments)]
pub fn analyze_scan<'py>(
    py: Python<'py>,
    ds: &PyDataset,
    columns: Option<Vec<String>>,
    filter: Option<&str>,
    limit: Option<u64>,
    offset: Option<u64>,
    with_row_id: bool,
    with_row_address: bool,
    fragments: Option<Vec<u64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let metrics = Arc::new(ScanMetrics::default());
    let options = crate::dataset::scan_options(
        columns,
        filter,
        (limit, offset),
        (with_row_id, with_row_address),
        fragments,
        metrics.clone(),
    )?;
    let handle = ds.handle().clone();
    let started = Instant::now();
    let (rows, batches) = block_on(py, async move {
        let stream = handle.scan(options).await?;
        stream
            .try_fold((0u64, 0u64), |(rows, batches), b| async move {
                Ok((rows + b.num_rows() as u64, batches + 1))
            })
            .await
    })
    .py_err()?;
    let elapsed = started.elapsed();
    let out = PyDict::new(py);
    out.set_item("rows", rows)?;
    out.set_item("batches", batches)?;
    out.set_item("elapsed_ms", elapsed.as_secs_f64() * 1e3)?;
    out.set_item("index_pages_read", metrics.pages_read())?;
    out.set_item("filter_fragments_scanned", metrics.scanned_fragments())?;
    out.set_item("fragments_read", metrics.fragments_read())?;
    let indexed = PyDict::new(py);
    for (name, ids) in metrics.indexed_fragments() {
        indexed.set_item(name, ids.iter().collect::<Vec<u32>>())?;
    }
    out.set_item("indexed", indexed)?;
    Ok(out)
}

/// Read requests and bytes read through Lance's I/O scheduler in this process so far
/// (`lancet_file::io_counters`: pylance's `iops_counter`, `bytes_read_counter`).
#[pyfunction]
pub fn io_counters() -> (u64, u64) {
    lancet::file::io_counters()
}

/// Every object under the table's root (its primary store; other bases are not listed), as
/// pylance's `all_files`: `(path relative to the root, size, last modified in microseconds
/// since the epoch)`.
#[pyfunction]
pub fn all_files(py: Python<'_>, ds: &PyDataset) -> PyResult<Vec<(String, u64, i64)>> {
    let handle = ds.handle().clone();
    block_on(py, async move {
        let store = handle.storage().store();
        let listed = store.list("").await?;
        Ok::<_, lancet::Error>(
            listed
                .into_iter()
                .filter_map(|m| {
                    let path = store.relative(&m.location)?;
                    Some((path, m.size, m.last_modified.timestamp_micros()))
                })
                .collect(),
        )
    })
    .py_err()
}

/// The versions this handle's line of history has, listed from the manifests' names alone
/// (none is read), in order: pylance's `version_refs`.
#[pyfunction]
pub fn version_numbers(py: Python<'_>, ds: &PyDataset) -> PyResult<Vec<u64>> {
    let handle = ds.handle().clone();
    block_on(py, async move {
        let store = handle.storage().store().clone();
        let entries = lancet::paths::manifest::list_versions(&store).await?;
        let mut out: Vec<u64> = entries.into_iter().map(|e| e.version).collect();
        out.sort_unstable();
        Ok::<_, lancet::Error>(out)
    })
    .py_err()
}

/// One file a version references: `(version, base uri ("" for the table's own root), path
/// relative to it, kind)`.
type TrackedFile = (u64, String, String, &'static str);

/// Every file each version of the table's main line (from `min_version`) references, as
/// pylance's `tracked_files`: its manifest, transaction file, data and deletion files (under
/// the base each names), and the files of its indexes' directories (listed once per index).
/// `progress(done, total)` is told after each version.
#[pyfunction]
#[pyo3(signature = (ds, min_version=None, progress=None))]
pub fn tracked_files(
    py: Python<'_>,
    ds: &PyDataset,
    min_version: Option<u64>,
    progress: Option<PyObject>,
) -> PyResult<Vec<TrackedFile>> {
    let handle = ds.handle().clone();
    let mut versions = block_on(py, {
        let store = handle.storage().store().clone();
        async move {
            let listed = lancet::paths::manifest::list_versions(&store).await;
            listed.map_err(lancet::Error::from)
        }
    })
    .py_err()?;
    versions.retain(|e| min_version.is_none_or(|m| e.version >= m));
    versions.sort_by_key(|e| e.version);
    let total = versions.len();
    let mut out = Vec::new();
    let mut index_files: std::collections::HashMap<String, Vec<String>> = Default::default();
    for (done, entry) in versions.into_iter().enumerate() {
        let at = handle.clone();
        let known: std::collections::HashSet<String> = index_files.keys().cloned().collect();
        let (files, listed) = block_on(py, async move {
            let v = at.checkout(entry.version).await?;
            version_files(&v, &known).await
        })
        .py_err()?;
        index_files.extend(listed);
        let (version, rows, indexes) = files;
        out.extend(rows);
        for (root, uuid) in indexes {
            for path in index_files.get(&uuid).into_iter().flatten() {
                out.push((version, root.clone(), path.clone(), "index file"));
            }
        }
        if let Some(p) = &progress {
            p.call1(py, (done + 1, Some(total)))?;
        }
    }
    Ok(out)
}

/// The files version `v` references: its rows, the `(root, uuid)` of its indexes, and the
/// listing of each index directory not in `known`.
#[allow(clippy::type_complexity)]
async fn version_files(
    v: &lancet::Dataset,
    known: &std::collections::HashSet<String>,
) -> lancet::Result<(
    (u64, Vec<TrackedFile>, Vec<(String, String)>),
    Vec<(String, Vec<String>)>,
)> {
    let storage = v.storage();
    let version = v.version();
    // the table's own root is "" (the caller knows its URI); another base by its URI
    let root = String::new();
    let base_of = |b: lancet::paths::ResolvedBase| match b.base_id {
        None => String::new(),
        Some(_) => b.uri,
    };
    let mut rows: Vec<TrackedFile> =
        vec![(version, root.clone(), storage.manifest_path(), "manifest")];
    let tf = &storage.manifest().transaction_file;
    if !tf.is_empty() {
        rows.push((
            version,
            root.clone(),
            format!("_transactions/{tf}"),
            "transaction file",
        ));
    }
    let fragments = v.fragments().await?;
    for f in fragments.iter() {
        for at in storage.data_file_locations(f)? {
            rows.push((version, base_of(at.base), at.path, "data file"));
        }
        if let Some(at) = storage.deletion_file_location(f)? {
            rows.push((version, base_of(at.base), at.path, "deletion file"));
        }
    }
    let mut indexes = Vec::new();
    let mut listed = Vec::new();
    for index in storage.indices() {
        let Some(uuid) = index.uuid.as_ref() else {
            continue;
        };
        let uuid = lancet::paths::ObjectUuid::from_slice(&uuid.uuid)?.to_string();
        if !known.contains(&uuid) && !listed.iter().any(|(u, _)| u == &uuid) {
            let store = storage.store();
            let files = store
                .list(&format!("_indices/{uuid}"))
                .await?
                .into_iter()
                .filter_map(|m| store.relative(&m.location))
                .collect();
            listed.push((uuid.clone(), files));
        }
        indexes.push((root.clone(), uuid));
    }
    Ok(((version, rows, indexes), listed))
}
