//! `lancet`: inspect and operate on Lance tables with lancet's crates.

mod demo;
mod error;
mod filter;
mod fri;
mod index;
mod inspect;
mod rowid;

use clap::{Parser, Subcommand};

use crate::error::CliError;

#[derive(Parser)]
#[command(
    name = "lancet",
    version,
    about = "Inspect, verify and operate on Lance tables"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show one version of a table: flags, fragments, indices.
    Inspect {
        /// Dataset URI or local path.
        dataset: String,
        /// Version to show (default: latest).
        #[arg(long)]
        version: Option<u64>,
        /// Print one JSON object instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Stable row ids: every live row's id and address, lookups, segment encodings.
    Rowid {
        /// Dataset URI or local path.
        dataset: String,
        /// Version (default: latest).
        #[arg(long)]
        version: Option<u64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Print the address of each of these row ids (null when not live) instead of the listing.
        #[arg(long, num_args = 1..)]
        lookup: Vec<u64>,
        /// Add each fragment's segment encodings and whether they re-encode byte for byte.
        #[arg(long)]
        segments: bool,
        /// Add `created_at` and `last_updated_at`: each listed row's dataset versions.
        #[arg(long)]
        versions: bool,
    },
    /// BTree scalar indexes: list, search with a filter, build.
    Index {
        #[command(subcommand)]
        command: IndexCommand,
    },
    /// The Fragment Reuse Index: its history, and translation of old row addresses.
    Fri {
        #[command(subcommand)]
        command: FriCommand,
    },
    /// Create a small real Lance dataset (data files by lance-file, manifest by lancet).
    Demo {
        /// Directory to create (must not hold a dataset yet).
        #[arg(default_value = "lancet-demo")]
        dir: String,
    },
}

#[derive(Subcommand)]
enum FriCommand {
    /// Print the decoded history as JSON.
    Show {
        dataset: String,
        #[arg(long)]
        version: Option<u64>,
        /// Accepted for symmetry; the output is always JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-publish the history as a tagged (index_version 1) entry in a new version.
    Upgrade { dataset: String },
    /// Drop the transitions no index still needs, in a new version.
    Trim { dataset: String },
    /// List `_fri/` files no version in `_versions/` references.
    Unreferenced {
        dataset: String,
        /// Delete them.
        #[arg(long)]
        delete: bool,
    },
    /// Translate row addresses read from stdin (one per line) to current addresses.
    Translate {
        dataset: String,
        #[arg(long)]
        version: Option<u64>,
        /// Accepted for symmetry; the output is always JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum IndexCommand {
    /// List the BTree indexes of a version.
    List {
        dataset: String,
        #[arg(long)]
        version: Option<u64>,
        #[arg(long)]
        json: bool,
    },
    /// Answer a filter over indexed columns (=, <, <=, >, >=, !=, BETWEEN, IN, IS [NOT] NULL,
    /// NOT, AND, OR, LIKE 'prefix%', starts_with(col, 'p')) with SQL NULL semantics.
    Search {
        dataset: String,
        #[arg(long)]
        filter: String,
        #[arg(long)]
        version: Option<u64>,
        #[arg(long)]
        json: bool,
        /// The index's raw answer, without applying deletion vectors.
        #[arg(long)]
        no_deletions: bool,
    },
    /// Train a BTree on a column and commit it as a new version.
    Build {
        dataset: String,
        #[arg(long)]
        column: String,
        /// Rows per page.
        #[arg(long, default_value_t = 4096)]
        zone_size: u64,
    },
}

async fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Inspect {
            dataset,
            version,
            json,
        } => inspect::run(&dataset, version, json).await,
        Command::Rowid {
            dataset,
            version,
            json,
            lookup,
            segments,
            versions,
        } => rowid::run(&dataset, version, json, &lookup, segments, versions).await,
        Command::Index { command } => match command {
            IndexCommand::List {
                dataset,
                version,
                json,
            } => index::list(&dataset, version, json).await,
            IndexCommand::Search {
                dataset,
                filter,
                version,
                json,
                no_deletions,
            } => index::search(&dataset, version, &filter, json, no_deletions).await,
            IndexCommand::Build {
                dataset,
                column,
                zone_size,
            } => index::build(&dataset, &column, zone_size).await,
        },
        Command::Fri { command } => match command {
            FriCommand::Show {
                dataset, version, ..
            } => fri::show(&dataset, version).await,
            FriCommand::Translate {
                dataset, version, ..
            } => fri::translate(&dataset, version).await,
            FriCommand::Upgrade { dataset } => fri::upgrade(&dataset).await,
            FriCommand::Trim { dataset } => fri::trim(&dataset).await,
            FriCommand::Unreferenced { dataset, delete } => {
                fri::unreferenced(&dataset, delete).await
            }
        },
        Command::Demo { dir } => demo::run(&dir).await,
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lancet: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lancet: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
