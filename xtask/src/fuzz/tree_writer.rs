//! Target `tree_writer`: the fuzz bytes drive random action batches through the tree writer
//! with tiny budgets (so flushes, materializations, splits, merges and height changes happen
//! within a few commits). A batch the writer refuses must be one a flat model refuses too;
//! after every accepted batch the published tree must pass the reader's full validation and
//! hold exactly the model's fragments.

use std::collections::BTreeMap;
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use futures::TryStreamExt;
use lancet_paths::{DatasetStore, ResolvedBase};
use lancet_proto::table::{DataFile, DataFragment, DeletionFile, Manifest};
use lancet_tree::{
    Action, NoCache, OpenContext, StoreFetcher, TreeReader, TreeWriter, TreeWriterConfig,
};
use object_store::memory::InMemory;
use object_store::path::Path;

use super::{unstructured, Target};

#[derive(Debug, Arbitrary)]
enum Op {
    Upsert { id: u8, rows: u8, files: u8 },
    Remove { id: u8 },
    AddFile { id: u8, name: u8 },
    RemoveFile { id: u8, name: u8 },
    AddDeletion { id: u8, deleted: u8 },
    ClearDeletion { id: u8 },
    Replace { id: u8, from: u8, to: u8 },
}

fn file(name: u8) -> DataFile {
    DataFile {
        path: format!("f{name}.lance"),
        fields: vec![0],
        column_indices: vec![0],
        file_major_version: 2,
        file_minor_version: 1,
        ..Default::default()
    }
}

fn action(op: &Op) -> (u64, Action) {
    match *op {
        Op::Upsert { id, rows, files } => (
            u64::from(id % 64),
            Action::Upsert(Box::new(DataFragment {
                id: u64::from(id % 64),
                files: (0..files % 3).map(|i| file(i.wrapping_add(id))).collect(),
                physical_rows: u64::from(rows),
                ..Default::default()
            })),
        ),
        Op::Remove { id } => (u64::from(id % 64), Action::Remove),
        Op::AddFile { id, name } => (u64::from(id % 64), Action::AddDataFile(file(name % 8))),
        Op::RemoveFile { id, name } => (
            u64::from(id % 64),
            Action::RemoveDataFile {
                path: file(name % 8).path,
            },
        ),
        Op::AddDeletion { id, deleted } => (
            u64::from(id % 64),
            Action::AddDeletionFile(DeletionFile {
                num_deleted_rows: u64::from(deleted),
                ..Default::default()
            }),
        ),
        Op::ClearDeletion { id } => (u64::from(id % 64), Action::ClearDeletionFile),
        Op::Replace { id, from, to } => (
            u64::from(id % 64),
            Action::ReplaceDataFile {
                expected_path: file(from % 8).path,
                path: file(to % 8).path,
                file_size_bytes: 0,
                base_id: None,
            },
        ),
    }
}

/// The flat model; `None` when the action is invalid on it.
fn model_apply(model: &mut BTreeMap<u64, DataFragment>, id: u64, a: &Action) -> Option<()> {
    let rows = model.get(&id).map(|f| f.physical_rows);
    match a {
        Action::Upsert(f) => {
            if f.deletion_file
                .is_some_and(|d| d.num_deleted_rows == 0 || d.num_deleted_rows > f.physical_rows)
            {
                return None;
            }
            model.insert(id, (**f).clone());
        }
        Action::Remove => {
            model.remove(&id);
        }
        Action::AddDataFile(file) => model.get_mut(&id)?.files.push(file.clone()),
        Action::RemoveDataFile { path } => {
            if let Some(f) = model.get_mut(&id) {
                f.files.retain(|x| &x.path != path);
            }
        }
        Action::AddDeletionFile(d) => {
            let rows = rows?;
            if d.num_deleted_rows == 0 || d.num_deleted_rows > rows {
                return None;
            }
            model.get_mut(&id)?.deletion_file = Some(*d);
        }
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
            let f = model.get_mut(&id)?;
            let slot = f.files.iter_mut().find(|x| &x.path == expected_path)?;
            slot.path = path.clone();
            slot.file_size_bytes = *file_size_bytes;
            slot.base_id = *base_id;
        }
    }
    Some(())
}

