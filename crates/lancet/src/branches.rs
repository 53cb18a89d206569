//! Branches in Lance 14.0.2's layout: `_refs/branches/{name}.json` names the parent version,
//! and the branch's own versions live under `tree/{name}/`, the first a shallow clone of the
//! parent version (its manifest and Clone transaction naming the branch), so data files are
//! shared through a base path. pylance lists, reads and writes lancet's branches, and lancet
//! pylance's; a branch is opened as its own dataset root (`Branches::checkout`) and written
//! like any table.

use lancet_paths::refs::{self, Branch};

use crate::commit::Committed;
use crate::dataset::Dataset;
use crate::error::Result;

/// The branches of a table, through one of its main-line handles ([`Dataset::branches`]).
#[derive(Debug, Clone, Copy)]
pub struct Branches<'a> {
    ds: &'a Dataset,
}

impl Dataset {
    /// The table's branches: list, create, open.
    pub fn branches(&self) -> Branches<'_> {
        Branches { ds: self }
    }
}

impl Branches<'_> {
    /// Every branch, by name.
    pub async fn list(self) -> Result<Vec<Branch>> {
        Ok(refs::list_branches(self.ds.store()).await?)
    }

    /// Creates branch `name` from `version` of the main line (this handle's when `None`; a
    /// branch of a branch is `Unsupported`):
    /// its first version under `tree/{name}/`, then its reference. A name Lance refuses is
    /// `InvalidInput`, an existing branch `Conflict`, a missing version `NotFound`, with
    /// nothing written.
    pub async fn create(self, name: &str, version: Option<u64>) -> Result<Committed> {
        refs::check_branch_name(name)?;
        if let Some(branch) = &self.ds.manifest().branch {
            return Err(crate::error::Error::Unsupported {
                uri: self.ds.uri().to_string(),
                version: self.ds.version(),
                rule: format!(
                    "this handle is branch {branch:?}; lancet creates branches from the main line"
                ),
            });
        }
        let path = refs::branch_ref_path(self.ds.store(), name)?;
        if self.ds.store().size(&path).await.is_ok() {
            return Err(lancet_paths::PathsError::RefExists {
                what: "branch",
                name: name.to_string(),
            }
            .into());
        }
        let parent = match version {
            Some(v) if v != self.ds.version() => self.ds.checkout(v).await?,
            _ => self.ds.clone(),
        };
        let committed = parent
            .shallow_clone_inner(&self.root(name), None, Some(name))
            .await?;
        refs::create_branch_ref(
            self.ds.store(),
            name,
            parent.version(),
            parent.manifest_file().entry.size,
        )
        .await?;
        Ok(committed)
    }

    /// The latest version of branch `name`, opened (a dataset root of its own).
    pub async fn checkout(self, name: &str) -> Result<Dataset> {
        refs::check_branch_name(name)?;
        Dataset::open(&self.root(name)).await
    }

    /// Where branch `name`'s versions live.
    fn root(self, name: &str) -> String {
        format!(
            "{}/{}/{name}",
            self.ds.uri().trim_end_matches('/'),
            refs::BRANCH_TREES_DIR
        )
    }
}
