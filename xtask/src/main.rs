//! `cargo xtask <task>`: project tasks that are not builds.
//!
//! - `fuzz <target>|--all [--seconds N] [--seed S] [--replay FILE]`: runs structure-aware mutation against one
//!   of lancet's decoders and fails on any panic, hang or oversized allocation. See
//!   `src/fuzz/mod.rs`.

mod fuzz;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Fuzz a decoder with seeded structure-aware mutation.
    Fuzz {
        /// Target name (see --list), or omit with --all.
        target: Option<String>,
        /// Run every target, each for --seconds.
        #[arg(long)]
        all: bool,
        /// List the targets.
        #[arg(long)]
        list: bool,
        /// Seconds per target.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// RNG seed; a failure prints the seed and iteration that reproduce it.
        #[arg(long)]
        seed: Option<u64>,
        /// Check one saved input (an allocation failure saves it to the temp dir) instead.
        #[arg(long)]
        replay: Option<std::path::PathBuf>,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match cli.task {
        Task::Fuzz {
            target,
            all,
            list,
            seconds,
            seed,
            replay,
        } => fuzz::main(
            target.as_deref(),
            all,
            list,
            seconds,
            seed,
            replay.as_deref(),
        ),
    }
}
