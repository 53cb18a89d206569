/// Errors of the facade: the subsystem crate's error, unchanged, or a facade rule.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Paths(#[from] lancet_paths::PathsError),
    #[error(transparent)]
    File(#[from] lancet_file::FileError),
    /// The manifest uses a feature this build of lancet cannot read or write.
    #[error("dataset {uri} version {version}: {rule}")]
    Unsupported {
        uri: String,
        version: u64,
        rule: String,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
