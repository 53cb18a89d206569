//! `INSERT INTO` a lancet table: the rows DataFusion produced, appended in one Append through
//! the facade's write path (judged by lancet-txn's invariants before it is published); the
//! table then reads the version it published. No rows publish nothing.

use std::fmt;
use std::sync::{Arc, RwLock};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::sink::DataSink;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType};
use futures::TryStreamExt;
use lancet::Dataset;

use crate::exec::external;

/// Appends what it is given to the table `dataset` holds, and moves `dataset` to the version
/// published.
#[derive(Debug)]
pub struct LancetSink {
    dataset: Arc<RwLock<Dataset>>,
    schema: SchemaRef,
}

impl LancetSink {
    pub fn new(dataset: Arc<RwLock<Dataset>>, schema: SchemaRef) -> Self {
        LancetSink { dataset, schema }
    }

    fn current(&self) -> Dataset {
        match self.dataset.read() {
            Ok(d) => d.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

impl DisplayAs for LancetSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let d = self.current();
        write!(
            f,
            "LancetSink: append to {} after version {}",
            d.uri(),
            d.version()
        )
    }
}

#[async_trait]
impl DataSink for LancetSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let batches: Vec<RecordBatch> = data.try_collect().await?;
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        if rows == 0 {
            return Ok(0);
        }
        // the table's own field list (names, nullability, metadata) over DataFusion's columns
        let batches = batches
            .into_iter()
            .filter(|b| b.num_rows() > 0)
            .map(|b| RecordBatch::try_new(self.schema.clone(), b.columns().to_vec()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(DataFusionError::from)?;
        let dataset = self.current();
        let stream = futures::stream::iter(batches.into_iter().map(Ok));
        let committed = dataset.append(stream).await.map_err(external)?;
        match self.dataset.write() {
            Ok(mut d) => *d = committed.dataset,
            Err(poisoned) => *poisoned.into_inner() = committed.dataset,
        }
        Ok(rows as u64)
    }
}
