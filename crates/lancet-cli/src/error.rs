/// What a `lancet` command can fail with.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Lancet(#[from] lancet::Error),
    #[error(transparent)]
    Paths(#[from] lancet::paths::PathsError),
    #[error(transparent)]
    File(#[from] lancet::file::FileError),
    #[error(transparent)]
    RowId(#[from] lancet::rowid::RowIdError),
    #[error(transparent)]
    Reuse(#[from] lancet::reuse::ReuseError),
    #[error(transparent)]
    Filter(#[from] lancet::FilterError),
    #[error(transparent)]
    Bench(#[from] lancet_bench::BenchError),
    #[error("{0}")]
    Usage(String),
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
}
