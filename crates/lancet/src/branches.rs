//! Branches in Lance 14.0.2's layout: `_refs/branches/{name}.json` names the parent version,
//! and the branch's own versions live under `tree/{name}/`, the first a shallow clone of the
//! parent version (its manifest and Clone transaction naming the branch), so data files are
//! shared through a base path. pylance lists, reads and writes lancet's branches, and lancet
//! pylance's; a branch is opened as its own dataset root (`Branches::checkout`), written
//! like any table, and deleted with its versions (`Branches::delete`).

use lancet_paths::layout;
use lancet_paths::refs::{self, Branch};

use crate::clone;
use crate::committed::Committed;
use crate::handle::Dataset;
use lancet_read::error::Result;
use lancet_read::snapshot::Snapshot;

/// The branches of a table, through one of its main-line handles ([`Dataset::branches`]).
#[derive(Debug, Clone, Copy)]
pub struct Branches<'a> {
    ds: &'a Snapshot,
}

/// The table's branches: list, create, open.
pub(crate) fn branches(snap: &Snapshot) -> Branches<'_> {
    Branches { ds: snap }
}

impl Branches<'_> {
    /// Every branch, by name.
    pub async fn list(self) -> Result<Vec<Branch>> {
        Ok(refs::list_branches(self.ds.store()).await?)
    }

    /// Creates branch `name` from `version` of the main line (this handle's when `None`):
    /// its first version under `tree/{name}/`, then its reference. A name Lance refuses is
    /// `InvalidInput`, an existing branch `Conflict`, a missing version `NotFound`, with
    /// nothing written. Through a branch's handle, see [`Branches::create_from`].
    pub async fn create(self, name: &str, version: Option<u64>) -> Result<Committed> {
        if let Some(branch) = &self.ds.manifest().branch {
            return Err(lancet_read::error::Error::Unsupported {
                uri: self.ds.uri().to_string(),
                version: self.ds.version(),
                rule: format!(
                    "this handle is branch {branch:?}; create from the main line's handle, \
                     with `create_from` for a branch of a branch"
                ),
            });
        }
        let parent = match version {
            Some(v) if v != self.ds.version() => self.ds.checkout(v).await?,
            _ => self.ds.clone(),
        };
        self.fork(name, None, parent).await
    }

    /// Creates branch `name` from `version` (its latest when `None`) of branch `parent`, as
    /// pylance's `create_branch(name, (parent, version))`. A missing parent is `NotFound`.
    pub async fn create_from(
        self,
        name: &str,
        parent: &str,
        version: Option<u64>,
    ) -> Result<Committed> {
        refs::check_branch_name(name)?;
        if !refs::list_branches(self.ds.store())
            .await?
            .iter()
            .any(|b| b.name == parent)
        {
            return Err(lancet_paths::PathsError::RefNotFound {
                what: "branch",
                name: parent.to_string(),
            }
            .into());
        }
        let head = Snapshot::open_uri(&self.root(parent)?).await?;
        let source = match version {
            Some(v) if v != head.version() => head.checkout(v).await?,
            _ => head,
        };
        self.fork(name, Some(parent), source).await
    }

    /// Branch `name`'s first version, a shallow clone of `source` (a version of `parent`, the
    /// main line when `None`), then its reference.
    async fn fork(self, name: &str, parent: Option<&str>, source: Snapshot) -> Result<Committed> {
        refs::check_branch_name(name)?;
        let path = refs::branch_ref_path(self.ds.store(), name)?;
        if self.ds.store().size(&path).await.is_ok() {
            return Err(lancet_paths::PathsError::RefExists {
                what: "branch",
                name: name.to_string(),
            }
            .into());
        }
        let committed =
            clone::shallow_clone_inner(&source, &self.root(name)?, None, Some(name)).await?;
        let referenced = refs::create_branch_ref(
            self.ds.store(),
            name,
            parent,
            source.version(),
            source.manifest_file().entry.size,
        )
        .await;
        if let Err(e) = referenced {
            // no reference names the clone: remove it, so the name stays free
            self.remove_root(name, &[]).await;
            return Err(e.into());
        }
        Ok(committed)
    }

    /// Deletes branch `name`, as Lance 14.0.2's `branches.delete`: refused (`Conflict`, nothing
    /// deleted) while another branch forks from it or a tag names one of its versions; else
    /// its reference goes first (it is no longer listed, opened or kept by cleanup), then
    /// every object under its root. A missing branch is `NotFound`.
    pub async fn delete(self, name: &str) -> Result<()> {
        refs::check_branch_name(name)?;
        let store = self.ds.store();
        let branches = refs::list_branches(store).await?;
        if !branches.iter().any(|b| b.name == name) {
            return Err(lancet_paths::PathsError::RefNotFound {
                what: "branch",
                name: name.to_string(),
            }
            .into());
        }
        let in_use = |by: String| -> lancet_read::error::Error {
            lancet_paths::PathsError::RefInUse {
                what: "branch",
                name: name.to_string(),
                by,
            }
            .into()
        };
        if let Some(child) = branches
            .iter()
            .find(|b| b.parent_branch.as_deref() == Some(name))
        {
            return Err(in_use(format!(
                "branch {:?}, which forks from it",
                child.name
            )));
        }
        if let Some(tag) = refs::list_tags(store)
            .await?
            .into_iter()
            .find(|t| t.branch.as_deref() == Some(name))
        {
            return Err(in_use(format!(
                "tag {:?} (version {})",
                tag.name, tag.version
            )));
        }
        refs::delete_branch_ref(store, name).await?;
        // a branch named `{name}/...` keeps its versions, which live under this root
        let nested: Vec<String> = branches
            .iter()
            .filter(|b| b.name.starts_with(&format!("{name}/")))
            .map(|b| format!("{}/", b.root()))
            .collect();
        self.remove_root_strict(name, &nested).await
    }

    /// Deletes every object under branch `name`'s root but those under `kept` (roots of
    /// nested branches), and on a local table the directories left empty.
    async fn remove_root_strict(self, name: &str, kept: &[String]) -> Result<()> {
        let store = self.ds.store();
        let root = format!("{}/", layout::branch_root(name));
        for object in store.list(&root).await? {
            let keep = store
                .relative(&object.location)
                .is_some_and(|r| kept.iter().any(|n| r.starts_with(n.as_str())));
            if !keep {
                store.delete(&object.location).await?;
            }
        }
        // object stores have no directories; a local table's are removed when left empty
        if let Some(local) = store.local_root() {
            lancet_paths::sweep::remove_empty_dirs(&local.join(layout::branch_root(name)));
        }
        Ok(())
    }

    /// [`Branches::remove_root_strict`], best effort (what is left, no version names, and the
    /// error that stopped it is logged).
    async fn remove_root(self, name: &str, kept: &[String]) {
        if let Err(e) = self.remove_root_strict(name, kept).await {
            tracing::warn!(branch = name, error = %e, "an unreferenced branch root was left");
        }
    }

    /// The latest version of branch `name`, opened (a dataset root of its own).
    pub async fn checkout(self, name: &str) -> Result<Dataset> {
        refs::check_branch_name(name)?;
        Snapshot::open_uri(&self.root(name)?)
            .await
            .map(Dataset::from)
    }

    /// Where branch `name`'s versions live: below the table's root, really (a link planted
    /// at `tree/{name}` leading out is refused).
    fn root(self, name: &str) -> Result<String> {
        let store = self.ds.store().below(&layout::branch_root(name))?;
        Ok(store.uri().to_string())
    }
}
