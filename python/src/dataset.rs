//! `_Dataset`: one version of a table, and every operation on it. A write returns the new
//! version's handle (the Python `LanceDataset` moves to it, as pylance's does).

use std::sync::Arc;
use std::time::Duration;

use arrow_array::RecordBatchReader;
use futures::TryStreamExt;
use lancet::proto::table::DataFile;
use lancet::{
    CleanupPolicy, ColumnAlteration, Committed, CompactionOptions, CompactionResult,
    CompactionTask, Dataset, Filter, OptimizeOptions, RowColumn, ScanMetrics, ScanOptions,
};
use prost::Message;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::arrow_ffi::{batches, import_stream, ArrowStream};
use crate::errors::{invalid, to_py, IntoPy};
use crate::fragments::decode_fragments;
use crate::progress::{raised, PyProgress};
use crate::runtime::{block_on, run};

/// Opens the table at `uri` (`Dataset::open_ref`): its latest version, `version`, the version
/// `tag` names (on the main line or its branch), or branch `branch` (its latest, or `version`);
/// through `session`'s caches when given, caches of its own otherwise.
#[pyfunction]
#[pyo3(signature = (uri, version=None, tag=None, branch=None, session=None))]
pub fn open(
    py: Python<'_>,
    uri: String,
    version: Option<u64>,
    tag: Option<String>,
    branch: Option<String>,
    session: Option<PyRef<'_, crate::session::PySession>>,
) -> PyResult<PyDataset> {
    let caches = session.map(|s| s.caches.clone());
    let ds = block_on(py, async move {
        let at = lancet::VersionRef {
            version,
            tag,
            branch,
        };
        match caches {
            None => Dataset::open_ref(&uri, &at).await,
            Some(caches) => {
                let (root, version) = at.resolve(&uri).await?;
                let store = lancet::paths::DatasetStore::open(&root)?;
                Dataset::open_with(store, version, caches).await
            }
        }
    })
    .py_err()?;
    Ok(PyDataset::new(ds))
}

fn filter(text: Option<&str>) -> PyResult<Option<Filter>> {
    text.map(|t| Filter::parse(t).map_err(|e| to_py(e.into())))
        .transpose()
}

/// A scan's options from `scan`'s arguments, counted into `metrics`.
pub(crate) fn scan_options(
    columns: Option<Vec<String>>,
    filter: Option<&str>,
    (limit, offset): (Option<u64>, Option<u64>),
    (with_row_id, with_row_address): (bool, bool),
    fragments: Option<Vec<u64>>,
    metrics: Arc<ScanMetrics>,
) -> PyResult<ScanOptions> {
    // the version columns are asked for by name, as in pylance; the caller places them
    let asked = |name: &str| {
        columns
            .as_ref()
            .is_some_and(|c| c.iter().any(|n| n == name))
    };
    let with_row_last_updated_at_version = asked(RowColumn::LastUpdatedAt.name());
    let with_row_created_at_version = asked(RowColumn::CreatedAt.name());
    let columns = columns.map(|c| {
        c.into_iter()
            .filter(|n| {
                !matches!(
                    RowColumn::named(n),
                    Some(RowColumn::LastUpdatedAt | RowColumn::CreatedAt)
                )
            })
            .collect()
    });
    Ok(ScanOptions {
        columns,
        filter: self::filter(filter)?,
        with_row_id,
        with_row_address,
        with_row_last_updated_at_version,
        with_row_created_at_version,
        limit,
        offset: offset.unwrap_or(0),
        fragments,
        metrics: Some(metrics),
        ..Default::default()
    })
}

fn committed(py: Python<'_>, c: &Committed) -> PyResult<Py<PyDict>> {
    let out = PyDict::new(py);
    out.set_item("version", c.dataset.version())?;
    out.set_item("rows", c.rows)?;
    out.set_item("fragments_removed", c.fragments_removed)?;
    out.set_item("fragments_added", c.fragments_added)?;
    out.set_item("attempts", c.attempts)?;
    Ok(out.unbind())
}

/// An alteration from Python: `(path, rename, nullable, data_type as a one-field stream)`.
type Alteration<'py> = (
    String,
    Option<String>,
    Option<bool>,
    Option<Bound<'py, PyAny>>,
);

/// An index as Python lists it: `(name, type, columns, segments, fragments covered)`.
type IndexRow = (String, String, Vec<String>, usize, Vec<u32>);

