use std::sync::Arc;

use lancet_proto::shown;
use object_store::path::Path;

/// Errors of lancet-file, each naming the file and the rule broken. `Clone`: the sources of
/// other crates are shared (`Arc`), so an error can be handed to every caller of a shared load.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// lance-file could not read or write the file (I/O, or bytes it cannot decode).
    #[error("lance file {}: {source}", shown(path.as_ref()))]
    Lance {
        path: Path,
        #[source]
        source: Arc<lance_core::Error>,
    },
    /// The file's bytes break a rule of the Lance v2 file layout.
    #[error("lance file {at}: corrupt: {rule}")]
    Corrupt {
        at: lancet_proto::ObjectRef,
        rule: String,
    },
    /// The object store failed.
    #[error("lance file {}: object store: {source}", shown(path.as_ref()))]
    Store {
        path: Path,
        #[source]
        source: Arc<object_store::Error>,
    },
    /// The stored schema differs from the one the caller requires.
    #[error("lance file {}: schema mismatch: {rule}", shown(path.as_ref()))]
    SchemaMismatch { path: Path, rule: String },
    /// A requested row range or global buffer does not exist.
    #[error("lance file {}: {rule}", shown(path.as_ref()))]
    OutOfRange { path: Path, rule: String },
    /// The caller's batches or arguments are unusable.
    #[error("lance file {}: invalid input: {rule}", shown(path.as_ref()))]
    InvalidInput { path: Path, rule: String },
    /// The store URI cannot be used.
    #[error("invalid store URI {uri:?}: {reason}")]
    InvalidUri { uri: String, reason: String },
}

impl FileError {
    /// What a caller can do about it.
    pub fn kind(&self) -> lancet_proto::ErrorKind {
        use lancet_proto::ErrorKind;
        match self {
            // a link planted in the table leads out of it: the table's state, not the store's
            FileError::Store { source, .. }
                if lancet_proto::Outside::of(source.as_ref()).is_some() =>
            {
                ErrorKind::Corrupt
            }
            FileError::Lance { source, .. }
                if lancet_proto::Outside::of(source.as_ref()).is_some() =>
            {
                ErrorKind::Corrupt
            }
            FileError::Store { .. } => ErrorKind::Unavailable,
            FileError::OutOfRange { .. }
            | FileError::InvalidInput { .. }
            | FileError::InvalidUri { .. } => ErrorKind::InvalidInput,
            _ => ErrorKind::Corrupt,
        }
    }

    /// Whether the file does not exist (rather than failing to open or decode).
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::Store { source, .. }
            if matches!(source.as_ref(), object_store::Error::NotFound { .. }))
    }

    /// Whether the file's bytes are the cause (not a Lance file, or not one of the schema
    /// asked for), rather than the store.
    pub fn is_unreadable(&self) -> bool {
        matches!(
            self,
            FileError::Lance { .. } | FileError::Corrupt { .. } | FileError::SchemaMismatch { .. }
        )
    }
}

pub type Result<T, E = FileError> = std::result::Result<T, E>;

pub(crate) fn lance_err(path: &Path) -> impl FnOnce(lance_core::Error) -> FileError + '_ {
    move |source| FileError::Lance {
        path: path.clone(),
        source: Arc::new(source),
    }
}
