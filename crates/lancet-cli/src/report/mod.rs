//! `lancet report`: one version of a table as a self-contained HTML page an operator opens in
//! a browser: fragment sizes and deleted shares against compaction's plan, index and Fragment
//! Reuse Index coverage, the fragment tree's shape, the version history and row-id health.

mod chart;
mod facts;
mod page;

use std::io::Write;
use std::path::Path;

use crate::error::CliError;

/// Writes the report of `version` (the latest by default) to `out`, or to stdout.
pub async fn run(uri: &str, version: Option<u64>, out: Option<&Path>) -> Result<(), CliError> {
    let facts = facts::gather(uri, version).await?;
    let html = page::render(&facts);
    match out {
        Some(path) => {
            std::fs::write(path, &html)
                .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
            println!(
                "wrote {} ({}, version {})",
                path.display(),
                chart::bytes(html.len() as u64),
                facts.version
            );
        }
        None => std::io::stdout().lock().write_all(html.as_bytes())?,
    }
    Ok(())
}
