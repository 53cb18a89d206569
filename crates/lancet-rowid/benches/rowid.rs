//! `cargo bench -p lancet-rowid --bench rowid`
//!
//! - `build/1M_rows_1k_fragments_5pct_updates`: 1,000 fragments of 1,000 fresh ids, then 5% of
//!   the rows (chosen at random) updated: deleted where they were and rewritten, in id order,
//!   into 50 new fragments (what an update does with stable row ids).
//! - `build/1B_rows_20k_range_fragments`: 20,000 fragments of 50,000 ids, no deletions.
//! - `lookup/1M_random`: 1,000,000 random live ids against the first index.
//! - `cold_open/pylance_table` (with `LANCET_ROWID_TABLE=<dataset dir>`): read the latest
//!   manifest, decode every sequence, read every deletion file and build the index: what the
//!   first take by row id after opening a table costs. `benches/rowid_compare.py` makes that
//!   table with pylance and times pylance's first `_take_rows` on it.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use futures::{StreamExt, TryStreamExt};
use lancet_paths::{files, manifest, BaseTable, DatasetStore, ResolvedBase};
use lancet_proto::table::data_fragment::RowIdSequence as PbRowIds;
use lancet_rowid::deletion::read_deletion_vector;
use lancet_rowid::{FragmentRowIds, RowIdIndex, RowIdSequence};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use roaring::RoaringBitmap;

fn updated_table() -> Vec<FragmentRowIds> {
    const FRAGS: u64 = 1000;
    const ROWS: u64 = 1000;
    let mut rng = SmallRng::seed_from_u64(42);
    let mut deleted: Vec<RoaringBitmap> = vec![RoaringBitmap::new(); FRAGS as usize];
    let mut moved = Vec::new();
    while moved.len() < 50_000 {
        let id = rng.random_range(0..FRAGS * ROWS);
        if deleted[(id / ROWS) as usize].insert((id % ROWS) as u32) {
            moved.push(id);
        }
    }
    moved.sort_unstable();
    let mut out: Vec<FragmentRowIds> = (0..FRAGS)
        .map(|f| FragmentRowIds {
            fragment_id: f,
            physical_rows: ROWS,
            sequence: Arc::new(RowIdSequence::from_range(f * ROWS..(f + 1) * ROWS)),
            deletions: Some(Arc::new(deleted[f as usize].clone())),
        })
        .collect();
    for (k, chunk) in moved.chunks(1000).enumerate() {
        out.push(FragmentRowIds {
            fragment_id: FRAGS + k as u64,
            physical_rows: chunk.len() as u64,
            sequence: Arc::new(RowIdSequence::from_values(chunk)),
            deletions: None,
        });
    }
    out
}

fn range_table() -> Vec<FragmentRowIds> {
    const ROWS: u64 = 50_000;
    (0..20_000u64)
        .map(|f| FragmentRowIds {
            fragment_id: f,
            physical_rows: ROWS,
            sequence: Arc::new(RowIdSequence::from_range(f * ROWS..(f + 1) * ROWS)),
            deletions: None,
        })
        .collect()
}

async fn cold_open(uri: &str) -> RowIdIndex {
    let store = DatasetStore::open(uri).expect("table dir");
    let m = manifest::read_manifest(&store, None)
        .await
        .expect("manifest");
    let m = &m.decoded.manifest;
    let bases = BaseTable::new(&m.base_paths).expect("bases");
    let root = ResolvedBase::current_dataset(store.uri());
    let deletions: Vec<Option<Arc<RoaringBitmap>>> = futures::stream::iter(&m.fragments)
        .map(|f| {
            let (store, bases, root) = (&store, &bases, &root);
            async move {
                let Some(file) = &f.deletion_file else {
                    return Ok::<_, lancet_rowid::RowIdError>(None);
                };
                let loc = files::deletion_file_location(f.id, file, bases, root)?;
                let path = store.path(&loc.path);
                Ok(Some(Arc::new(
                    read_deletion_vector(store, &path, file, f.physical_rows).await?,
                )))
            }
        })
        .buffered(32)
        .try_collect()
        .await
        .expect("deletion files");
    let inputs = m
        .fragments
        .iter()
        .zip(deletions)
        .map(|(f, d)| {
            let Some(PbRowIds::InlineRowIds(bytes)) = &f.row_id_sequence else {
                panic!("fragment {} has no inline row ids", f.id)
            };
            FragmentRowIds {
                fragment_id: f.id,
                physical_rows: f.physical_rows,
                sequence: Arc::new(RowIdSequence::decode(bytes).expect("sequence")),
                deletions: d,
            }
        })
        .collect();
    RowIdIndex::build(inputs).expect("index")
}