#[pyclass(name = "_Dataset", module = "lancet._lancet", frozen)]
pub struct PyDataset {
    ds: Dataset,
    metrics: Arc<ScanMetrics>,
}

impl PyDataset {
    pub fn new(ds: Dataset) -> Self {
        PyDataset {
            ds,
            metrics: Arc::new(ScanMetrics::default()),
        }
    }

    /// The table handle.
    pub(crate) fn handle(&self) -> &Dataset {
        &self.ds
    }

    /// The handle after a write, keeping this handle's scan counters.
    pub(crate) fn after(&self, ds: Dataset) -> PyDataset {
        PyDataset {
            ds,
            metrics: self.metrics.clone(),
        }
    }
}

#[pymethods]
impl PyDataset {
    #[getter]
    fn uri(&self) -> String {
        self.ds.uri().to_string()
    }

    #[getter]
    fn version(&self) -> u64 {
        self.ds.version()
    }

    #[getter]
    fn has_stable_row_ids(&self) -> bool {
        self.ds.storage().has_stable_row_ids()
    }

    #[getter]
    fn is_tree(&self) -> bool {
        self.ds.storage().tree().is_some()
    }

    fn checkout(&self, py: Python<'_>, version: u64) -> PyResult<PyDataset> {
        let ds = self.ds.clone();
        let at = block_on(py, async move { ds.checkout(version).await }).py_err()?;
        Ok(self.after(at))
    }

    fn latest(&self, py: Python<'_>) -> PyResult<PyDataset> {
        let uri = self.ds.uri().to_string();
        let at = block_on(py, async move { Dataset::open(&uri).await }).py_err()?;
        Ok(self.after(at))
    }

    /// The table's schema, as an empty Arrow stream.
    fn schema(&self) -> PyResult<ArrowStream> {
        Ok(ArrowStream::of_batches(self.ds.schema().py_err()?, vec![]))
    }

    /// The session (caches) this handle reads through.
    fn session(&self) -> crate::session::PySession {
        crate::session::PySession {
            caches: self.ds.storage().caches().clone(),
        }
    }

    /// `(index pages read, fragments a filter read directly, fragments read)` by this
    /// handle's scans so far.
    fn scan_metrics(&self) -> (u64, u64, u64) {
        (
            self.metrics.pages_read(),
            self.metrics.scanned_fragments(),
            self.metrics.fragments_read(),
        )
    }

