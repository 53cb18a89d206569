//! Chains of ordered compactions and stable partitions (row maps written by lancet) against a
//! brute-force model of the table: per-address translation, set translation (index reuse) and
//! the fragments a translated index still covers.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use lancet_file::{FileStore, LanceFile};
use lancet_reuse::RowMap;
use lancet_reuse::{write_row_map, SourceRows};
use lancet_reuse::{Digest, Ledger, Mapping, Transition};
use lancet_reuse::{History, Translation};
use object_store::memory::InMemory;
use object_store::path::Path;
use proptest::prelude::*;
use roaring::{RoaringBitmap, RoaringTreemap};

/// fragment id -> per physical row (row key, alive)
type Rows = Vec<(u64, bool)>;
type Table = BTreeMap<u32, Rows>;

struct Model {
    table: Table,
    next_id: u32,
    transitions: Vec<Transition>,
    /// transition index -> row map path
    maps: Vec<(usize, Path, u64)>,
}

impl Model {
    fn take_sources(&mut self, sources: &[u32]) -> (Vec<Digest>, Vec<(u32, Rows)>) {
        let mut digests = Vec::new();
        let mut rows = Vec::new();
        for &s in sources {
            let r = self.table.remove(&s).unwrap_or_default();
            digests.push(Digest {
                id: s,
                physical_rows: r.len() as u64,
                num_deleted_rows: r.iter().filter(|x| !x.1).count() as u64,
            });
            rows.push((s, r));
        }
        (digests, rows)
    }

    fn compact(&mut self, sources: &[u32], target: usize) {
        let (digests, rows) = self.take_sources(sources);
        let mut surviving = RoaringTreemap::new();
        let mut stream = Vec::new();
        for (s, r) in &rows {
            for (o, (key, alive)) in r.iter().enumerate() {
                if *alive {
                    surviving.insert((u64::from(*s) << 32) | o as u64);
                    stream.push(*key);
                }
            }
        }
        let mut destinations = Vec::new();
        for chunk in stream.chunks(target.max(1)) {
            let id = self.next_id;
            self.next_id += 1;
            destinations.push(Digest {
                id,
                physical_rows: chunk.len() as u64,
                num_deleted_rows: 0,
            });
            self.table
                .insert(id, chunk.iter().map(|k| (*k, true)).collect());
        }
        self.transitions.push(Transition {
            dataset_version: None,
            sources: digests,
            destinations,
            mapping: Mapping::OrderedCompaction { surviving },
        });
    }

    async fn partition(&mut self, fs: &FileStore, sources: &[u32], m: usize, seed: u64) {
        let (digests, rows) = self.take_sources(sources);
        let deleted: Vec<RoaringBitmap> = rows
            .iter()
            .map(|(_, r)| (0..r.len() as u32).filter(|o| !r[*o as usize].1).collect())
            .collect();
        let live: Vec<u64> = rows
            .iter()
            .flat_map(|(_, r)| r.iter().filter(|x| x.1).map(|x| x.0))
            .collect();
        let labels: Vec<u16> = live
            .iter()
            .map(|k| ((k ^ seed).wrapping_mul(0x9e37_79b9) % m as u64) as u16)
            .collect();
        let path = Path::from(format!(
            "_fri/{}/stable_partition.lance",
            self.transitions.len()
        ));
        let src_rows: Vec<SourceRows> = rows
            .iter()
            .zip(&deleted)
            .map(|((_, r), d)| SourceRows {
                physical_rows: r.len() as u64,
                deleted: Some(d),
            })
            .collect();
        let written = write_row_map(fs, &path, &src_rows, m, labels.iter().copied(), Some(7))
            .await
            .unwrap();
        let mut destinations = Vec::new();
        let mut dest_rows: Vec<Vec<(u64, bool)>> = vec![Vec::new(); m];
        for (k, l) in live.iter().zip(&labels) {
            dest_rows[usize::from(*l)].push((*k, true));
        }
        for rows in dest_rows {
            let id = self.next_id;
            self.next_id += 1;
            destinations.push(Digest {
                id,
                physical_rows: rows.len() as u64,
                num_deleted_rows: 0,
            });
            self.table.insert(id, rows);
        }
        self.maps
            .push((self.transitions.len(), path.clone(), written.size_bytes));
        self.transitions.push(Transition {
            dataset_version: None,
            sources: digests,
            destinations,
            mapping: Mapping::StablePartition {
                map_id: "0a0b0c0d-0000-4000-8000-000000000001".into(),
                map_size_bytes: written.size_bytes,
                base_id: None,
            },
        });
    }
}