/// What a first take by row id after opening costs, lazily: manifest, sequences, and only the
/// deletion files of the fragments holding the ids.
async fn cold_first_take(uri: &str, ids: &[u64]) -> Vec<Option<u64>> {
    let store = DatasetStore::open(uri).expect("table dir");
    let m = manifest::read_manifest(&store, None)
        .await
        .expect("manifest");
    let m = &m.decoded.manifest;
    let bases = BaseTable::new(&m.base_paths).expect("bases");
    let root = ResolvedBase::current_dataset(store.uri());
    let fragments = m
        .fragments
        .iter()
        .map(|f| {
            let Some(PbRowIds::InlineRowIds(bytes)) = &f.row_id_sequence else {
                panic!("fragment {} has no inline row ids", f.id)
            };
            lancet_rowid::LazyFragment {
                fragment_id: f.id as u32,
                physical_rows: f.physical_rows,
                sequence: Arc::new(RowIdSequence::decode(bytes).expect("sequence")),
            }
        })
        .collect();
    let lazy = lancet_rowid::LazyRowIds::new(fragments).expect("lazy");
    lazy.get_many(ids, |fid| {
        let (store, bases, root) = (&store, &bases, &root);
        let f = m.fragments.iter().find(|f| f.id == u64::from(fid));
        async move {
            let Some((f, file)) = f.and_then(|f| f.deletion_file.as_ref().map(|d| (f, d))) else {
                return Ok::<_, lancet_rowid::RowIdError>(None);
            };
            let loc = files::deletion_file_location(f.id, file, bases, root)?;
            let path = store.path(&loc.path);
            Ok(Some(Arc::new(
                read_deletion_vector(store, &path, file, f.physical_rows).await?,
            )))
        }
    })
    .await
    .expect("lookups")
}

fn bench(c: &mut Criterion) {
    let updated = updated_table();
    let ranges = range_table();

    let mut build = c.benchmark_group("build");
    build.sample_size(20);
    build.bench_function("1M_rows_1k_fragments_5pct_updates", |b| {
        b.iter_batched(
            || updated.clone(),
            |f| RowIdIndex::build(f).unwrap(),
            BatchSize::LargeInput,
        )
    });
    build.bench_function("1B_rows_20k_range_fragments", |b| {
        b.iter_batched(
            || ranges.clone(),
            |f| RowIdIndex::build(f).unwrap(),
            BatchSize::LargeInput,
        )
    });
    build.finish();

    let index = RowIdIndex::build(updated).unwrap();
    let live: Vec<u64> = index.iter().map(|(id, _)| id).collect();
    let mut rng = SmallRng::seed_from_u64(7);
    let probes: Vec<u64> = (0..1_000_000)
        .map(|_| live[rng.random_range(0..live.len())])
        .collect();
    eprintln!(
        "index after 5% updates: {} live rows, {} runs, {} resident bytes",
        index.len(),
        index.num_runs(),
        index.resident_bytes()
    );
    let mut lookup = c.benchmark_group("lookup");
    lookup.sample_size(10);
    lookup.throughput(Throughput::Elements(probes.len() as u64));
    lookup.bench_function("1M_random", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for id in &probes {
                acc ^= index.get(*id).unwrap_or(0);
            }
            black_box(acc)
        })
    });
    lookup.finish();

    if let Ok(uri) = std::env::var("LANCET_ROWID_TABLE") {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mut cold = c.benchmark_group("cold_open");
        cold.sample_size(10);
        cold.bench_function("pylance_table", |b| b.iter(|| rt.block_on(cold_open(&uri))));
        cold.finish();
        // the 100 ids benches/rowid_compare.py takes with pylance
        let n = rt.block_on(cold_open(&uri)).len();
        let step = if n > 2_000_000 { 100_007 } else { 10_007 };
        let ids: Vec<u64> = (7..n).step_by(step).take(100).collect();
        let found = rt.block_on(cold_first_take(&uri, &ids));
        assert_eq!(found.iter().filter(|a| a.is_some()).count(), ids.len());
        let mut first = c.benchmark_group("cold_first_take");
        first.sample_size(20);
        first.bench_function("pylance_table_100_ids", |b| {
            b.iter(|| rt.block_on(cold_first_take(&uri, &ids)))
        });
        first.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
