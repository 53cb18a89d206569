//! Which version of a table to open: a version, a tag, a branch ([`VersionRef`]).

use lancet_paths::layout;
use lancet_paths::DatasetStore;

use crate::error::{Error, Result};

/// Which version of a table `Dataset::open_ref` opens: the latest when every field is
/// `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionRef {
    /// A version number (of the main line, or of `branch`).
    pub version: Option<u64>,
    /// A tag: the version it names, on the main line or on the branch it records.
    pub tag: Option<String>,
    /// A branch (`lancet_paths::layout::branch_root`): its latest version, or `version`.
    pub branch: Option<String>,
}

impl VersionRef {
    /// Version `version` of the main line.
    pub fn at(version: u64) -> Self {
        Self {
            version: Some(version),
            ..Self::default()
        }
    }

    /// The dataset root (`uri`, or a branch's root below it) and the version (`None`: the
    /// latest) this reference names. Reads the tag, or the branch references, under `uri`.
    pub async fn resolve(&self, uri: &str) -> Result<(String, Option<u64>)> {
        let invalid = |reason: String| Error::InvalidArgument {
            what: format!("version of {uri}"),
            reason,
        };
        let store = || DatasetStore::open(uri);
        match (&self.tag, &self.branch) {
            (None, None) => Ok((uri.to_string(), self.version)),
            (None, Some(branch)) => {
                lancet_paths::refs::check_branch_name(branch)?;
                // a branch no reference names is not opened
                let listed = lancet_paths::refs::list_branches(&store()?).await?;
                if !listed.iter().any(|b| &b.name == branch) {
                    return Err(lancet_paths::PathsError::RefNotFound {
                        what: "branch",
                        name: branch.clone(),
                    }
                    .into());
                }
                Ok((branch_root(&store()?, branch)?, self.version))
            }
            (Some(name), branch) => {
                if self.version.is_some() {
                    return Err(invalid(format!("give a version or tag {name:?}, not both")));
                }
                let tag = lancet_paths::refs::get_tag(&store()?, name).await?;
                if branch.is_some() && *branch != tag.branch {
                    return Err(invalid(format!(
                        "tag {name:?} names a version of {}, not of branch {:?}",
                        tag.branch
                            .as_ref()
                            .map_or("the main line".to_string(), |b| format!("branch {b:?}")),
                        branch.as_deref().unwrap_or_default()
                    )));
                }
                match &tag.branch {
                    Some(b) => Ok((branch_root(&store()?, b)?, Some(tag.version))),
                    None => Ok((uri.to_string(), Some(tag.version))),
                }
            }
        }
    }
}

/// Branch `name`'s dataset root below the table in `store`, really below it (a link planted at
/// `tree/{name}` leading out of the table is refused).
fn branch_root(store: &DatasetStore, name: &str) -> Result<String> {
    Ok(store.below(&layout::branch_root(name))?.uri().to_string())
}
