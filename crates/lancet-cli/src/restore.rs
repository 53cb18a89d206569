//! `lancet restore`.

use lancet::Dataset;

use crate::error::CliError;

/// `lancet restore`: version N's content as the next version.
pub async fn run(uri: &str, version: u64) -> Result<(), CliError> {
    let ds = Dataset::open(uri).await?;
    let next = ds.restore(version).await?.dataset;
    println!(
        "version {} restores version {version} ({} rows)",
        next.version(),
        next.num_rows()
            .map_or_else(|| "unknown".to_string(), |n| n.to_string())
    );
    Ok(())
}
