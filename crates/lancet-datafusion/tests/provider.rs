//! The provider against DataFusion over the same rows in memory: every pushed-down form gives
//! the rows DataFusion gives, on flat and tree tables with a BTree and deletions; the plan
//! shows what was pushed; statistics, versions, row columns and inserts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;

use arrow_array::{Array, Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::datasource::TableProvider;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::TryStreamExt;
use lancet::{CreateOptions, Dataset, Filter, Layout, ScanOptions};
use lancet_datafusion::{LancetTable, TableOptions};

mod common;
use common::{rows, schema};

/// A table of 300 rows in fragments of 40, a BTree on `id`, some rows deleted.
async fn table(dir: &std::path::Path, layout: Layout) -> Dataset {
    let uri = dir.join(format!("{layout:?}"));
    let ds = Dataset::create(
        uri.to_str().unwrap(),
        schema(),
        futures::stream::iter(vec![Ok(rows(0, 300))]),
        CreateOptions {
            max_rows_per_file: 40,
            layout,
            ..Default::default()
        },
    )
    .await
    .unwrap()
    .dataset;
    let ds = ds.build_btree("id", 16).await.unwrap().dataset;
    ds.delete(&Filter::parse("id % 11 = 4").unwrap())
        .await
        .unwrap()
        .dataset
}

/// A session with lancet's table `t` and the same live rows as the in-memory table `m`.
async fn session(ds: &Dataset, options: TableOptions) -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(3));
    ctx.register_table(
        "t",
        Arc::new(LancetTable::new(ds.clone(), options).unwrap()),
    )
    .unwrap();
    let live: Vec<RecordBatch> = ds
        .scan(ScanOptions::default())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mem = MemTable::try_new(schema(), vec![live]).unwrap();
    ctx.register_table("m", Arc::new(mem)).unwrap();
    ctx
}

async fn sorted(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let text = arrow_cast::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

async fn plan(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx
        .sql(&format!("EXPLAIN {sql}"))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    arrow_cast::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string()
}

const WHERES: &[&str] = &[
    "id = 17",
    "id = 4",
    "17 = id",
    "id <> 17",
    "id < 30",
    "id >= 250",
    "id > 10 AND id <= 20",
    "id < 5 OR id > 295",
    "NOT (id < 290)",
    "id BETWEEN 100 AND 110",
    "id NOT BETWEEN 10 AND 290",
    "id IN (1, 2, 3, 15, 299, 1000)",
    "id NOT IN (1, 2, 3) AND id < 8",
    "s IS NULL",
    "s IS NOT NULL AND id < 12",
    "s = 's42'",
    "s LIKE 's1%'",
    "s NOT LIKE '%9' AND id < 30",
    "s ILIKE 'S2_'",
    "x > 100.5",
    "x IS NULL",
    "x = 3.5 OR x = 4",
    // not pushed down: DataFusion evaluates them over the rows read
    "id % 13 = 2",
    "id + 1 = 18",
    "x * 2 > id",
    "upper(s) = 'S7'",
    "id = 17 AND id * 2 = 34",
];

#[tokio::test]
async fn every_filter_answers_as_datafusion_over_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    for layout in [Layout::Flat, Layout::Tree] {
        let ds = table(dir.path(), layout).await;
        let ctx = session(&ds, TableOptions::default()).await;
        for w in WHERES {
            for columns in ["id, x, s", "s, id", "count(*)"] {
                let got = sorted(&ctx, &format!("SELECT {columns} FROM t WHERE {w}")).await;
                let want = sorted(&ctx, &format!("SELECT {columns} FROM m WHERE {w}")).await;
                assert_eq!(got, want, "{layout:?}: SELECT {columns} WHERE {w}");
            }
        }
        let got = sorted(
            &ctx,
            "SELECT count(*) AS c, sum(id) AS s, min(x) AS mx FROM t",
        )
        .await;
        let want = sorted(
            &ctx,
            "SELECT count(*) AS c, sum(id) AS s, min(x) AS mx FROM m",
        )
        .await;
        assert_eq!(got, want, "{layout:?}");
        // a limit: that many rows, each a row of the table
        let limited = ctx
            .sql("SELECT id FROM t WHERE id > 100 LIMIT 7")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let n: usize = limited.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(n, 7, "{layout:?}");
    }
}

