//! The writer against a flat model: random commits of every action kind; after each commit the
//! published tree passes the reader's full validation and resolves like the model, and every
//! earlier version reopened from storage still resolves like the model did then. Tiny budgets
//! force deep trees, flushes, materializations, splits, merges and height changes.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use lancet_paths::flags::FRAGMENT_TREE;
use lancet_proto::table::{DataFragment, Manifest};
use lancet_tree::testing::Rng;
use lancet_tree::{allocate_ids, empty_tree, Action, TreeWriter, TreeWriterConfig};

use common::*;

fn empty_manifest() -> Manifest {
    Manifest {
        version: 1,
        reader_feature_flags: FRAGMENT_TREE,
        writer_feature_flags: FRAGMENT_TREE,
        fragment_tree: Some(empty_tree()),
        ..Default::default()
    }
}

async fn run(config: TreeWriterConfig, commits: usize, seed: u64) -> (u32, u64) {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(dir.path());
    let writer = TreeWriter::new(store.clone(), config);
    let mut rng = Rng::new(seed);
    let mut model: BTreeMap<u64, DataFragment> = BTreeMap::new();
    let mut manifest = empty_manifest();
    let mut history: Vec<(Manifest, Vec<DataFragment>)> = Vec::new();
    let mut max_height = 0;
    let mut bytes = 0;
    for c in 0..commits {
        let reader = open(&store, &manifest).await.unwrap();
        let mut next_id = allocate_ids(manifest.max_fragment_id, 1).unwrap().start;
        // bias towards growth early, then a mix
        let n = 1 + rng.below(5) as usize;
        let mut actions = Vec::with_capacity(n);
        for _ in 0..n {
            let (id, action) = random_action(&mut rng, &model, &mut next_id);
            model_apply(&mut model, id, &action);
            actions.push((id, action));
        }
        // removing everything now and then exercises empty leaves and height loss
        if c % 97 == 96 {
            for id in model.keys().copied().collect::<Vec<_>>() {
                actions.push((id, Action::Remove));
            }
            model.clear();
        }
        let commit = writer.commit(&reader, &actions).await.unwrap_or_else(|e| {
            panic!("seed {seed} commit {c}: {e}");
        });
        bytes += commit.object_bytes();
        manifest.version += 1;
        manifest.max_fragment_id = commit.max_fragment_id;
        manifest.fragment_tree = Some(commit.metadata);
        let reader = open(&store, &manifest)
            .await
            .unwrap_or_else(|e| panic!("seed {seed} commit {c}: {e}"));
        let stats = reader
            .verify()
            .await
            .unwrap_or_else(|e| panic!("seed {seed} commit {c}: {e}"));
        max_height = max_height.max(stats.height);
        let all: Vec<DataFragment> = reader.all_fragments().await.unwrap();
        let expected: Vec<DataFragment> = model.values().cloned().collect();
        assert_eq!(all, expected, "seed {seed} commit {c}");
        for _ in 0..3 {
            let id = rng.below(next_id + 2);
            assert_eq!(
                reader.fragment(id).await.unwrap().as_ref(),
                model.get(&id),
                "seed {seed} commit {c} id {id}"
            );
        }
        history.push((manifest.clone(), expected));
    }
    // reopen earlier versions from storage
    for _ in 0..20 {
        let (m, expected) = &history[rng.below(history.len() as u64) as usize];
        let reader = open(&store, m).await.unwrap();
        let all: Vec<DataFragment> = reader.all_fragments().await.unwrap();
        assert_eq!(&all, expected);
    }
    (max_height, bytes)
}

