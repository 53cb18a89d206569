//! The scan of one version of a lancet table as a DataFusion `ExecutionPlan`: one partition
//! per group of fragments, each a lancet scan of its fragments with the projection, the
//! translated filter and the limit pushed into it.
//!
//! A filter is answered by each partition over its own fragments (through a BTree where one
//! covers the column: the index's pages are read once, through the handle's caches). What a
//! partition read is counted into the plan's metrics (`EXPLAIN ANALYZE`): index pages, the
//! fragments whose column a filter read directly, and the fragments whose rows were read.

use std::fmt;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;
use datafusion::common::stats::Precision;
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::{StreamExt, TryStreamExt};
use lancet::{Dataset, Filter, ScanMetrics, ScanOptions};

/// What one scan asks of lancet, shared by its partitions.
#[derive(Debug, Clone)]
pub struct ScanRequest {
    /// The table's columns read, in output order (`Some(vec![])`: row counts only).
    pub columns: Vec<String>,
    pub with_row_id: bool,
    pub with_row_address: bool,
    /// The output's columns as positions in what lancet returns (its columns, then `_rowid`,
    /// `_rowaddr`), when the query asks for another order.
    pub order: Option<Vec<usize>>,
    pub filter: Option<Filter>,
    /// The filter as DataFusion printed it.
    pub filter_text: String,
    pub limit: Option<usize>,
    /// The BTrees that answer the filter's columns, as `name(column)`, for the plan's text.
    pub indexes: Vec<String>,
}

/// One partition: the fragments it reads and their visible rows (`None` when a record
/// leaves them unknown).
#[derive(Debug, Clone)]
pub struct FragmentGroup {
    pub ids: Vec<u64>,
    pub rows: Option<u64>,
}

