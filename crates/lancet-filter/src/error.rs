/// A filter lancet does not accept, naming the filter and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError {
    /// The text does not parse, or uses what Lance's filters do not accept (see the crate
    /// docs); or a literal cannot be compared with its column.
    #[error("filter {filter:?}: {reason}")]
    InvalidFilter { filter: String, reason: String },
}

pub use lancet_proto::ErrorKind;

impl FilterError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            FilterError::InvalidFilter { .. } => ErrorKind::InvalidInput,
        }
    }
}

pub type Result<T, E = FilterError> = std::result::Result<T, E>;
