//! Property tests of lancet-rowid against plain models: a `Vec<u64>` for sequences, a
//! `HashMap` for the index, and an independent statement of Lance's encoding rule.

use std::collections::HashMap;
use std::sync::Arc;

use lancet_rowid::{
    rechunk, row_address, FragmentRowIds, RowIdError, RowIdIndex, RowIdSequence, U64Segment,
    VersionSequence,
};
use proptest::prelude::*;
use roaring::RoaringBitmap;

/// Value lists of the shapes real sequences take: ranges, ranges with a few or many holes,
/// sparse sorted values, unsorted values, empty, and values at the u64 extremes.
fn values() -> impl Strategy<Value = Vec<u64>> {
    let base = prop_oneof![
        Just(0u64),
        any::<u64>().prop_map(|v| v / 2),
        Just(u64::MAX - 2001)
    ];
    prop_oneof![
        (base.clone(), 0u64..300).prop_map(|(b, n)| (b..b.saturating_add(n)).collect()),
        (
            base.clone(),
            1u64..300,
            proptest::collection::vec(any::<bool>(), 300)
        )
            .prop_map(|(b, n, keep)| (0..n)
                .filter(|i| keep[*i as usize])
                .map(|i| b + i)
                .collect()),
        (
            base.clone(),
            1u64..2000,
            proptest::collection::vec(0u64..2000, 0..40)
        )
            .prop_map(|(b, n, holes)| (0..n)
                .filter(|i| !holes.contains(i))
                .map(|i| b + i)
                .collect()),
        proptest::collection::btree_set(any::<u64>(), 0..50).prop_map(|s| s.into_iter().collect()),
        (0u64..2).prop_map(|k| vec![u64::MAX - 1 - k, u64::MAX - k]),
        proptest::collection::vec(any::<u64>(), 0..50),
        Just(vec![u64::MAX]),
        Just(vec![0, u64::MAX]),
        Just(vec![]),
    ]
}

