//! `lancet`: inspect and operate on Lance tables with lancet's crates.

mod demo;
mod error;
mod inspect;

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
