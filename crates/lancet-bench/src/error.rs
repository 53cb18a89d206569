/// What a benchmark run can fail with.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Lancet(#[from] lancet::Error),
    #[error(transparent)]
    Paths(#[from] lancet::paths::PathsError),
    #[error(transparent)]
    File(#[from] lancet::file::FileError),
    #[error(transparent)]
    RowId(#[from] lancet::rowid::RowIdError),
    #[error(transparent)]
    Filter(#[from] lancet::FilterError),
    /// Options that do not make a benchmark.
    #[error("{0}")]
    Usage(String),
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
}