/// The scan of `dataset`'s fragment `groups` (one partition each) as `request` asks, producing
/// `schema`.
#[derive(Debug)]
pub struct LancetScanExec {
    dataset: Dataset,
    schema: SchemaRef,
    request: ScanRequest,
    groups: Vec<FragmentGroup>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl LancetScanExec {
    pub fn new(
        dataset: Dataset,
        schema: SchemaRef,
        request: ScanRequest,
        groups: Vec<FragmentGroup>,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(groups.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        LancetScanExec {
            dataset,
            schema,
            request,
            groups,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// What the scan asks of lancet.
    pub fn request(&self) -> &ScanRequest {
        &self.request
    }

    /// The fragments each partition reads.
    pub fn groups(&self) -> &[FragmentGroup] {
        &self.groups
    }

    /// The rows `groups` produce: each partition's at most the limit (each applies it).
    fn rows(&self, groups: &[FragmentGroup]) -> Precision<usize> {
        let mut total = 0usize;
        for g in groups {
            let Some(rows) = g.rows else {
                return Precision::Absent;
            };
            let rows = usize::try_from(rows).unwrap_or(usize::MAX);
            total = total.saturating_add(self.request.limit.map_or(rows, |l| rows.min(l)));
        }
        match self.request.filter {
            None => Precision::Exact(total),
            Some(_) => Precision::Inexact(total),
        }
    }
}

impl DisplayAs for LancetScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let fragments: usize = self.groups.iter().map(|g| g.ids.len()).sum();
        write!(
            f,
            "LancetScanExec: version={}, fragments={fragments}, partitions={}, columns=[{}]",
            self.dataset.version(),
            self.groups.len(),
            self.request.columns.join(", ")
        )?;
        for (on, name) in [
            (self.request.with_row_id, "_rowid"),
            (self.request.with_row_address, "_rowaddr"),
        ] {
            if on {
                write!(f, ", {name}")?;
            }
        }
        if self.request.filter.is_some() {
            write!(f, ", filter={}", self.request.filter_text)?;
            match self.request.indexes.is_empty() {
                true => write!(f, ", index=none (columns read)")?,
                false => write!(f, ", index=[{}]", self.request.indexes.join(", "))?,
            }
        }
        if let Some(limit) = self.request.limit {
            write!(f, ", limit={limit}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for LancetScanExec {
    fn name(&self) -> &str {
        "LancetScanExec"
    }

    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match children.is_empty() {
            true => Ok(self),
            false => Err(DataFusionError::Internal(
                "LancetScanExec has no children".into(),
            )),
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let ids = match self.groups.get(partition) {
            Some(g) => g.ids.clone(),
            // a table without fragments has one empty partition
            None if self.groups.is_empty() && partition == 0 => Vec::new(),
            None => {
                return Err(DataFusionError::Internal(format!(
                    "LancetScanExec has no partition {partition}"
                )))
            }
        };
        let counters = Arc::new(ScanMetrics::default());
        let options = ScanOptions {
            columns: Some(self.request.columns.clone()),
            filter: self.request.filter.clone(),
            with_row_id: self.request.with_row_id,
            with_row_address: self.request.with_row_address,
            limit: self.request.limit.map(|l| l as u64),
            fragments: Some(ids),
            metrics: Some(counters.clone()),
            ..Default::default()
        };
        let mut recorded = Recorded::new(&self.metrics, partition, counters);
        let rows = recorded.rows.clone();
        let (dataset, schema) = (self.dataset.clone(), self.schema.clone());
        let (out, order) = (schema.clone(), self.request.order.clone());
        let stream = futures::stream::once(async move {
            let stream = dataset.scan(options).await.map_err(external)?;
            Ok::<_, DataFusionError>(stream.map_err(external))
        })
        .try_flatten()
        .map(move |batch| {
            let batch = batch?;
            rows.add(batch.num_rows());
            // the table's fields as the plan states them (lancet's batches carry the same)
            let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
            let columns = match &order {
                Some(order) => order
                    .iter()
                    .map(|&i| batch.columns().get(i).cloned())
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        DataFusionError::Internal("a column lancet did not return".into())
                    })?,
                None => batch.columns().to_vec(),
            };
            RecordBatch::try_new_with_options(out.clone(), columns, &options)
                .map_err(DataFusionError::from)
        })
        .chain(futures::stream::poll_fn(move |_| {
            // the scan's end: what lancet counted goes into the plan's metrics
            recorded.finish();
            std::task::Poll::Ready(None)
        }));
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        let groups = match partition {
            None => &self.groups[..],
            Some(p) => self.groups.get(p..=p).unwrap_or(&[]),
        };
        let mut stats = Statistics::new_unknown(&self.schema);
        stats.num_rows = self.rows(groups);
        Ok(Arc::new(stats))
    }
}

/// A partition's counters in the plan's metrics, filled from lancet's when its scan ends.
struct Recorded {
    rows: datafusion::physical_plan::metrics::Count,
    index_pages: datafusion::physical_plan::metrics::Count,
    filter_fragments: datafusion::physical_plan::metrics::Count,
    fragments_read: datafusion::physical_plan::metrics::Count,
    counters: Arc<ScanMetrics>,
    done: bool,
}

impl Recorded {
    fn new(
        metrics: &ExecutionPlanMetricsSet,
        partition: usize,
        counters: Arc<ScanMetrics>,
    ) -> Self {
        let count = |name: &'static str| MetricBuilder::new(metrics).counter(name, partition);
        Recorded {
            rows: MetricBuilder::new(metrics).output_rows(partition),
            index_pages: count("index_pages_read"),
            filter_fragments: count("fragments_filtered_by_reading"),
            fragments_read: count("fragments_read"),
            counters,
            done: false,
        }
    }

    fn finish(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let n = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        self.index_pages.add(n(self.counters.pages_read()));
        self.filter_fragments
            .add(n(self.counters.scanned_fragments()));
        self.fragments_read.add(n(self.counters.fragments_read()));
    }
}

/// A lancet error as DataFusion carries one (its kind and message kept).
pub fn external(e: lancet::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}
