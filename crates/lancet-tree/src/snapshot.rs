//! Rules on `Manifest.fragment_tree` itself, checked before any tree object is fetched.
//!
//! Spec "Snapshot" and "Sequence numbers", decisions 13 and 15: flag 4096 in both words
//! exactly when `fragment_tree` is set (a one-sided flag is corruption, never an empty table);
//! `Manifest.fragments` empty; a recognized layout; exactly one root arm; `root_uuid` of 16
//! bytes; an inline root with no `mutations_since_root`; `FragmentTree.next_action_sequence`
//! at least the root's, which is at least 1 (checked once the external root is read).
//! Opening a version reads the manifest and at most one external root, never history
//! (decision 16: `max_fragment_id` against the previous version is a writer's and verify's
//! check).
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use lancet_paths::flags::FRAGMENT_TREE;
use lancet_paths::tree_paths::root_path_from_uuid_bytes;
use lancet_proto::table::fragment_tree::Root;
use lancet_proto::table::fragment_tree_metadata::Layout;
use lancet_proto::table::{FragmentTree, FragmentTreeRoot, Manifest};

use crate::error::Rule;
use crate::records::{Checked, Violation};

/// Where the root of a snapshot is.
#[derive(Debug, Clone, PartialEq)]
pub enum RootSource<'a> {
    Inline(&'a FragmentTreeRoot),
    /// `_bt/root/{uuid}.root` in the current dataset.
    External {
        path: String,
    },
}

/// Whether `manifest` describes a tree version (flag 4096 in either word, or a tree set).
pub fn is_tree_manifest(manifest: &Manifest) -> bool {
    manifest.fragment_tree.is_some()
        || (manifest.reader_feature_flags | manifest.writer_feature_flags) & FRAGMENT_TREE != 0
}

/// Checks the manifest-level rules and returns the tree and where its root is.
pub(crate) fn check_manifest(manifest: &Manifest) -> Checked<(&FragmentTree, RootSource<'_>)> {
    let r = manifest.reader_feature_flags & FRAGMENT_TREE != 0;
    let w = manifest.writer_feature_flags & FRAGMENT_TREE != 0;
    if r != w {
        return Err(Violation::new(
            Rule::TreeFlag,
            format!(
                "flag 4096 is set only in the {} word",
                if r { "reader" } else { "writer" }
            ),
        ));
    }
    let Some(meta) = &manifest.fragment_tree else {
        return Err(Violation::new(
            Rule::TreeFlag,
            "flag 4096 is set but fragment_tree is absent",
        ));
    };
    if !r {
        return Err(Violation::new(
            Rule::TreeFlag,
            "fragment_tree is set but flag 4096 is not",
        ));
    }
    if !manifest.fragments.is_empty() {
        return Err(Violation::new(
            Rule::FlatFragmentsInTree,
            format!(
                "a tree version lists {} flat fragments",
                manifest.fragments.len()
            ),
        ));
    }
    let Some(Layout::Tree(tree)) = &meta.layout else {
        return Err(Violation::new(
            Rule::Layout,
            "FragmentTreeMetadata selects no recognized layout",
        ));
    };
    let source = match &tree.root {
        None => {
            return Err(Violation::new(
                Rule::RootArm,
                "FragmentTree has neither inline_root nor root_uuid",
            ))
        }
        Some(Root::InlineRoot(root)) => {
            if !tree.mutations_since_root.is_empty() {
                return Err(Violation::new(
                    Rule::InlineRootMutations,
                    format!(
                        "an inline root with {} mutations_since_root",
                        tree.mutations_since_root.len()
                    ),
                ));
            }
            RootSource::Inline(root)
        }
        Some(Root::RootUuid(uuid)) => RootSource::External {
            path: root_path_from_uuid_bytes(uuid).map_err(|_| {
                Violation::new(
                    Rule::RootUuidLength,
                    format!("root_uuid is {} bytes, not 16", uuid.len()),
                )
            })?,
        },
    };
    Ok((tree, source))
}

/// Decision 15 and the root's own floor: `1 ≤ root.next ≤ tree.next`.
pub(crate) fn check_next_sequences(tree: &FragmentTree, root: &FragmentTreeRoot) -> Checked<()> {
    if root.next_action_sequence == 0 {
        return Err(Violation::new(
            Rule::NextSequence,
            "FragmentTreeRoot.next_action_sequence is 0",
        ));
    }
    if tree.next_action_sequence < root.next_action_sequence {
        return Err(Violation::new(
            Rule::NextSequence,
            format!(
                "FragmentTree.next_action_sequence {} is below the root's {}",
                tree.next_action_sequence, root.next_action_sequence
            ),
        ));
    }
    Ok(())
}

/// Decision 13, which prost cannot see: the stored `FragmentTree` (field 22 → field 1) carries
/// both root arms, or the metadata carries a layout field other than `tree`. `manifest_bytes`
/// is the Manifest protobuf as stored; `object` names it in the error.
pub fn check_raw_arms(object: &str, manifest_bytes: &[u8]) -> crate::error::Result<()> {
    raw_arms(manifest_bytes).map_err(|v| v.at(object))
}

fn raw_arms(manifest_bytes: &[u8]) -> Checked<()> {
    use lancet_proto::wire;
    let bad = |d: String| Violation::new(Rule::ObjectDecode, d);
    for field in wire::fields(manifest_bytes) {
        let field = field.map_err(|e| bad(e.to_string()))?;
        if field.number != 22 {
            continue;
        }
        let meta = manifest_bytes.get(field.value.clone()).unwrap_or_default();
        for layout in wire::fields(meta) {
            let layout = layout.map_err(|e| bad(e.to_string()))?;
            if layout.number != 1 {
                return Err(Violation::new(
                    Rule::Layout,
                    format!(
                        "FragmentTreeMetadata carries unknown field {}",
                        layout.number
                    ),
                ));
            }
            let tree = meta.get(layout.value.clone()).unwrap_or_default();
            crate::objects::modelled_mutations(tree, 3)?;
            let mut arms = [false; 2];
            for f in wire::fields(tree) {
                let f = f.map_err(|e| bad(e.to_string()))?;
                if f.number == 1 {
                    let root = tree.get(f.value.clone()).unwrap_or_default();
                    crate::objects::modelled_mutations(root, 2)?;
                }
                if let Some(seen) = arms.get_mut((f.number as usize).wrapping_sub(1)) {
                    *seen = true;
                }
            }
            if arms == [true, true] {
                return Err(Violation::new(
                    Rule::RootArm,
                    "FragmentTree carries both inline_root and root_uuid",
                ));
            }
        }
    }
    Ok(())
}
