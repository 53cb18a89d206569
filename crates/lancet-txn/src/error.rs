//! The crate's errors: a broken invariant, named.

use crate::invariants::Invariant;

/// A candidate version that breaks an invariant: `subject` names what breaks it (a fragment,
/// an index entry, a flag word), `detail` the values. Nothing was published.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TxnError {
    #[error("invalid version {version}: {invariant} ({}): {subject}: {detail}", invariant.rule())]
    Invalid {
        /// The version the candidate would have been.
        version: u64,
        invariant: Invariant,
        subject: String,
        detail: String,
    },
}

/// What a caller can do about a [`TxnError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The caller's change is wrong: fix it and commit again.
    InvalidInput,
}

impl TxnError {
    /// `candidate version` breaks `invariant` at `subject`.
    pub fn invalid(
        version: u64,
        invariant: Invariant,
        subject: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        TxnError::Invalid {
            version,
            invariant,
            subject: subject.into(),
            detail: detail.into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            TxnError::Invalid { .. } => ErrorKind::InvalidInput,
        }
    }

    /// The invariant the candidate broke.
    pub fn invariant(&self) -> Invariant {
        match self {
            TxnError::Invalid { invariant, .. } => *invariant,
        }
    }
}

pub type Result<T, E = TxnError> = std::result::Result<T, E>;
