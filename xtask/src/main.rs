//! `cargo xtask <task>`: project tasks that are not builds.
//!
//! - `fuzz <target>|--all [--seconds N] [--seed S] [--replay FILE]`: runs structure-aware mutation against one
//!   of lancet's decoders and fails on any panic, hang or oversized allocation. See
//!   `src/fuzz/mod.rs`.
//! - `difftest [--seed S] [--steps N] [--runs R] [--minutes M] [--stable true|false|random]
//!   [--replay FILE]`: random operation sequences in which lancet and pylance 14.0.2 take turns
//!   on one table, checked after every step (`tests/interop/difftest.py`); a failure prints its
//!   seed and a shrunk reproducer. See `src/difftest.rs`.

mod difftest;
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
    /// Differential test against pylance 14.0.2: random operation sequences on one table.
    Difftest {
        /// First seed (each further run takes the next); random when omitted.
        #[arg(long)]
        seed: Option<u64>,
        /// Steps per sequence (after the table's creation).
        #[arg(long, default_value_t = 20)]
        steps: u32,
        /// Sequences to run (ignored with --minutes).
        #[arg(long, default_value_t = 1)]
        runs: u32,
        /// Run sequences until this many minutes have passed.
        #[arg(long)]
        minutes: Option<f64>,
        /// Stable row ids: true, false, or random per sequence.
        #[arg(long, default_value = "random")]
        stable: String,
        /// Run one saved reproducer instead.
        #[arg(long)]
        replay: Option<std::path::PathBuf>,
        /// Build and use the release binary.
        #[arg(long)]
        release: bool,
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
        Task::Difftest {
            seed,
            steps,
            runs,
            minutes,
            stable,
            replay,
            release,
        } => difftest::main(difftest::Args {
            seed,
            steps,
            runs,
            minutes,
            stable,
            replay,
            release,
        }),
    }
}
