//! `cargo bench -p lancet --bench scan`
//!
//! `Dataset::scan` in-process (issue 31): the two-column scan of `benches/lineitem_compare.py`
//! (`l_extendedprice` decimal(15,2), `l_shipdate` date32) on a 16-column table of that shape,
//! every batch decoded and collected, from a cold handle each iteration (new caches: a
//! command's scan), and the same from a warm handle.
//!
//! The table: `LANCET_SCAN_TABLE=<dir>` opens one (as the script writes it, e.g.
//! `/tmp/li/l`, for figures beside pylance's in-process `to_table`); otherwise the bench
//! writes 1,000,000 rows of that shape itself (`LANCET_SCAN_ROWS` to change it), in fragments
//! of 1,048,576 rows, through `Dataset::create`.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Date32Array, Decimal128Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use criterion::{criterion_group, criterion_main, Criterion};
use futures::TryStreamExt;
use lancet::paths::DatasetStore;
use lancet::{Caches, CreateOptions, Dataset, ScanOptions};

const BATCH: usize = 65_536;

fn schema() -> SchemaRef {
    let dec = DataType::Decimal128(15, 2);
    Arc::new(Schema::new(vec![
        Field::new("l_orderkey", DataType::Int64, false),
        Field::new("l_partkey", DataType::Int64, false),
        Field::new("l_suppkey", DataType::Int64, false),
        Field::new("l_linenumber", DataType::Int32, false),
        Field::new("l_quantity", dec.clone(), false),
        Field::new("l_extendedprice", dec.clone(), false),
        Field::new("l_discount", dec.clone(), false),
        Field::new("l_tax", dec, false),
        Field::new("l_returnflag", DataType::Utf8, false),
        Field::new("l_linestatus", DataType::Utf8, false),
        Field::new("l_shipdate", DataType::Date32, false),
        Field::new("l_commitdate", DataType::Date32, false),
        Field::new("l_receiptdate", DataType::Date32, false),
        Field::new("l_shipinstruct", DataType::Utf8, false),
        Field::new("l_shipmode", DataType::Utf8, false),
        Field::new("l_comment", DataType::Utf8, false),
    ]))
}

/// Rows `start..start + n`, deterministic (a multiplicative hash stands in for randomness).
fn rows(start: usize, n: usize) -> RecordBatch {
    let h =
        |i: usize, salt: u64| ((i as u64 ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 33) as i64;
    let idx = start..start + n;
    let dec = |f: &dyn Fn(usize) -> i128| -> ArrayRef {
        Arc::new(
            Decimal128Array::from_iter_values(idx.clone().map(f))
                .with_precision_and_scale(15, 2)
                .unwrap(),
        )
    };
    let words = [
        "carefully",
        "final",
        "deposits",
        "sleep",
        "quickly",
        "regular",
        "ironic",
    ];
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            idx.clone().map(|i| (i / 4 + 1) as i64),
        )),
        Arc::new(Int64Array::from_iter_values(
            idx.clone().map(|i| h(i, 1) % 200_000),
        )),
        Arc::new(Int64Array::from_iter_values(
            idx.clone().map(|i| h(i, 2) % 10_000),
        )),
        Arc::new(Int32Array::from_iter_values(
            idx.clone().map(|i| (i % 4 + 1) as i32),
        )),
        dec(&|i| i128::from(h(i, 3) % 50 + 1) * 100),
        dec(&|i| i128::from(h(i, 4) % 10_000_000)),
        dec(&|i| i128::from(h(i, 5) % 11)),
        dec(&|i| i128::from(h(i, 6) % 9)),
        Arc::new(StringArray::from_iter_values(
            idx.clone().map(|i| ["A", "N", "R"][i % 3]),
        )),
        Arc::new(StringArray::from_iter_values(
            idx.clone().map(|i| ["F", "O"][i % 2]),
        )),
        Arc::new(Date32Array::from_iter_values(
            idx.clone().map(|i| 8035 + (h(i, 7) % 2526) as i32),
        )),
        Arc::new(Date32Array::from_iter_values(
            idx.clone().map(|i| 8035 + (h(i, 8) % 2526) as i32),
        )),
        Arc::new(Date32Array::from_iter_values(
            idx.clone().map(|i| 8035 + (h(i, 9) % 2526) as i32),
        )),
        Arc::new(StringArray::from_iter_values(
            idx.clone()
                .map(|i| ["DELIVER IN PERSON", "NONE", "COLLECT COD"][i % 3]),
        )),
        Arc::new(StringArray::from_iter_values(
            idx.clone().map(|i| ["AIR", "RAIL", "SHIP", "TRUCK"][i % 4]),
        )),
        Arc::new(StringArray::from_iter_values(idx.map(|i| {
            let k = (h(i, 10) % 4 + 2) as usize;
            (0..k)
                .map(|j| words[(i + j * 3) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        }))),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

async fn create(dir: &std::path::Path, n: usize) -> String {
    let uri = dir.to_str().unwrap().to_string();
    let batches = (0..n)
        .step_by(BATCH)
        .map(move |start| Ok(rows(start, BATCH.min(n - start))));
    Dataset::create(
        &uri,
        schema(),
        futures::stream::iter(batches),
        CreateOptions::default(),
    )
    .await
    .unwrap();
    uri
}

async fn scan(ds: &Dataset) -> usize {
    let options = ScanOptions {
        columns: Some(vec!["l_extendedprice".into(), "l_shipdate".into()]),
        ..Default::default()
    };
    let batches: Vec<RecordBatch> = ds.scan(options).await.unwrap().try_collect().await.unwrap();
    batches.iter().map(|b| b.num_rows()).sum()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let uri = match std::env::var("LANCET_SCAN_TABLE") {
        Ok(uri) => uri,
        Err(_) => {
            let n = std::env::var("LANCET_SCAN_ROWS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1_000_000);
            rt.block_on(create(tmp.path(), n))
        }
    };
    let open = || async {
        Dataset::open_with(
            DatasetStore::open(&uri).unwrap(),
            None,
            Caches::new(Default::default()),
        )
        .await
        .unwrap()
    };
    let warm = rt.block_on(open());
    let rows = rt.block_on(scan(&warm));
    assert!(rows > 0);
    let mut group = c.benchmark_group("scan_two_columns");
    group.sample_size(20);
    group.bench_function("cold_handle", |b| {
        b.to_async(&rt).iter(|| async { scan(&open().await).await })
    });
    group.bench_function("warm_handle", |b| b.to_async(&rt).iter(|| scan(&warm)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
