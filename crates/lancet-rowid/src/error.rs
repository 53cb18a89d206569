/// Why bytes of a row-id structure do not decode. Wrapped with the object it came from in
/// [`RowIdError::Corrupt`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("{0}")]
    Rule(String),
}

impl DecodeError {
    pub(crate) fn rule(rule: &str) -> Self {
        Self::Rule(rule.to_string())
    }
}

/// Errors of lancet-rowid, each naming the object and the rule it broke.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RowIdError {
    /// Stored bytes of a sequence or version sequence break a rule.
    #[error("corrupt {at}: {source}")]
    Corrupt {
        at: lancet_proto::ObjectRef,
        #[source]
        source: DecodeError,
    },
    /// A deletion file does not decode or contradicts its reference.
    #[error("corrupt deletion file {at}: {rule}")]
    CorruptDeletionFile {
        at: lancet_proto::ObjectRef,
        rule: String,
    },
    /// A fragment's row id sequence does not hold one id per physical row.
    #[error("fragment {fragment}: row id sequence has {sequence_len} ids for {physical_rows} physical rows")]
    LengthMismatch {
        fragment: u64,
        sequence_len: u64,
        physical_rows: u64,
    },
    /// A row id is live in two places (as Lance 14: "row id index corrupt").
    #[error("row id {row_id} is live at both {first:#x} and {second:#x} (row id index corrupt)")]
    DuplicateRowId {
        row_id: u64,
        first: u64,
        second: u64,
    },
    /// A fragment cannot be addressed (id or offset beyond 32 bits).
    #[error("fragment {fragment}: {rule}")]
    Unaddressable { fragment: u64, rule: String },
    /// A stable-row-id table has a fragment without a sequence.
    #[error("fragment {fragment} has no row id sequence")]
    MissingSequence { fragment: u64 },
    /// A fragment stores its row-id structures in a form lancet does not read.
    #[error("fragment {fragment}: {rule}")]
    Unsupported { fragment: u64, rule: String },
    /// The caller's arguments are unusable.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error(transparent)]
    Paths(#[from] lancet_paths::PathsError),
}

impl RowIdError {
    /// What a caller can do about it.
    pub fn kind(&self) -> lancet_proto::ErrorKind {
        use lancet_proto::ErrorKind;
        match self {
            RowIdError::InvalidInput(_) => ErrorKind::InvalidInput,
            RowIdError::Unsupported { .. } => ErrorKind::Unsupported,
            RowIdError::Paths(e) => e.kind(),
            _ => ErrorKind::Corrupt,
        }
    }
}

pub type Result<T, E = RowIdError> = std::result::Result<T, E>;
