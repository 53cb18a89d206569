//! Targets `fri_details` (InlineContent → ledger → history graph), `fri_counts` (the LSPC
//! counts buffer) and `fri_row_map` (a stable-partition row map file opened and translated).

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt16Array};
use bytes::Bytes;
use lancet_file::{write_file, FileStore, FileVersion, LanceFile, WriteOptions};
use lancet_proto::table::fragment_reuse_index_details::{
    transition::Mapping, FragmentDigest, Group, InlineContent, OrderedCompaction, StablePartition,
    Transition as PbTransition, Version,
};
use lancet_reuse::Counts;
use lancet_reuse::History;
use lancet_reuse::{decode_inline, Digest, Mapping as LMapping, Transition};
use lancet_reuse::{row_map_schema, RowMap, COUNTS_BUFFER_KEY};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStoreExt;
use prost::Message;
use roaring::RoaringTreemap;

use super::Target;

fn digest(id: u64, rows: u64, del: u64) -> FragmentDigest {
    FragmentDigest {
        id,
        physical_rows: rows,
        num_deleted_rows: del,
    }
}

fn treemap(addrs: impl IntoIterator<Item = u64>) -> Vec<u8> {
    let t: RoaringTreemap = addrs.into_iter().collect();
    lancet_proto::roaring_wire::encode_treemap(&t)
}

pub struct DetailsTarget;

impl Target for DetailsTarget {
    fn name(&self) -> &'static str {
        "fri_details"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        // fragments 0,1 (10 rows, 2 deleted each) -> 5 (16 rows) -> 6 (12 rows after 4 more)
        let survivors0: Vec<u64> = (0..10u64)
            .filter(|o| o % 5 != 0)
            .chain((0..10).filter(|o| o % 5 != 0).map(|o| (1 << 32) | o))
            .collect();
        let legacy = Version {
            dataset_version: 3,
            groups: vec![Group {
                changed_row_addrs: treemap(survivors0),
                old_fragments: vec![digest(0, 10, 2), digest(1, 10, 2)],
                new_fragments: vec![digest(5, 16, 0)],
            }],
        };
        let ordered = PbTransition {
            sources: vec![digest(5, 16, 4)],
            destinations: vec![digest(6, 12, 0)],
            mapping: Some(Mapping::OrderedCompaction(OrderedCompaction {
                changed_row_addrs: treemap((0..12u64).map(|o| (5 << 32) | o)),
            })),
        };
        let partition = PbTransition {
            sources: vec![digest(6, 12, 0)],
            destinations: vec![digest(7, 5, 0), digest(8, 7, 0)],
            mapping: Some(Mapping::StablePartition(StablePartition {
                map_id: "0a0b0c0d-0000-4000-8000-000000000001".into(),
                map_size_bytes: 100,
                base_id: None,
            })),
        };
        let v0 = InlineContent {
            legacy_versions: vec![legacy.clone()],
            transitions: vec![],
        };
        let v1 = InlineContent {
            legacy_versions: vec![legacy],
            transitions: vec![ordered, partition],
        };
        vec![v0.encode_to_vec(), v1.encode_to_vec()]
    }

    fn check(&self, input: &[u8]) -> bool {
        let mut accepted = false;
        for version in [0, 1] {
            if let Ok(ledger) = decode_inline(input, version, "fuzz") {
                accepted = true;
                if let Ok(h) = History::new(ledger, "fuzz") {
                    // ordered-compaction-only histories translate without row maps
                    if h.row_maps_needed().is_empty() {
                        let rt = tokio::runtime::Builder::new_current_thread()
                            .build()
                            .expect("rt");
                        let probes: Vec<u64> = (0..4u64)
                            .flat_map(|f| (0..12u64).map(move |o| (f << 32) | o))
                            .collect();
                        rt.block_on(h.translate(&probes))
                            .expect("ordered translation never fails");
                    }
                }
            }
        }
        accepted
    }
}

pub struct CountsTarget;

impl Target for CountsTarget {
    fn name(&self) -> &'static str {
        "fri_counts"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![
            Counts::encode(2, 4, 10, &[vec![2, 1], vec![0, 4], vec![1, 1]]),
            Counts::encode(3, 8, 0, &[]),
            Counts::encode(1, 65_536, 100_000, &[vec![60_000], vec![30_000]]),
        ]
    }

    fn hot_offsets(&self, _seed: &[u8]) -> Vec<usize> {
        vec![4, 8, 12, 16, 20, 28, 32]
    }

    fn check(&self, input: &[u8]) -> bool {
        match Counts::decode(input) {
            Ok(c) => {
                let totals = c.totals();
                assert_eq!(totals.len(), c.num_destinations as usize);
                assert!(totals.iter().sum::<u64>() <= c.total_rows);
                true
            }
            Err(_) => false,
        }
    }
}