/// Commits per model run: 400 in CI; `LANCET_MODEL_COMMITS=10000` for the long run recorded in
/// docs/performance.md.
fn commits(default: usize) -> usize {
    std::env::var("LANCET_MODEL_COMMITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test]
async fn tiny_budgets_random_commits_match_the_model() {
    let (height, _) = run(TreeWriterConfig::tiny(), commits(400), 1).await;
    assert!(
        height >= 3,
        "tiny budgets should build a deep tree, got height {height}"
    );
}

/// Budgets a few mutations wide: leaves of 8, fanout 4.
fn small() -> TreeWriterConfig {
    TreeWriterConfig {
        leaf_max_records: 8,
        fanout_max: 4,
        since_root_max_bytes: 250,
        root_buffer_max_bytes: 600,
        node_buffer_max_bytes: 500,
        inline_root_max_bytes: 1024,
        ..Default::default()
    }
}

#[tokio::test]
async fn small_budgets_random_commits_match_the_model() {
    let config = small();
    for seed in 2..4 {
        let (height, _) = run(config.clone(), commits(250), seed).await;
        assert!(height >= 2, "height {height}");
    }
}

#[tokio::test]
async fn default_budgets_keep_small_tables_in_the_root() {
    // a few commits fit the inline budget: the manifest is all that is written
    let (height, bytes) = run(TreeWriterConfig::default(), 5, 9).await;
    assert_eq!(height, 0, "everything stays in the inline root buffer");
    assert_eq!(bytes, 0, "no object written");
    // more go to an external root, still with no leaf under it
    let (height, bytes) = run(TreeWriterConfig::default(), 60, 9).await;
    assert_eq!(height, 0, "everything stays in the root buffer");
    assert!(bytes > 0, "the root went external");
}

#[test]
fn id_allocation() {
    assert_eq!(allocate_ids(None, 3).unwrap(), 0..3);
    assert_eq!(allocate_ids(Some(9), 2).unwrap(), 10..12);
    assert_eq!(
        allocate_ids(Some(u32::MAX - 1), 1).unwrap(),
        u64::from(u32::MAX)..1 << 32
    );
    assert!(allocate_ids(Some(u32::MAX), 1).is_err());
    assert!(allocate_ids(Some(5), u64::MAX).is_err());
}

/// A range whose fragments are all removed leaves the tree: keys only grow, so nothing routes
/// into that range again, and without pruning its leaves and the removals buffered above them
/// would be walked by every reader forever (the model run's tree grew with every commit).
#[tokio::test]
async fn removed_ranges_leave_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(dir.path());
    let config = small();
    let writer = TreeWriter::new(store.clone(), config);
    let mut rng = Rng::new(11);
    let records: Vec<DataFragment> = (0..400).map(|id| record(&mut rng, id)).collect();
    let built = writer.bulk_load(&records).await.unwrap();
    let mut manifest = empty_manifest();
    manifest.max_fragment_id = built.max_fragment_id;
    manifest.fragment_tree = Some(built.metadata);
    let mut live = 400u64;
    // compaction-like churn: the oldest fragments go, a few new ones arrive at the right edge
    for batch in 0..40u64 {
        let next = 400 + batch;
        let reader = open(&store, &manifest).await.unwrap();
        let mut actions: Vec<(u64, Action)> = (batch * 10..batch * 10 + 10)
            .map(|id| (id, Action::Remove))
            .collect();
        actions.push((next, Action::Upsert(Box::new(record(&mut rng, next)))));
        live -= 9;
        let commit = writer.commit(&reader, &actions).await.unwrap();
        manifest.version += 1;
        manifest.max_fragment_id = commit.max_fragment_id;
        manifest.fragment_tree = Some(commit.metadata);
    }
    let reader = open(&store, &manifest).await.unwrap();
    let stats = reader.verify().await.unwrap();
    assert_eq!(stats.totals.fragments, live);
    // the walk's node shapes add up to its counts
    let (leaves, interiors): (Vec<&lancet_tree::NodeShape>, Vec<_>) =
        stats.nodes.iter().partition(|n| n.leaf);
    assert_eq!(leaves.len() as u64, stats.leaves);
    assert_eq!(interiors.len() as u64, stats.interiors);
    // a leaf counts what it stores; removals still buffered above it are not applied yet
    let stored: u64 = leaves.iter().map(|n| n.entries).sum();
    let pending =
        stats.root_buffer + stats.mutations_since_root + stats.interior_buffers.iter().sum::<u64>();
    assert!(
        stored >= live && stored <= live + pending,
        "{stored} stored, {pending} pending"
    );
    assert_eq!(
        leaves.iter().map(|n| n.bytes).sum::<u64>(),
        stats.leaf_bytes
    );
    assert_eq!(
        interiors.iter().map(|n| n.bytes).sum::<u64>(),
        stats.interior_bytes
    );
    assert!(leaves
        .iter()
        .all(|n| n.level == stats.height && n.buffered == 0));
    let buffered: Vec<u64> = (1..stats.height)
        .map(|level| {
            interiors
                .iter()
                .filter(|n| n.level == level)
                .map(|n| n.buffered)
                .sum()
        })
        .collect();
    assert_eq!(buffered, stats.interior_buffers);
    // 40 live fragments fill 5 leaves; leaves are not merged, so allow them half full (8 here;
    // 35 when emptied ranges were kept)
    assert!(
        stats.leaves <= 2 * live.div_ceil(8),
        "{} leaves for {live} fragments: removed ranges were kept",
        stats.leaves
    );
}

/// A new fragment's id lies above `max_fragment_id`, so it has no prior record and the writer
/// reads no leaf for it: with every leaf gone from storage, an append still commits, while a
/// change to an existing fragment needs its leaf and fails.
#[tokio::test]
async fn an_append_reads_no_leaf() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(dir.path());
    let config = TreeWriterConfig {
        leaf_max_records: 8,
        ..Default::default()
    };
    let writer = TreeWriter::new(store.clone(), config);
    let mut rng = Rng::new(5);
    let records: Vec<DataFragment> = (0..400).map(|id| record(&mut rng, id)).collect();
    let built = writer.bulk_load(&records).await.unwrap();
    let mut manifest = empty_manifest();
    manifest.max_fragment_id = built.max_fragment_id;
    manifest.fragment_tree = Some(built.metadata);
    let mut removed = 0;
    for entry in walkdir(dir.path()) {
        if entry.extension().is_some_and(|e| e == "lance") {
            std::fs::remove_file(&entry).unwrap();
            removed += 1;
        }
    }
    assert_eq!(removed, 50);
    let reader = open(&store, &manifest).await.unwrap();
    let append = [(400, Action::Upsert(Box::new(record(&mut rng, 400))))];
    writer.commit(&reader, &append).await.unwrap();
    let change = [(5, Action::Remove)];
    assert!(writer.commit(&reader, &change).await.is_err());
}

fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path);
        }
    }
    out
}
