//! `cargo bench -p lancet-btree --bench btree`
//!
//! 10M int64 values `v(i) = (i * 2654435761) mod 10_000_000` (a permutation, so every value
//! occurs once), ids `0..10M`, 4096-row pages, files on the local disk:
//! - `build/10M_int64`: sort + write both files.
//! - `search_hot/equality`: one value, pages cached.
//! - `search_hot/range_0.1pct`: 10,000 consecutive values, pages cached.
//! - `search_cold/equality`: a fresh segment (lookup read, data opened, one page read).
//!
//! `benches/btree_compare.py` builds the same column with pylance 14.0.2 and times its
//! index-only queries (`to_table(filter, columns=[], with_row_id=True)`).

use std::collections::HashMap;
use std::hint::black_box;
use std::ops::Bound;
use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, Int64Array, RecordBatch, UInt64Array};
use arrow_schema::DataType;
use criterion::{criterion_group, criterion_main, Criterion};
use lancet_btree::{train, BTreeIndex, NoCache, Page, PageCache, PageKey, Query, TrainOptions};
use lancet_file::FileStore;
use object_store::local::LocalFileSystem;
use object_store::path::Path;

const N: i64 = 10_000_000;

fn value(i: i64) -> i64 {
    ((i as u64).wrapping_mul(2_654_435_761) % N as u64) as i64
}

#[derive(Default)]
struct MapCache(Mutex<HashMap<PageKey, Arc<Page>>>);

impl PageCache for MapCache {
    fn get(&self, key: &PageKey) -> Option<Arc<Page>> {
        self.0.lock().ok()?.get(key).cloned()
    }
    fn insert(&self, key: PageKey, page: Arc<Page>) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(key, page);
        }
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _runtime = rt.enter();
    let tmp = tempfile::tempdir().unwrap();
    let fs = FileStore::new(Arc::new(LocalFileSystem::new()), "file:///").unwrap();
    let root = Path::from_absolute_path(tmp.path()).unwrap();
    let values: ArrayRef = Arc::new(Int64Array::from_iter_values((0..N).map(value)));
    let ids: ArrayRef = Arc::new(UInt64Array::from_iter_values(0..N as u64));
    let batch = RecordBatch::try_from_iter([("value", values), ("id", ids)]).unwrap();
    let opts = TrainOptions {
        page_rows: 4096,
        ..Default::default()
    };

    let mut build = c.benchmark_group("build");
    build.sample_size(10);
    let mut k = 0;
    build.bench_function("10M_int64", |b| {
        b.iter(|| {
            k += 1;
            let dir = root.clone().join(format!("b{k}"));
            let stream = futures::stream::iter([Ok(batch.clone())]);
            rt.block_on(train(&fs, &dir, &DataType::Int64, stream, opts))
                .unwrap()
        })
    });
    build.finish();

    // the searched segment, trained once (independently of the build bench's filter)
    let dir = root.clone().join("searched");
    rt.block_on(train(
        &fs,
        &dir,
        &DataType::Int64,
        futures::stream::iter([Ok(batch.clone())]),
        opts,
    ))
    .unwrap();
    let cache: Arc<dyn PageCache> = Arc::new(MapCache::default());
    let index = rt
        .block_on(BTreeIndex::open(&fs, &dir, cache, &HashMap::new()))
        .unwrap();
    let eq = Query::Equals(Arc::new(Int64Array::from(vec![4_242_424])));
    let range = Query::Range(
        Bound::Included(Arc::new(Int64Array::from(vec![5_000_000])) as ArrayRef),
        Bound::Excluded(Arc::new(Int64Array::from(vec![5_010_000])) as ArrayRef),
    );
    // warm the cache and check the answers
    assert_eq!(rt.block_on(index.search(&eq)).unwrap().true_ids.len(), 1);
    assert_eq!(
        rt.block_on(index.search(&range)).unwrap().true_ids.len(),
        10_000
    );

    let mut hot = c.benchmark_group("search_hot");
    hot.bench_function("equality", |b| {
        b.iter(|| black_box(rt.block_on(index.search(&eq)).unwrap()))
    });
    hot.bench_function("range_0.1pct", |b| {
        b.iter(|| black_box(rt.block_on(index.search(&range)).unwrap()))
    });
    hot.finish();

    let mut cold = c.benchmark_group("search_cold");
    cold.sample_size(20);
    cold.bench_function("equality", |b| {
        b.iter(|| {
            rt.block_on(async {
                let index = BTreeIndex::open(&fs, &dir, Arc::new(NoCache), &HashMap::new())
                    .await
                    .unwrap();
                black_box(index.search(&eq).await.unwrap())
            })
        })
    });
    cold.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
