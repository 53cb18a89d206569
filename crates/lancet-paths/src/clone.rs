//! Shallow clones: the clone's base paths, and the references that must name the source.
//!
//! A shallow clone is a new dataset whose manifest names the source dataset root in
//! `base_paths` and points at the source's objects instead of copying them (fragment-tree
//! spec, "Object references"):
//! - every `BasePath` of the source manifest is carried at the **same id**, so an explicit
//!   `base_id` in a shared object keeps its meaning;
//! - the source root gets a **previously unused id** (one past the highest, 0 when there is
//!   none), `is_dataset_root = true`;
//! - a reference that inherited the source dataset (an absent `base_id`) is rewritten to that
//!   id when the object holding it is copied into the clone (the manifest's fragments, index
//!   entries, a root and its buffers); references inside shared objects are left alone, as
//!   they still inherit the source dataset they live in.
//!
//! A source that already names its own root among its bases would give one dataset two ids;
//! that is allowed (ids stay unique) and needs no special case.

use lancet_proto::table::{BasePath, DataFragment, IndexMetadata};

use crate::error::{PathsError, Result};

/// The clone's `base_paths` and the id naming the source root in them.
///
/// `source_uri` must be the source's absolute URI or path (the clone resolves it from
/// anywhere). Fails when the source already uses every id.
pub fn clone_base_paths(source: &[BasePath], source_uri: &str) -> Result<(Vec<BasePath>, u32)> {
    let mut seen = std::collections::BTreeSet::new();
    for base in source {
        if !seen.insert(base.id) {
            return Err(PathsError::DuplicateBaseId { id: base.id });
        }
    }
    let id = match seen.last() {
        None => 0,
        Some(&max) => max.checked_add(1).ok_or_else(|| PathsError::InvalidUri {
            uri: source_uri.to_string(),
            reason: "the source uses BasePath id u32::MAX; no new id is free".into(),
        })?,
    };
    let root = source_uri.trim_end_matches('/');
    if root.is_empty() {
        return Err(PathsError::InvalidUri {
            uri: source_uri.to_string(),
            reason: "a clone needs the source's location".into(),
        });
    }
    let mut bases = source.to_vec();
    bases.push(BasePath {
        id,
        name: None,
        is_dataset_root: true,
        path: root.to_string(),
    });
    Ok((bases, id))
}

/// Points every file of `fragment` that inherited its containing dataset at `base_id`:
/// data files, overlay data files and the deletion file. Explicit ids are kept.
pub fn inherit_fragment_from(fragment: &mut DataFragment, base_id: u32) {
    for file in &mut fragment.files {
        file.base_id.get_or_insert(base_id);
    }
    for overlay in &mut fragment.overlays {
        if let Some(file) = &mut overlay.data_file {
            file.base_id.get_or_insert(base_id);
        }
    }
    if let Some(deletion) = &mut fragment.deletion_file {
        deletion.base_id.get_or_insert(base_id);
    }
}

/// Points an index entry whose files inherited its dataset at `base_id`.
pub fn inherit_index_from(index: &mut IndexMetadata, base_id: u32) {
    index.base_id.get_or_insert(base_id);
}

#[cfg(test)]
mod tests {
    use super::*;
    use lancet_proto::table::{DataFile, DataOverlayFile, DeletionFile};

    fn base(id: u32, path: &str) -> BasePath {
        BasePath {
            id,
            name: Some(format!("b{id}")),
            is_dataset_root: false,
            path: path.into(),
        }
    }

    #[test]
    fn the_source_gets_an_unused_id_and_every_base_keeps_its_own() {
        let (bases, id) = clone_base_paths(&[], "/src/").unwrap();
        assert_eq!(id, 0);
        assert_eq!(bases.len(), 1);
        assert_eq!(bases[0].path, "/src");
        assert!(bases[0].is_dataset_root);

        let source = [base(4, "/a"), base(0, "/b")];
        let (bases, id) = clone_base_paths(&source, "s3://bucket/src").unwrap();
        assert_eq!(id, 5);
        assert_eq!(&bases[..2], &source[..]);
        assert_eq!(bases[2].id, 5);
    }

    #[test]
    fn duplicate_or_exhausted_ids_are_refused() {
        assert!(matches!(
            clone_base_paths(&[base(1, "/a"), base(1, "/b")], "/src"),
            Err(PathsError::DuplicateBaseId { id: 1 })
        ));
        assert!(matches!(
            clone_base_paths(&[base(u32::MAX, "/a")], "/src"),
            Err(PathsError::InvalidUri { .. })
        ));
        assert!(matches!(
            clone_base_paths(&[], "/"),
            Err(PathsError::InvalidUri { .. })
        ));
    }

    #[test]
    fn only_inherited_references_are_pointed_at_the_source() {
        let file = |base_id| DataFile {
            path: "a.lance".into(),
            base_id,
            ..Default::default()
        };
        let mut f = DataFragment {
            files: vec![file(None), file(Some(0))],
            deletion_file: Some(DeletionFile::default()),
            overlays: vec![DataOverlayFile {
                data_file: Some(file(None)),
                ..Default::default()
            }],
            ..Default::default()
        };
        inherit_fragment_from(&mut f, 7);
        assert_eq!(f.files[0].base_id, Some(7));
        assert_eq!(
            f.files[1].base_id,
            Some(0),
            "explicit ids keep their meaning"
        );
        assert_eq!(f.deletion_file.unwrap().base_id, Some(7));
        assert_eq!(f.overlays[0].data_file.as_ref().unwrap().base_id, Some(7));

        let mut index = IndexMetadata::default();
        inherit_index_from(&mut index, 3);
        assert_eq!(index.base_id, Some(3));
        inherit_index_from(&mut index, 9);
        assert_eq!(index.base_id, Some(3));
    }
}
