/// Errors of the facade: the subsystem crate's error, unchanged, or a facade rule.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Paths(#[from] lancet_paths::PathsError),
    #[error(transparent)]
    File(#[from] lancet_file::FileError),
    #[error(transparent)]
    RowId(#[from] lancet_rowid::RowIdError),
    #[error(transparent)]
    BTree(#[from] lancet_btree::BTreeError),
    #[error(transparent)]
    Reuse(#[from] lancet_reuse::ReuseError),
    #[error(transparent)]
    Tree(#[from] lancet_tree::TreeError),
    /// A load shared with other callers through a cache failed; the message is the original's.
    #[error("{0}")]
    Shared(String),
    /// Another writer published version `version` first and this commit cannot be rebased
    /// over it (`reason` names both operations); nothing was published. `retryable`: redoing
    /// the work on the newer version may succeed.
    #[error("dataset {uri}: version {version} was committed by another writer first: {reason}")]
    CommitConflict {
        uri: String,
        version: u64,
        reason: String,
        retryable: bool,
    },
    /// The manifest uses a feature this build of lancet cannot read or write.
    #[error("dataset {uri} version {version}: {rule}")]
    Unsupported {
        uri: String,
        version: u64,
        rule: String,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Recovers the typed error of a cached load when no other caller still holds it.
pub(crate) fn unshare<E>(e: std::sync::Arc<E>) -> Error
where
    E: Into<Error> + std::fmt::Display,
{
    match std::sync::Arc::try_unwrap(e) {
        Ok(e) => e.into(),
        Err(shared) => Error::Shared(shared.to_string()),
    }
}
