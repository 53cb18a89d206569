//! A row map written by lancet reads back through `RowMap` and translates every source row
//! exactly as a brute-force model of the stable partition says.

use std::sync::Arc;

use lancet_file::{FileStore, LanceFile};
use lancet_reuse::ReuseError;
use lancet_reuse::RowMap;
use lancet_reuse::{write_row_map, SourceRows};
use lancet_reuse::{Digest, Mapping, Transition};
use object_store::memory::InMemory;
use object_store::path::Path;
use proptest::prelude::*;
use roaring::RoaringBitmap;

fn run(sizes: &[u64], del_seed: u64, m: usize, label_seed: u64, block_rows: u32) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let fs = FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap();
        let path = Path::from("_fri/x/stable_partition.lance");
        let deleted: Vec<RoaringBitmap> = sizes
            .iter()
            .enumerate()
            .map(|(k, n)| {
                (0..*n as u32)
                    .filter(|o| (del_seed.rotate_left(*o + k as u32) & 3) == 0)
                    .collect()
            })
            .collect();
        let live: u64 = sizes.iter().zip(&deleted).map(|(n, d)| n - d.len()).sum();
        let labels: Vec<u16> = (0..live)
            .map(|i| ((label_seed.rotate_left(i as u32) ^ i) % m as u64) as u16)
            .collect();
        let sources: Vec<SourceRows> = sizes
            .iter()
            .zip(&deleted)
            .map(|(n, d)| SourceRows {
                physical_rows: *n,
                deleted: Some(d),
            })
            .collect();
        let written = write_row_map(
            &fs,
            &path,
            &sources,
            m,
            labels.iter().copied(),
            Some(block_rows),
        )
        .await
        .unwrap();
        let t = Transition {
            dataset_version: None,
            sources: sizes
                .iter()
                .zip(&deleted)
                .enumerate()
                .map(|(k, (n, d))| Digest {
                    id: k as u32,
                    physical_rows: *n,
                    num_deleted_rows: d.len(),
                })
                .collect(),
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
        let file = LanceFile::open(&fs, &path, Some(written.size_bytes))
            .await
            .unwrap();
        let map = RowMap::open(file, &t).await.unwrap();
        // brute force: walk sources in order, count per destination
        let mut next = vec![0u64; m];
        let mut want = Vec::new();
        let mut requests = Vec::new();
        let mut it = labels.iter();
        for (k, (n, d)) in sizes.iter().zip(&deleted).enumerate() {
            for o in 0..*n {
                requests.push((requests.len(), k as u32, o));
                if d.contains(o as u32) {
                    want.push(None);
                } else {
                    let l = usize::from(*it.next().unwrap());
                    want.push(Some(((100 + l as u64) << 32) | next[l]));
                    next[l] += 1;
                }
            }
        }
        let mut got = map.translate(&requests).await.unwrap();
        got.sort_by_key(|g| g.0);
        let got: Vec<Option<u64>> = got.into_iter().map(|g| g.1).collect();
        assert_eq!(got, want);
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    #[test]
    fn written_row_maps_translate_like_the_model(
        sizes in proptest::collection::vec(0u64..300, 1..5),
        del_seed in any::<u64>(),
        m in 1usize..6,
        label_seed in any::<u64>(),
        block_rows in 1u32..70,
    ) {
        run(&sizes, del_seed, m, label_seed, block_rows);
    }
}

#[tokio::test]
async fn label_counts_must_match_live_rows() {
    let fs = FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap();
    let path = Path::from("m.lance");
    let src = [SourceRows {
        physical_rows: 3,
        deleted: None,
    }];
    let too_few = write_row_map(&fs, &path, &src, 2, [0u16, 1].into_iter(), None).await;
    assert!(matches!(too_few, Err(ReuseError::InvalidInput(m)) if m.contains("fewer")));
    let too_many = write_row_map(&fs, &path, &src, 2, [0u16, 1, 1, 0].into_iter(), None).await;
    assert!(matches!(too_many, Err(ReuseError::InvalidInput(m)) if m.contains("more")));
    let bad_label = write_row_map(&fs, &path, &src, 2, [0u16, 2, 1].into_iter(), None).await;
    assert!(matches!(bad_label, Err(ReuseError::InvalidInput(m)) if m.contains("label 2")));
    let none = write_row_map(&fs, &path, &src, 0, std::iter::empty(), None).await;
    assert!(matches!(none, Err(ReuseError::InvalidInput(_))));
}

