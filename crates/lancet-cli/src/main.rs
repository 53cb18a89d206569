//! `lancet`: inspect and operate on Lance tables with lancet's crates.

mod demo;
mod error;
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
    /// Create a small real Lance dataset (data files by lance-file, manifest by lancet).
    Demo {
        /// Directory to create (must not hold a dataset yet).
        #[arg(default_value = "lancet-demo")]
        dir: String,
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