fn empty_manifest() -> Manifest {
    Manifest {
        reader_feature_flags: lancet_paths::flags::FRAGMENT_TREE,
        writer_feature_flags: lancet_paths::flags::FRAGMENT_TREE,
        max_fragment_id: Some(63),
        fragment_tree: Some(lancet_tree::empty_tree()),
        ..Default::default()
    }
}

pub struct TreeWriterTarget;

impl Target for TreeWriterTarget {
    fn name(&self) -> &'static str {
        "tree_writer"
    }

    /// Byte strings whose action batches the writer commits at least once: the fixed
    /// patterns that qualify, then pseudo-random strings (a fixed sequence) until there are
    /// three. Found at start-up because what `arbitrary` makes of bytes is its own business.
    fn seeds(&self) -> Vec<Vec<u8>> {
        let fixed: Vec<Vec<u8>> = vec![
            (0..=255u8).collect(),
            (0..512).map(|i| (i * 37 % 251) as u8).collect(),
            vec![0; 128],
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let random = (0..500).map(move |_| {
            (0..384)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 24) as u8
                })
                .collect::<Vec<u8>>()
        });
        fixed
            .into_iter()
            .chain(random)
            .filter(|candidate| self.check(candidate))
            .take(3)
            .collect()
    }

    fn check(&self, input: &[u8]) -> bool {
        let mut u: Unstructured<'_> = unstructured(input);
        let Ok(batches) = Vec::<Vec<Op>>::arbitrary(&mut u) else {
            return false;
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a tokio runtime");
        rt.block_on(async {
            let store =
                DatasetStore::from_store(Arc::new(InMemory::new()), Path::default(), "memory://w");
            let writer = TreeWriter::new(store.clone(), TreeWriterConfig::tiny());
            let mut manifest = empty_manifest();
            let mut model = BTreeMap::new();
            let mut accepted = false;
            for batch in batches.iter().take(12) {
                let actions: Vec<(u64, Action)> = batch.iter().take(16).map(action).collect();
                let mut next = model.clone();
                let valid = actions
                    .iter()
                    .all(|(id, a)| model_apply(&mut next, *id, a).is_some());
                let reader = open(&store, &manifest).await;
                match writer.commit(&reader, &actions).await {
                    Ok(commit) => {
                        assert!(
                            valid,
                            "the writer accepted a batch the model refuses: {actions:?}"
                        );
                        manifest.max_fragment_id =
                            commit.max_fragment_id.max(manifest.max_fragment_id);
                        manifest.fragment_tree = Some(commit.metadata);
                        model = next;
                        accepted = true;
                        let reader = open(&store, &manifest).await;
                        reader.verify().await.expect("a published tree verifies");
                        let all: Vec<DataFragment> = reader
                            .walk()
                            .await
                            .expect("walk")
                            .into_stream()
                            .try_collect()
                            .await
                            .expect("walk");
                        let want: Vec<DataFragment> = model.values().cloned().collect();
                        assert_eq!(all, want, "the tree and the model differ");
                    }
                    Err(lancet_tree::TreeError::InvalidInput(_)) => {
                        assert!(!valid, "the writer refused a valid batch: {actions:?}");
                    }
                    Err(e) => panic!("commit failed: {e}"),
                }
            }
            accepted
        })
    }
}

async fn open(store: &DatasetStore, manifest: &Manifest) -> TreeReader {
    TreeReader::open(
        manifest,
        OpenContext {
            manifest_object: "manifest".into(),
            current: ResolvedBase::current_dataset(store.uri()),
            fetcher: Arc::new(StoreFetcher::new(store.clone())),
            cache: Arc::new(NoCache),
        },
    )
    .await
    .expect("the writer's tree opens")
}