#[tokio::test]
async fn the_plan_shows_the_filter_pushed_and_the_btree_answering_it() {
    let dir = tempfile::tempdir().unwrap();
    let ds = table(dir.path(), Layout::Flat).await;
    let ctx = session(&ds, TableOptions::default()).await;
    let p = plan(&ctx, "SELECT s FROM t WHERE id = 17").await;
    assert!(p.contains("LancetScanExec"), "{p}");
    assert!(p.contains("filter=id = Int64(17)"), "{p}");
    assert!(p.contains("index=[id_idx(id)]"), "{p}");
    assert!(
        !p.contains("FilterExec"),
        "an exact filter is not evaluated again: {p}"
    );
    // a filter lancet does not answer stays DataFusion's
    let p = plan(&ctx, "SELECT s FROM t WHERE id % 13 = 2").await;
    assert!(p.contains("FilterExec"), "{p}");
    assert!(!p.contains("filter="), "{p}");
    // analyzed: the index's pages were read, no fragment's column was
    let batches = ctx
        .sql("EXPLAIN ANALYZE SELECT s FROM t WHERE id = 17")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let analyzed = arrow_cast::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string();
    assert!(analyzed.contains("index_pages_read="), "{analyzed}");
    assert!(!analyzed.contains("index_pages_read=0,"), "{analyzed}");
    assert!(
        analyzed.contains("fragments_filtered_by_reading=0"),
        "{analyzed}"
    );
}

#[tokio::test]
async fn statistics_come_from_the_manifest_and_versions_are_tables() {
    let dir = tempfile::tempdir().unwrap();
    let ds = table(dir.path(), Layout::Tree).await;
    let live = 300 - (0..300).filter(|i| i % 11 == 4).count();
    let provider = LancetTable::new(ds.clone(), TableOptions::default()).unwrap();
    let stats = provider.statistics().unwrap();
    assert_eq!(stats.num_rows.get_value(), Some(&live));
    // version 1 (before the index and the deletions) is a table of its own
    let first = ds.checkout(1).await.unwrap();
    let ctx = SessionContext::new();
    ctx.register_table(
        "v1",
        Arc::new(LancetTable::new(first, TableOptions::default()).unwrap()),
    )
    .unwrap();
    ctx.register_table("now", Arc::new(provider)).unwrap();
    let count = |sql: &'static str| {
        let ctx = ctx.clone();
        async move {
            let b = ctx.sql(sql).await.unwrap().collect().await.unwrap();
            let c = b[0]
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            c.value(0) as usize
        }
    };
    assert_eq!(count("SELECT count(*) FROM v1").await, 300);
    assert_eq!(count("SELECT count(*) FROM now").await, live);
    assert_eq!(
        count("SELECT count(*) FROM v1 JOIN now ON v1.id = now.id").await,
        live
    );
}

#[tokio::test]
async fn row_columns_are_columns_in_any_order() {
    let dir = tempfile::tempdir().unwrap();
    let ds = table(dir.path(), Layout::Flat).await;
    let options = TableOptions {
        with_row_id: true,
        with_row_address: true,
    };
    let ctx = session(&ds, options).await;
    let b = ctx
        .sql("SELECT _rowaddr, id, _rowid FROM t WHERE id = 41 OR id = 42 ORDER BY id")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let schema = b[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["_rowaddr", "id", "_rowid"]);
    let addr = b[0]
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::UInt64Array>()
        .unwrap();
    // rows 41, 42 are offsets 1 and 2 of fragment 1
    assert_eq!(addr.values(), &[(1u64 << 32) | 1, (1u64 << 32) | 2]);
    // an insert into a table with row columns is refused
    let err = ctx.sql("INSERT INTO t VALUES (1, 1.0, 'a', 0, 0)").await;
    let err = match err {
        Ok(df) => df.collect().await.unwrap_err(),
        Err(e) => e,
    };
    assert!(err.to_string().contains("_rowid"), "{err}");
}

