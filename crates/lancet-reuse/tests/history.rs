//! FRI histories against a brute-force model, and every history rule broken once.

use lancet_proto::roaring_wire::encode_treemap;
use lancet_proto::table::fragment_reuse_index_details::{
    transition::Mapping, FragmentDigest, Group, InlineContent, OrderedCompaction,
    Transition as PbTransition, Version,
};
use lancet_reuse::decode_inline;
use lancet_reuse::{History, ReuseError, Translation};
use proptest::prelude::*;
use prost::Message;
use roaring::RoaringTreemap;

fn digest(id: u64, rows: u64, del: u64) -> FragmentDigest {
    FragmentDigest {
        id,
        physical_rows: rows,
        num_deleted_rows: del,
    }
}

/// A simulated table: fragment id -> per-row (row key, alive).
type Table = std::collections::BTreeMap<u64, Vec<(u64, bool)>>;

/// One ordered compaction of `sources` into destinations of at most `target` rows, as a
/// transition, applied to the model table.
fn compact(table: &mut Table, sources: &[u64], target: u64, next_id: &mut u64) -> PbTransition {
    let mut survivors = RoaringTreemap::new();
    let mut stream = Vec::new();
    let mut src = Vec::new();
    for &s in sources {
        let rows = table.remove(&s).unwrap_or_default();
        let dead = rows.iter().filter(|r| !r.1).count() as u64;
        src.push(digest(s, rows.len() as u64, dead));
        for (o, (key, alive)) in rows.iter().enumerate() {
            if *alive {
                survivors.insert((s << 32) | o as u64);
                stream.push(*key);
            }
        }
    }
    let mut dst = Vec::new();
    for chunk in stream.chunks(target.max(1) as usize) {
        let id = *next_id;
        *next_id += 1;
        dst.push(digest(id, chunk.len() as u64, 0));
        table.insert(id, chunk.iter().map(|k| (*k, true)).collect());
    }
    PbTransition {
        sources: src,
        destinations: dst,
        mapping: Some(Mapping::OrderedCompaction(OrderedCompaction {
            changed_row_addrs: encode_treemap(&survivors),
        })),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    /// Random tables, deletions and chains of compactions (some fragments compacted twice,
    /// empty sources, everything deleted): translating every original address gives the
    /// address of the same row key now, or Deleted.
    #[test]
    fn chains_translate_like_the_model(
        sizes in proptest::collection::vec(0u64..40, 1..6),
        rounds in proptest::collection::vec((any::<u64>(), 1u64..30, any::<u64>()), 1..4),
        shuffle in any::<bool>(),
    ) {
        let mut table = Table::new();
        let mut key = 0u64;
        for (f, n) in sizes.iter().enumerate() {
            table.insert(f as u64, (0..*n).map(|_| { key += 1; (key, true) }).collect());
        }
        let original: Vec<(u64, u64)> = table
            .iter()
            .flat_map(|(f, rows)| rows.iter().enumerate().map(move |(o, r)| ((f << 32) | o as u64, r.0)))
            .collect();
        let mut next_id = 100;
        let mut transitions = Vec::new();
        for (del_seed, target, pick) in rounds {
            // delete some rows, then compact a non-empty subset of the current fragments
            for rows in table.values_mut() {
                for (i, r) in rows.iter_mut().enumerate() {
                    if del_seed.rotate_left(i as u32) % 5 == 0 { r.1 = false; }
                }
            }
            let ids: Vec<u64> = table.keys().copied().collect();
            if ids.is_empty() {
                break; // everything was deleted and compacted away
            }
            let chosen: Vec<u64> = ids.iter().enumerate().filter(|(i, _)| pick >> (i % 64) & 1 == 1).map(|(_, id)| *id).collect();
            let chosen = if chosen.is_empty() { vec![ids[0]] } else { chosen };
            transitions.push(compact(&mut table, &chosen, target, &mut next_id));
        }
        if shuffle { transitions.reverse(); }
        let bytes = InlineContent { legacy_versions: vec![], transitions }.encode_to_vec();
        let ledger = decode_inline(&bytes, 1, "model").unwrap();
        let history = History::new(ledger, "model").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let addrs: Vec<u64> = original.iter().map(|(a, _)| *a).collect();
        let got = rt.block_on(history.translate(&addrs)).unwrap();
        // Rows still physically in a fragment keep an address, deleted or not: the FRI records
        // rewrites, and readers apply current deletion vectors separately. Only rows a
        // compaction dropped translate to Deleted.
        let now: std::collections::HashMap<u64, u64> = table
            .iter()
            .flat_map(|(f, rows)| rows.iter().enumerate().map(move |(o, r)| (r.0, (f << 32) | o as u64)))
            .collect();
        for ((_, key), t) in original.iter().zip(got) {
            let want = now.get(key).map_or(Translation::Deleted, |a| Translation::Address(*a));
            prop_assert_eq!(t, want, "row {}", key);
        }
    }
}

fn one(group_src: Vec<FragmentDigest>, group_dst: Vec<FragmentDigest>, survivors: &[u64]) -> Group {
    Group {
        changed_row_addrs: encode_treemap(&survivors.iter().copied().collect()),
        old_fragments: group_src,
        new_fragments: group_dst,
    }
}

fn v0(groups: Vec<Group>) -> Vec<u8> {
    InlineContent {
        legacy_versions: vec![Version {
            dataset_version: 1,
            groups,
        }],
        transitions: vec![],
    }
    .encode_to_vec()
}

fn expect_corrupt(bytes: &[u8], version: i32, needle: &str) {
    let r = decode_inline(bytes, version, "t").and_then(|l| History::new(l, "t").map(|_| ()));
    match r {
        Err(ReuseError::Corrupt { rule, .. }) => {
            assert!(rule.contains(needle), "{rule:?} / {needle:?}")
        }
        other => panic!("expected Corrupt({needle}), got {other:?}"),
    }
}

#[test]
fn every_history_rule_rejects() {
    let ok = one(vec![digest(0, 2, 0)], vec![digest(1, 2, 0)], &[0, 1]);
    assert!(decode_inline(&v0(vec![ok.clone()]), 0, "t").is_ok());
    expect_corrupt(&v0(vec![one(vec![], vec![], &[])]), 0, "no sources");
    expect_corrupt(
        &v0(vec![one(
            vec![digest(u64::from(u32::MAX), 1, 0)],
            vec![digest(1, 1, 0)],
            &[0],
        )]),
        0,
        "below 2^32",
    );
    expect_corrupt(
        &v0(vec![one(
            vec![digest(0, 1 << 33, 0)],
            vec![digest(1, 1, 0)],
            &[0],
        )]),
        0,
        "physical rows",
    );
    expect_corrupt(
        &v0(vec![one(
            vec![digest(0, 1, 2)],
            vec![digest(1, 1, 0)],
            &[0],
        )]),
        0,
        "deletes more",
    );
    expect_corrupt(
        &v0(vec![one(
            vec![digest(0, 1, 0), digest(0, 1, 0)],
            vec![digest(1, 2, 0)],
            &[0],
        )]),
        0,
        "duplicate",
    );
    expect_corrupt(
        &v0(vec![one(
            vec![digest(0, 2, 0)],
            vec![digest(1, 2, 1)],
            &[0, 1],
        )]),
        0,
        "destination records deleted",
    );
    expect_corrupt(
        &v0(vec![one(
            vec![digest(0, 2, 0)],
            vec![digest(1, 3, 0)],
            &[0, 1],
        )]),
        0,
        "surviving source rows",
    );
    expect_corrupt(
        &v0(vec![one(
            vec![digest(0, 2, 1)],
            vec![digest(1, 1, 0)],
            &[0, 1],
        )]),
        0,
        "changed_row_addrs",
    );
    expect_corrupt(
        &v0(vec![one(
            vec![digest(0, 2, 0)],
            vec![digest(1, 2, 0)],
            &[0, 5],
        )]),
        0,
        "past its rows",
    );
    // a fragment produced twice, consumed twice, read with other row counts, a cycle
    let a = one(vec![digest(0, 2, 0)], vec![digest(5, 2, 0)], &[0, 1]);
    let b = one(
        vec![digest(1, 2, 0)],
        vec![digest(5, 2, 0)],
        &[1 << 32, (1 << 32) | 1],
    );
    expect_corrupt(&v0(vec![a.clone(), b]), 0, "produced twice");
    let c = one(vec![digest(0, 2, 0)], vec![digest(6, 2, 0)], &[0, 1]);
    expect_corrupt(&v0(vec![a.clone(), c]), 0, "consumed twice");
    let d = one(
        vec![digest(5, 3, 1)],
        vec![digest(7, 2, 0)],
        &[5 << 32, (5 << 32) | 1],
    );
    expect_corrupt(&v0(vec![a.clone(), d]), 0, "written with 2 rows");
    let x = one(
        vec![digest(5, 2, 0)],
        vec![digest(6, 2, 0)],
        &[5 << 32, (5 << 32) | 1],
    );
    let y = one(
        vec![digest(6, 2, 0)],
        vec![digest(5, 2, 0)],
        &[6 << 32, (6 << 32) | 1],
    );
    expect_corrupt(&v0(vec![x, y]), 0, "cycle");
    // transitions need index_version 1; a transition with two mappings or none
    let t = PbTransition {
        sources: vec![digest(0, 1, 0)],
        destinations: vec![digest(1, 1, 0)],
        mapping: Some(Mapping::OrderedCompaction(OrderedCompaction {
            changed_row_addrs: encode_treemap(&[0u64].into_iter().collect()),
        })),
    };
    let v1 = InlineContent {
        legacy_versions: vec![],
        transitions: vec![t.clone()],
    }
    .encode_to_vec();
    assert!(decode_inline(&v1, 1, "t").is_ok());
    expect_corrupt(&v1, 0, "index_version 0");
    let none = InlineContent {
        legacy_versions: vec![],
        transitions: vec![PbTransition {
            mapping: None,
            ..t.clone()
        }],
    }
    .encode_to_vec();
    expect_corrupt(&none, 1, "0 mappings");
    // unknown index_version; an unknown field in a transition is skipped and flagged
    assert!(matches!(
        decode_inline(&v1, 2, "t"),
        Err(ReuseError::Unsupported { .. })
    ));
    let mut with_extra = t.encode_to_vec();
    with_extra.extend_from_slice(&[0x28, 0x01]); // field 5 varint
    let mut content = Vec::new();
    content.push(0x12);
    content.push(with_extra.len() as u8);
    content.extend_from_slice(&with_extra);
    let ledger = decode_inline(&content, 1, "t").unwrap();
    assert!(ledger.has_unsupported);
    assert!(ledger.transitions.is_empty());
    assert_eq!(ledger.row_maps().count(), 0);
    // a skipped stable partition still names its row map, which cleanup must keep
    let partition = PbTransition {
        mapping: Some(Mapping::StablePartition(
            lancet_proto::table::fragment_reuse_index_details::StablePartition {
                map_id: "00000000-0000-4000-8000-000000000001".into(),
                map_size_bytes: 10,
                base_id: None,
            },
        )),
        ..t.clone()
    };
    let mut with_extra = partition.encode_to_vec();
    with_extra.extend_from_slice(&[0x48, 0x01]); // field 9 varint
    let mut content = vec![0x12, with_extra.len() as u8];
    content.extend_from_slice(&with_extra);
    let ledger = decode_inline(&content, 1, "t").unwrap();
    assert!(ledger.transitions.is_empty());
    let maps: Vec<(&str, Option<u32>)> = ledger.row_maps().collect();
    assert_eq!(maps, vec![("00000000-0000-4000-8000-000000000001", None)]);
}

/// A shallow clone's history: inherited row maps name the source base; a history with
/// transitions lancet does not model is refused rather than dropped or mis-pointed.
#[test]
fn a_clone_repoints_inherited_row_maps_and_refuses_unmodelled_transitions() {
    use lancet_proto::table::fragment_reuse_index_details::StablePartition;
    let partition = |base_id: Option<u32>| PbTransition {
        sources: vec![digest(0, 10, 0), digest(1, 10, 0)],
        destinations: vec![digest(2, 20, 0)],
        mapping: Some(Mapping::StablePartition(StablePartition {
            map_id: "00000000-0000-4000-8000-000000000001".into(),
            map_size_bytes: 10,
            base_id,
        })),
    };
    let content = |t: &PbTransition, extra: &[u8]| {
        let mut body = t.encode_to_vec();
        body.extend_from_slice(extra);
        let mut content = vec![0x12, body.len() as u8];
        content.extend_from_slice(&body);
        content
    };
    // inherited: re-pointed at the source base
    let ledger = decode_inline(&content(&partition(None), &[]), 1, "t").unwrap();
    let cloned = ledger.for_clone("t", 3).unwrap().unwrap();
    let maps: Vec<(&str, Option<u32>)> = cloned.row_maps().collect();
    assert_eq!(
        maps,
        vec![("00000000-0000-4000-8000-000000000001", Some(3))]
    );
    // already explicit: the entry is the clone's as it is
    let ledger = decode_inline(&content(&partition(Some(1)), &[]), 1, "t").unwrap();
    assert!(ledger.for_clone("t", 3).unwrap().is_none());
    // an unmodelled transition (field 9) whose map inherits: refused
    let ledger = decode_inline(&content(&partition(None), &[0x48, 0x01]), 1, "t").unwrap();
    assert!(ledger.has_unsupported);
    let err = ledger.for_clone("t", 3).unwrap_err();
    assert!(
        matches!(&err, ReuseError::Unsupported { rule, .. } if rule.contains("does not model")),
        "{err}"
    );
    // one whose map is explicit: nothing to re-encode, the entry is kept whole
    let ledger = decode_inline(&content(&partition(Some(1)), &[0x48, 0x01]), 1, "t").unwrap();
    assert!(ledger.for_clone("t", 3).unwrap().is_none());
}
