//! `lancet bench ...`: the benchmark harness's arguments, handed to the `lancet-bench` crate.

use clap::Subcommand;

use crate::error::CliError;
use lancet_bench::{cleanup, commit, search};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Build a table of N fragments, make K commits each changing M fragments; report bytes
    /// written per commit, commit latency and a cold open-to-first-resolve.
    Commit {
        #[arg(long, default_value_t = 100_000)]
        fragments: u64,
        #[arg(long, default_value_t = 100)]
        commits: u64,
        #[arg(long, default_value_t = 10)]
        changed: u64,
        #[arg(long, value_parser = ["tree", "flat"], default_value = "tree")]
        layout: String,
        /// Where to build the table (default: a fresh temporary directory, removed after).
        #[arg(long)]
        store: Option<String>,
        /// Print exactly one JSON object on stdout (progress goes to stderr).
        #[arg(long)]
        json: bool,
        /// Writer policy overrides (defaults: lancet's `TreeWriterConfig::default()`).
        #[arg(long)]
        leaf_records: Option<usize>,
        #[arg(long)]
        fanout: Option<usize>,
        /// Budgets in encoded bytes of buffered mutations (see `TreeWriterConfig`).
        #[arg(long)]
        since_root_bytes: Option<usize>,
        #[arg(long)]
        root_buffer_bytes: Option<usize>,
        #[arg(long)]
        node_buffer_bytes: Option<usize>,
        #[arg(long)]
        inline_root_bytes: Option<usize>,
        /// Concurrent writers, each making K commits on its own fragments (ids ≡ w mod W):
        /// every commit races the others and rebases over what they published.
        #[arg(long, default_value_t = 1)]
        writers: u64,
        /// The session's fragment-tree node cache, in MiB (default: the facade's 256). A
        /// tree whose leaves do not fit it is committed with point reads of cold leaves.
        #[arg(long)]
        node_cache_mb: Option<u64>,
        /// Builds a tree table from its first B fragments (converted) and appends the rest in
        /// commits of B (tree layout only): a table too large to convert in memory at once.
        #[arg(long)]
        build_batch: Option<u64>,
        /// Each commit appends this many rows through `Dataset::append` (a data file written
        /// and an Append committed) instead of giving fragments deletion files.
        #[arg(long)]
        rows: Option<u64>,
        /// What each commit changes: delete (deletion files on random fragments), append (new
        /// fragments), backfill (a data file on consecutive fragments), compact (adjacent
        /// fragments replaced by a quarter as many), mixed (70/20/10 append/delete/compact).
        #[arg(long, value_enum, default_value = "delete")]
        workload: lancet_bench::workload::Workload,
    },
    /// Time hot searches (`Dataset::search`: parsed filter, session caches, deletions
    /// applied) on an existing table: median, p95 and fastest of N after W warm-ups.
    Search {
        dataset: String,
        /// The filter, in Lance's SQL filter language.
        #[arg(long)]
        filter: String,
        #[arg(long, default_value_t = 50)]
        iterations: u64,
        #[arg(long, default_value_t = 5)]
        warmup: u64,
        /// Print exactly one JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Build a history of V versions (each replacing M of F fragments, with a deletion file;
    /// every file a real object), then time a dry run and a cleanup keeping the newest R
    /// versions from a cold handle, counting requests.
    Cleanup {
        #[arg(long, default_value_t = 100)]
        fragments: u64,
        #[arg(long, default_value_t = 1000)]
        versions: u64,
        #[arg(long, default_value_t = 8)]
        changed: u64,
        #[arg(long = "retain-versions", default_value_t = 100)]
        retain: u64,
        #[arg(long, value_parser = ["tree", "flat"], default_value = "flat")]
        layout: String,
        /// Where to build the table (default: a fresh temporary directory, removed after).
        #[arg(long)]
        store: Option<String>,
        /// Print exactly one JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
}

/// `lancet bench ...`.
pub async fn run(command: BenchCommand) -> Result<(), CliError> {
    match command {
        BenchCommand::Cleanup {
            fragments,
            versions,
            changed,
            retain,
            layout,
            store,
            json,
        } => {
            let options = cleanup::Options {
                fragments,
                versions,
                changed,
                retain,
                tree: layout == "tree",
                store,
                json,
            };
            Ok(cleanup::run(options).await?)
        }
        BenchCommand::Search {
            dataset,
            filter,
            iterations,
            warmup,
            json,
        } => {
            let options = search::Options {
                dataset,
                filter,
                iterations,
                warmup,
                json,
            };
            Ok(search::run(options).await?)
        }
        BenchCommand::Commit {
            fragments,
            commits,
            changed,
            layout,
            store,
            json,
            leaf_records,
            fanout,
            since_root_bytes,
            root_buffer_bytes,
            node_buffer_bytes,
            inline_root_bytes,
            writers,
            node_cache_mb,
            build_batch,
            rows,
            workload,
        } => {
            let config = writer_config(
                [leaf_records, fanout],
                [
                    since_root_bytes,
                    root_buffer_bytes,
                    node_buffer_bytes,
                    inline_root_bytes,
                ],
            );
            Ok(commit::commit(commit::Options {
                fragments,
                commits,
                changed,
                tree: layout == "tree",
                store,
                json,
                config,
                writers,
                node_cache_bytes: node_cache_mb.map(|mb| mb << 20),
                build_batch,
                rows,
                workload,
            })
            .await?)
        }
    }
}

/// The tree writer's policy with the bench's overrides: `[leaf records, fanout]` and the
/// byte budgets `[since root, root buffer, node buffer, inline root]`.
fn writer_config(
    [leaf_records, fanout]: [Option<usize>; 2],
    [since_root, root_buffer, node_buffer, inline_root]: [Option<usize>; 4],
) -> lancet::tree::TreeWriterConfig {
    let d = lancet::tree::TreeWriterConfig::default();
    lancet::tree::TreeWriterConfig {
        leaf_max_records: leaf_records.unwrap_or(d.leaf_max_records),
        fanout_max: fanout.unwrap_or(d.fanout_max),
        since_root_max_bytes: since_root.unwrap_or(d.since_root_max_bytes),
        root_buffer_max_bytes: root_buffer.unwrap_or(d.root_buffer_max_bytes),
        node_buffer_max_bytes: node_buffer.unwrap_or(d.node_buffer_max_bytes),
        inline_root_max_bytes: inline_root.unwrap_or(d.inline_root_max_bytes),
        ..d
    }
}
