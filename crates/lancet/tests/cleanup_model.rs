//! Cleanup against a model of reachability (issue 13): random histories of commits (flat and
//! tree tables), failed commit attempts, tags, shallow clones and cleanups with random
//! policies. After every cleanup, for every dataset (sources and clones):
//! - the versions kept are exactly the ones the policy keeps (latest, tagged, newest N);
//! - every version left opens, verifies, and every file it names exists (a clone's in its
//!   source);
//! - nothing unreachable is left: every object a cleanup may delete is named by a version.
//!
//! `LANCET_CLEANUP_SEEDS` (default 8) and `LANCET_CLEANUP_STEPS` (default 60) scale it (40 x 150
//! passed).

mod common;
use common::CommitStaged;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{candidate, files, flat_table, fragment_in, materialize_files, needed_by, versions};
use lancet::paths::fault::{FaultyStore, Mode, Request};
use lancet::paths::refs::create_tag;
use lancet::paths::DatasetStore;
use lancet::proto::table::DeletionFile;
use lancet::tree::{Action, TreeWriterConfig};
use lancet::{Caches, CleanupPolicy, Dataset};

/// xorshift64*: a seeded, dependency-free generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

struct Table {
    dir: PathBuf,
    ds: Dataset,
    config: TreeWriterConfig,
    tags: u64,
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Random actions on the latest version: appends, deletions, removals, replacements.
async fn actions(rng: &mut Rng, ds: &Dataset, serial: &mut u64) -> Vec<(u64, Action)> {
    let live: Vec<u64> = ds.fragments().await.unwrap().iter().map(|f| f.id).collect();
    let mut out: Vec<(u64, Action)> = Vec::new();
    let mut touched = BTreeSet::new();
    let next_id = ds
        .storage()
        .manifest()
        .max_fragment_id
        .map_or(0, |m| u64::from(m) + 1);
    for i in 0..1 + rng.below(3) {
        *serial += 1;
        let kind = if live.is_empty() { 0 } else { rng.below(4) };
        let target = if live.is_empty() { 0 } else { *rng.pick(&live) };
        if kind != 0 && !touched.insert(target) {
            continue;
        }
        let action = match kind {
            0 => {
                let id = next_id + i;
                out.push((
                    id,
                    Action::Upsert(Box::new(fragment_in(id, &format!("f{serial}.lance")))),
                ));
                continue;
            }
            1 => Action::AddDeletionFile(DeletionFile {
                num_deleted_rows: 1,
                id: *serial,
                read_version: ds.version(),
                ..Default::default()
            }),
            2 => Action::Remove,
            _ => {
                let f = ds.storage().fragment(target).await.unwrap().unwrap();
                Action::ReplaceDataFile {
                    expected_path: f.files[0].path.clone(),
                    path: format!("r{serial}.lance"),
                    file_size_bytes: 0,
                    base_id: None,
                }
            }
        };
        out.push((target, action));
    }
    out
}

/// A commit attempt that fails at its k-th put (objects written, manifest never published).
async fn failed_attempt(t: &Table, actions: &[(u64, Action)], k: u64) {
    let clean = DatasetStore::open(t.dir.to_str().unwrap()).unwrap();
    let store = Arc::new(FaultyStore::new(
        clean.object_store().clone(),
        Request::PutIfAbsent,
        k,
        Mode::Before,
    ));
    let uri = format!("memory://model{}", t.dir.display());
    let ds = Dataset::open_with(
        DatasetStore::from_store(store.clone(), clean.path(""), &uri),
        None,
        Caches::new(Default::default()),
    )
    .await
    .unwrap();
    common::stage(&ds, actions).await;
    store.arm();
    let result = ds
        .storage()
        .commit_actions(ds.storage().manifest().clone(), &[], actions, &t.config)
        .await;
    assert!(result.is_err(), "the attempt must fail");
}

/// Every check of the module doc on one table; `cleaned`: it was just cleaned up, so every
/// object left must be named.
async fn check(t: &Table, cleaned: bool, what: &str) {
    let latest = Dataset::open(t.dir.to_str().unwrap()).await.unwrap();
    let mut needed = BTreeSet::new();
    for v in versions(&t.dir).await {
        let ds = latest.checkout(v).await.unwrap();
        ds.verify()
            .await
            .unwrap_or_else(|e| panic!("{what}: v{v} of {}: {e}", t.dir.display()));
        for f in ds.fragments().await.unwrap().iter() {
            let mut named = ds.storage().data_file_locations(f).unwrap();
            named.extend(ds.storage().deletion_file_location(f).unwrap());
            for l in named {
                assert!(
                    Path::new(&l.display_uri()).exists(),
                    "{what}: v{v} names {} which is gone",
                    l.display_uri()
                );
            }
        }
        needed.extend(needed_by(&ds).await);
    }
    for f in files(&t.dir) {
        if cleaned && candidate(&f) {
            assert!(
                needed.contains(&f),
                "{what}: {f} is left but no version names it"
            );
        }
    }
}

async fn run(seed: u64, steps: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let root = tempfile::tempdir().unwrap();
    let mut tables: Vec<Table> = Vec::new();
    for (i, tree) in [false, true].into_iter().enumerate() {
        let dir = root.path().join(format!("t{i}"));
        let config = if rng.below(2) == 0 {
            TreeWriterConfig::tiny()
        } else {
            TreeWriterConfig::default()
        };
        let mut ds = flat_table(&dir, 4).await;
        if tree {
            ds = ds
                .storage()
                .convert_to_tree(&config, |_, _| {})
                .await
                .unwrap()
                .dataset;
        }
        materialize_files(&dir, &ds).await;
        tables.push(Table {
            dir,
            ds,
            config,
            tags: 0,
        });
    }
    let mut serial = 0u64;
    for step in 0..steps {
        let i = rng.below(tables.len() as u64) as usize;
        let what = format!("seed {seed} step {step} table {i}");
        match rng.below(10) {
            0..=4 => {
                let t = &mut tables[i];
                let acts = actions(&mut rng, &t.ds, &mut serial).await;
                t.ds =
                    t.ds.commit_staged(t.ds.storage().manifest().clone(), &[], &acts, &t.config)
                        .await
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                materialize_files(&t.dir, &t.ds).await;
            }
            5 => {
                let acts = actions(&mut rng, &tables[i].ds, &mut serial).await;
                failed_attempt(&tables[i], &acts, 1).await;
            }
            6 => {
                let t = &mut tables[i];
                let vs = versions(&t.dir).await;
                let v = *rng.pick(&vs);
                let size =
                    t.ds.checkout(v)
                        .await
                        .unwrap()
                        .storage()
                        .manifest_file()
                        .entry
                        .size;
                t.tags += 1;
                create_tag(t.ds.storage().store(), &format!("tag{}", t.tags), v, size)
                    .await
                    .unwrap();
            }
            7 if tables.len() < 5 => {
                // the clone's contract: its source keeps the cloned version (a tag)
                let vs = versions(&tables[i].dir).await;
                let v = *rng.pick(&vs);
                let dir = root.path().join(format!("t{}", tables.len()));
                let src = &mut tables[i];
                let size = src
                    .ds
                    .checkout(v)
                    .await
                    .unwrap()
                    .storage()
                    .manifest_file()
                    .entry
                    .size;
                src.tags += 1;
                create_tag(
                    src.ds.storage().store(),
                    &format!("clone{}", src.tags),
                    v,
                    size,
                )
                .await
                .unwrap();
                let ds = src
                    .ds
                    .shallow_clone(dir.to_str().unwrap(), Some(v))
                    .await
                    .unwrap_or_else(|e| panic!("{what}: clone: {e}"))
                    .dataset;
                let config = src.config.clone();
                tables.push(Table {
                    dir,
                    ds,
                    config,
                    tags: 0,
                });
            }
            _ => {
                let t = &tables[i];
                let before = versions(&t.dir).await;
                let tagged: BTreeSet<u64> = lancet::paths::refs::list_tags(t.ds.storage().store())
                    .await
                    .unwrap()
                    .iter()
                    .map(|t| t.version)
                    .collect();
                let retain = rng.below(4);
                let policy = CleanupPolicy {
                    older_than: Some(Duration::ZERO),
                    retain_versions: (retain > 0).then_some(retain),
                    unverified_older_than: Duration::ZERO,
                    ..Default::default()
                };
                tokio::time::sleep(Duration::from_millis(3)).await;
                let report =
                    t.ds.cleanup(&policy)
                        .await
                        .unwrap_or_else(|e| panic!("{what}: cleanup: {e}"));
                let newest: Vec<u64> = before
                    .iter()
                    .rev()
                    .take(retain.max(1) as usize)
                    .copied()
                    .collect();
                let want: Vec<u64> = before
                    .iter()
                    .copied()
                    .filter(|v| newest.contains(v) || tagged.contains(v))
                    .collect();
                assert_eq!(report.kept_versions, want, "{what}");
                for (j, t) in tables.iter().enumerate() {
                    check(t, j == i, &what).await;
                }
            }
        }
    }
    // a last cleanup of everything, then every check
    tokio::time::sleep(Duration::from_millis(3)).await;
    for t in &tables {
        t.ds.cleanup(&CleanupPolicy {
            older_than: Some(Duration::ZERO),
            unverified_older_than: Duration::ZERO,
            ..Default::default()
        })
        .await
        .unwrap();
    }
    for t in &tables {
        check(t, true, &format!("seed {seed} final")).await;
    }
}

#[tokio::test]
async fn random_histories_keep_what_every_retained_version_needs() {
    let seeds = env("LANCET_CLEANUP_SEEDS", 8);
    let steps = env("LANCET_CLEANUP_STEPS", 60);
    for seed in 1..=seeds {
        run(seed, steps).await;
    }
}
