/// Errors of lancet-btree, each naming the index file and the rule broken.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BTreeError {
    /// A stored index file breaks a rule of the BTree layout.
    #[error("corrupt BTree index {at}: {rule}")]
    Corrupt {
        at: lancet_proto::ObjectRef,
        rule: String,
    },
    /// The index uses a layout or type lancet does not handle.
    #[error("BTree index {}: unsupported: {rule}", lancet_proto::shown(path))]
    Unsupported { path: String, rule: String },
    /// A query or training input is unusable.
    #[error("invalid BTree input: {0}")]
    InvalidInput(String),
    #[error(transparent)]
    File(#[from] lancet_file::FileError),
    #[error("arrow: {0}")]
    Arrow(std::sync::Arc<arrow_schema::ArrowError>),
}

impl From<arrow_schema::ArrowError> for BTreeError {
    fn from(e: arrow_schema::ArrowError) -> Self {
        BTreeError::Arrow(std::sync::Arc::new(e))
    }
}

impl BTreeError {
    /// What a caller can do about it.
    pub fn kind(&self) -> lancet_proto::ErrorKind {
        use lancet_proto::ErrorKind;
        match self {
            BTreeError::Unsupported { .. } => ErrorKind::Unsupported,
            BTreeError::InvalidInput(_) => ErrorKind::InvalidInput,
            BTreeError::File(e) => e.kind(),
            _ => ErrorKind::Corrupt,
        }
    }
}

pub type Result<T, E = BTreeError> = std::result::Result<T, E>;