/// A row map whose labels are written directly (no writer checks): counts are computed from
/// `counted` labels, the file holds `stored` ones. Two sources of 4 and 3 rows, 2
/// destinations, 4-row blocks.
async fn hand_written(
    counted: &[Option<u16>],
    stored: &[Option<u16>],
) -> (lancet_reuse::History, Transition) {
    use arrow_array::{ArrayRef, RecordBatch};
    use lancet_file::{write_file, FileVersion, WriteOptions};
    use lancet_reuse::Counts;
    use lancet_reuse::COUNTS_BUFFER_KEY;
    let fs = FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap();
    let path = Path::from("_fri/m/stable_partition.lance");
    let per_block: Vec<Vec<u32>> = counted
        .chunks(4)
        .map(|b| {
            let mut c = vec![0u32; 2];
            b.iter().flatten().for_each(|l| c[usize::from(*l)] += 1);
            c
        })
        .collect();
    let totals: Vec<u64> = (0..2)
        .map(|d| per_block.iter().map(|b| u64::from(b[d])).sum())
        .collect();
    let batch = RecordBatch::try_from_iter([(
        "label",
        Arc::new(arrow_array::UInt16Array::from(stored.to_vec())) as ArrayRef,
    )])
    .unwrap();
    let opts = WriteOptions {
        version: FileVersion::V2_1,
        metadata: [(COUNTS_BUFFER_KEY.to_string(), "1".to_string())].into(),
        global_buffers: vec![Counts::encode(2, 4, 7, &per_block).into()],
        field_ids: None,
    };
    let size = write_file(&fs, &path, &lancet_reuse::row_map_schema(), &[batch], &opts)
        .await
        .unwrap();
    let dead = |n: &[Option<u16>]| n.iter().filter(|l| l.is_none()).count() as u64;
    let t = Transition {
        dataset_version: None,
        sources: vec![
            Digest {
                id: 1,
                physical_rows: 4,
                num_deleted_rows: dead(&counted[..4]),
            },
            Digest {
                id: 2,
                physical_rows: 3,
                num_deleted_rows: dead(&counted[4..]),
            },
        ],
        destinations: (0..2)
            .map(|d| Digest {
                id: 10 + d as u32,
                physical_rows: totals[d],
                num_deleted_rows: 0,
            })
            .collect(),
        mapping: Mapping::StablePartition {
            map_id: "0a0b0c0d-0000-4000-8000-000000000001".into(),
            map_size_bytes: size.size_bytes,
            base_id: None,
        },
    };
    let file = LanceFile::open(&fs, &path, None).await.unwrap();
    let map = RowMap::open(file, &t).await.unwrap();
    let mut h = lancet_reuse::History::new(
        lancet_reuse::Ledger {
            index_version: 1,
            transitions: vec![t.clone()],
            has_unsupported: false,
            unmodelled_row_maps: Vec::new(),
        },
        "hand",
    )
    .unwrap();
    h.attach_row_map(0, map);
    (h, t)
}

/// The label rules a translation enforces as it sweeps a block (opening reads no labels):
/// a label must name a destination, and the labels must agree with the counts. Both the
/// per-address and the set path see the typed error.
#[tokio::test]
async fn labels_that_break_the_rules_are_corrupt_when_swept() {
    let good = [Some(0), Some(1), None, Some(0), Some(1), Some(1), Some(0)];
    let partial: roaring::RoaringTreemap = [1u64 << 32, 2 << 32].into_iter().collect();
    let (h, _) = hand_written(&good, &good).await;
    assert_eq!(
        h.translate(&[1 << 32, (2 << 32) | 2]).await.unwrap(),
        vec![
            lancet_reuse::Translation::Address(10 << 32),
            lancet_reuse::Translation::Address((10 << 32) | 2)
        ]
    );
    assert_eq!(h.translate_set(&partial).await.unwrap().len(), 2);

    let mut out_of_range = good;
    out_of_range[1] = Some(2);
    let mut swapped = good;
    swapped[0] = Some(1);
    for (stored, needle) in [
        (out_of_range, "label 2 with 2 destinations"),
        (swapped, "disagree with the counts"),
    ] {
        let (h, _) = hand_written(&good, &stored).await;
        for r in [
            h.translate(&[1 << 32]).await.map(|_| ()),
            h.translate_set(&partial).await.map(|_| ()),
        ] {
            match r {
                Err(ReuseError::Corrupt { rule, .. }) => assert!(rule.contains(needle), "{rule}"),
                other => panic!("expected Corrupt({needle}), got {other:?}"),
            }
        }
    }
}