    /// The scan `ScanOptions` describes; `include_deleted`: every physical row, deleted
    /// ones with NULL row columns (Lance's `include_deleted_rows`); `counters`: this scan's
    /// own counters (the handle's otherwise).
    #[pyo3(signature = (columns=None, filter=None, limit=None, offset=None, with_row_id=false, with_row_address=false, fragments=None, include_deleted=false, counters=None))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        filter: Option<&str>,
        limit: Option<u64>,
        offset: Option<u64>,
        with_row_id: bool,
        with_row_address: bool,
        fragments: Option<Vec<u64>>,
        include_deleted: bool,
        counters: Option<PyRef<'_, crate::scan_counters::ScanCounters>>,
    ) -> PyResult<ArrowStream> {
        let metrics = match counters {
            Some(c) => c.metrics.clone(),
            None => self.metrics.clone(),
        };
        let options = ScanOptions {
            include_deleted,
            ..scan_options(
                columns,
                filter,
                (limit, offset),
                (with_row_id, with_row_address),
                fragments,
                metrics,
            )?
        };
        let schema = self.ds.storage().scan_schema(&options).py_err()?;
        let ds = self.ds.clone();
        let stream = block_on(py, async move { ds.scan(options).await }).py_err()?;
        Ok(ArrowStream::of_stream(schema, stream))
    }

    #[pyo3(signature = (filter=None))]
    fn count_rows(&self, py: Python<'_>, filter: Option<&str>) -> PyResult<u64> {
        let filter = self::filter(filter)?;
        let ds = self.ds.clone();
        block_on(py, async move { ds.count_rows(filter.as_ref()).await }).py_err()
    }

    /// `filter` answered through indexes where they cover: rows matched, index pages read,
    /// fragments read directly.
    fn search<'py>(&self, py: Python<'py>, filter: &str) -> PyResult<Bound<'py, PyDict>> {
        let filter = Filter::parse(filter).map_err(|e| to_py(e.into()))?;
        let ds = self.ds.clone();
        let found = block_on(py, async move { ds.search(&filter).await }).py_err()?;
        let out = PyDict::new(py);
        out.set_item("row_ids", found.row_ids.iter().collect::<Vec<u64>>())?;
        out.set_item("pages_read", found.pages_read)?;
        out.set_item("scanned_fragments", found.scanned_fragments)?;
        Ok(out)
    }

    /// The rows with these row ids (stable ids, or addresses without them), or with
    /// `positions` at these positions among the version's live rows (scan order); in order.
    #[pyo3(signature = (rows, columns=None, positions=false))]
    fn take(
        &self,
        py: Python<'_>,
        rows: Vec<u64>,
        columns: Option<Vec<String>>,
        positions: bool,
    ) -> PyResult<ArrowStream> {
        let ds = self.ds.clone();
        let batch = block_on(py, async move {
            let columns = columns.as_deref();
            match positions {
                true => {
                    let at = lancet::RowsAt::Positions(&rows);
                    ds.storage().take_rows(at, columns).await
                }
                false => ds.take(&rows, columns).await,
            }
        })
        .py_err()?;
        Ok(ArrowStream::of_batches(batch.schema(), vec![batch]))
    }

    /// `(id, physical rows, live rows)` of every fragment, in id order, physical rows
    /// counted from the data files where a legacy manifest leaves them unknown (the
    /// facade's one rule); live rows `None` where the deleted rows are not counted.
    fn fragments(&self, py: Python<'_>) -> PyResult<Vec<(u64, u64, Option<u64>)>> {
        let ds = self.ds.clone();
        let all = block_on(
            py,
            async move { ds.storage().fragments_with_known_rows().await },
        )
        .py_err()?;
        Ok(all
            .iter()
            .map(|f| {
                let s = lancet::FragmentSummary::of(f);
                (f.id, f.physical_rows, s.visible_rows())
            })
            .collect())
    }

    fn delete(&self, py: Python<'_>, predicate: &str) -> PyResult<(PyDataset, Py<PyDict>)> {
        let f = Filter::parse(predicate).map_err(|e| to_py(e.into()))?;
        let ds = self.ds.clone();
        let c = block_on(py, async move { ds.delete(&f).await }).py_err()?;
        Ok((self.after(c.dataset.clone()), committed(py, &c)?))
    }

    #[pyo3(signature = (updates, predicate=None))]
    fn update(
        &self,
        py: Python<'_>,
        updates: Vec<(String, String)>,
        predicate: Option<&str>,
    ) -> PyResult<(PyDataset, Py<PyDict>)> {
        let f = Filter::parse(predicate.unwrap_or("true")).map_err(|e| to_py(e.into()))?;
        let mut sets = Vec::with_capacity(updates.len());
        for (column, value) in updates {
            let v = lancet::filter::parse_value(&value).map_err(|e| to_py(e.into()))?;
            sets.push((column, v));
        }
        let ds = self.ds.clone();
        let c = block_on(py, async move { ds.update(&f, &sets).await }).py_err()?;
        Ok((self.after(c.dataset.clone()), committed(py, &c)?))
    }

    #[pyo3(signature = (on, source, when_matched, condition, insert_not_matched, delete_not_matched_by_source, by_source_filter, use_index))]
    #[allow(clippy::too_many_arguments)]
    fn merge_insert(
        &self,
        py: Python<'_>,
        on: Vec<String>,
        source: &Bound<'_, PyAny>,
        when_matched: &str,
        condition: Option<&str>,
        insert_not_matched: bool,
        delete_not_matched_by_source: bool,
        by_source_filter: Option<&str>,
        use_index: bool,
    ) -> PyResult<(PyDataset, Py<PyDict>)> {
        let reader = import_stream(source)?;
        let options = lancet::MergeOptions {
            when_matched: when_matched.to_string(),
            condition: condition.map(str::to_string),
            insert_not_matched,
            delete_not_matched_by_source,
            by_source_filter: by_source_filter.map(str::to_string),
        };
        let ds = self.ds.clone();
        let merged = block_on(py, async move {
            let m = ds
                .merge_insert(&on)
                .use_index(use_index)
                .with_options(&options)?;
            m.execute(batches(reader)).await
        })
        .py_err()?;
        let out = committed(py, &merged)?;
        let stats = merged.merged.unwrap_or_default();
        out.bind(py)
            .set_item("num_inserted_rows", stats.inserted_rows)?;
        out.bind(py)
            .set_item("num_updated_rows", stats.updated_rows)?;
        out.bind(py)
            .set_item("num_deleted_rows", stats.deleted_rows)?;
        Ok((self.after(merged.dataset.clone()), out))
    }

    /// Columns every row reads as NULL (the fields of `schema`, an Arrow stream), one Merge.
    fn add_null_columns(&self, py: Python<'_>, schema: &Bound<'_, PyAny>) -> PyResult<PyDataset> {
        let schema = import_stream(schema)?.schema();
        let fields: Vec<arrow_schema::Field> =
            schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        let ds = self.ds.clone();
        let c = block_on(
            py,
            async move { ds.storage().add_null_columns(&fields).await },
        )
        .py_err()?;
        Ok(self.after(c.dataset))
    }

    fn drop_columns(&self, py: Python<'_>, columns: Vec<String>) -> PyResult<PyDataset> {
        let ds = self.ds.clone();
        let c = block_on(py, async move {
            let names: Vec<&str> = columns.iter().map(String::as_str).collect();
            ds.drop_columns(&names).await
        })
        .py_err()?;
        Ok(self.after(c.dataset))
    }

    /// Each alteration `(path, rename, nullable, data_type)`; a data type is given as the
    /// type of the one field of an Arrow stream's schema.
    fn alter_columns(
        &self,
        py: Python<'_>,
        alterations: Vec<Alteration<'_>>,
    ) -> PyResult<PyDataset> {
        let mut parsed = Vec::with_capacity(alterations.len());
        for (path, rename, nullable, data_type) in alterations {
            let data_type = match data_type {
                Some(s) => {
                    let schema = import_stream(&s)?.schema();
                    let field = schema
                        .fields()
                        .first()
                        .ok_or_else(|| invalid("data_type: an empty schema"))?;
                    Some(field.data_type().clone())
                }
                None => None,
            };
            parsed.push(ColumnAlteration {
                path,
                rename,
                nullable,
                data_type,
            });
        }
        let ds = self.ds.clone();
        let c = block_on(py, async move { ds.alter_columns(&parsed).await }).py_err()?;
        Ok(self.after(c.dataset))
    }

    #[pyo3(signature = (column, page_rows=None))]
    fn create_scalar_index(
        &self,
        py: Python<'_>,
        column: String,
        page_rows: Option<u64>,
    ) -> PyResult<PyDataset> {
        let ds = self.ds.clone();
        let rows = page_rows.unwrap_or(lancet::btree::DEFAULT_PAGE_ROWS);
        let c = block_on(py, async move { ds.build_btree(&column, rows).await }).py_err()?;
        Ok(self.after(c.dataset))
    }

    /// Trains one segment of `{column}_idx` over `fragments`, uncommitted; its
    /// `IndexMetadata` protobuf.
    #[pyo3(signature = (column, fragments, page_rows=None))]
    fn train_btree_segment<'py>(
        &self,
        py: Python<'py>,
        column: String,
        fragments: Vec<u64>,
        page_rows: Option<u64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let ds = self.ds.clone();
        let rows = page_rows.unwrap_or(lancet::btree::DEFAULT_PAGE_ROWS);
        let segment = block_on(py, async move {
            ds.storage()
                .train_btree_segment(&column, Some(&fragments), rows)
                .await
        })
        .py_err()?;
        Ok(PyBytes::new(py, &segment.encode_to_vec()))
    }

    /// Commits segments `train_btree_segment` wrote as the one index `{column}_idx`.
    fn commit_btree_segments(
        &self,
        py: Python<'_>,
        column: String,
        segments: Vec<Vec<u8>>,
    ) -> PyResult<PyDataset> {
        let segments = segments
            .iter()
            .map(|b| {
                lancet::proto::table::IndexMetadata::decode(b.as_slice())
                    .map_err(|e| invalid(format!("not an index segment: {e}")))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let ds = self.ds.clone();
        let c = block_on(py, async move {
            ds.storage().commit_btree_segments(&column, segments).await
        })
        .py_err()?;
        Ok(self.after(c.dataset))
    }

    /// Every index: `(name, type, columns, segments, fragments covered)`.
    fn list_indices(&self) -> PyResult<Vec<IndexRow>> {
        Ok(self
            .ds
            .storage()
            .index_summaries()
            .py_err()?
            .into_iter()
            .map(|s| {
                (
                    s.name,
                    s.index_type,
                    s.columns,
                    s.segments,
                    s.fragments.iter().collect(),
                )
            })
            .collect())
    }

    #[pyo3(signature = (target_rows_per_fragment=None, max_rows_per_group=None, materialize_deletions=None, materialize_deletions_threshold=None, defer_index_remap=None))]
    fn compact(
        &self,
        py: Python<'_>,
        target_rows_per_fragment: Option<u64>,
        max_rows_per_group: Option<u64>,
        materialize_deletions: Option<bool>,
        materialize_deletions_threshold: Option<f64>,
        defer_index_remap: Option<bool>,
    ) -> PyResult<(PyDataset, Py<PyDict>)> {
        let options = compaction_options(
            target_rows_per_fragment,
            max_rows_per_group,
            materialize_deletions,
            materialize_deletions_threshold,
            defer_index_remap,
        );
        let ds = self.ds.clone();
        let c = block_on(py, async move { ds.optimize().compact(&options).await }).py_err()?;
        Ok((self.after(c.dataset.clone()), committed(py, &c)?))
    }

    /// The compaction's tasks, each as JSON.
    #[pyo3(signature = (target_rows_per_fragment=None, max_rows_per_group=None, materialize_deletions=None, materialize_deletions_threshold=None, defer_index_remap=None))]
    fn compaction_plan(
        &self,
        py: Python<'_>,
        target_rows_per_fragment: Option<u64>,
        max_rows_per_group: Option<u64>,
        materialize_deletions: Option<bool>,
        materialize_deletions_threshold: Option<f64>,
        defer_index_remap: Option<bool>,
    ) -> PyResult<Vec<String>> {
        let options = compaction_options(
            target_rows_per_fragment,
            max_rows_per_group,
            materialize_deletions,
            materialize_deletions_threshold,
            defer_index_remap,
        );
        let ds = self.ds.clone();
        let tasks = block_on(py, async move {
            ds.optimize().compaction().plan(&options).await
        })
        .py_err()?;
        tasks.iter().map(to_json).collect()
    }

    /// Executes one task (JSON) and returns its result (JSON); nothing is published.
    fn compaction_execute(&self, py: Python<'_>, task: &str) -> PyResult<String> {
        let task: CompactionTask = serde_json::from_str(task)
            .map_err(|e| invalid(format!("not a compaction task: {e}")))?;
        let ds = self.ds.clone();
        let result = block_on(py, async move {
            ds.optimize().compaction().execute(&task).await
        })
        .py_err()?;
        to_json(&result)
    }

    /// Publishes every result (JSON) in one Rewrite.
    fn compaction_commit(
        &self,
        py: Python<'_>,
        results: Vec<String>,
    ) -> PyResult<(PyDataset, Py<PyDict>)> {
        let results: Vec<CompactionResult> = results
            .iter()
            .map(|r| serde_json::from_str(r))
            .collect::<Result<_, _>>()
            .map_err(|e| invalid(format!("not a compaction result: {e}")))?;
        let ds = self.ds.clone();
        let c = block_on(py, async move {
            ds.optimize().compaction().commit(&results).await
        })
        .py_err()?;
        Ok((self.after(c.dataset.clone()), committed(py, &c)?))
    }

    /// Extends every BTree over the fragments it misses, merging the newest `merge` segments
    /// with them (0: a new segment).
    #[pyo3(signature = (merge=0))]
    fn optimize_indices(&self, py: Python<'_>, merge: usize) -> PyResult<PyDataset> {
        let ds = self.ds.clone();
        let options = OptimizeOptions { merge };
        let c = block_on(
            py,
            async move { ds.optimize().optimize_indices(&options).await },
        )
        .py_err()?;
        Ok(self.after(c.dataset))
    }

    fn restore(&self, py: Python<'_>) -> PyResult<PyDataset> {
        let ds = self.ds.clone();
        let version = ds.version();
        let c = block_on(py, async move {
            let latest = Dataset::open(ds.uri()).await?;
            latest.restore(version).await
        })
        .py_err()?;
        Ok(self.after(c.dataset))
    }

    #[pyo3(signature = (older_than_seconds, retain_versions=None, delete_unverified=false, dry_run=false))]
    fn cleanup<'py>(
        &self,
        py: Python<'py>,
        older_than_seconds: f64,
        retain_versions: Option<u64>,
        delete_unverified: bool,
        dry_run: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        if !older_than_seconds.is_finite() || older_than_seconds < 0.0 {
            return Err(invalid("older_than must be a non-negative duration"));
        }
        let mut policy = CleanupPolicy {
            older_than: Some(Duration::from_secs_f64(older_than_seconds)),
            retain_versions,
            dry_run,
            ..Default::default()
        };
        if delete_unverified {
            policy.unverified_older_than = Duration::ZERO;
        }
        let ds = self.ds.clone();
        let report = run(py, move || async move {
            let latest = Dataset::open(ds.uri()).await?;
            latest.cleanup(&policy).await
        })
        .py_err()?;
        let total = report.total();
        let out = PyDict::new(py);
        out.set_item("bytes_removed", total.bytes)?;
        out.set_item("objects_removed", total.objects)?;
        out.set_item("old_versions", report.removed_versions.len())?;
        out.set_item("removed_versions", report.removed_versions.clone())?;
        out.set_item("kept_versions", report.kept_versions.clone())?;
        Ok(out)
    }

    /// `(name, version)` of every tag.
    fn tags_list(&self, py: Python<'_>) -> PyResult<Vec<(String, u64)>> {
        let ds = self.ds.clone();
        let tags = block_on(py, async move { ds.tags().list().await }).py_err()?;
        Ok(tags.into_iter().map(|t| (t.name, t.version)).collect())
    }

    #[pyo3(signature = (action, name, version=None))]
    fn tags_change(
        &self,
        py: Python<'_>,
        action: &str,
        name: String,
        version: Option<u64>,
    ) -> PyResult<()> {
        let ds = self.ds.clone();
        let action = action.to_string();
        block_on(py, async move {
            match action.as_str() {
                "create" => ds.tags().create(&name, version).await.map(|_| ()),
                "update" => ds.tags().update(&name, version).await.map(|_| ()),
                _ => ds.tags().delete(&name).await,
            }
        })
        .py_err()
    }

    /// `(version, timestamp in nanoseconds since the epoch)` of every version, ascending.
    fn versions(&self, py: Python<'_>) -> PyResult<Vec<(u64, i64)>> {
        let ds = self.ds.clone();
        block_on(py, async move {
            let store = ds.storage().store().clone();
            let entries = lancet::paths::manifest::list_versions(&store).await?;
            let mut out = Vec::with_capacity(entries.len());
            for e in entries {
                let at = ds.checkout(e.version).await?;
                let t = at
                    .storage()
                    .manifest()
                    .timestamp
                    .as_ref()
                    .map_or(0, |t| t.seconds * 1_000_000_000 + i64::from(t.nanos));
                out.push((e.version, t));
            }
            Ok::<_, lancet::Error>(out)
        })
        .py_err()
    }

    /// Rows inserted and updated between `begin` and `end` (led by `_change`), and the row
    /// ids deleted.
    fn delta(
        &self,
        py: Python<'_>,
        begin: u64,
        end: u64,
    ) -> PyResult<(ArrowStream, ArrowStream, Vec<u64>)> {
        let ds = self.ds.clone();
        let changes = block_on(py, async move { ds.changes(begin, end).await }).py_err()?;
        Ok((
            ArrowStream::of_batches(changes.inserted.schema(), vec![changes.inserted]),
            ArrowStream::of_batches(changes.updated.schema(), vec![changes.updated]),
            changes.deleted_row_ids,
        ))
    }

    fn convert_to_tree(&self, py: Python<'_>) -> PyResult<PyDataset> {
        let ds = self.ds.clone();
        let c = block_on(py, async move {
            ds.storage()
                .convert_to_tree(&Default::default(), |_, _| {})
                .await
        })
        .py_err()?;
        Ok(self.after(c.dataset))
    }

    fn flatten(&self, py: Python<'_>) -> PyResult<PyDataset> {
        let ds = self.ds.clone();
        let c = block_on(py, async move { ds.storage().flatten().await }).py_err()?;
        Ok(self.after(c.dataset))
    }

    /// Every invariant of this version (and, with `data`, every data file's footer);
    /// returns `(version, fragments)` or raises the typed error.
    #[pyo3(signature = (data=false))]
    fn verify(&self, py: Python<'_>, data: bool) -> PyResult<(u64, u64)> {
        let ds = self.ds.clone();
        let r = block_on(py, async move {
            match data {
                true => ds.storage().verify_data().await,
                false => ds.verify().await,
            }
        })
        .py_err()?;
        Ok((r.version, r.fragments))
    }

    /// Writes `data` (the table's schema) as new fragments, uncommitted, files cut every
    /// `max_rows_per_file` rows and each fragment told to `progress`; each fragment's
    /// `DataFragment` protobuf.
    #[pyo3(signature = (data, max_rows_per_file=1_048_576, max_rows_per_group=1_024, progress=None))]
    fn write_fragments<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        max_rows_per_file: u64,
        max_rows_per_group: u64,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let (progress, observer) = PyProgress::of(progress);
        let options = lancet::AppendOptions {
            max_rows_per_file,
            max_rows_per_group,
            data_storage_version: None,
            progress,
            transaction_properties: Default::default(),
        };
        let reader = import_stream(data)?;
        let ds = self.ds.clone();
        let written = block_on(py, async move {
            ds.storage()
                .write_fragments(batches(reader), &options)
                .await
        })
        .py_err();
        let written = raised(written, &observer)?;
        Ok(written
            .iter()
            .map(|f| PyBytes::new(py, &f.encode_to_vec()))
            .collect())
    }

    /// Commits fragments `write_fragments` wrote in one Append, read at this version
    /// (rebased over whatever landed since), recording `transaction_properties`.
    #[pyo3(signature = (fragments, transaction_properties=None))]
    fn commit_append(
        &self,
        py: Python<'_>,
        fragments: Vec<Vec<u8>>,
        transaction_properties: Option<std::collections::BTreeMap<String, String>>,
    ) -> PyResult<PyDataset> {
        let fragments = decode_fragments(&fragments)?;
        let append = lancet::proto::table::transaction::Append { fragments };
        let change = lancet::Change::new(lancet::Operation::Append(append))
            .with_properties(transaction_properties.unwrap_or_default());
        let ds = self.ds.clone();
        let c = block_on(py, async move { ds.commit(change).await }).py_err()?;
        Ok(self.after(c.dataset))
    }

    /// Writes `data` as the data files of an overwrite of this table, uncommitted (pylance's
    /// `write_fragments(mode="overwrite")`); each fragment's `DataFragment` protobuf.
    #[pyo3(signature = (data, max_rows_per_file, max_rows_per_group, data_storage_version=None, progress=None))]
    fn write_overwrite_fragments<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        max_rows_per_file: u64,
        max_rows_per_group: u64,
        data_storage_version: Option<&str>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let (progress, observer) = PyProgress::of(progress);
        let options = lancet::AppendOptions {
            max_rows_per_file,
            max_rows_per_group,
            data_storage_version: data_storage_version
                .map(crate::storage_version::file_version)
                .transpose()?,
            progress,
            transaction_properties: Default::default(),
        };
        let reader = import_stream(data)?;
        let schema = reader.schema();
        let ds = self.ds.clone();
        let written = block_on(py, async move {
            (ds.storage())
                .write_overwrite_fragments(schema, batches(reader), &options)
                .await
        })
        .py_err();
        let written = raised(written, &observer)?;
        Ok(written
            .iter()
            .map(|f| PyBytes::new(py, &f.encode_to_vec()))
            .collect())
    }

    /// Commits fragments written for an overwrite with `schema` (an Arrow stream) as every
    /// row of the table in one Overwrite (pylance's `LanceOperation.Overwrite` on an existing
    /// table); `data_storage_version`, when given, becomes the table's; records
    /// `transaction_properties`.
    #[pyo3(signature = (schema, fragments, data_storage_version=None, transaction_properties=None))]
    fn commit_overwrite(
        &self,
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        fragments: Vec<Vec<u8>>,
        data_storage_version: Option<&str>,
        transaction_properties: Option<std::collections::BTreeMap<String, String>>,
    ) -> PyResult<PyDataset> {
        let options = lancet::AppendOptions {
            data_storage_version: (data_storage_version)
                .map(crate::storage_version::file_version)
                .transpose()?,
            transaction_properties: transaction_properties.unwrap_or_default(),
            ..Default::default()
        };
        let schema = import_stream(schema)?.schema();
        let fragments = decode_fragments(&fragments)?;
        let ds = self.ds.clone();
        let c = block_on(py, async move {
            (ds.storage())
                .commit_overwrite(&schema, fragments, &options)
                .await
        })
        .py_err()?;
        Ok(self.after(c.dataset))
    }

    /// Fragments with no data file for some of `columns` (NULL there until backfilled).
    fn unfilled_fragments(&self, py: Python<'_>, columns: Vec<String>) -> PyResult<Vec<u64>> {
        let ds = self.ds.clone();
        block_on(py, async move {
            let mut all = std::collections::BTreeSet::new();
            for c in &columns {
                all.extend(ds.storage().unfilled_fragments(c).await?);
            }
            Ok::<_, lancet::Error>(all.into_iter().collect())
        })
        .py_err()
    }

    /// Every physical row of fragment `id` (deleted rows included): a backfill's input.
    #[pyo3(signature = (id, columns=None))]
    fn fragment_rows(
        &self,
        py: Python<'_>,
        id: u64,
        columns: Option<Vec<String>>,
    ) -> PyResult<ArrowStream> {
        let ds = self.ds.clone();
        let batch = block_on(py, async move {
            ds.storage().fragment_rows(id, columns.as_deref()).await
        })
        .py_err()?;
        Ok(ArrowStream::of_batches(batch.schema(), vec![batch]))
    }

    /// Writes `data` (table columns, one value per physical row) as a data file for
    /// fragment `id`, unpublished; the file's `DataFile` protobuf.
    fn write_column_file<'py>(
        &self,
        py: Python<'py>,
        id: u64,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let reader = import_stream(data)?;
        let ds = self.ds.clone();
        let file = block_on(py, async move {
            let batches: Vec<arrow_array::RecordBatch> = batches(reader).try_collect().await?;
            let schema = batches.first().map(|b| b.schema()).ok_or_else(|| {
                lancet::Error::InvalidArgument {
                    what: format!("a data file for fragment {id}"),
                    reason: "no batches".into(),
                }
            })?;
            let batch = arrow_select_concat(&schema, &batches)?;
            ds.storage().write_column_file(id, batch).await
        })
        .py_err()?;
        Ok(PyBytes::new(py, &file.encode_to_vec()))
    }

    /// Publishes `(fragment id, DataFile protobuf)` pairs in one DataReplacement.
    fn replace_data_files(
        &self,
        py: Python<'_>,
        files: Vec<(u64, Vec<u8>)>,
    ) -> PyResult<PyDataset> {
        let files: Vec<(u64, DataFile)> = files
            .into_iter()
            .map(|(id, b)| {
                DataFile::decode(b.as_slice())
                    .map(|f| (id, f))
                    .map_err(|e| invalid(format!("not a data file's metadata: {e}")))
            })
            .collect::<PyResult<_>>()?;
        let ds = self.ds.clone();
        let c = block_on(
            py,
            async move { ds.storage().replace_data_files(&files).await },
        )
        .py_err()?;
        Ok(self.after(c.dataset))
    }
}

