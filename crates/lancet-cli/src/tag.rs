//! `lancet tag create|update|delete|list`, and `--tag NAME` on the read commands.

use clap::Subcommand;
use lancet::Dataset;

use crate::error::CliError;

#[derive(Subcommand)]
pub enum TagCommand {
    /// Tag a version (the latest when `--version` is not given).
    Create {
        dataset: String,
        name: String,
        #[arg(long)]
        version: Option<u64>,
    },
    /// Move a tag to another version (the latest when `--version` is not given).
    Update {
        dataset: String,
        name: String,
        #[arg(long)]
        version: Option<u64>,
    },
    /// Delete a tag (the version it named is then kept only by the cleanup policy).
    Delete { dataset: String, name: String },
    /// Every tag: one JSON line each, `{"name", "version", "branch"}`.
    List { dataset: String },
}

/// `lancet tag ...`.
pub async fn run(command: TagCommand) -> Result<(), CliError> {
    match command {
        TagCommand::Create {
            dataset,
            name,
            version,
        } => print(
            &Dataset::open(&dataset)
                .await?
                .tags()
                .create(&name, version)
                .await?,
        ),
        TagCommand::Update {
            dataset,
            name,
            version,
        } => print(
            &Dataset::open(&dataset)
                .await?
                .tags()
                .update(&name, version)
                .await?,
        ),
        TagCommand::Delete { dataset, name } => {
            Dataset::open(&dataset).await?.tags().delete(&name).await?;
        }
        TagCommand::List { dataset } => {
            for tag in Dataset::open(&dataset).await?.tags().list().await? {
                print(&tag);
            }
        }
    }
    Ok(())
}

fn print(tag: &lancet::Tag) {
    println!(
        "{}",
        serde_json::json!({ "name": tag.name, "version": tag.version, "branch": tag.branch })
    );
}

#[derive(Subcommand)]
pub enum BranchCommand {
    /// Create a branch from a version of the main line (the latest when `--version` is not
    /// given): its versions live under `<dataset>/tree/NAME`, which every command opens.
    Create {
        dataset: String,
        name: String,
        #[arg(long)]
        version: Option<u64>,
    },
    /// Every branch: one JSON line each, `{"name", "parent_branch", "parent_version"}`.
    List { dataset: String },
}

/// `lancet branch ...`.
pub async fn branch(command: BranchCommand) -> Result<(), CliError> {
    match command {
        BranchCommand::Create {
            dataset,
            name,
            version,
        } => {
            let ds = Dataset::open(&dataset).await?;
            let made = ds.branches().create(&name, version).await?;
            println!(
                "{}",
                serde_json::json!({ "name": name, "uri": made.dataset.uri(), "version": made.version() })
            );
        }
        BranchCommand::List { dataset } => {
            for b in Dataset::open(&dataset).await?.branches().list().await? {
                println!(
                    "{}",
                    serde_json::json!({
                        "name": b.name,
                        "parent_branch": b.parent_branch,
                        "parent_version": b.parent_version,
                    })
                );
            }
        }
    }
    Ok(())
}

/// The version a read command opens: `version`, or the one tag `tag` names.
pub async fn at(
    uri: &str,
    version: Option<u64>,
    tag: Option<String>,
) -> Result<Option<u64>, CliError> {
    match tag {
        None => Ok(version),
        Some(name) => {
            let tag = Dataset::open(uri).await?.tags().get(&name).await?;
            if let Some(branch) = tag.branch {
                return Err(CliError::Usage(format!(
                    "tag {name:?} names version {} of branch {branch:?}; lancet reads tags of the main line",
                    tag.version
                )));
            }
            Ok(Some(tag.version))
        }
    }
}