/// Lance's rule, stated independently of the implementation.
fn expected_kind(v: &[u64]) -> &'static str {
    if v.is_empty() {
        return "range";
    }
    if !v.windows(2).all(|w| w[0] < w[1]) {
        return "array";
    }
    let (min, max) = (v[0], v[v.len() - 1]);
    if max == u64::MAX {
        return "sorted_array";
    }
    let count = v.len() as u128;
    let span = (max - min) as u128 + 1;
    if span == count {
        return "range";
    }
    let holes = 24 + 4 * (span - count);
    let bitmap = 24 + span.div_ceil(8);
    let sorted = 24 + 2 * count;
    if holes <= bitmap && holes <= sorted {
        "range_with_holes"
    } else if bitmap <= sorted {
        "range_with_bitmap"
    } else {
        "sorted_array"
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn segments_round_trip_and_follow_the_rule(v in values()) {
        let seq = RowIdSequence::from_values(&v);
        prop_assert_eq!(seq.segments()[0].kind(), expected_kind(&v));
        prop_assert_eq!(seq.len(), v.len() as u64);
        prop_assert_eq!(seq.iter().collect::<Vec<_>>(), v.clone());
        for (i, x) in v.iter().enumerate() {
            prop_assert_eq!(seq.get(i as u64), Some(*x));
        }
        prop_assert_eq!(seq.get(v.len() as u64), None);
        // position agrees with the first occurrence in the model
        for x in v.iter().take(20) {
            let want = v.iter().position(|y| y == x).map(|p| p as u64);
            prop_assert_eq!(seq.position(*x), want);
        }
        let bytes = seq.encode();
        let back = RowIdSequence::decode(&bytes).unwrap();
        prop_assert_eq!(&back, &seq);
        prop_assert_eq!(back.encode(), bytes);
    }

    #[test]
    fn mask_slice_and_rechunk_match_the_model(
        parts in proptest::collection::vec(values(), 1..4),
        del_seed in any::<u64>(),
        cuts in proptest::collection::vec(any::<u8>(), 1..4),
    ) {
        let seqs: Vec<RowIdSequence> = parts.iter().map(|p| RowIdSequence::from_values(p)).collect();
        let dels: Vec<RoaringBitmap> = parts
            .iter()
            .enumerate()
            .map(|(k, p)| {
                (0..p.len() as u32)
                    .filter(|i| (del_seed.rotate_left(*i + k as u32) & 3) == 0)
                    .collect()
            })
            .collect();
        let mut model: Vec<u64> = Vec::new();
        for (p, d) in parts.iter().zip(&dels) {
            for (i, x) in p.iter().enumerate() {
                if !d.contains(i as u32) {
                    model.push(*x);
                }
            }
            let masked = RowIdSequence::from_values(p).mask(d);
            let want: Vec<u64> = p.iter().enumerate().filter(|(i, _)| !d.contains(*i as u32)).map(|(_, x)| *x).collect();
            prop_assert_eq!(masked.iter().collect::<Vec<_>>(), want);
        }
        // split the survivors at `cuts`
        let total = model.len() as u64;
        let mut sizes = Vec::new();
        let mut left = total;
        for c in &cuts {
            let n = if left == 0 { 0 } else { u64::from(*c) % (left + 1) };
            sizes.push(n);
            left -= n;
        }
        sizes.push(left);
        let sources: Vec<(&RowIdSequence, Option<&RoaringBitmap>)> =
            seqs.iter().zip(&dels).map(|(s, d)| (s, Some(d))).collect();
        let out = rechunk(&sources, &sizes).unwrap();
        let flat: Vec<u64> = out.iter().flat_map(|s| s.iter().collect::<Vec<_>>()).collect();
        prop_assert_eq!(flat, model.clone());
        for (s, n) in out.iter().zip(&sizes) {
            prop_assert_eq!(s.len(), *n);
        }
        // slice of the concatenation
        let mut all = RowIdSequence::default();
        for s in &seqs { all.extend(s.clone()); }
        let all_model: Vec<u64> = parts.concat();
        let (a, b) = (del_seed % (all_model.len() as u64 + 1), u64::from(cuts[0]));
        let sliced: Vec<u64> = all.slice(a, b).iter().collect();
        let want: Vec<u64> = all_model.iter().skip(a as usize).take(b as usize).copied().collect();
        prop_assert_eq!(sliced, want);
    }

    #[test]
    fn index_matches_a_hashmap(
        frags in proptest::collection::vec((1u64..200, any::<u64>()), 1..8),
        moves in proptest::collection::vec(any::<u16>(), 0..30),
    ) {
        // Fragments of fresh ranges; then `moves` updates: an id is deleted where it lives and
        // appended to a new fragment (what an update does with stable row ids).
        let mut next = 0u64;
        let mut fragments: Vec<(Vec<u64>, RoaringBitmap)> = Vec::new();
        for (n, shuffle) in &frags {
            let mut ids: Vec<u64> = (next..next + n).collect();
            if shuffle % 3 == 0 { ids.reverse(); }
            if shuffle % 5 == 0 { ids.retain(|x| x % 4 != 1); }
            next += n;
            fragments.push((ids, RoaringBitmap::new()));
        }
        let mut moved = Vec::new();
        for m in &moves {
            let f = *m as usize % fragments.len();
            let (ids, del) = &mut fragments[f];
            if ids.is_empty() { continue; }
            let off = (*m as usize / 7) % ids.len();
            if del.insert(off as u32) {
                moved.push(ids[off]);
            }
        }
        if !moved.is_empty() {
            fragments.push((moved, RoaringBitmap::new()));
        }
        let mut model = HashMap::new();
        let mut inputs = Vec::new();
        for (fid, (ids, del)) in fragments.iter().enumerate() {
            for (off, id) in ids.iter().enumerate() {
                if !del.contains(off as u32) {
                    model.insert(*id, row_address(fid as u32, off as u32));
                }
            }
            inputs.push(FragmentRowIds {
                fragment_id: fid as u64,
                physical_rows: ids.len() as u64,
                sequence: Arc::new(RowIdSequence::from_values(ids)),
                deletions: (!del.is_empty()).then(|| Arc::new(del.clone())),
            });
        }
        let lazy = lancet_rowid::LazyRowIds::new(
            inputs
                .iter()
                .map(|f| lancet_rowid::LazyFragment {
                    fragment_id: f.fragment_id as u32,
                    physical_rows: f.physical_rows,
                    sequence: f.sequence.clone(),
                })
                .collect(),
        )
        .unwrap();
        let by_fragment: HashMap<u32, Option<Arc<RoaringBitmap>>> =
            inputs.iter().map(|f| (f.fragment_id as u32, f.deletions.clone())).collect();
        let mut probe_ids: Vec<u64> = model.keys().copied().collect();
        probe_ids.extend([next, next + 1, u64::MAX]);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let lazy_got = rt
            .block_on(lazy.get_many(&probe_ids, |f| {
                let d = by_fragment.get(&f).cloned().flatten();
                async move { Ok::<_, RowIdError>(d) }
            }))
            .unwrap();
        for (id, got) in probe_ids.iter().zip(&lazy_got) {
            prop_assert_eq!(*got, model.get(id).copied(), "lazy lookup of {}", id);
        }
        let index = RowIdIndex::build(inputs).unwrap();
        prop_assert_eq!(index.len(), model.len() as u64);
        for (id, addr) in &model {
            prop_assert_eq!(index.get(*id), Some(*addr));
            prop_assert_eq!(index.row_id_of(*addr), Some(*id));
        }
        for probe in [next, next + 1, u64::MAX] {
            prop_assert_eq!(index.get(probe), None);
        }
        let listed: HashMap<u64, u64> = index.iter().collect();
        prop_assert_eq!(listed, model);
    }

    #[test]
    fn versions_round_trip(v in proptest::collection::vec(0u64..4, 0..200)) {
        let seq = VersionSequence::from_versions(&v);
        for (i, x) in v.iter().enumerate() {
            prop_assert_eq!(seq.version_at(i as u64), Some(*x));
        }
        let back = VersionSequence::decode(&seq.encode()).unwrap();
        prop_assert_eq!(back, seq);
    }
}

