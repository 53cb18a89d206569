//! Paths of fragment-tree objects under `_bt/` and the rules a stored child path must obey.
//!
//! Spec: "Tree object paths must begin with `_bt/`. Readers must reject absolute paths and paths
//! outside `_bt/`", and a child "must not be resolved under `data/`". lancet's reading
//! (decisions §10): any `..` component is outside `_bt/`; absolute means a leading `/`, a URI
//! scheme or a drive letter. lancet also rejects empty and `.` segments, so that two spellings of
//! one object cannot pass the uniqueness check as different children.

use crate::error::{PathsError, Result};
use crate::object_uuid::ObjectUuid;

/// Directory of all tree objects, relative to a dataset root.
pub const TREE_DIR: &str = "_bt";

/// What a tree object is, known from its path suffix (decisions §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeObjectKind {
    /// `_bt/root/{uuid}.root`: a raw `FragmentTreeRoot` protobuf.
    Root,
    /// `_bt/node/{uuid}.node`: a raw `FragmentTreeNode` protobuf.
    Node,
    /// `_bt/leaf/{uuid}.lance`: a Lance file of fragment records.
    Leaf,
}

impl TreeObjectKind {
    fn suffix(self) -> &'static str {
        match self {
            Self::Root => "root",
            Self::Node => "node",
            Self::Leaf => "lance",
        }
    }

    fn dir(self) -> &'static str {
        match self {
            Self::Root => "root",
            Self::Node => "node",
            Self::Leaf => "leaf",
        }
    }
}

/// The canonical path of a new tree object: `_bt/{root,node,leaf}/{uuid}.{root,node,lance}`.
pub fn tree_object_path(kind: TreeObjectKind, uuid: &ObjectUuid) -> String {
    format!("{TREE_DIR}/{}/{uuid}.{}", kind.dir(), kind.suffix())
}

/// Path of the external root named by `FragmentTree.root_uuid` (exactly 16 bytes).
pub fn root_path_from_uuid_bytes(root_uuid: &[u8]) -> Result<String> {
    Ok(tree_object_path(
        TreeObjectKind::Root,
        &ObjectUuid::from_slice(root_uuid)?,
    ))
}

/// Checks a relative path: see [`lancet_proto::relative_path::check`].
pub(crate) fn check_relative(path: &str) -> std::result::Result<(), &'static str> {
    lancet_proto::relative_path::check(path)
}

/// Validates a stored tree object path and returns the object kind its suffix names.
pub fn validate_tree_path(path: &str) -> Result<TreeObjectKind> {
    let invalid = |rule| PathsError::InvalidTreePath {
        path: path.to_string(),
        rule,
    };
    check_relative(path).map_err(invalid)?;
    let Some(rest) = path.strip_prefix("_bt/") else {
        return Err(invalid("tree object paths must begin with _bt/"));
    };
    if rest.is_empty() {
        return Err(invalid("names the _bt/ directory itself"));
    }
    let name = rest.rsplit('/').next().unwrap_or(rest);
    let kind = match name.rsplit_once('.') {
        Some((stem, "root")) if !stem.is_empty() => TreeObjectKind::Root,
        Some((stem, "node")) if !stem.is_empty() => TreeObjectKind::Node,
        Some((stem, "lance")) if !stem.is_empty() => TreeObjectKind::Leaf,
        _ => return Err(invalid("suffix must be .root, .node or .lance")),
    };
    Ok(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_paths() {
        let u = ObjectUuid::from_slice(&[0xab; 16]).unwrap();
        let p = tree_object_path(TreeObjectKind::Leaf, &u);
        assert_eq!(p, "_bt/leaf/abababab-abab-abab-abab-abababababab.lance");
        assert_eq!(validate_tree_path(&p).unwrap(), TreeObjectKind::Leaf);
        assert_eq!(
            root_path_from_uuid_bytes(&[0x01; 16]).unwrap(),
            "_bt/root/01010101-0101-0101-0101-010101010101.root"
        );
        assert!(root_path_from_uuid_bytes(&[0x01; 15]).is_err());
        assert_eq!(
            validate_tree_path("_bt/node/x.node").unwrap(),
            TreeObjectKind::Node
        );
        assert_eq!(
            validate_tree_path("_bt/root/x.root").unwrap(),
            TreeObjectKind::Root
        );
    }

    #[test]
    fn every_path_rule_is_enforced() {
        let cases: &[(&str, &str)] = &[
            ("", "path is empty"),
            (
                "/_bt/leaf/a.lance",
                "absolute paths and URIs are not allowed",
            ),
            (
                "s3://bucket/_bt/leaf/a.lance",
                "absolute paths and URIs are not allowed",
            ),
            (
                "file:_bt/leaf/a.lance",
                "absolute paths and URIs are not allowed",
            ),
            (
                "C:/_bt/leaf/a.lance",
                "absolute paths and URIs are not allowed",
            ),
            ("_bt/../data/a.lance", "'..' segment leaves its directory"),
            (
                "_bt/leaf/../../x.lance",
                "'..' segment leaves its directory",
            ),
            ("_bt//a.lance", "empty path segment"),
            ("_bt/leaf/", "empty path segment"),
            ("_bt/./leaf/a.lance", "'.' segment"),
            ("_bt\\leaf\\a.lance", "backslashes are not allowed"),
            ("data/a.lance", "tree object paths must begin with _bt/"),
            ("leaf/a.lance", "tree object paths must begin with _bt/"),
            (
                "_btx/leaf/a.lance",
                "tree object paths must begin with _bt/",
            ),
            (
                "_bt/leaf/a.parquet",
                "suffix must be .root, .node or .lance",
            ),
            ("_bt/leaf/.lance", "suffix must be .root, .node or .lance"),
        ];
        for (path, rule) in cases {
            match validate_tree_path(path) {
                Err(PathsError::InvalidTreePath { path: p, rule: r }) => {
                    assert_eq!(&p, path);
                    assert_eq!(&r, rule, "{path}");
                }
                other => panic!("{path}: expected InvalidTreePath, got {other:?}"),
            }
        }
    }
}
