//! A scan projected to SQL expressions, as pylance's `columns={"b2": "b * 2"}`: each value
//! parsed and evaluated per batch by lancet-filter's evaluator (the one `update` and
//! `add_columns` use), so a projection computes what an update would assign.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Field, Schema, SchemaRef};
use lancet::filter::{parse_value, Scalar};
use pyo3::prelude::*;

use crate::arrow_ffi::{import_stream, ArrowStream};
use crate::errors::{invalid, IntoPy};

fn parsed(exprs: &[(String, String)]) -> PyResult<Vec<(String, Scalar)>> {
    exprs
        .iter()
        .map(|(name, sql)| {
            let value = parse_value(sql).map_err(lancet::Error::from).py_err()?;
            Ok((name.clone(), value))
        })
        .collect()
}

/// The columns the expressions read, in first-use order, each once (what the scan under a
/// projection reads).
#[pyfunction]
pub fn expression_columns(exprs: Vec<(String, String)>) -> PyResult<Vec<String>> {
    let exprs = parsed(&exprs)?;
    let mut out = Vec::new();
    exprs.iter().for_each(|(_, v)| v.columns(&mut out));
    Ok(out.into_iter().map(str::to_string).collect())
}

/// The rows of `data` (an Arrow stream holding every column the expressions read) as the
/// columns `exprs` names, each `(name, sql)`, in order. A value that does not parse, or a
/// column the rows lack, is `InvalidInputError` before any row is read.
#[pyfunction]
pub fn project(data: &Bound<'_, PyAny>, exprs: Vec<(String, String)>) -> PyResult<ArrowStream> {
    let exprs = parsed(&exprs)?;
    let input = import_stream(data)?;
    let rows = input.schema();
    // the output types are the expressions' over no rows: a missing column fails here
    let empty = RecordBatch::new_empty(rows.clone());
    let mut fields = Vec::with_capacity(exprs.len());
    for (name, value) in &exprs {
        let column = value
            .evaluate(&empty)
            .map_err(|e| invalid(format!("column {name:?}: {e}")))?;
        fields.push(Field::new(
            name,
            column.data_type().clone(),
            value.nullable(&rows),
        ));
    }
    let schema = Arc::new(Schema::new(fields));
    Ok(ArrowStream::of_reader(Box::new(Projected {
        input: Box::new(input),
        exprs,
        schema,
    })))
}

/// The batches of `input` with `exprs` evaluated over them.
struct Projected {
    input: Box<dyn RecordBatchReader + Send>,
    exprs: Vec<(String, Scalar)>,
    schema: SchemaRef,
}

impl Iterator for Projected {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = match self.input.next()? {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        let columns = self
            .exprs
            .iter()
            .map(|(_, v)| v.evaluate(&batch).map_err(ArrowError::ComputeError))
            .collect::<Result<Vec<_>, _>>();
        Some(columns.and_then(|c| RecordBatch::try_new(self.schema.clone(), c)))
    }
}

impl RecordBatchReader for Projected {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