#[tokio::test]
async fn an_insert_appends_one_version_and_the_table_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    for layout in [Layout::Flat, Layout::Tree] {
        let ds = table(dir.path(), layout).await;
        let before = ds.version();
        let ctx = session(&ds, TableOptions::default()).await;
        let b = ctx
            .sql("INSERT INTO t SELECT id + 1000, x, s FROM m WHERE id < 10")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let inserted = b[0]
            .column(0)
            .as_any()
            .downcast_ref::<arrow_array::UInt64Array>()
            .unwrap();
        let n = (0..10).filter(|i| i % 11 != 4).count() as u64;
        assert_eq!(inserted.value(0), n);
        let latest = Dataset::open(ds.uri()).await.unwrap();
        assert_eq!(latest.version(), before + 1, "{layout:?}");
        let got = sorted(&ctx, "SELECT id FROM t WHERE id >= 1000").await;
        assert_eq!(got.len(), n as usize + 4, "{layout:?}: {got:?}"); // rows + table frame
                                                                      // a row of another type is refused by the plan, nothing published
        let bad = ctx.sql("INSERT INTO t VALUES ('x', 'y', 'z')").await;
        if let Ok(df) = bad {
            assert!(df.collect().await.is_err());
        }
        assert_eq!(Dataset::open(ds.uri()).await.unwrap().version(), before + 1);
        // no rows: nothing published
        ctx.sql("INSERT INTO t SELECT * FROM m WHERE id < 0")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        assert_eq!(Dataset::open(ds.uri()).await.unwrap().version(), before + 1);
        let _ = Array::len(inserted);
    }
}

/// Columns of other types than Int64, Float64 and Utf8: an unsigned column, a large string,
/// a decimal with negative values, floats holding both zeros, a date; every form answers as
/// DataFusion over the same rows (pushed or left to DataFusion, never an error).
#[tokio::test]
async fn columns_of_other_types_answer_as_datafusion() {
    use arrow_array::{Date32Array, Decimal128Array, LargeStringArray, UInt32Array};
    let schema = Arc::new(Schema::new(vec![
        Field::new("u", DataType::UInt32, true),
        Field::new("ls", DataType::LargeUtf8, true),
        Field::new("d", DataType::Decimal128(10, 2), true),
        Field::new("f", DataType::Float64, true),
        Field::new("day", DataType::Date32, true),
    ]));
    let n = 120u32;
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(UInt32Array::from_iter(
                (0..n).map(|i| (i % 9 != 0).then_some(i * 3)),
            )),
            Arc::new(LargeStringArray::from_iter(
                (0..n).map(|i| (i % 7 != 0).then(|| format!("w{}", i % 13))),
            )),
            Arc::new(
                Decimal128Array::from_iter((0..n).map(|i| Some(i as i128 * 25 - 1500)))
                    .with_precision_and_scale(10, 2)
                    .unwrap(),
            ),
            Arc::new(Float64Array::from_iter((0..n).map(|i| match i % 4 {
                0 => Some(0.0),
                1 => Some(-0.0),
                2 => None,
                _ => Some(i as f64 - 60.0),
            }))),
            Arc::new(Date32Array::from_iter(
                (0..n).map(|i| Some(19_000 + i as i32)),
            )),
        ],
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("typed");
    let options = CreateOptions {
        max_rows_per_file: 50,
        ..Default::default()
    };
    let ds = Dataset::create(
        uri.to_str().unwrap(),
        schema.clone(),
        futures::stream::iter(vec![Ok(batch.clone())]),
        options,
    )
    .await
    .unwrap()
    .dataset;
    let ds = ds.build_btree("u", 16).await.unwrap().dataset;
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    ctx.register_table(
        "t",
        Arc::new(LancetTable::new(ds, TableOptions::default()).unwrap()),
    )
    .unwrap();
    let mem = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
    ctx.register_table("m", Arc::new(mem)).unwrap();
    for w in [
        "u = 27",
        "u > 300 AND u <= 330",
        "u IN (3, 6, 9, 1000)",
        "u BETWEEN 10 AND 20",
        "ls = 'w3'",
        "ls LIKE 'w1%'",
        "ls IN ('w2', 'w12')",
        "d > -1",
        "d < -10.50",
        "d BETWEEN -2 AND 2",
        "d = -0.25",
        "f = 0.0",
        "f < 0.0",
        "f > -0.0",
        "f >= 3",
        "day >= date '2022-01-01'",
        "day BETWEEN date '2022-01-10' AND date '2022-01-20'",
    ] {
        for columns in ["u, ls, d, f, day", "count(*)"] {
            let got = sorted(&ctx, &format!("SELECT {columns} FROM t WHERE {w}")).await;
            let want = sorted(&ctx, &format!("SELECT {columns} FROM m WHERE {w}")).await;
            assert_eq!(got, want, "SELECT {columns} WHERE {w}");
        }
    }
    // an unsigned literal on an unsigned column is pushed and answered by the BTree
    let p = plan(&ctx, "SELECT u FROM t WHERE u = 27").await;
    assert!(p.contains("index=[u_idx(u)]"), "{p}");
}
