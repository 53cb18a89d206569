//! Reads per object of a SQL query through the provider (the facade's read-once budget,
//! `crates/lancet/tests/reads.rs`): on a cold handle over a store that counts requests, a
//! query over three partitions reads each object at most as one command may (a Lance file
//! its tail, then its pages; an index page once), and lists `_versions/` once; flat and tree.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;

use datafusion::prelude::{SessionConfig, SessionContext};
use lancet::paths::counting::CountingStore;
use lancet::paths::DatasetStore;
use lancet::{Caches, CreateOptions, Dataset, Filter, Layout};
use lancet_datafusion::{LancetTable, TableOptions};

mod common;
use common::{rows, schema};

#[tokio::test]
async fn a_query_reads_each_object_once() {
    for layout in [Layout::Flat, Layout::Tree] {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().to_str().unwrap().to_string();
        let options = CreateOptions {
            layout,
            max_rows_per_file: 50,
            ..Default::default()
        };
        let ds = Dataset::create(
            &uri,
            schema(),
            futures::stream::iter([Ok(rows(0, 1000))]),
            options,
        )
        .await
        .unwrap()
        .dataset;
        let ds = ds.build_btree("id", 64).await.unwrap().dataset;
        ds.delete(&Filter::parse("id % 100 = 7").unwrap())
            .await
            .unwrap();
        for query in [
            "SELECT s FROM t WHERE id = 420",
            "SELECT s FROM t WHERE id IN (3, 420, 999) OR id BETWEEN 500 AND 520",
            "SELECT count(*) FROM t WHERE x < 30",
            "SELECT sum(x), count(s) FROM t",
            "SELECT id FROM t WHERE s LIKE 's4%' LIMIT 5",
        ] {
            let plain = DatasetStore::open(&uri).unwrap();
            let counting = Arc::new(CountingStore::new(plain.object_store().clone()));
            let store = DatasetStore::from_store(
                counting.clone(),
                plain.path(""),
                &format!("memory://counted-df{uri}"),
            );
            let cold = Dataset::open_with(store, None, Caches::new(Default::default()))
                .await
                .unwrap();
            let config = SessionConfig::new().with_target_partitions(3);
            let ctx = SessionContext::new_with_config(config);
            let table = LancetTable::new(cold, TableOptions::default()).unwrap();
            ctx.register_table("t", Arc::new(table)).unwrap();
            ctx.sql(query).await.unwrap().collect().await.unwrap();
            let what = format!("{layout:?}: {query}");
            let over = counting.over_budget();
            assert!(over.is_empty(), "{what}: read over budget: {over:?}");
            for (prefix, n) in counting.lists() {
                assert!(n <= 1, "{what}: {prefix} listed {n} times");
            }
        }
    }
}
