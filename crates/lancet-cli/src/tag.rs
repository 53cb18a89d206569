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
        /// Fork from this branch (its `--version`, or latest) instead of the main line.
        #[arg(long)]
        from_branch: Option<String>,
    },
    /// Every branch: one JSON line each, `{"name", "parent_branch", "parent_version"}`.
    List { dataset: String },
    /// Delete a branch and its versions (refused while a branch forks from it or a tag
    /// names one of its versions).
    Delete { dataset: String, name: String },
}

/// `lancet branch ...`.
pub async fn branch(command: BranchCommand) -> Result<(), CliError> {
    match command {
        BranchCommand::Create {
            dataset,
            name,
            version,
            from_branch,
        } => {
            let ds = Dataset::open(&dataset).await?;
            let made = match from_branch {
                None => ds.branches().create(&name, version).await?,
                Some(parent) => ds.branches().create_from(&name, &parent, version).await?,
            };
            println!(
                "{}",
                serde_json::json!({ "name": name, "uri": made.dataset.uri(), "version": made.version() })
            );
        }
        BranchCommand::Delete { dataset, name } => {
            Dataset::open(&dataset)
                .await?
                .branches()
                .delete(&name)
                .await?;
            println!("{}", serde_json::json!({ "deleted": name }));
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
