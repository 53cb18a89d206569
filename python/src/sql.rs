//! `LanceDataset.sql`: a SQL query over one version of the table, run by DataFusion through
//! lancet-datafusion's provider (filters lancet answers pushed into its scans), as pylance's
//! `SqlQuery` runs one through Lance's.

use lancet_datafusion::{query, LancetTable, TableOptions};
use pyo3::prelude::*;

use crate::arrow_ffi::ArrowStream;
use crate::dataset::PyDataset;
use crate::errors::IntoPy;
use crate::runtime::block_on;

/// Runs `query` with this version registered as `table_name` (with `_rowid` / `_rowaddr`
/// columns when asked), at most `batch_size` rows per batch; the results as they come.
#[pyfunction]
#[pyo3(signature = (ds, query, table_name="dataset", with_row_id=false, with_row_addr=false, batch_size=None))]
pub fn sql(
    py: Python<'_>,
    ds: &PyDataset,
    query: &str,
    table_name: &str,
    with_row_id: bool,
    with_row_addr: bool,
    batch_size: Option<usize>,
) -> PyResult<ArrowStream> {
    let options = TableOptions {
        with_row_id,
        with_row_address: with_row_addr,
    };
    let (dataset, name, text) = (
        ds.handle().clone(),
        table_name.to_string(),
        query.to_string(),
    );
    let (schema, stream) = block_on(py, async move {
        let table = LancetTable::new(dataset, options)?;
        let ctx = query::session([(name, table)], batch_size)?;
        query::run(&ctx, &text).await
    })
    .py_err()?;
    Ok(ArrowStream::of_stream(schema, stream))
}
