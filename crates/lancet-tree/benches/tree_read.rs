//! `tree_read`: reading a fragment tree of `LANCET_BENCH_FRAGMENTS` fragments (default
//! 1,000,000) in 4096-record leaves on local disk, beside decoding a flat manifest of the same
//! fragments.
//!
//! - `open`: `TreeReader::open` (the manifest's tree, one external root GET and its checks);
//! - `resolve_cold`: open plus one fragment with no cache (root + one leaf: the objects read
//!   are counted and must be at most height + 2);
//! - `resolve_warm`: one fragment through a cache that already holds the leaf;
//! - `walk`: every fragment in id order, every rule checked;
//! - `flat_decode`: `decode_manifest` of a flat manifest holding the same fragments.
//!
//! Run: `cargo bench -p lancet-tree --bench tree_read`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use futures::future::BoxFuture;
use lancet_paths::flags::FRAGMENT_TREE;
use lancet_paths::manifest::{decode_manifest, encode_manifest};
use lancet_paths::{DatasetStore, ObjectLocation, PathsError, ResolvedBase};
use lancet_proto::table::{DataFile, DataFragment, DeletionFile, Manifest};
use lancet_tree::testing::{Rng, TreeBuilder};
use lancet_tree::{
    NoCache, NodeCache, ObjectFetcher, ObjectKey, OpenContext, StoreFetcher, TreeObject, TreeReader,
};
use object_store::path::Path;

const LEAF_RECORDS: usize = 4096;

fn fragments() -> u64 {
    std::env::var("LANCET_BENCH_FRAGMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

/// A fragment as pylance writes one: one data file of two fields, ~7% with a deletion file.
fn record(rng: &mut Rng, id: u64) -> DataFragment {
    let rows = 1024 + rng.below(1 << 20);
    DataFragment {
        id,
        files: vec![DataFile {
            path: format!("{:016x}{:016x}.lance", rng.next_u64(), rng.next_u64()),
            fields: vec![0, 1],
            column_indices: vec![0, 1],
            file_major_version: 2,
            file_minor_version: 1,
            file_size_bytes: rows * 12,
            base_id: None,
        }],
        deletion_file: (rng.below(100) < 7).then(|| DeletionFile {
            file_type: 1,
            read_version: 3,
            id: rng.next_u64(),
            num_deleted_rows: 1 + rng.below(rows),
            base_id: None,
        }),
        physical_rows: rows,
        ..Default::default()
    }
}

/// Counts fetches and bytes.
#[derive(Debug)]
struct Counting {
    inner: StoreFetcher,
    objects: AtomicU64,
}

impl ObjectFetcher for Counting {
    fn fetch<'a>(
        &'a self,
        location: &'a ObjectLocation,
        expected_size: Option<u64>,
    ) -> BoxFuture<'a, Result<Bytes, PathsError>> {
        self.objects.fetch_add(1, Ordering::Relaxed);
        self.inner.fetch(location, expected_size)
    }
}

/// The simplest cache: a map (the facade uses moka).
#[derive(Debug, Default)]
struct MapCache(Mutex<HashMap<ObjectKey, Arc<TreeObject>>>);

impl NodeCache for MapCache {
    fn get_or_load<'a>(
        &'a self,
        key: ObjectKey,
        load: BoxFuture<'a, lancet_tree::Result<Arc<TreeObject>>>,
    ) -> BoxFuture<'a, lancet_tree::Result<Arc<TreeObject>>> {
        Box::pin(async move {
            if let Some(hit) = self.0.lock().unwrap().get(&key) {
                return Ok(hit.clone());
            }
            let loaded = load.await?;
            self.0.lock().unwrap().insert(key, loaded.clone());
            Ok(loaded)
        })
    }
}

