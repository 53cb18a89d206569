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

/// The counters of one scan (`PyDataset.scan(counters=...)`): what its filter and rows read.
#[pyclass(module = "lancet._lancet", frozen)]
#[derive(Default)]
pub struct ScanCounters {
    pub(crate) metrics: Arc<ScanMetrics>,
}

#[pymethods]
impl ScanCounters {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// `(index pages read, fragments a filter read directly, fragments read)`.
    fn counts(&self) -> (u64, u64, u64) {
        let m = &self.metrics;
        (m.pages_read(), m.scanned_fragments(), m.fragments_read())
    }

    /// The names of the indexes that answered the scan's filter.
    fn indexes(&self) -> Vec<String> {
        self.metrics.indexed_fragments().into_keys().collect()
    }
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
