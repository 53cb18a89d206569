//! Which version a read command opens: the `--version`, `--tag` and `--branch` arguments
//! every read command takes, resolved by the facade's one rule (`lancet::VersionRef`).

use crate::error::CliError;

/// Which version a read command opens: the latest, `--version N`, the version `--tag NAME`
/// names, or branch `--branch NAME` (its latest version, or `--version` of it).
#[derive(clap::Args, Debug, Clone)]
pub struct At {
    /// Open this version (the latest by default; of the branch with `--branch`).
    #[arg(long)]
    pub version: Option<u64>,
    /// Open the version this tag names (`lancet tag list`) instead.
    #[arg(long, conflicts_with = "version")]
    pub tag: Option<String>,
    /// Read branch NAME (`lancet branch list`): its latest version, or `--version` of it.
    #[arg(long, conflicts_with = "tag")]
    pub branch: Option<String>,
}

impl At {
    /// The dataset root and version to open (`lancet::VersionRef::resolve`).
    pub async fn resolve(self, uri: &str) -> Result<(String, Option<u64>), CliError> {
        let at = lancet::VersionRef {
            version: self.version,
            tag: self.tag,
            branch: self.branch,
        };
        Ok(at.resolve(uri).await?)
    }
}
