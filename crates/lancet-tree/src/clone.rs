//! Shallow clones of a tree version: the clone gets its own root, and every subtree of the
//! source is shared by reference.
//!
//! The spec ("Object references: shallow clones, copying objects between datasets"): a
//! clone's root belongs to the clone; unchanged source subtrees are referenced through a
//! `base_id` naming the source root; when a tree object is copied into another dataset, the
//! references that inherited the source dataset are rewritten with that `base_id`, and
//! explicit ids keep resolving to the same `BasePath` (the caller carries every source base at
//! its id, see `lancet_paths::clone`).
//!
//! What is copied, and so rewritten: the root (inline, or the external `.root` object, written
//! again under the clone's `_bt/root/` with a fresh uuid) with its children and buffer, and
//! `mutations_since_root`. Interiors and leaves are never copied: a reference inside them
//! with no `base_id` still inherits the dataset they live in, the source.
//!
//! Cost: one GET and one PUT of the root when it is external; nothing else is read.
//!
//! The copied root is decoded and encoded again, so protobuf fields lancet does not model
//! are not carried into the clone's root (references inside them could not be rewritten
//! anyway); the manifest's own unknown fields are carried as they are.

use lancet_paths::clone::inherit_fragment_from;
use lancet_paths::tree_paths::{root_path_from_uuid_bytes, tree_object_path, TreeObjectKind};
use lancet_paths::{DatasetStore, ObjectUuid};
use lancet_proto::table::fragment_action::Action as PbAction;
use lancet_proto::table::fragment_tree::Root;
use lancet_proto::table::fragment_tree_metadata::Layout;
use lancet_proto::table::{FragmentTreeMetadata, FragmentTreeMutation, FragmentTreeRoot};
use prost::Message;

use crate::error::{Result, Rule, TreeError};

/// The clone's tree: `tree` (the source manifest's) with its root copied into `target` and
/// every inherited reference of the copied parts pointed at `source_base_id`. Returns the
/// clone's tree metadata and the objects written (relative paths and sizes).
pub async fn clone_tree(
    tree: &FragmentTreeMetadata,
    source: &DatasetStore,
    target: &DatasetStore,
    source_base_id: u32,
) -> Result<(FragmentTreeMetadata, Vec<(String, u64)>)> {
    let Some(Layout::Tree(tree)) = &tree.layout else {
        return Err(TreeError::InvalidInput(
            "the source manifest has no fragment tree layout".into(),
        ));
    };
    let mut out = tree.clone();
    let mut written = Vec::new();
    point_mutations_at(&mut out.mutations_since_root, source_base_id);
    match &mut out.root {
        Some(Root::InlineRoot(root)) => point_root_at(root, source_base_id),
        Some(Root::RootUuid(uuid)) => {
            let path = root_path_from_uuid_bytes(uuid).map_err(|e| {
                TreeError::corrupt(source.uri(), Rule::RootUuidLength, e.to_string())
            })?;
            let object = format!("{}/{path}", source.uri());
            let bytes = source
                .get(&source.path(&path), None)
                .await
                .map_err(|e| TreeError::Io {
                    object: object.clone(),
                    source: e.into(),
                })?;
            let mut root = FragmentTreeRoot::decode(bytes.as_ref()).map_err(|e| {
                TreeError::corrupt(
                    &object,
                    Rule::ObjectDecode,
                    format!("FragmentTreeRoot protobuf does not decode: {e}"),
                )
            })?;
            point_root_at(&mut root, source_base_id);
            let fresh = ObjectUuid::new_v4();
            let new_path = tree_object_path(TreeObjectKind::Root, &fresh);
            let bytes = root.encode_to_vec();
            let size = bytes.len() as u64;
            target
                .put(&target.path(&new_path), bytes.into())
                .await
                .map_err(|e| TreeError::Io {
                    object: format!("{}/{new_path}", target.uri()),
                    source: e.into(),
                })?;
            written.push((new_path, size));
            *uuid = fresh.as_bytes().to_vec();
        }
        None => {
            return Err(TreeError::InvalidInput(
                "the source manifest's tree has no root".into(),
            ))
        }
    }
    Ok((
        FragmentTreeMetadata {
            layout: Some(Layout::Tree(out)),
        },
        written,
    ))
}

/// Points the root's children and buffered mutations that inherited the root's dataset at
/// `base_id`.
pub fn point_root_at(root: &mut FragmentTreeRoot, base_id: u32) {
    for child in &mut root.children {
        child.base_id.get_or_insert(base_id);
    }
    point_mutations_at(&mut root.buffer, base_id);
}

/// Points the files of buffered mutations that inherited their structure's dataset at
/// `base_id` (upserted fragments, added data and deletion files, replacement paths).
pub fn point_mutations_at(mutations: &mut [FragmentTreeMutation], base_id: u32) {
    for m in mutations {
        let Some(action) = m.action.as_mut().and_then(|a| a.action.as_mut()) else {
            continue;
        };
        match action {
            PbAction::UpsertFragment(f) => inherit_fragment_from(f, base_id),
            PbAction::AddDataFile(a) => {
                if let Some(file) = &mut a.file {
                    file.base_id.get_or_insert(base_id);
                }
            }
            PbAction::AddDeletionFile(a) => {
                if let Some(d) = &mut a.deletion_file {
                    d.base_id.get_or_insert(base_id);
                }
            }
            PbAction::ReplaceDataFile(r) => {
                r.base_id.get_or_insert(base_id);
            }
            PbAction::RemoveFragment(_)
            | PbAction::RemoveDataFile(_)
            | PbAction::ClearDeletionFile(_) => {}
        }
    }
}
