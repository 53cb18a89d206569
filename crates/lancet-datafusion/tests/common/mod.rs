//! The rows the provider's tests share: `id` int64, `x` float64 (NULL every seventh row),
//! `s` utf8 (NULL every fifth).
#![allow(clippy::unwrap_used, dead_code)]

use std::sync::Arc;

use arrow_array::{Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]))
}

pub fn rows(start: i64, n: i64) -> RecordBatch {
    let ids: Vec<i64> = (start..start + n).collect();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(Float64Array::from_iter(
                ids.iter().map(|i| (i % 7 != 3).then_some(*i as f64 / 2.0)),
            )),
            Arc::new(StringArray::from_iter(
                ids.iter().map(|i| (i % 5 != 0).then(|| format!("s{i}"))),
            )),
        ],
    )
    .unwrap()
}
