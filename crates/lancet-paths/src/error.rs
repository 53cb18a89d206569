use lancet_proto::{shown, ObjectRef};
use object_store::path::Path;

/// Errors of lancet-paths. Every variant names the offending object or path and the rule broken.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum PathsError {
    /// A tree object path breaks a path rule of the fragment-tree spec.
    #[error("invalid tree object path {path:?}: {rule}")]
    InvalidTreePath { path: String, rule: &'static str },
    /// A relative file path (data, deletion or external file) is not a safe relative path.
    #[error("invalid relative path {path:?}: {rule}")]
    InvalidRelativePath { path: String, rule: &'static str },
    /// A UUID field does not hold exactly 16 bytes.
    #[error("object UUID must be exactly 16 bytes, got {len}")]
    InvalidUuidLength { len: usize },
    /// A UUID string does not parse.
    #[error("invalid UUID text {text:?}")]
    InvalidUuidText { text: String },
    /// A `base_id` names no `BasePath` of the manifest.
    #[error("base_id {id} names no BasePath in the manifest")]
    UnknownBaseId { id: u32 },
    /// Two `BasePath` entries share an id.
    #[error("BasePath id {id} appears more than once in the manifest")]
    DuplicateBaseId { id: u32 },
    /// A reference that must name another dataset's root names a plain directory.
    #[error("base_id {id} must name a BasePath with is_dataset_root = true (path {path:?})")]
    NotDatasetRoot { id: u32, path: String },
    /// A dataset URI or a `BasePath.path` cannot be used.
    #[error("invalid URI {uri:?}: {reason}")]
    InvalidUri { uri: String, reason: String },
    /// The object store failed.
    #[error("object store error at {}: {source}", shown(path.as_ref()))]
    Store {
        path: Path,
        #[source]
        source: std::sync::Arc<object_store::Error>,
    },
    /// An object whose real location (links resolved) lies outside the table root or the base
    /// it was named in: a link planted in the table. Nothing is read, written or deleted there.
    #[error("{}: {outside}", shown(path.as_ref()))]
    OutsideTable {
        path: Path,
        outside: crate::confine::Outside,
    },
    /// An object that must exist does not.
    #[error("object {} not found", shown(path.as_ref()))]
    NotFound { path: Path },
    /// An object's size differs from the size its reference records.
    #[error("object {} is {actual} bytes, its reference says {expected}", shown(path.as_ref()))]
    SizeMismatch {
        path: Path,
        expected: u64,
        actual: u64,
    },
    /// A put-if-absent found the object already there (a commit lost a race).
    #[error("object {} already exists", shown(path.as_ref()))]
    AlreadyExists { path: Path },
    /// A manifest file breaks a rule of the manifest layout or of its contents.
    #[error("corrupt manifest {at}: {rule}")]
    CorruptManifest { at: ObjectRef, rule: String },
    /// A transaction (a `.txn` file or a manifest's inline section) does not decode.
    #[error("corrupt transaction {at}: {rule}")]
    CorruptTransaction { at: ObjectRef, rule: String },
    /// A tag or branch file (`_refs/`) is not the JSON Lance writes.
    #[error("corrupt reference {at}: {rule}")]
    CorruptRef { at: ObjectRef, rule: String },
    /// An object to write exceeds what its format can state (a manifest section's u32
    /// length prefix: 4 GiB).
    #[error("{what} of {bytes} bytes exceeds the 4 GiB its length prefix can state")]
    TooLarge { what: &'static str, bytes: usize },
    /// A dataset has no manifest versions.
    #[error("no Lance table here: no manifest versions under {}", shown(path.as_ref()))]
    NoVersions { path: Path },
    /// The location opened is not a directory a table could live in.
    #[error("no Lance table at {uri}: {why}")]
    NoTable { uri: String, why: &'static str },
    /// The requested version does not exist.
    #[error("version {version} not found under {}", shown(path.as_ref()))]
    VersionNotFound { path: Path, version: u64 },
    /// A tag or branch name Lance 14 refuses.
    #[error("invalid reference name {name:?}: {rule}")]
    InvalidRef { name: String, rule: &'static str },
    /// A tag that does not exist.
    /// A tag or branch that does not exist (`what`: "tag" or "branch").
    #[error("{what} {name:?} does not exist")]
    RefNotFound { what: &'static str, name: String },
    /// A tag or branch others depend on (`by` says which), not deleted.
    #[error("{what} {name:?} is in use by {by}")]
    RefInUse {
        what: &'static str,
        name: String,
        by: String,
    },
    /// A tag or branch that exists already (`what`: "tag" or "branch").
    #[error("{what} {name:?} already exists")]
    RefExists { what: &'static str, name: String },
}

impl PathsError {
    pub(crate) fn corrupt(path: &Path, rule: impl Into<String>) -> Self {
        Self::CorruptManifest {
            at: ObjectRef::new(path.to_string()),
            rule: rule.into(),
        }
    }

    pub(crate) fn corrupt_transaction(path: &Path, rule: impl Into<String>) -> Self {
        Self::CorruptTransaction {
            at: ObjectRef::new(path.to_string()),
            rule: rule.into(),
        }
    }

    pub(crate) fn store(path: &Path, source: object_store::Error) -> Self {
        match source {
            object_store::Error::NotFound { .. } => Self::NotFound { path: path.clone() },
            object_store::Error::AlreadyExists { .. } => Self::AlreadyExists { path: path.clone() },
            object_store::Error::PermissionDenied { source, .. }
                if source.is::<crate::confine::Outside>() =>
            {
                match source.downcast::<crate::confine::Outside>() {
                    Ok(outside) => Self::OutsideTable {
                        path: path.clone(),
                        outside: *outside,
                    },
                    Err(source) => Self::Store {
                        path: path.clone(),
                        source: std::sync::Arc::new(object_store::Error::PermissionDenied {
                            path: path.to_string(),
                            source,
                        }),
                    },
                }
            }
            source => Self::Store {
                path: path.clone(),
                source: std::sync::Arc::new(source),
            },
        }
    }
}

pub type Result<T, E = PathsError> = std::result::Result<T, E>;

impl PathsError {
    /// What a caller can do about it.
    pub fn kind(&self) -> lancet_proto::ErrorKind {
        use lancet_proto::ErrorKind;
        match self {
            PathsError::InvalidUri { .. }
            | PathsError::TooLarge { .. }
            | PathsError::InvalidRef { .. } => ErrorKind::InvalidInput,
            PathsError::NoVersions { .. }
            | PathsError::NoTable { .. }
            | PathsError::VersionNotFound { .. }
            | PathsError::RefNotFound { .. } => ErrorKind::NotFound,
            PathsError::Store { .. } => ErrorKind::Unavailable,
            PathsError::AlreadyExists { .. }
            | PathsError::RefExists { .. }
            | PathsError::RefInUse { .. } => ErrorKind::Conflict,
            // OutsideTable too: a link planted in the table is the table's state
            _ => ErrorKind::Corrupt,
        }
    }
}
