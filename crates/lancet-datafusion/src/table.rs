//! [`LancetTable`]: one version of a lancet table (flat or fragment-tree, any version, tag or
//! branch the caller opened) as a DataFusion `TableProvider`.
//!
//! - **Projection**: only the columns a query uses are read; `_rowid` and `_rowaddr` are
//!   columns when the table is registered with them ([`TableOptions`]).
//! - **Filters**: those lancet answers exactly are pushed down as `Exact` ([`crate::filters`]);
//!   the others are `Unsupported` and DataFusion evaluates them.
//! - **Limit**: pushed into every partition's scan (DataFusion applies the overall one).
//! - **Statistics**: row counts from the manifest or the tree's summaries, no data read.
//! - **Partitions**: the fragments in contiguous groups of about equal rows, one per
//!   DataFusion target partition.
//! - **Inserts** (`INSERT INTO`): one Append through the facade's judged write path; the
//!   table then reads the version it published.

use std::sync::{Arc, RwLock};

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use lancet::{Dataset, Filter, FragmentSummary};

use crate::exec::{external, FragmentGroup, LancetScanExec, ScanRequest};
use crate::filters::translate;
use crate::sink::LancetSink;

/// How a table is registered.
#[derive(Debug, Clone, Copy, Default)]
pub struct TableOptions {
    /// Add `_rowid` (the stable row id, or the row address without stable row ids).
    pub with_row_id: bool,
    /// Add `_rowaddr` (fragment id << 32 | offset).
    pub with_row_address: bool,
}

/// One version of a lancet table as a DataFusion table.
#[derive(Debug)]
pub struct LancetTable {
    /// The version read; replaced by the version an insert publishes.
    dataset: Arc<RwLock<Dataset>>,
    /// The table's columns, then the row columns asked for.
    schema: SchemaRef,
    options: TableOptions,
}

impl LancetTable {
    /// `dataset` (the version it holds) as a table, with the row columns `options` asks for.
    pub fn new(dataset: Dataset, options: TableOptions) -> lancet::Result<Self> {
        let table = dataset.schema()?;
        let mut fields: Vec<Arc<Field>> = table.fields().iter().cloned().collect();
        for (on, name) in [
            (options.with_row_id, "_rowid"),
            (options.with_row_address, "_rowaddr"),
        ] {
            if on {
                fields.push(Arc::new(Field::new(name, DataType::UInt64, true)));
            }
        }
        let schema = Arc::new(Schema::new_with_metadata(fields, table.metadata().clone()));
        Ok(LancetTable {
            dataset: Arc::new(RwLock::new(dataset)),
            schema,
            options,
        })
    }

