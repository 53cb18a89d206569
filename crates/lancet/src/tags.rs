//! Tags: names for versions, in Lance 14's layout (`_refs/tags/{name}.json`, what pylance's
//! `ds.tags` reads and writes). A tagged version is kept by every cleanup; a tag is created,
//! moved and deleted here, and a version is opened by its tag.

use lancet_paths::refs::{self, Tag};

use crate::handle::Dataset;
use lancet_read::error::{Error, Result};
use lancet_read::snapshot::Snapshot;

/// The tags of a table, through one of its handles ([`Dataset::tags`]).
#[derive(Debug, Clone, Copy)]
pub struct Tags<'a> {
    ds: &'a Snapshot,
}

/// The table's tags: list, create, move, delete, and open a version by its tag.
pub(crate) fn tags(snap: &Snapshot) -> Tags<'_> {
    Tags { ds: snap }
}

impl<'a> Tags<'a> {
    /// Every tag, by name.
    pub async fn list(self) -> Result<Vec<Tag>> {
        Ok(refs::list_tags(self.ds.store()).await?)
    }

    /// Tag `name` (a missing one is `ErrorKind::NotFound`).
    pub async fn get(self, name: &str) -> Result<Tag> {
        Ok(refs::get_tag(self.ds.store(), name).await?)
    }

    /// Tags `version` (this handle's when `None`) as `name`. The version must exist
    /// (`ErrorKind::NotFound` otherwise), the name follow Lance's rules (`InvalidInput`), and
    /// no tag of that name exist (`Conflict`).
    pub async fn create(self, name: &str, version: Option<u64>) -> Result<Tag> {
        refs::check_tag_name(name)?;
        let size = self.manifest_size(version).await?;
        let version = version.unwrap_or(self.ds.version());
        Ok(refs::create_tag(self.ds.store(), name, version, size).await?)
    }

    /// Moves tag `name` to `version` (this handle's when `None`).
    pub async fn update(self, name: &str, version: Option<u64>) -> Result<Tag> {
        refs::check_tag_name(name)?;
        let size = self.manifest_size(version).await?;
        let version = version.unwrap_or(self.ds.version());
        Ok(refs::update_tag(self.ds.store(), name, version, size).await?)
    }

    /// Deletes tag `name`; the version it named is then kept only by the cleanup policy.
    pub async fn delete(self, name: &str) -> Result<()> {
        Ok(refs::delete_tag(self.ds.store(), name).await?)
    }

    /// The version tag `name` names, opened.
    pub async fn checkout(self, name: &str) -> Result<Dataset> {
        let tag = self.get(name).await?;
        if let Some(branch) = &tag.branch {
            return Err(Error::Unsupported {
                uri: self.ds.uri().to_string(),
                version: self.ds.version(),
                rule: format!(
                    "tag {name:?} names version {} of branch {branch:?}; lancet opens tags of the main line",
                    tag.version
                ),
            });
        }
        self.ds.checkout(tag.version).await.map(Dataset::from)
    }

    /// The manifest size of `version` (this handle's when `None`), which must exist.
    async fn manifest_size(self, version: Option<u64>) -> Result<u64> {
        match version {
            None => Ok(self.ds.manifest_file().entry.size),
            Some(v) if v == self.ds.version() => Ok(self.ds.manifest_file().entry.size),
            Some(v) => Ok(self.ds.checkout(v).await?.manifest_file().entry.size),
        }
    }
}