fn compaction_options(
    target_rows_per_fragment: Option<u64>,
    max_rows_per_group: Option<u64>,
    materialize_deletions: Option<bool>,
    materialize_deletions_threshold: Option<f64>,
    defer_index_remap: Option<bool>,
) -> CompactionOptions {
    let d = CompactionOptions::default();
    CompactionOptions {
        target_rows_per_fragment: target_rows_per_fragment.unwrap_or(d.target_rows_per_fragment),
        max_rows_per_group: max_rows_per_group.unwrap_or(d.max_rows_per_group),
        materialize_deletions: materialize_deletions.unwrap_or(d.materialize_deletions),
        materialize_deletions_threshold: materialize_deletions_threshold
            .unwrap_or(d.materialize_deletions_threshold),
        defer_index_remap: defer_index_remap.unwrap_or(d.defer_index_remap),
        ..d
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| invalid(e.to_string()))
}

/// `batches` as one batch.
fn arrow_select_concat(
    schema: &arrow_schema::SchemaRef,
    batches: &[arrow_array::RecordBatch],
) -> lancet::Result<arrow_array::RecordBatch> {
    arrow_select::concat::concat_batches(schema, batches).map_err(|e| {
        lancet::Error::InvalidArgument {
            what: "Arrow data".into(),
            reason: e.to_string(),
        }
    })
}
