//! `base_id` resolution: which dataset or directory a stored reference lives in.
//!
//! Rules (fragment-tree spec "Base paths", FORMAT-FACTS §4.1):
//! - entries are looked up by `BasePath.id`, never by position in `base_paths`;
//! - id 0 is a valid id, distinct from an absent `base_id`;
//! - ids must be unique within a manifest, and an unknown id is rejected;
//! - where the spec needs another dataset (tree children), the entry must have
//!   `is_dataset_root = true`;
//! - an absent `base_id` inherits the resolved location of the containing object.

use std::collections::BTreeMap;

use lancet_proto::table::BasePath;

use crate::error::{PathsError, Result};

/// Where a reference resolves: a dataset root (files under its `data/`, `_deletions/`,
/// `_indices/`, `_bt/`) or a plain directory holding files directly.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResolvedBase {
    /// Absolute URI or local path of the dataset root or directory, without a trailing `/`.
    pub uri: String,
    /// `None` for the dataset the manifest belongs to; otherwise the `BasePath.id` it came from.
    pub base_id: Option<u32>,
    pub is_dataset_root: bool,
}

impl ResolvedBase {
    /// The dataset whose manifest is being read.
    pub fn current_dataset(uri: &str) -> Self {
        Self {
            uri: uri.trim_end_matches('/').to_string(),
            base_id: None,
            is_dataset_root: true,
        }
    }
}

/// The `base_paths` of one manifest, indexed by id.
#[derive(Debug, Clone, Default)]
pub struct BaseTable {
    by_id: BTreeMap<u32, BasePath>,
}

/// Whether a reference must name another dataset's root (tree objects) or may name a plain
/// directory (data files, deletion files, index files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseRequirement {
    DatasetRoot,
    Any,
}

impl BaseTable {
    /// Indexes `base_paths` by id; duplicate ids are rejected.
    pub fn new(base_paths: &[BasePath]) -> Result<Self> {
        let mut by_id = BTreeMap::new();
        for base in base_paths {
            if by_id.insert(base.id, base.clone()).is_some() {
                return Err(PathsError::DuplicateBaseId { id: base.id });
            }
        }
        Ok(Self { by_id })
    }

    pub fn get(&self, id: u32) -> Option<&BasePath> {
        self.by_id.get(&id)
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Resolves a reference's `base_id`. Absent inherits `inherited`.
    pub fn resolve(
        &self,
        base_id: Option<u32>,
        inherited: &ResolvedBase,
        requirement: BaseRequirement,
    ) -> Result<ResolvedBase> {
        let Some(id) = base_id else {
            return Ok(inherited.clone());
        };
        let base = self
            .by_id
            .get(&id)
            .ok_or(PathsError::UnknownBaseId { id })?;
        if requirement == BaseRequirement::DatasetRoot && !base.is_dataset_root {
            return Err(PathsError::NotDatasetRoot {
                id,
                path: base.path.clone(),
            });
        }
        if base.path.is_empty() {
            return Err(PathsError::InvalidUri {
                uri: base.path.clone(),
                reason: format!("BasePath {id} has an empty path"),
            });
        }
        if !is_absolute_location(&base.path) {
            // resolved against the working directory, it would name whatever lies there
            return Err(PathsError::InvalidUri {
                uri: base.path.clone(),
                reason: format!(
                    "BasePath {id} is relative; a base path is an absolute path or URI"
                ),
            });
        }
        Ok(ResolvedBase {
            uri: base.path.trim_end_matches('/').to_string(),
            base_id: Some(id),
            is_dataset_root: base.is_dataset_root,
        })
    }
}

/// An absolute local path (`/...`, `file:///...`) or a URI with a scheme (`s3://...`).
fn is_absolute_location(path: &str) -> bool {
    match path.split_once("://") {
        Some(("file", rest)) => rest.starts_with('/'),
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }
        None => path.starts_with('/'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(id: u32, path: &str, root: bool) -> BasePath {
        BasePath {
            id,
            name: None,
            is_dataset_root: root,
            path: path.to_string(),
        }
    }

    #[test]
    fn looks_up_by_id_not_position() {
        let t = BaseTable::new(&[base(7, "/a", true), base(0, "/zero", true)]).unwrap();
        let here = ResolvedBase::current_dataset("/here/");
        let r = t.resolve(Some(0), &here, BaseRequirement::Any).unwrap();
        assert_eq!(r.uri, "/zero");
        assert_eq!(r.base_id, Some(0));
        let r = t
            .resolve(Some(7), &here, BaseRequirement::DatasetRoot)
            .unwrap();
        assert_eq!(r.uri, "/a");
        // absent inherits, and is distinct from 0
        let r = t
            .resolve(None, &here, BaseRequirement::DatasetRoot)
            .unwrap();
        assert_eq!(r.uri, "/here");
        assert_eq!(r.base_id, None);
    }

    #[test]
    fn rejects_unknown_duplicate_and_non_root() {
        assert!(matches!(
            BaseTable::new(&[base(1, "/a", true), base(1, "/b", true)]),
            Err(PathsError::DuplicateBaseId { id: 1 })
        ));
        let t = BaseTable::new(&[base(1, "/dir", false), base(2, "", true)]).unwrap();
        let here = ResolvedBase::current_dataset("/here");
        assert!(matches!(
            t.resolve(Some(9), &here, BaseRequirement::Any),
            Err(PathsError::UnknownBaseId { id: 9 })
        ));
        assert!(matches!(
            t.resolve(Some(1), &here, BaseRequirement::DatasetRoot),
            Err(PathsError::NotDatasetRoot { id: 1, .. })
        ));
        // a plain directory is fine for data files
        assert!(
            !t.resolve(Some(1), &here, BaseRequirement::Any)
                .unwrap()
                .is_dataset_root
        );
        assert!(matches!(
            t.resolve(Some(2), &here, BaseRequirement::Any),
            Err(PathsError::InvalidUri { .. })
        ));
    }

    #[test]
    fn inheritance_passes_through_other_datasets() {
        // A child in another dataset with no base_id inherits that dataset.
        let t = BaseTable::new(&[base(3, "s3://src/table", true)]).unwrap();
        let here = ResolvedBase::current_dataset("/clone");
        let parent = t
            .resolve(Some(3), &here, BaseRequirement::DatasetRoot)
            .unwrap();
        let child = t
            .resolve(None, &parent, BaseRequirement::DatasetRoot)
            .unwrap();
        assert_eq!(child, parent);
    }

    #[test]
    fn a_relative_base_path_is_refused() {
        let t = BaseTable::new(&[
            base(1, "elsewhere/t", true),
            base(2, "../t", false),
            base(3, "file://rel", true),
            base(4, "file:///abs/t", true),
            base(5, "s3://b/t", true),
        ])
        .unwrap();
        let here = ResolvedBase::current_dataset("/here");
        for id in [1, 2, 3] {
            assert!(matches!(
                t.resolve(Some(id), &here, BaseRequirement::Any),
                Err(PathsError::InvalidUri { .. })
            ));
        }
        for id in [4, 5] {
            assert!(t.resolve(Some(id), &here, BaseRequirement::Any).is_ok());
        }
    }
}
