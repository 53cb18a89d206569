//! Target `filter`: filter and `SET` text as users and scripts write it. Parsing never panics,
//! and what parses is evaluated on a batch of every column type (computed comparisons, and
//! values assigned to each column): an error is fine, a panic or a value of the wrong length
//! is not.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use lancet_filter::{parse_assignment, Expr, Filter};

use super::Target;

pub struct FilterTarget;

fn batch() -> RecordBatch {
    let schema = Schema::new(vec![
        Field::new("i", DataType::Int64, true),
        Field::new("j", DataType::Int32, true),
        Field::new("f", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("b", DataType::Boolean, true),
        Field::new("d", DataType::Date32, true),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![
            Some(i64::MIN),
            Some(-1),
            Some(0),
            None,
            Some(i64::MAX),
        ])),
        Arc::new(Int32Array::from(vec![
            Some(0),
            Some(i32::MIN),
            None,
            Some(7),
            Some(-3),
        ])),
        Arc::new(Float64Array::from(vec![
            Some(f64::NAN),
            Some(-0.0),
            Some(1.5),
            None,
            Some(f64::INFINITY),
        ])),
        Arc::new(StringArray::from(vec![
            Some(""),
            Some("a%b"),
            None,
            Some("ü"),
            Some("ZZ"),
        ])),
        Arc::new(BooleanArray::from(vec![
            Some(true),
            None,
            Some(false),
            Some(true),
            None,
        ])),
        Arc::new(Date32Array::from(vec![
            Some(0),
            Some(-1),
            None,
            Some(19000),
            Some(i32::MAX),
        ])),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).unwrap_or_else(|_| unreachable!())
}

/// Every computed comparison of `e`, evaluated on `batch`.
fn evaluate(e: &Expr, batch: &RecordBatch) {
    match e {
        Expr::Compare { left, op, right } => {
            if let Ok(truth) = lancet_filter::scalar::compare(left, *op, right, batch) {
                assert_eq!(truth.len(), batch.num_rows(), "a comparison per row");
            }
        }
        Expr::Not(inner) | Expr::Is(inner, _) => evaluate(inner, batch),
        Expr::And(a, b) | Expr::Or(a, b) => {
            evaluate(a, batch);
            evaluate(b, batch);
        }
        Expr::Leaf { .. } | Expr::Const(_) => {}
    }
}

impl Target for FilterTarget {
    fn name(&self) -> &'static str {
        "filter"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        [
            "i % 7 = 3",
            "i + j > f * 2 AND s IS NOT NULL",
            "upper(s) = 'A%B' OR NOT (j - 1 < i)",
            "CAST(j AS DOUBLE) / 0.5 >= -f",
            "i = 2 AND s LIKE 'a\\\\%%' AND d > DATE '2024-01-01'",
            "x = x * 2",
            "s = concat(s, '-', i) ",
            "f = -(f + 1) % 3",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect()
    }

    fn check(&self, input: &[u8]) -> bool {
        let Ok(text) = std::str::from_utf8(input) else {
            return false;
        };
        let batch = batch();
        let mut accepted = false;
        if let Ok(filter) = Filter::parse(text) {
            accepted = true;
            evaluate(filter.expr(), &batch);
            let _ = filter.expr().clone().push_not();
        }
        if let Ok((_, value)) = parse_assignment(text) {
            accepted = true;
            for field in batch.schema().fields() {
                if let Ok(v) = value.evaluate_as(&batch, field.data_type()) {
                    assert_eq!(v.len(), batch.num_rows(), "a value per row");
                    assert_eq!(v.data_type(), field.data_type(), "cast to the column");
                }
            }
        }
        accepted
    }
}