/// A row map of 3 sources (7, 5 and 9 rows) into 2 destinations, blocks of 4 rows.
fn row_map_bytes() -> (Vec<u8>, Transition) {
    let labels: Vec<Option<u16>> = (0..21u16)
        .map(|i| if i % 6 == 5 { None } else { Some(i % 2) })
        .collect();
    let mut per_block = Vec::new();
    for block in labels.chunks(4) {
        let mut c = vec![0u32; 2];
        for l in block.iter().flatten() {
            c[usize::from(*l)] += 1;
        }
        per_block.push(c);
    }
    let totals: Vec<u64> = (0..2)
        .map(|d| per_block.iter().map(|b| u64::from(b[d])).sum())
        .collect();
    let counts = Counts::encode(2, 4, 21, &per_block);
    let t = Transition {
        dataset_version: None,
        sources: vec![
            Digest {
                id: 1,
                physical_rows: 7,
                num_deleted_rows: 1,
            },
            Digest {
                id: 2,
                physical_rows: 5,
                num_deleted_rows: 1,
            },
            Digest {
                id: 3,
                physical_rows: 9,
                num_deleted_rows: 1,
            },
        ],
        destinations: vec![
            Digest {
                id: 10,
                physical_rows: totals[0],
                num_deleted_rows: 0,
            },
            Digest {
                id: 11,
                physical_rows: totals[1],
                num_deleted_rows: 0,
            },
        ],
        mapping: LMapping::StablePartition {
            map_id: "0a0b0c0d-0000-4000-8000-000000000001".into(),
            map_size_bytes: 1,
            base_id: None,
        },
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("rt");
    let bytes = rt.block_on(async {
        let store = Arc::new(InMemory::new());
        let fs = FileStore::new(store.clone(), "memory:///").expect("store");
        let path = Path::from("m.lance");
        let batch = RecordBatch::try_from_iter([(
            "label",
            Arc::new(UInt16Array::from(labels)) as ArrayRef,
        )])
        .expect("batch");
        let opts = WriteOptions {
            version: FileVersion::V2_1,
            metadata: [(COUNTS_BUFFER_KEY.to_string(), "1".to_string())].into(),
            global_buffers: vec![Bytes::from(counts)],
            field_ids: None,
        };
        write_file(&fs, &path, &row_map_schema(), &[batch], &opts)
            .await
            .expect("write");
        store
            .get(&path)
            .await
            .expect("get")
            .bytes()
            .await
            .expect("bytes")
            .to_vec()
    });
    (bytes, t)
}

pub struct RowMapTarget {
    seed: Vec<u8>,
    transition: Transition,
}

impl RowMapTarget {
    pub fn new() -> Self {
        let (seed, transition) = row_map_bytes();
        Self { seed, transition }
    }
}

impl Target for RowMapTarget {
    fn name(&self) -> &'static str {
        "fri_row_map"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![self.seed.clone()]
    }

    fn hang_limit(&self) -> std::time::Duration {
        std::time::Duration::from_secs(120)
    }

    fn check(&self, input: &[u8]) -> bool {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("rt");
        rt.block_on(async {
            let store = Arc::new(InMemory::new());
            let path = Path::from("m.lance");
            store
                .put(&path, Bytes::copy_from_slice(input).into())
                .await
                .expect("put");
            let fs = FileStore::new(store, "memory:///").expect("store");
            let Ok(file) = LanceFile::open(&fs, &path, None).await else {
                return false;
            };
            let Ok(map) = RowMap::open(file, &self.transition).await else {
                return false;
            };
            let requests: Vec<(usize, u32, u64)> = [(1u32, 7u64), (2, 5), (3, 9)]
                .iter()
                .flat_map(|&(f, n)| (0..n).map(move |o| (f, o)))
                .enumerate()
                .map(|(slot, (f, o))| (slot, f, o))
                .collect();
            let single = map.translate(&requests).await;
            if let Ok(out) = &single {
                assert_eq!(out.len(), requests.len());
                for (_, addr) in out {
                    if let Some(a) = addr {
                        assert!(matches!(a >> 32, 10 | 11), "translated into a destination");
                    }
                }
            }
            // Set translation (index reuse) over every address and over a partial set: never
            // a panic; whenever the per-address sweep (which checks every label) succeeds, the
            // set path (whole blocks from the counts alone) gives the same rows.
            let ledger = lancet_reuse::Ledger {
                index_version: 1,
                transitions: vec![self.transition.clone()],
                has_unsupported: false,
                unmodelled_row_maps: Vec::new(),
            };
            let Ok(mut history) = History::new(ledger, "fuzz") else {
                return true;
            };
            history.attach_row_map(0, map);
            let all: RoaringTreemap = requests
                .iter()
                .map(|(_, f, o)| (u64::from(*f) << 32) | o)
                .collect();
            let partial: RoaringTreemap = all.iter().filter(|a| a % 3 != 1).collect();
            for (set, keep) in [(&all, None), (&partial, Some(&partial))] {
                let Ok(got) = history.translate_set(set).await else {
                    continue;
                };
                assert!(got.iter().all(|a| matches!(a >> 32, 10 | 11)));
                if let Ok(out) = &single {
                    let want: RoaringTreemap = out
                        .iter()
                        .filter(|(slot, _)| {
                            requests.get(*slot).is_some_and(|(_, f, o)| {
                                keep.is_none_or(|k| k.contains((u64::from(*f) << 32) | o))
                            })
                        })
                        .filter_map(|(_, a)| *a)
                        .collect();
                    assert_eq!(got, want, "set and per-address translation agree");
                }
            }
            true
        })
    }
}