fn context(store: &DatasetStore, cache: Arc<dyn NodeCache>) -> (OpenContext, Arc<Counting>) {
    let counting = Arc::new(Counting {
        inner: StoreFetcher::new(store.clone()),
        objects: AtomicU64::new(0),
    });
    (
        OpenContext {
            manifest_object: "_versions/1.manifest".into(),
            current: ResolvedBase::current_dataset(store.uri()),
            fetcher: counting.clone(),
            cache,
        },
        counting,
    )
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let n = fragments();
    let dir = tempfile::tempdir().unwrap();
    let store = DatasetStore::create(dir.path().to_str().unwrap()).unwrap();
    let mut rng = Rng::new(42);
    let records: Vec<DataFragment> = (0..n).map(|id| record(&mut rng, id)).collect();

    let setup = std::time::Instant::now();
    let built = rt
        .block_on(
            TreeBuilder {
                records: records.clone(),
                leaf_records: LEAF_RECORDS,
                external_root: true,
                ..Default::default()
            }
            .build(&store),
        )
        .unwrap();
    eprintln!(
        "tree_read: {n} fragments in {} objects written in {:.1} s",
        built.objects.len(),
        setup.elapsed().as_secs_f64()
    );
    let manifest = Manifest {
        version: 1,
        reader_feature_flags: FRAGMENT_TREE,
        writer_feature_flags: FRAGMENT_TREE,
        max_fragment_id: Some(n as u32),
        fragment_tree: Some(built.metadata.clone()),
        ..Default::default()
    };
    let flat = Manifest {
        version: 1,
        max_fragment_id: Some(n as u32),
        fragments: records,
        ..Default::default()
    };
    let flat_bytes = Bytes::from(encode_manifest(&flat, &[], &[], None).unwrap());
    let tree_bytes = encode_manifest(&manifest, &[], &[], None).unwrap();
    eprintln!(
        "tree_read: flat manifest {} bytes, tree manifest {} bytes",
        flat_bytes.len(),
        tree_bytes.len()
    );
    drop(flat);

    // Cold resolve reads at most height + 2 objects (root + one per level).
    let probe = n / 2 + 7;
    let (ctx, counting) = context(&store, Arc::new(NoCache));
    let reader = rt.block_on(TreeReader::open(&manifest, ctx)).unwrap();
    let height = u64::from(reader.height());
    assert!(rt.block_on(reader.fragment(probe)).unwrap().is_some());
    let read = counting.objects.load(Ordering::Relaxed);
    assert!(
        read <= height + 2,
        "cold resolve read {read} objects at height {height}"
    );
    eprintln!("tree_read: cold resolve read {read} objects (height {height})");

    let mut g = c.benchmark_group("tree_read");
    g.sample_size(20);
    g.bench_function("open", |b| {
        b.to_async(&rt).iter(|| async {
            let (ctx, _) = context(&store, Arc::new(NoCache));
            TreeReader::open(&manifest, ctx).await.unwrap()
        })
    });
    g.bench_function("resolve_cold", |b| {
        b.to_async(&rt).iter(|| async {
            let (ctx, _) = context(&store, Arc::new(NoCache));
            let reader = TreeReader::open(&manifest, ctx).await.unwrap();
            reader.fragment(probe).await.unwrap().unwrap()
        })
    });
    let cache: Arc<MapCache> = Arc::default();
    let (ctx, _) = context(&store, cache);
    let warm = rt.block_on(TreeReader::open(&manifest, ctx)).unwrap();
    rt.block_on(warm.fragment(probe)).unwrap();
    g.bench_function("resolve_warm", |b| {
        b.to_async(&rt)
            .iter(|| async { warm.fragment(probe).await.unwrap().unwrap() })
    });
    g.sample_size(10);
    g.bench_function("walk", |b| {
        b.to_async(&rt).iter(|| async {
            let (ctx, _) = context(&store, Arc::new(NoCache));
            let reader = TreeReader::open(&manifest, ctx).await.unwrap();
            let all: Vec<DataFragment> = reader.all_fragments().await.unwrap();
            assert_eq!(all.len() as u64, n);
        })
    });
    g.bench_function("flat_decode", |b| {
        b.iter_batched(
            || flat_bytes.clone(),
            |bytes| decode_manifest(&Path::from("_versions/1.manifest"), bytes).unwrap(),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
