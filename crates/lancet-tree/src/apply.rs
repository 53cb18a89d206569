//! Storage actions applied to a version, whatever its layout: on a tree by the writer (its
//! objects written now, the manifest given the new tree and no fragment list), on a flat
//! version to the manifest's fragment list ([`apply_flat`]). Both end with the same
//! fragments, so a commit path treats the layouts alike.

use lancet_paths::DatasetStore;
use lancet_proto::table::Manifest;

use crate::error::Result;
use crate::flat::apply_flat;
use crate::mutation::Action;
use crate::reader::TreeReader;
use crate::writer::{FragmentChange, TreeWriter, TreeWriterConfig};

/// What applying actions did: each touched fragment before and after, in id order, and the
/// tree objects written (none on a flat version).
#[derive(Debug, Default)]
pub struct Applied {
    pub changes: Vec<FragmentChange>,
    /// Objects the tree writer wrote, and their bytes.
    pub objects: u64,
    pub bytes: u64,
    /// The objects' paths and sizes.
    pub tree_objects: Vec<(String, u64)>,
}

/// `actions` applied to the version `tree` reads (a flat version when `None`) into
/// `manifest`: on a tree the writer (`config`) writes its objects to `store` now.
pub async fn apply_actions(
    store: &DatasetStore,
    tree: Option<&TreeReader>,
    manifest: &mut Manifest,
    actions: &[(u64, Action)],
    config: &TreeWriterConfig,
) -> Result<Applied> {
    let Some(reader) = tree else {
        return Ok(Applied {
            changes: apply_flat(manifest, actions)?,
            ..Default::default()
        });
    };
    manifest.fragments.clear();
    if actions.is_empty() {
        return Ok(Applied::default());
    }
    let writer = TreeWriter::new(store.clone(), config.clone());
    let commit = writer.commit(reader, actions).await?;
    manifest.fragment_tree = Some(commit.metadata.clone());
    manifest.max_fragment_id = manifest.max_fragment_id.max(commit.max_fragment_id);
    Ok(Applied {
        objects: commit.written.len() as u64,
        bytes: commit.object_bytes(),
        tree_objects: commit.written,
        changes: commit.changes,
    })
}
