//! Targets `tree_root`, `tree_node`, `tree_leaf` and `tree_mutation`: one object of a valid
//! fragment tree (the external root, an interior, a leaf, or one buffered mutation) is
//! replaced by mutated bytes, its reference's `object_size` kept true, and the tree is opened,
//! every id resolved and the whole tree walked. Each must answer or fail with a typed
//! `TreeError`; what resolves must agree with the walk, and no fragment may come out with an
//! id outside u32.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use lancet_paths::{DatasetStore, ResolvedBase};
use lancet_proto::table::fragment_tree::Root;
use lancet_proto::table::fragment_tree_metadata::Layout;
use lancet_proto::table::{
    DataFile, DataFragment, DeletionFile, FragmentTreeMutation, FragmentTreeNode, FragmentTreeRoot,
    Manifest,
};
use lancet_tree::testing::TreeBuilder;
use lancet_tree::{Action, NoCache, OpenContext, StoreFetcher, TreeReader};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStoreExt;
use prost::Message;

use super::Target;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime")
}

fn record(id: u64) -> DataFragment {
    DataFragment {
        id,
        files: vec![DataFile {
            path: format!("{id}.lance"),
            fields: vec![0, 1],
            column_indices: vec![0, 1],
            file_major_version: 2,
            file_minor_version: 1,
            file_size_bytes: 10 + id,
            base_id: None,
        }],
        deletion_file: id.is_multiple_of(3).then_some(DeletionFile {
            num_deleted_rows: 1,
            id,
            ..Default::default()
        }),
        physical_rows: 5 + id,
        ..Default::default()
    }
}

/// A valid tree: 12 records in leaves of 3 under interiors of 2, an external root, buffered
/// mutations at every level. Every object's path and bytes, and the manifest.
struct Fixture {
    objects: BTreeMap<String, Vec<u8>>,
    manifest: Manifest,
    root_path: String,
}

fn fixture() -> Fixture {
    runtime().block_on(async {
        let store =
            DatasetStore::from_store(Arc::new(InMemory::new()), Path::default(), "memory://fuzz");
        let actions = vec![
            (12, Action::Upsert(Box::new(record(12)))),
            (1, Action::ClearDeletionFile),
            (4, Action::Remove),
            (
                5,
                Action::AddDeletionFile(DeletionFile {
                    num_deleted_rows: 2,
                    ..Default::default()
                }),
            ),
            (
                7,
                Action::ReplaceDataFile {
                    expected_path: "7.lance".into(),
                    path: "7b.lance".into(),
                    file_size_bytes: 3,
                    base_id: None,
                },
            ),
            (13, Action::Upsert(Box::new(record(13)))),
        ];
        let built = TreeBuilder {
            records: (0..12).map(record).collect(),
            actions,
            leaf_records: 3,
            fanout: 2,
            interior_levels: 1,
            external_root: true,
            since_root: 2,
            seed: 5,
            ..Default::default()
        }
        .build(&store)
        .await
        .expect("a valid tree");
        let mut objects = BTreeMap::new();
        for (_, path) in &built.objects {
            let bytes = store
                .get(&store.path(path), None)
                .await
                .expect("written object");
            objects.insert(path.clone(), bytes.to_vec());
        }
        let root_path = built
            .objects
            .iter()
            .map(|(_, p)| p.clone())
            .find(|p| p.ends_with(".root"))
            .expect("external root");
        let manifest = Manifest {
            reader_feature_flags: lancet_paths::flags::FRAGMENT_TREE,
            writer_feature_flags: lancet_paths::flags::FRAGMENT_TREE,
            max_fragment_id: Some(20),
            fragment_tree: Some(built.metadata),
            ..Default::default()
        };
        Fixture {
            objects,
            manifest,
            root_path,
        }
    })
}