fn run(sizes: &[u64], rounds: &[(u64, bool, usize, u64)], probe_seed: u64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let fs = FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap();
        let mut model = Model {
            table: Table::new(),
            next_id: 100,
            transitions: Vec::new(),
            maps: Vec::new(),
        };
        let mut key = 0u64;
        for (f, n) in sizes.iter().enumerate() {
            let rows = (0..*n)
                .map(|_| {
                    key += 1;
                    (key, true)
                })
                .collect();
            model.table.insert(f as u32, rows);
        }
        let original: Vec<(u64, u64)> = model
            .table
            .iter()
            .flat_map(|(f, rows)| {
                rows.iter()
                    .enumerate()
                    .map(move |(o, r)| ((u64::from(*f) << 32) | o as u64, r.0))
            })
            .collect();
        for &(pick, partition, width, seed) in rounds {
            for rows in model.table.values_mut() {
                for (i, r) in rows.iter_mut().enumerate() {
                    if seed.rotate_left(i as u32) % 5 == 0 {
                        r.1 = false;
                    }
                }
            }
            let ids: Vec<u32> = model.table.keys().copied().collect();
            if ids.is_empty() {
                break;
            }
            let mut chosen: Vec<u32> = ids
                .iter()
                .enumerate()
                .filter(|(i, _)| pick >> (i % 64) & 1 == 1)
                .map(|(_, id)| *id)
                .collect();
            if chosen.is_empty() {
                chosen.push(ids[0]);
            }
            if partition {
                model
                    .partition(&fs, &chosen, width.clamp(1, 70), seed)
                    .await;
            } else {
                model.compact(&chosen, width);
            }
        }
        let ledger = Ledger {
            index_version: 1,
            transitions: model.transitions.clone(),
            has_unsupported: false,
            unmodelled_row_maps: Vec::new(),
        };
        let mut history = History::new(ledger, "model").unwrap();
        for (i, path, size) in &model.maps {
            let file = LanceFile::open(&fs, path, Some(*size)).await.unwrap();
            let t = history.transition(*i).cloned().unwrap();
            history.attach_row_map(*i, RowMap::open(file, &t).await.unwrap());
        }
        let now: HashMap<u64, u64> = model
            .table
            .iter()
            .flat_map(|(f, rows)| {
                rows.iter()
                    .enumerate()
                    .map(move |(o, r)| (r.0, (u64::from(*f) << 32) | o as u64))
            })
            .collect();

        // every original address, one by one
        let addrs: Vec<u64> = original.iter().map(|(a, _)| *a).collect();
        let got = history.translate(&addrs).await.unwrap();
        for ((_, key), t) in original.iter().zip(&got) {
            let want = now
                .get(key)
                .map_or(Translation::Deleted, |a| Translation::Address(*a));
            assert_eq!(*t, want, "row {key}");
        }

        // a subset as a set (an index's ids), plus an address of a fragment no transition
        // touches, which must pass through
        // every address (whole blocks and sources), and dense and sparse subsets (walk vs
        // rank paths): about 2 in 3, and 1 in 40
        for (modulus, keep_multiples) in [(1u64, true), (3, false), (40, true)] {
            let subset: RoaringTreemap = original
                .iter()
                .filter(|(a, _)| {
                    let h = (a ^ probe_seed).wrapping_mul(0x2545_f491);
                    h.is_multiple_of(modulus) == keep_multiples
                })
                .map(|(a, _)| *a)
                .chain([(7_000u64 << 32) | 5])
                .collect();
            let want: RoaringTreemap = original
                .iter()
                .filter(|(a, _)| subset.contains(*a))
                .filter_map(|(_, key)| now.get(key).copied())
                .chain([(7_000u64 << 32) | 5])
                .collect();
            assert_eq!(history.translate_set(&subset).await.unwrap(), want);
        }

        // an index over every original fragment answers for every fragment there is now
        let covered: RoaringBitmap = (0..sizes.len() as u32).collect();
        let after = history.covered_after(&covered);
        for f in model.table.keys() {
            assert!(after.contains(*f), "fragment {f} not covered");
        }
        // an index over none of them answers for none of the new fragments
        assert!(history.covered_after(&RoaringBitmap::new()).is_empty());
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    /// Random tables, deletions before each rewrite, and chains mixing ordered compactions
    /// and stable partitions (up to 70 destinations, empty sources and destinations,
    /// fragments rewritten again after being produced).
    #[test]
    fn mixed_chains_translate_like_the_model(
        sizes in proptest::collection::vec(0u64..60, 1..6),
        rounds in proptest::collection::vec((any::<u64>(), any::<bool>(), 1usize..80, any::<u64>()), 1..5),
        probe_seed in any::<u64>(),
    ) {
        run(&sizes, &rounds, probe_seed);
    }
}

