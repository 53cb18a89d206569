//! `cargo bench -p lancet-reuse --bench reuse`
//!
//! Index reuse: translating a set of 10M stored row addresses (every row of 10 source
//! fragments of 1M rows, 5% of them deleted before the rewrite) through one transition with
//! `History::translate_set`:
//! - `translate_set/stable_partition_64`: 64 destinations, labels from a hash of the row,
//!   row map written by lancet (65,536-row blocks) on the local disk, blocks read during the
//!   measurement (the history is opened once; no labels are cached between iterations).
//! - `translate_set/ordered_compaction`: the survivors concatenated into 1M-row destinations.
//! - `translate_set/chain`: the stable partition followed by an ordered compaction of its
//!   destinations.
//!
//! Every row requested is the common case of index reuse (an index covers whole fragments)
//! and lets whole blocks translate from the counts alone; `*_half` request a pseudo-random
//! half of the rows (5M addresses), so every block's labels are read and swept.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lancet_file::{FileStore, LanceFile};
use lancet_reuse::History;
use lancet_reuse::RowMap;
use lancet_reuse::{write_row_map, SourceRows};
use lancet_reuse::{Digest, Ledger, Mapping, Transition};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use roaring::{RoaringBitmap, RoaringTreemap};

const SOURCES: u32 = 10;
const ROWS: u32 = 1_000_000;
const DESTS: usize = 64;

fn deleted() -> RoaringBitmap {
    (0..ROWS).filter(|o| o % 20 == 7).collect()
}

fn label(frag: u32, offset: u32) -> u16 {
    let h = (u64::from(frag) << 32 | u64::from(offset)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    ((h >> 40) % DESTS as u64) as u16
}

fn source_digests(ids: impl Iterator<Item = u32>, rows: u64, deleted: u64) -> Vec<Digest> {
    ids.map(|id| Digest {
        id,
        physical_rows: rows,
        num_deleted_rows: deleted,
    })
    .collect()
}

fn ordered(sources: Vec<Digest>, first_dest: u32, dest_rows: u64) -> Transition {
    let mut surviving = RoaringTreemap::new();
    let del = deleted();
    for s in &sources {
        let mut live: RoaringBitmap = (0..s.physical_rows as u32).collect();
        if s.num_deleted_rows > 0 {
            live -= &del;
        }
        surviving
            .append(live.iter().map(|o| u64::from(s.id) << 32 | u64::from(o)))
            .unwrap();
    }
    let total: u64 = sources.iter().map(Digest::survivors).sum();
    let destinations = (0..total.div_ceil(dest_rows))
        .map(|k| Digest {
            id: first_dest + k as u32,
            physical_rows: dest_rows.min(total - k * dest_rows),
            num_deleted_rows: 0,
        })
        .collect();
    Transition {
        dataset_version: None,
        sources,
        destinations,
        mapping: Mapping::OrderedCompaction { surviving },
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _guard = rt.enter();
    let tmp = tempfile::tempdir().unwrap();
    let fs = FileStore::new(Arc::new(LocalFileSystem::new()), "file:///").unwrap();
    let path = Path::from_absolute_path(tmp.path().join("stable_partition.lance")).unwrap();
    let del = deleted();
    let sources_rows: Vec<SourceRows> = (0..SOURCES)
        .map(|_| SourceRows {
            physical_rows: u64::from(ROWS),
            deleted: Some(&del),
        })
        .collect();
    let labels = (0..SOURCES).flat_map(|f| {
        let del = &del;
        (0..ROWS)
            .filter(move |o| !del.contains(*o))
            .map(move |o| label(f, o))
    });
    let written = rt
        .block_on(write_row_map(
            &fs,
            &path,
            &sources_rows,
            DESTS,
            labels,
            None,
        ))
        .unwrap();
    let sources = source_digests(0..SOURCES, u64::from(ROWS), del.len());
    let partition = Transition {
        dataset_version: None,
        sources: sources.clone(),
        destinations: written
            .destination_rows
            .iter()
            .enumerate()
            .map(|(d, rows)| Digest {
                id: 100 + d as u32,
                physical_rows: *rows,
                num_deleted_rows: 0,
            })
            .collect(),
        mapping: Mapping::StablePartition {
            map_id: "0a0b0c0d-0000-4000-8000-000000000001".into(),
            map_size_bytes: written.size_bytes,
            base_id: None,
        },
    };
    let open = |transitions: Vec<Transition>| {
        let mut h = History::new(
            Ledger {
                index_version: 1,
                transitions,
                has_unsupported: false,
                unmodelled_row_maps: Vec::new(),
            },
            "bench",
        )
        .unwrap();
        for (i, ..) in h.row_maps_needed() {
            let t = h.transition(i).cloned().unwrap();
            let file = rt
                .block_on(LanceFile::open(&fs, &path, Some(written.size_bytes)))
                .unwrap();
            h.attach_row_map(i, rt.block_on(RowMap::open(file, &t)).unwrap());
        }
        h
    };
    let after_partition = partition.destinations.clone();
    let partition_h = open(vec![partition.clone()]);
    let ordered_h = open(vec![ordered(sources.clone(), 100, 1_000_000)]);
    let chain_h = open(vec![
        partition,
        ordered(
            after_partition
                .iter()
                .map(|d| Digest {
                    num_deleted_rows: 0,
                    ..*d
                })
                .collect(),
            1000,
            1_000_000,
        ),
    ]);
    let addrs: RoaringTreemap = (0..SOURCES)
        .flat_map(|f| (0..u64::from(ROWS)).map(move |o| u64::from(f) << 32 | o))
        .collect();
    let live = addrs.len() - u64::from(SOURCES) * del.len();
    for h in [&partition_h, &ordered_h, &chain_h] {
        assert_eq!(rt.block_on(h.translate_set(&addrs)).unwrap().len(), live);
    }

    let half: RoaringTreemap = addrs
        .iter()
        .filter(|a| a.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 63 == 1)
        .collect();

    let mut g = c.benchmark_group("translate_set");
    g.sample_size(10);
    for (name, h, input) in [
        ("stable_partition_64", &partition_h, &addrs),
        ("ordered_compaction", &ordered_h, &addrs),
        ("chain", &chain_h, &addrs),
        ("stable_partition_64_half", &partition_h, &half),
        ("ordered_compaction_half", &ordered_h, &half),
    ] {
        g.throughput(Throughput::Elements(input.len()));
        g.bench_function(name, |b| {
            b.iter(|| black_box(rt.block_on(h.translate_set(input)).unwrap()))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