    /// The version the table reads now.
    pub fn dataset(&self) -> Dataset {
        match self.dataset.read() {
            Ok(d) => d.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The number of the table's own columns (the row columns come after them).
    fn table_columns(&self) -> usize {
        let rows =
            usize::from(self.options.with_row_id) + usize::from(self.options.with_row_address);
        self.schema.fields().len() - rows
    }

    /// The lancet filter of `filters` (each one [`translate`] accepts), ANDed, and its text
    /// as DataFusion prints the filters.
    fn filter(&self, filters: &[Expr]) -> Result<(Option<Filter>, String)> {
        let mut out: Option<lancet::Expr> = None;
        for f in filters {
            let e = translate(f, &self.schema).ok_or_else(|| {
                DataFusionError::Internal(format!(
                    "a filter lancet does not answer was pushed: {f}"
                ))
            })?;
            out = Some(match out {
                None => e,
                Some(prev) => lancet::Expr::And(Box::new(prev), Box::new(e)),
            });
        }
        let text = filters
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join(" AND ");
        Ok((out.map(Filter::from_expr), text))
    }
}

/// The fragments of `dataset` in at most `partitions` contiguous groups of about equal rows.
async fn fragment_groups(
    dataset: &Dataset,
    partitions: usize,
) -> lancet::Result<Vec<FragmentGroup>> {
    let fragments = dataset.fragments().await?;
    let rows: Vec<(u64, Option<u64>)> = fragments
        .iter()
        .map(|f| (f.id, FragmentSummary::of(f).visible_rows()))
        .collect();
    let total = rows
        .iter()
        .fold(0u64, |t, (_, r)| t.saturating_add(r.unwrap_or(1)));
    let partitions = partitions.clamp(1, rows.len().max(1)) as u64;
    let per = total.div_ceil(partitions).max(1);
    let mut groups: Vec<FragmentGroup> = Vec::new();
    let mut filled = 0u64;
    for (id, r) in rows {
        let start_new = groups.last().is_none_or(|_| filled >= per);
        if start_new {
            groups.push(FragmentGroup {
                ids: Vec::new(),
                rows: Some(0),
            });
            filled = 0;
        }
        if let Some(g) = groups.last_mut() {
            g.ids.push(id);
            g.rows = g.rows.zip(r).map(|(a, b)| a.saturating_add(b));
        }
        filled = filled.saturating_add(r.unwrap_or(1));
    }
    Ok(groups)
}

#[async_trait]
impl TableProvider for LancetTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match translate(f, &self.schema) {
                Some(_) => TableProviderFilterPushDown::Exact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    fn statistics(&self) -> Option<Statistics> {
        let rows = self.dataset().num_rows()?;
        let mut stats = Statistics::new_unknown(&self.schema);
        stats.num_rows = Precision::Exact(usize::try_from(rows).unwrap_or(usize::MAX));
        Some(stats)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let dataset = self.dataset();
        let all: Vec<usize> = (0..self.schema.fields().len()).collect();
        let projection = projection.unwrap_or(&all);
        let own = self.table_columns();
        let schema = Arc::new(self.schema.project(projection)?);
        let (filter, filter_text) = self.filter(filters)?;
        let mut request = ScanRequest {
            columns: Vec::new(),
            with_row_id: false,
            with_row_address: false,
            order: None,
            filter,
            filter_text,
            limit,
            indexes: Vec::new(),
        };
        // lancet reads the table's columns in the order asked, then `_rowid`, `_rowaddr`
        for &i in projection {
            let name = self.schema.field(i).name();
            match (i < own, name.as_str()) {
                (true, _) if !request.columns.contains(name) => request.columns.push(name.clone()),
                (true, _) => {}
                (false, "_rowid") => request.with_row_id = true,
                (false, _) => request.with_row_address = true,
            }
        }
        let mut read: Vec<&str> = request.columns.iter().map(String::as_str).collect();
        read.extend(request.with_row_id.then_some("_rowid"));
        read.extend(request.with_row_address.then_some("_rowaddr"));
        let order = projection
            .iter()
            .map(|&i| {
                let name = self.schema.field(i).name();
                read.iter().position(|r| r == name).ok_or_else(|| {
                    DataFusionError::Internal(format!("projected column {name} is not read"))
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        if order.iter().copied().ne(0..read.len()) {
            request.order = Some(order);
        }
        if let Some(filter) = &request.filter {
            let columns = filter.columns();
            let summaries = dataset.storage().index_summaries().map_err(external)?;
            for s in summaries.iter().filter(|s| s.answered_by_lancet) {
                if let Some(c) = s.columns.iter().find(|c| columns.contains(&c.as_str())) {
                    request.indexes.push(format!("{}({c})", s.name));
                }
            }
        }
        let groups = fragment_groups(&dataset, state.config().target_partitions())
            .await
            .map_err(external)?;
        Ok(Arc::new(LancetScanExec::new(
            dataset, schema, request, groups,
        )))
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if insert_op != InsertOp::Append {
            return Err(DataFusionError::NotImplemented(format!(
                "{insert_op} into a lancet table (only INSERT INTO, an append)"
            )));
        }
        if self.table_columns() != self.schema.fields().len() {
            return Err(DataFusionError::NotImplemented(
                "INSERT INTO a lancet table registered with _rowid or _rowaddr".into(),
            ));
        }
        let sink = LancetSink::new(self.dataset.clone(), self.schema.clone());
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}