/// Trimming keeps exactly the transitions an index still needs, intermediates included.
#[test]
fn trimming_keeps_what_indexes_still_need() {
    let d = |id: u32, rows: u64| Digest {
        id,
        physical_rows: rows,
        num_deleted_rows: 0,
    };
    let compact = |src: &[(u32, u64)], dst: &[(u32, u64)]| Transition {
        dataset_version: None,
        sources: src.iter().map(|(i, r)| d(*i, *r)).collect(),
        destinations: dst.iter().map(|(i, r)| d(*i, *r)).collect(),
        mapping: Mapping::OrderedCompaction {
            surviving: src
                .iter()
                .flat_map(|(i, r)| (0..*r).map(move |o| (u64::from(*i) << 32) | o))
                .collect(),
        },
    };
    // 0 + 1 -> 10; 10 -> 20 (intermediate); 2 -> 11; 3 -> 12 (list order scrambled)
    let ts = vec![
        compact(&[(10, 8)], &[(20, 8)]),
        compact(&[(2, 3)], &[(11, 3)]),
        compact(&[(0, 5), (1, 3)], &[(10, 8)]),
        compact(&[(3, 1)], &[(12, 1)]),
    ];
    let history = History::new(
        Ledger {
            index_version: 1,
            transitions: ts,
            has_unsupported: false,
            unmodelled_row_maps: Vec::new(),
        },
        "trim",
    )
    .unwrap();
    let set = |v: &[u32]| v.iter().copied().collect::<RoaringBitmap>();
    // an index over fragment 0 needs 0+1 -> 10 and the intermediate 10 -> 20
    assert_eq!(history.needed_for(&set(&[0])), vec![0, 2]);
    // an index built after the first compaction (over 10) needs only 10 -> 20
    assert_eq!(history.needed_for(&set(&[10])), vec![0]);
    assert_eq!(history.needed_for(&set(&[2, 3])), vec![1, 3]);
    // caught up: indexes over current fragments need nothing
    assert!(history.needed_for(&set(&[20, 11, 12])).is_empty());
}

#[test]
fn ancestors_follow_producers() {
    let d = |id: u32| Digest {
        id,
        physical_rows: 1,
        num_deleted_rows: 0,
    };
    let t = |src: &[u32], dst: &[u32]| Transition {
        dataset_version: None,
        sources: src.iter().map(|i| d(*i)).collect(),
        destinations: dst.iter().map(|i| d(*i)).collect(),
        mapping: Mapping::OrderedCompaction {
            surviving: src.iter().map(|i| u64::from(*i) << 32).collect(),
        },
    };
    let history = History::new(
        Ledger {
            index_version: 1,
            transitions: vec![t(&[0, 1], &[10]), t(&[10, 2], &[20]), t(&[3], &[30])],
            has_unsupported: false,
            unmodelled_row_maps: Vec::new(),
        },
        "ancestors",
    )
    .unwrap();
    let set = |v: &[u32]| v.iter().copied().collect::<RoaringBitmap>();
    assert_eq!(history.with_ancestors(&set(&[20])), set(&[0, 1, 2, 10, 20]));
    assert_eq!(history.with_ancestors(&set(&[10, 5])), set(&[0, 1, 5, 10]));
    // what a trim keeps for indexes: an index whose build version is known keeps that
    // version's fragments; one whose version is gone keeps its coverage's ancestors
    let covers_20 = set(&[20]);
    let covers_30 = set(&[30]);
    let built_on: &[u32] = &[0, 1, 2, 3];
    assert_eq!(
        history.indexed_fragments([(&covers_20, None), (&covers_30, Some(built_on))]),
        set(&[0, 1, 2, 3, 10, 20, 30])
    );
    assert_eq!(
        history.indexed_fragments([(&covers_30, Some(&[3u32][..]))]),
        set(&[3, 30])
    );
}
