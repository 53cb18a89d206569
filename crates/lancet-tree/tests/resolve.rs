//! Resolution and iteration of built trees equal a flat model of the same records and actions,
//! for trees of height 0 to 3, inline and external roots, buffers at every level.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use lancet_proto::table::DataFragment;
use lancet_tree::testing::{Rng, TreeBuilder};

use common::*;

struct Case {
    records: usize,
    actions: usize,
    leaf_records: usize,
    fanout: usize,
    interior_levels: u32,
    external_root: bool,
    since_root: usize,
}

async fn check_case(case: &Case, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(dir.path());
    let mut rng = Rng::new(seed);
    let records: Vec<DataFragment> = (0..case.records as u64)
        .map(|i| record(&mut rng, i * 2))
        .collect();
    let mut model: BTreeMap<u64, DataFragment> =
        records.iter().map(|f| (f.id, f.clone())).collect();
    let mut next_id = case.records as u64 * 2;
    let mut actions = Vec::new();
    for _ in 0..case.actions {
        let (id, action) = random_action(&mut rng, &model, &mut next_id);
        model_apply(&mut model, id, &action);
        actions.push((id, action));
    }
    let builder = TreeBuilder {
        records,
        actions,
        leaf_records: case.leaf_records,
        fanout: case.fanout,
        interior_levels: case.interior_levels,
        external_root: case.external_root,
        since_root: case.since_root,
        seed,
        ..Default::default()
    };
    let built = builder.build(&store).await.unwrap();
    let manifest = manifest_for(&built);
    let reader = open(&store, &manifest).await.unwrap();
    let expected: Vec<DataFragment> = model.values().cloned().collect();

    // Derived totals from the root alone.
    let totals = reader.totals();
    assert_eq!(totals.fragments, expected.len() as u64);
    assert_eq!(
        totals.total_rows,
        expected.iter().map(|f| f.physical_rows).sum::<u64>()
    );

    // Every id, present or not.
    for id in 0..next_id + 2 {
        assert_eq!(
            reader.fragment(id).await.unwrap().as_ref(),
            model.get(&id),
            "seed {seed} fragment {id}"
        );
    }
    let walked: Vec<DataFragment> = reader.all_fragments().await.unwrap();
    assert_eq!(walked, expected, "seed {seed}: walk");
    let stats = reader.verify().await.unwrap();
    assert_eq!(
        stats.height,
        if case.records == 0 {
            0
        } else {
            case.interior_levels + 1
        }
    );
}

#[tokio::test]
async fn trees_of_every_shape_resolve_like_the_flat_model() {
    let cases = [
        // root with no children: everything in buffers
        Case {
            records: 0,
            actions: 30,
            leaf_records: 4,
            fanout: 3,
            interior_levels: 0,
            external_root: false,
            since_root: 0,
        },
        Case {
            records: 0,
            actions: 30,
            leaf_records: 4,
            fanout: 3,
            interior_levels: 0,
            external_root: true,
            since_root: 10,
        },
        // height 1: root -> leaves
        Case {
            records: 20,
            actions: 40,
            leaf_records: 4,
            fanout: 3,
            interior_levels: 0,
            external_root: false,
            since_root: 0,
        },
        Case {
            records: 20,
            actions: 40,
            leaf_records: 7,
            fanout: 3,
            interior_levels: 0,
            external_root: true,
            since_root: 15,
        },
        // height 2 and 3
        Case {
            records: 40,
            actions: 60,
            leaf_records: 3,
            fanout: 3,
            interior_levels: 1,
            external_root: true,
            since_root: 5,
        },
        Case {
            records: 60,
            actions: 80,
            leaf_records: 2,
            fanout: 3,
            interior_levels: 2,
            external_root: false,
            since_root: 0,
        },
        Case {
            records: 60,
            actions: 80,
            leaf_records: 2,
            fanout: 2,
            interior_levels: 2,
            external_root: true,
            since_root: 20,
        },
    ];
    for (i, case) in cases.iter().enumerate() {
        for seed in 0..3 {
            check_case(case, 100 * i as u64 + seed).await;
        }
    }
}