/// The spec allows 1..=65,536 destinations (labels are u16): the writer and the ledger rules
/// take the last one and refuse one more.
#[tokio::test]
async fn a_stable_partition_takes_up_to_65536_destinations() {
    use lancet_reuse::{check, Digest, Mapping, Transition, MAX_DESTINATIONS};
    let fs = FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap();
    let path = Path::from("m.lance");
    let n = MAX_DESTINATIONS;
    let src = [SourceRows {
        physical_rows: n as u64,
        deleted: None,
    }];
    let labels = (0..n).map(|l| u16::try_from(l).unwrap());
    let written = write_row_map(&fs, &path, &src, n, labels, None)
        .await
        .unwrap();
    assert_eq!(written.destination_rows.len(), n);
    let over = write_row_map(&fs, &path, &src, n + 1, std::iter::empty(), None).await;
    assert!(matches!(over, Err(ReuseError::InvalidInput(m)) if m.contains("65537")));
    let transition = |destinations: usize| Transition {
        dataset_version: None,
        sources: vec![Digest {
            id: 0,
            physical_rows: destinations as u64,
            num_deleted_rows: 0,
        }],
        destinations: (0..destinations)
            .map(|i| Digest {
                id: 1 + i as u32,
                physical_rows: 1,
                num_deleted_rows: 0,
            })
            .collect(),
        mapping: Mapping::StablePartition {
            map_id: "00000000-0000-4000-8000-000000000000".into(),
            map_size_bytes: 1,
            base_id: None,
        },
    };
    check(&transition(n), "t").unwrap();
    let err = check(&transition(n + 1), "t").unwrap_err();
    assert!(err.to_string().contains("65536"), "{err}");
}

/// A row map is opened where `row_map_path` puts it, against the size its transition records:
/// an object of another size is corrupt. An external history is read over exactly its range.
#[tokio::test]
async fn row_maps_and_external_histories_are_read_at_their_recorded_sizes() {
    use lancet_paths::DatasetStore;
    let store = DatasetStore::scratch();
    let fs = FileStore::new(store.object_store().clone(), "memory:///").unwrap();
    let rel = lancet_reuse::row_map_path("m1", true);
    assert_eq!(rel, "_fri/m1/stable_partition.lance");
    assert_eq!(
        lancet_reuse::row_map_path("m1", false),
        "m1/stable_partition.lance"
    );
    let sources = [SourceRows {
        physical_rows: 4,
        deleted: None,
    }];
    let written = write_row_map(
        &fs,
        &store.path(&rel),
        &sources,
        2,
        [0, 1, 0, 1].into_iter(),
        None,
    )
    .await
    .unwrap();
    let transition = |size: u64| Transition {
        dataset_version: None,
        sources: vec![Digest {
            id: 0,
            physical_rows: 4,
            num_deleted_rows: 0,
        }],
        destinations: vec![
            Digest {
                id: 1,
                physical_rows: 2,
                num_deleted_rows: 0,
            },
            Digest {
                id: 2,
                physical_rows: 2,
                num_deleted_rows: 0,
            },
        ],
        mapping: Mapping::StablePartition {
            map_id: "m1".into(),
            map_size_bytes: size,
            base_id: None,
        },
    };
    RowMap::open_at(&store, &fs, &rel, &transition(written.size_bytes))
        .await
        .unwrap();
    assert!(
        RowMap::open_at(&store, &fs, &rel, &transition(written.size_bytes + 1))
            .await
            .is_err()
    );

    let dir = "_indices/u";
    store
        .put(
            &store.path(&format!("{dir}/details.binpb")),
            vec![7u8; 10].into(),
        )
        .await
        .unwrap();
    let file = |offset: u64, size: u64| lancet_proto::table::ExternalFile {
        path: "details.binpb".into(),
        offset,
        size,
    };
    assert_eq!(
        lancet_reuse::read_external(&store, dir, &file(2, 5))
            .await
            .unwrap(),
        vec![7u8; 5]
    );
    for bad in [file(5, 10), file(u64::MAX, 2)] {
        let e = lancet_reuse::read_external(&store, dir, &bad).await;
        assert!(e.is_err(), "{bad:?}");
    }
}