/// Opens the tree over `objects`, resolves ids 0..24, walks it; true when all of it succeeds.
fn exercise(objects: &BTreeMap<String, Vec<u8>>, manifest: &Manifest) -> bool {
    runtime().block_on(async {
        let memory = Arc::new(InMemory::new());
        for (path, bytes) in objects {
            memory
                .put(
                    &Path::from(path.as_str()),
                    Bytes::copy_from_slice(bytes).into(),
                )
                .await
                .expect("put");
        }
        let store = DatasetStore::from_store(memory, Path::default(), "memory://fuzz");
        let Ok(reader) = TreeReader::open(
            manifest,
            OpenContext {
                manifest_object: "manifest".into(),
                current: ResolvedBase::current_dataset(store.uri()),
                fetcher: Arc::new(StoreFetcher::new(store)),
                cache: Arc::new(NoCache),
            },
        )
        .await
        else {
            return false;
        };
        let mut resolved = Vec::new();
        for id in 0..24 {
            match reader.fragment(id).await {
                Ok(Some(f)) => {
                    assert_eq!(f.id, id, "fragment {id} resolved with id {}", f.id);
                    resolved.push(f);
                }
                Ok(None) => {}
                Err(_) => return false,
            }
        }
        let Ok(walk) = reader.walk().await else {
            return false;
        };
        let Ok(all) = walk.into_stream().try_collect::<Vec<_>>().await else {
            return false;
        };
        assert!(
            all.windows(2).all(|w| w[0].id < w[1].id),
            "walk out of id order"
        );
        assert!(all.iter().all(|f| f.id <= u64::from(u32::MAX)));
        let low: Vec<&DataFragment> = all.iter().filter(|f| f.id < 24).collect();
        assert_eq!(low.len(), resolved.len(), "walk and resolve disagree");
        let t = reader.totals();
        assert_eq!(
            t.fragments,
            all.len() as u64,
            "derived totals passed but disagree"
        );
        true
    })
}

fn with_root(f: &Fixture, root_bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut objects = f.objects.clone();
    objects.insert(f.root_path.clone(), root_bytes.to_vec());
    objects
}

/// Replaces the first child of the root (`interior`) or of the first interior (`leaf`) with
/// `bytes`, and sets its reference's `object_size` to their length.
fn with_child(f: &Fixture, leaf: bool, bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut objects = f.objects.clone();
    let Some(root_bytes) = objects.get(&f.root_path) else {
        return objects;
    };
    let Ok(mut root) = FragmentTreeRoot::decode(root_bytes.as_slice()) else {
        return objects;
    };
    let Some(first) = root.children.first_mut() else {
        return objects;
    };
    if !leaf {
        first.object_size = bytes.len() as u64;
        objects.insert(first.path.clone(), bytes.to_vec());
    } else {
        let node_path = first.path.clone();
        let Some(node) = objects
            .get(&node_path)
            .and_then(|b| FragmentTreeNode::decode(b.as_slice()).ok())
        else {
            return objects;
        };
        let mut node = node;
        let Some(leaf_ref) = node.children.first_mut() else {
            return objects;
        };
        leaf_ref.object_size = bytes.len() as u64;
        objects.insert(leaf_ref.path.clone(), bytes.to_vec());
        let node_bytes = node.encode_to_vec();
        first.object_size = node_bytes.len() as u64;
        objects.insert(node_path, node_bytes);
    }
    objects.insert(f.root_path.clone(), root.encode_to_vec());
    objects
}

fn first_child_bytes(f: &Fixture, leaf: bool) -> Vec<u8> {
    let root = FragmentTreeRoot::decode(f.objects[&f.root_path].as_slice()).expect("root");
    let node_path = &root.children[0].path;
    if !leaf {
        return f.objects[node_path].clone();
    }
    let node = FragmentTreeNode::decode(f.objects[node_path].as_slice()).expect("node");
    f.objects[&node.children[0].path].clone()
}

pub struct TreeRootTarget(Fixture);
pub struct TreeNodeTarget(Fixture);
pub struct TreeLeafTarget(Fixture);
pub struct TreeMutationTarget(Fixture);

