/// Errors of lancet-reuse, each naming the object and the rule broken.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ReuseError {
    /// The FRI history or a row map breaks a rule of the format.
    #[error("corrupt Fragment Reuse Index {at}: {rule}")]
    Corrupt {
        at: lancet_proto::ObjectRef,
        rule: String,
    },
    /// The history needs a newer reader (index_version), or a mapping lancet cannot use.
    #[error("Fragment Reuse Index {what}: unsupported: {rule}")]
    Unsupported { what: String, rule: String },
    /// An address or argument outside what the history covers.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error(transparent)]
    File(#[from] lancet_file::FileError),
    #[error(transparent)]
    Paths(#[from] lancet_paths::PathsError),
}

impl ReuseError {
    /// What a caller can do about it.
    pub fn kind(&self) -> lancet_proto::ErrorKind {
        use lancet_proto::ErrorKind;
        match self {
            ReuseError::Unsupported { .. } => ErrorKind::Unsupported,
            ReuseError::InvalidInput(_) => ErrorKind::InvalidInput,
            ReuseError::File(e) => e.kind(),
            ReuseError::Paths(e) => e.kind(),
            _ => ErrorKind::Corrupt,
        }
    }
}

pub type Result<T, E = ReuseError> = std::result::Result<T, E>;

pub(crate) fn corrupt(what: impl Into<String>, rule: impl Into<String>) -> ReuseError {
    ReuseError::Corrupt {
        at: lancet_proto::ObjectRef::new(what),
        rule: rule.into(),
    }
}
