//! `cargo bench -p lancet --bench search`
//!
//! `Dataset::search` through the facade (a parsed [`Filter`], the session's moka caches,
//! deletion vectors applied, row ids out) beside the direct `BTreeIndex::search` on the same
//! segment, on the table of `lancet-btree`'s bench: 10M int64 `v(i) = (i · 2654435761) mod
//! 10^7` in ten 1M-row fragments, a BTree on `v` with 4,096-row pages, and one deleted row
//! in the fragment the equality hits.
//! - `facade_hot/equality`, `facade_hot/range_0.1pct`: `v = 4242424`,
//!   `v >= 5000000 AND v < 5010000`, everything cached.
//! - `direct_hot/equality`, `direct_hot/range_0.1pct`: the segment's own search.
//! - `parse/range`: `Filter::parse` of the range filter alone.
//!
//! With `LANCET_SEARCH_TABLE=<dir>` the bench opens that table instead (as
//! `benches/btree_compare.py` writes it with pylance, index included), so both sides of
//! the comparison search one table and one index in the same run.

use std::hint::black_box;
use std::ops::Bound;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use criterion::{criterion_group, criterion_main, Criterion};
use lancet::btree::Query;
use lancet::file::{manifest_fields, write_file, FileVersion, WriteOptions};
use lancet::paths::manifest::{write_manifest, ManifestContent};
use lancet::paths::{DatasetStore, ObjectUuid};
use lancet::proto::table::{DataFile, DataFragment, Manifest};
use lancet::{Caches, Dataset, Filter};

const N: i64 = 10_000_000;
const FRAGMENT_ROWS: i64 = 1_000_000;

fn value(i: i64) -> i64 {
    ((i as u64).wrapping_mul(2_654_435_761) % N as u64) as i64
}

/// Writes the bench table with lancet (data files, manifest, BTree, one deletion).
async fn create(dir: &std::path::Path) -> String {
    let uri = dir.to_str().unwrap().to_string();
    let store = DatasetStore::create(&uri).unwrap();
    let fs = lancet::file_store_for(&store).unwrap();
    let schema = Schema::new(vec![Field::new("v", DataType::Int64, false)]);
    let fields = manifest_fields(&schema).unwrap();
    let (major, minor) = FileVersion::V2_1.data_file_version();
    let mut fragments = Vec::new();
    for f in 0..N / FRAGMENT_ROWS {
        let values: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (f * FRAGMENT_ROWS..(f + 1) * FRAGMENT_ROWS).map(value),
        ));
        let batch = RecordBatch::try_from_iter([("v", values)]).unwrap();
        let name = format!("{}.lance", ObjectUuid::new_v4());
        let options = WriteOptions {
            version: FileVersion::V2_1,
            ..Default::default()
        };
        let written = write_file(
            &fs,
            &store.path(&format!("data/{name}")),
            &schema,
            &[batch],
            &options,
        )
        .await
        .unwrap();
        fragments.push(DataFragment {
            id: f as u64,
            files: vec![DataFile {
                path: name,
                fields: vec![0],
                column_indices: vec![0],
                file_major_version: major,
                file_minor_version: minor,
                file_size_bytes: written.size_bytes,
                base_id: None,
            }],
            physical_rows: written.num_rows,
            ..Default::default()
        });
    }
    let manifest = Manifest {
        fields,
        fragments,
        version: 1,
        max_fragment_id: Some((N / FRAGMENT_ROWS - 1) as u32),
        ..Default::default()
    };
    write_manifest(&store, &ManifestContent::new(&manifest))
        .await
        .unwrap();
    let ds = Dataset::open(&uri).await.unwrap();
    let ds = ds.build_btree("v", 4096).await.unwrap().dataset;
    // delete one row of the fragment holding v = 4242424 (not that row)
    let hit = (0..N).find(|i| value(*i) == 4_242_424).unwrap();
    let (frag, offset) = (hit / FRAGMENT_ROWS, hit % FRAGMENT_ROWS);
    let deleted = if offset == 0 { 1 } else { offset - 1 } as u32;
    let file = lancet::rowid::deletion::write_deletion_file(
        ds.storage().store(),
        frag as u64,
        ds.version(),
        &[deleted].into_iter().collect(),
    )
    .await
    .unwrap();
    ds.storage()
        .commit_actions(
            ds.storage().manifest().clone(),
            ds.storage().indices(),
            &[(frag as u64, lancet::tree::Action::AddDeletionFile(file))],
            &Default::default(),
        )
        .await
        .unwrap();
    uri
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let uri = match std::env::var("LANCET_SEARCH_TABLE") {
        Ok(uri) => uri,
        Err(_) => rt.block_on(create(tmp.path())),
    };
    let ds = rt
        .block_on(async {
            let store = DatasetStore::open(&uri)?;
            Dataset::open_with(store, None, Caches::new(Default::default())).await
        })
        .unwrap();
    let (name, _) = ds
        .storage()
        .btree_indices()
        .into_iter()
        .next()
        .expect("a BTree on v");
    let segments = rt.block_on(ds.storage().btree_segments(&name)).unwrap();
    let segment = &segments[0];
    let eq = Filter::parse("v = 4242424").unwrap();
    let range_text = "v >= 5000000 AND v < 5010000";
    let range = Filter::parse(range_text).unwrap();
    // warm every cache, and check the answers
    let found = rt.block_on(ds.search(&eq)).unwrap();
    assert_eq!(found.row_ids.len(), 1);
    let found = rt.block_on(ds.search(&range)).unwrap();
    assert_eq!(found.row_ids.len(), 10_000);

    let mut facade = c.benchmark_group("facade_hot");
    facade.bench_function("equality", |b| {
        b.iter(|| rt.block_on(ds.search(black_box(&eq))).unwrap())
    });
    facade.bench_function("range_0.1pct", |b| {
        b.iter(|| rt.block_on(ds.search(black_box(&range))).unwrap())
    });
    facade.finish();

    let scalar = |v: i64| -> ArrayRef { Arc::new(Int64Array::from(vec![v])) };
    let q_eq = Query::Equals(scalar(4_242_424));
    let q_range = Query::Range(
        Bound::Included(scalar(5_000_000)),
        Bound::Excluded(scalar(5_010_000)),
    );
    let mut direct = c.benchmark_group("direct_hot");
    direct.bench_function("equality", |b| {
        b.iter(|| rt.block_on(segment.index.search(black_box(&q_eq))).unwrap())
    });
    direct.bench_function("range_0.1pct", |b| {
        b.iter(|| {
            rt.block_on(segment.index.search(black_box(&q_range)))
                .unwrap()
        })
    });
    direct.finish();

    c.bench_function("parse/range", |b| {
        b.iter(|| Filter::parse(black_box(range_text)).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
