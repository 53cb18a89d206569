//! The crate's errors: a broken invariant, named; an operation that cannot be applied.

use crate::invariant::Invariant;

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
    /// The operation cannot be applied to the version it is committed on as given.
    #[error("{operation}: {reason}")]
    Operation {
        operation: &'static str,
        reason: String,
    },
    /// An operation this commit path does not apply; `reason` names the one that does.
    #[error("{operation} is not committed here: {reason}")]
    Unsupported {
        operation: &'static str,
        reason: String,
    },
}

pub use lancet_proto::ErrorKind;

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

    pub(crate) fn operation(operation: &'static str, reason: impl Into<String>) -> Self {
        TxnError::Operation {
            operation,
            reason: reason.into(),
        }
    }

    pub(crate) fn unsupported(operation: &'static str, reason: impl Into<String>) -> Self {
        TxnError::Unsupported {
            operation,
            reason: reason.into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            // lancet cannot carry the fields: its reach, not the caller's change
            TxnError::Invalid {
                invariant: Invariant::UnmodelledFieldsKept,
                ..
            }
            | TxnError::Unsupported { .. } => ErrorKind::Unsupported,
            TxnError::Invalid { .. } | TxnError::Operation { .. } => ErrorKind::InvalidInput,
        }
    }

    /// The invariant the candidate broke, when it is a candidate that was refused.
    pub fn invariant(&self) -> Option<Invariant> {
        match self {
            TxnError::Invalid { invariant, .. } => Some(*invariant),
            _ => None,
        }
    }
}

pub type Result<T, E = TxnError> = std::result::Result<T, E>;
