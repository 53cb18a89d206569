//! Reads per object of one command (issue 31, "read once"): each command runs on a cold
//! handle over a store that counts read requests per object, on a 20-fragment table with
//! deletions and a BTree, flat and tree.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;
use lancet::paths::counting::CountingStore;
use lancet::paths::DatasetStore;
use lancet::{Caches, CreateOptions, Dataset, Filter, Layout, ScanOptions};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]))
}

fn rows(start: i64, n: i64) -> RecordBatch {
    let ids: Vec<i64> = (start..start + n).collect();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(Float64Array::from_iter_values(
                ids.iter().map(|i| *i as f64),
            )),
            Arc::new(StringArray::from_iter(
                ids.iter().map(|i| Some(format!("s{i}"))),
            )),
        ],
    )
    .unwrap()
}

/// A table of 20 fragments of 50 rows, rows deleted in every other fragment, a BTree on `id`.
async fn table(dir: &std::path::Path, layout: Layout, rows_per_file: i64) -> String {
    let uri = dir.to_str().unwrap().to_string();
    let ds = Dataset::create(
        &uri,
        schema(),
        futures::stream::iter([Ok(rows(0, 20 * rows_per_file))]),
        CreateOptions {
            layout,
            max_rows_per_file: rows_per_file as u64,
            ..Default::default()
        },
    )
    .await
    .unwrap()
    .dataset;
    let ds = ds.build_btree("id", 64).await.unwrap().dataset;
    ds.delete(&Filter::parse("id % 100 = 7").unwrap())
        .await
        .unwrap();
    uri
}

/// A cold handle on `uri` through a counting store.
async fn counted(uri: &str) -> (Dataset, Arc<CountingStore>) {
    let plain = DatasetStore::open(uri).unwrap();
    let counting = Arc::new(CountingStore::new(plain.object_store().clone()));
    // a memory:// name: lance-file then reads through the wrapped store as it is
    let store = DatasetStore::from_store(
        counting.clone(),
        plain.path(""),
        &format!("memory://counted{uri}"),
    );
    let ds = Dataset::open_with(store, None, Caches::new(Default::default()))
        .await
        .unwrap();
    (ds, counting)
}

/// The most reads of one object of each kind (by directory).
fn by_kind(reads: &BTreeMap<String, u64>) -> BTreeMap<&'static str, (u64, usize)> {
    let mut out: BTreeMap<&'static str, (u64, usize)> = BTreeMap::new();
    for (path, n) in reads {
        let kind = [
            "_versions/",
            "/data/",
            "/_deletions/",
            "/_indices/",
            "/_bt/",
            "/_transactions/",
        ]
        .into_iter()
        .find(|k| path.contains(k.trim_start_matches('/')))
        .unwrap_or("other");
        let e = out.entry(kind).or_default();
        e.0 = e.0.max(*n);
        e.1 += 1;
    }
    out
}

#[tokio::test]
async fn reads_per_object_of_each_command() {
    for (layout, rows_per_file) in [
        (Layout::Flat, 50),
        (Layout::Tree, 50),
        (Layout::Flat, 20_000),
        (Layout::Tree, 20_000),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let template = table(dir.path(), layout, rows_per_file).await;
        let run = |name: &'static str| {
            let template = template.clone();
            async move {
                let copy = tempfile::tempdir().unwrap();
                copy_dir(std::path::Path::new(&template), copy.path());
                let uri = copy.path().to_str().unwrap().to_string();
                let (ds, counting) = counted(&uri).await;
                match name {
                    "open" => {}
                    "scan" => {
                        let _: Vec<RecordBatch> = ds
                            .scan(ScanOptions::default())
                            .await
                            .unwrap()
                            .try_collect()
                            .await
                            .unwrap();
                    }
                    "search-indexed" => {
                        ds.search(&Filter::parse("id = 420").unwrap())
                            .await
                            .unwrap();
                    }
                    "search-scan" => {
                        ds.search(&Filter::parse("x = 420").unwrap()).await.unwrap();
                    }
                    "delete-scan" => {
                        ds.delete(&Filter::parse("x < 30").unwrap()).await.unwrap();
                    }
                    "delete-indexed" => {
                        ds.delete(&Filter::parse("id < 30").unwrap()).await.unwrap();
                    }
                    "update" => {
                        let v = lancet::filter::parse_assignment("x = x + 1").unwrap();
                        ds.update(&Filter::parse("id < 30").unwrap(), &[v])
                            .await
                            .unwrap();
                    }
                    "take" => {
                        ds.take(&[3, (1 << 32) + 10, (5 << 32) + 20], None)
                            .await
                            .unwrap();
                    }
                    "compact" => {
                        ds.optimize().compact(&Default::default()).await.unwrap();
                    }
                    "optimize" => {
                        let ds = ds
                            .append(futures::stream::iter([Ok(rows(1_000_000, 10))]))
                            .await
                            .unwrap()
                            .dataset;
                        counting.reset();
                        ds.optimize()
                            .optimize_indices(&Default::default())
                            .await
                            .unwrap();
                    }
                    "append" => {
                        ds.append(futures::stream::iter([Ok(rows(1_000_000, 10))]))
                            .await
                            .unwrap();
                    }
                    "add-column" => {
                        let v = lancet::filter::parse_value("id * 2").unwrap();
                        ds.add_column("w", &v, Default::default()).await.unwrap();
                    }
                    "cleanup" => {
                        ds.cleanup(&lancet::CleanupPolicy {
                            older_than: Some(std::time::Duration::ZERO),
                            ..Default::default()
                        })
                        .await
                        .unwrap();
                    }
                    _ => unreachable!(),
                }
                let reads = counting.reads();
                let what = format!("{layout:?} {rows_per_file} {name}");
                eprintln!("{what}: {:?} lists {:?}", by_kind(&reads), counting.lists());
                // each object once; a Lance file its tail, then its pages (a lookup in a page
                // too large to fetch whole: its chunk metadata, then its chunks)
                let over = counting.over_budget();
                assert!(over.is_empty(), "{what}: read over budget: {over:?}");
                // what the command wrote it knows: no data file, deletion file, index file or
                // manifest it wrote is read back (a commit judges the files it adds from the
                // tails kept as they were written)
                let back = counting.read_back();
                assert!(back.is_empty(), "{what}: read back what it wrote: {back:?}");
                // a listing once per command; a cleanup lists `_versions/` again for its plan
                // (the open's listing may be stale by then) and in its sweep (for temporary
                // files), as Lance's cleanup does
                for (prefix, n) in counting.lists() {
                    let budget = match name == "cleanup" && prefix.ends_with("_versions") {
                        true => 3,
                        false => 1,
                    };
                    assert!(n <= budget, "{what}: {prefix} listed {n} times");
                }
            }
        };
        for name in [
            "open",
            "scan",
            "search-indexed",
            "search-scan",
            "delete-scan",
            "delete-indexed",
            "update",
            "take",
            "compact",
            "optimize",
            "append",
            "add-column",
            "cleanup",
        ] {
            run(name).await;
        }
    }
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