#[test]
fn duplicate_ids_inside_one_fragment_are_caught() {
    let f = FragmentRowIds {
        fragment_id: 0,
        physical_rows: 3,
        sequence: Arc::new(
            RowIdSequence::from_segments(vec![U64Segment::from_values(&[4, 2, 4])]).unwrap(),
        ),
        deletions: None,
    };
    assert!(matches!(
        RowIdIndex::build(vec![f]),
        Err(RowIdError::DuplicateRowId { row_id: 4, .. })
    ));
}

#[test]
fn lazy_lookups_report_an_id_live_twice() {
    let frag = |id: u32, values: &[u64]| lancet_rowid::LazyFragment {
        fragment_id: id,
        physical_rows: values.len() as u64,
        sequence: Arc::new(RowIdSequence::from_values(values)),
    };
    let lazy = lancet_rowid::LazyRowIds::new(vec![frag(0, &[1, 2, 3]), frag(1, &[3])]).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let none = |_f: u32| async { Ok::<Option<Arc<RoaringBitmap>>, RowIdError>(None) };
    let err = rt.block_on(lazy.get_many(&[3], none)).unwrap_err();
    assert!(
        matches!(err, RowIdError::DuplicateRowId { row_id: 3, .. }),
        "{err}"
    );
    // with the old copy deleted, the id resolves to its new place
    let deleted = |f: u32| async move {
        Ok::<_, RowIdError>(
            (f == 0).then(|| Arc::new([2u32].into_iter().collect::<RoaringBitmap>())),
        )
    };
    let got = rt.block_on(lazy.get_many(&[3, 1, 9], deleted)).unwrap();
    assert_eq!(
        got,
        vec![Some(row_address(1, 0)), Some(row_address(0, 0)), None]
    );
}
