//! Shared helpers: random records and actions, an independent flat model of the action
//! semantics, and opening a built tree.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::expect_used
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use lancet_paths::flags::FRAGMENT_TREE;
use lancet_paths::{DatasetStore, ResolvedBase};
use lancet_proto::table::{DataFragment, DeletionFile, Manifest};
use lancet_tree::testing::{BuiltTree, Rng};
use lancet_tree::{
    Action, NoCache, NodeCache, ObjectKey, OpenContext, StoreFetcher, TreeObject, TreeReader,
};

pub use lancet_tree::testing::{data_file, record};

/// The flat model: the spec's semantics written out plainly.
pub fn model_apply(model: &mut BTreeMap<u64, DataFragment>, id: u64, action: &Action) {
    match action {
        Action::Upsert(f) => {
            model.insert(id, (**f).clone());
        }
        Action::Remove => {
            model.remove(&id);
        }
        Action::AddDataFile(file) => model.get_mut(&id).unwrap().files.push(file.clone()),
        Action::RemoveDataFile { path } => {
            if let Some(f) = model.get_mut(&id) {
                f.files.retain(|x| &x.path != path);
            }
        }
        Action::AddDeletionFile(d) => model.get_mut(&id).unwrap().deletion_file = Some(*d),
        Action::ClearDeletionFile => {
            if let Some(f) = model.get_mut(&id) {
                f.deletion_file = None;
            }
        }
        Action::ReplaceDataFile {
            expected_path,
            path,
            file_size_bytes,
            base_id,
        } => {
            let f = model.get_mut(&id).unwrap();
            let slot = f
                .files
                .iter_mut()
                .find(|x| &x.path == expected_path)
                .unwrap();
            slot.path = path.clone();
            slot.file_size_bytes = *file_size_bytes;
            slot.base_id = *base_id;
        }
    }
}

/// A random valid action against `model` (every kind, appends past `next_id`).
pub fn random_action(
    rng: &mut Rng,
    model: &BTreeMap<u64, DataFragment>,
    next_id: &mut u64,
) -> (u64, Action) {
    let existing: Vec<u64> = model.keys().copied().collect();
    let pick = |rng: &mut Rng| existing[rng.below(existing.len() as u64) as usize];
    let kind = if existing.is_empty() { 0 } else { rng.below(9) };
    match kind {
        0 | 1 => {
            let id = *next_id;
            *next_id += 1 + rng.below(3);
            (id, Action::Upsert(Box::new(record(rng, id))))
        }
        2 => {
            let id = pick(rng);
            (id, Action::Upsert(Box::new(record(rng, id))))
        }
        3 => (pick(rng), Action::Remove),
        4 => {
            let id = pick(rng);
            let path = format!("{id}-add{}.lance", rng.below(4));
            (id, Action::AddDataFile(data_file(rng, &path)))
        }
        5 => {
            let id = pick(rng);
            let path = model[&id]
                .files
                .first()
                .map_or("none".to_string(), |f| f.path.clone());
            (id, Action::RemoveDataFile { path })
        }
        6 => {
            let id = pick(rng);
            let rows = model[&id].physical_rows;
            if rows == 0 {
                return (id, Action::ClearDeletionFile);
            }
            (
                id,
                Action::AddDeletionFile(DeletionFile {
                    num_deleted_rows: 1 + rng.below(rows),
                    id: rng.next_u64(),
                    file_type: 1,
                    ..Default::default()
                }),
            )
        }
        7 => (pick(rng), Action::ClearDeletionFile),
        _ => {
            let id = pick(rng);
            match model[&id].files.get(rng.below(3) as usize) {
                Some(f) => (
                    id,
                    Action::ReplaceDataFile {
                        expected_path: f.path.clone(),
                        path: format!("{id}-r{}.lance", rng.below(100)),
                        file_size_bytes: rng.below(100),
                        base_id: None,
                    },
                ),
                None => (id, Action::ClearDeletionFile),
            }
        }
    }
}

pub fn manifest_for(built: &BuiltTree) -> Manifest {
    Manifest {
        version: 1,
        reader_feature_flags: FRAGMENT_TREE,
        writer_feature_flags: FRAGMENT_TREE,
        max_fragment_id: built.max_id.map(|m| m as u32),
        fragment_tree: Some(built.metadata.clone()),
        ..Default::default()
    }
}

pub fn local_store(dir: &std::path::Path) -> DatasetStore {
    DatasetStore::create(dir.to_str().unwrap()).unwrap()
}

pub async fn open(store: &DatasetStore, manifest: &Manifest) -> lancet_tree::Result<TreeReader> {
    open_cached(store, manifest, Arc::new(NoCache)).await
}

pub async fn open_cached(
    store: &DatasetStore,
    manifest: &Manifest,
    cache: Arc<dyn lancet_tree::NodeCache>,
) -> lancet_tree::Result<TreeReader> {
    TreeReader::open(
        manifest,
        OpenContext {
            manifest_object: "_versions/1.manifest".into(),
            current: ResolvedBase::current_dataset(store.uri()),
            fetcher: Arc::new(StoreFetcher::new(store.clone())),
            cache,
        },
    )
    .await
}

/// A node cache that caches no decoded object (so every leaf is point-read) but keeps leaf
/// outlines, counting how many it kept and how many were asked for and found.
#[derive(Debug, Default)]
pub struct OutlineCache {
    outlines: std::sync::Mutex<std::collections::HashMap<ObjectKey, lancet_file::FileOutline>>,
    pub kept: std::sync::atomic::AtomicU64,
    pub found: std::sync::atomic::AtomicU64,
}

impl NodeCache for OutlineCache {
    fn get_or_load<'a>(
        &'a self,
        _key: ObjectKey,
        load: BoxFuture<'a, lancet_tree::Result<Arc<TreeObject>>>,
    ) -> BoxFuture<'a, lancet_tree::Result<Arc<TreeObject>>> {
        load
    }

    fn outline<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Option<lancet_file::FileOutline>> {
        let found = self.outlines.lock().unwrap().get(key).cloned();
        if found.is_some() {
            self.found
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Box::pin(async move { found })
    }

    fn keep_outline<'a>(
        &'a self,
        key: ObjectKey,
        outline: lancet_file::FileOutline,
    ) -> BoxFuture<'a, ()> {
        self.outlines.lock().unwrap().insert(key, outline);
        self.kept.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Box::pin(async {})
    }
}