impl TreeRootTarget {
    pub fn new() -> Self {
        Self(fixture())
    }
}
impl TreeNodeTarget {
    pub fn new() -> Self {
        Self(fixture())
    }
}
impl TreeLeafTarget {
    pub fn new() -> Self {
        Self(fixture())
    }
}
impl TreeMutationTarget {
    fn candidates(&self) -> Vec<Vec<u8>> {
        let Some(Layout::Tree(tree)) = self
            .0
            .manifest
            .fragment_tree
            .as_ref()
            .and_then(|m| m.layout.clone())
        else {
            return Vec::new();
        };
        let root =
            FragmentTreeRoot::decode(self.0.objects[&self.0.root_path].as_slice()).expect("root");
        // Plus one that is valid again: fragment 12 upserted as it already is (no deltas).
        let again = lancet_tree::testing::encode_mutations(&[lancet_tree::Mutation {
            sequence: tree.next_action_sequence,
            target: 12,
            action: Action::Upsert(Box::new(record(12))),
            deltas: lancet_tree::Deltas::default(),
        }]);
        tree.mutations_since_root
            .iter()
            .chain(root.buffer.iter())
            .cloned()
            .map(|mut m| {
                m.action_sequence = tree.next_action_sequence;
                m
            })
            .chain(again)
            .map(|m| m.encode_to_vec())
            .collect()
    }

    pub fn new() -> Self {
        Self(fixture())
    }
}

impl Target for TreeRootTarget {
    fn name(&self) -> &'static str {
        "tree_root"
    }
    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![self.0.objects[&self.0.root_path].clone()]
    }
    fn check(&self, input: &[u8]) -> bool {
        exercise(&with_root(&self.0, input), &self.0.manifest)
    }
}

impl Target for TreeNodeTarget {
    fn name(&self) -> &'static str {
        "tree_node"
    }
    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![first_child_bytes(&self.0, false)]
    }
    fn check(&self, input: &[u8]) -> bool {
        exercise(&with_child(&self.0, false, input), &self.0.manifest)
    }
}

impl Target for TreeLeafTarget {
    fn name(&self) -> &'static str {
        "tree_leaf"
    }
    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![first_child_bytes(&self.0, true)]
    }
    fn check(&self, input: &[u8]) -> bool {
        exercise(&with_child(&self.0, true, input), &self.0.manifest)
    }
}

/// The mutation target's input is one `FragmentTreeMutation`, put at the end of
/// `mutations_since_root` (with `next_action_sequence` above it).
impl Target for TreeMutationTarget {
    fn name(&self) -> &'static str {
        "tree_mutation"
    }
    /// Every buffered mutation of the fixture, re-sequenced to apply last, and a re-upsert
    /// of fragment 12 as it is. Applying a mutation a second time is refused (its deltas or
    /// its old path no longer hold): those are near misses; the re-upsert is the seed.
    fn seeds(&self) -> Vec<Vec<u8>> {
        self.candidates()
            .into_iter()
            .filter(|c| self.check(c))
            .collect()
    }
    fn near_misses(&self) -> Vec<Vec<u8>> {
        self.candidates()
            .into_iter()
            .filter(|c| !self.check(c))
            .collect()
    }
    fn check(&self, input: &[u8]) -> bool {
        let Ok(m) = FragmentTreeMutation::decode(input) else {
            return false;
        };
        let mut manifest = self.0.manifest.clone();
        if let Some(Layout::Tree(tree)) = manifest
            .fragment_tree
            .as_mut()
            .and_then(|t| t.layout.as_mut())
        {
            debug_assert!(matches!(tree.root, Some(Root::RootUuid(_))));
            tree.next_action_sequence = tree
                .next_action_sequence
                .max(m.action_sequence.saturating_add(1));
            tree.mutations_since_root.push(m);
        }
        exercise(&self.0.objects, &manifest)
    }
}
