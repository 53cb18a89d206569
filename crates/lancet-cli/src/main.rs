//! `lancet`: inspect and operate on Lance tables with lancet's crates.

mod bench;
mod cleanup;
mod cleanup_bench;
mod compact;
mod data;
mod demo;
mod error;
mod fri;
mod index;
mod inspect;
mod io;
mod restore;
mod rowid;
mod search_bench;
mod tag;
mod tree;
mod verify;
mod workload;

use clap::{Parser, Subcommand};

use crate::error::CliError;

#[derive(Parser)]
#[command(
    name = "lancet",
    version,
    about = "Inspect, verify and operate on Lance tables"
)]
struct Cli {
    /// Log what lancet does to stderr: -v commits and retries, -vv every object read and
    /// span timings, -vvv everything. `RUST_LOG` (tracing's filter syntax) overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create a table from a file (.parquet, .arrow/.ipc, .arrows, .csv, .jsonl/.ndjson).
    Create {
        dataset: String,
        /// The rows: their schema is the table's (inferred for CSV and JSON lines).
        #[arg(long)]
        from: std::path::PathBuf,
        /// Give rows stable row ids (feature flag 2).
        #[arg(long)]
        stable_row_ids: bool,
        /// Keep fragment records in the manifest (flat) or a fragment tree.
        #[arg(long, value_parser = ["flat", "tree"], default_value = "flat")]
        layout: String,
        /// The data file version: 2.0, 2.1 or 2.2 (Lance 14's default).
        #[arg(long, default_value = "2.2")]
        data_storage_version: String,
        /// A new data file (and fragment) every this many rows.
        #[arg(long, default_value_t = 1024 * 1024)]
        max_rows_per_file: u64,
        /// `create` refuses a location holding a table; `overwrite` replaces its rows (and
        /// schema) in a new version, as pylance's `mode="overwrite"` (creating the table when
        /// there is none).
        #[arg(long, value_parser = ["create", "overwrite"], default_value = "create")]
        mode: String,
    },
    /// Append the rows of a file (read with the table's schema) in one commit, or commit
    /// fragments `write-fragments` wrote (Lance's distributed write) in one Append.
    Append {
        dataset: String,
        #[arg(
            long,
            required_unless_present = "fragments",
            conflicts_with = "fragments"
        )]
        from: Option<std::path::PathBuf>,
        /// JSON files `lancet write-fragments` printed.
        #[arg(long, num_args = 1..)]
        fragments: Vec<std::path::PathBuf>,
    },
    /// Write the rows of a file as new fragments without committing them; prints them as
    /// JSON for `lancet append --fragments` (many writers, one commit).
    WriteFragments {
        dataset: String,
        #[arg(long)]
        from: std::path::PathBuf,
    },
    /// Compact small fragments and fragments with many deleted rows, as Lance 14 plans it:
    /// here in one go, or `--plan` (tasks as JSON), `--execute TASK.json` in any process
    /// (a result as JSON), then `--commit RESULT.json...` once.
    Compact {
        dataset: String,
        #[arg(long, default_value_t = 1024 * 1024)]
        target_rows_per_fragment: u64,
        #[arg(long, default_value_t = 1024)]
        max_rows_per_group: u64,
        /// Keep fragments with many deleted rows unless they are small.
        #[arg(long)]
        no_materialize_deletions: bool,
        #[arg(long, default_value_t = 0.1)]
        materialize_deletions_threshold: f64,
        /// Record the row moves in the Fragment Reuse Index instead of rewriting indexes.
        #[arg(long)]
        defer_index_remap: bool,
        /// Print the tasks as JSON instead of compacting.
        #[arg(long, conflicts_with_all = ["execute", "commit"])]
        plan: bool,
        /// Execute one task (a file `--plan` wrote one of) and print its result as JSON.
        #[arg(long, conflicts_with = "commit")]
        execute: Option<std::path::PathBuf>,
        /// Commit the results of tasks (files `--execute` wrote), all in one version.
        #[arg(long, num_args = 1..)]
        commit: Vec<std::path::PathBuf>,
        /// Print `{"fragments_removed", "fragments_added", "version"}`.
        #[arg(long)]
        json: bool,
    },
    /// Add a column computed from the others (`--expr 'id * 2 + v'`), backfilled some
    /// fragments per commit (fragments not yet backfilled read NULL).
    AddColumn {
        dataset: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        expr: String,
        #[arg(long)]
        fragments_per_commit: Option<usize>,
        /// Print `{"version": V}`.
        #[arg(long)]
        json: bool,
    },
    /// Rename a column or change its nullability (Lance's `alter_columns`: no data
    /// rewritten, the field keeps its id and its indexes).
    AlterColumn {
        dataset: String,
        #[arg(long)]
        column: String,
        #[arg(long)]
        rename: Option<String>,
        #[arg(long)]
        nullable: Option<bool>,
        /// A new type (a cast): not done by lancet yet, refused.
        #[arg(long = "type")]
        data_type: Option<String>,
        /// Print exactly `{"version": V}`.
        #[arg(long)]
        json: bool,
    },
    /// Drop columns (Lance's `drop_columns`: no data rewritten, indexes on them dropped).
    DropColumns {
        dataset: String,
        #[arg(long, value_delimiter = ',', required = true)]
        columns: Vec<String>,
        /// Print exactly `{"version": V}`.
        #[arg(long)]
        json: bool,
    },
    /// Delete the rows where a filter is TRUE.
    Delete {
        dataset: String,
        #[arg(long)]
        filter: String,
        /// Print exactly `{"deleted_rows": N, "version": V}`.
        #[arg(long)]
        json: bool,
    },
    /// Upsert the rows of a file keyed on columns (Lance's merge_insert): by default a
    /// matched row is updated, an unmatched one inserted, and no other row deleted.
    MergeInsert {
        dataset: String,
        #[arg(long)]
        from: std::path::PathBuf,
        /// The key columns, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        on: Vec<String>,
        #[arg(long, value_enum, default_value_t = data::WhenMatched::Update)]
        when_matched: data::WhenMatched,
        /// With `--when-matched update`: update only the pairs where this filter over
        /// `source.COL` and `target.COL` is TRUE (e.g. `source.ts > target.ts`).
        #[arg(long)]
        condition: Option<String>,
        #[arg(long, value_enum, default_value_t = data::WhenNotMatched::Insert)]
        when_not_matched: data::WhenNotMatched,
        #[arg(long, value_enum, default_value_t = data::BySource::Keep)]
        when_not_matched_by_source: data::BySource,
        /// With `--when-not-matched-by-source delete`: delete only where this filter is TRUE.
        #[arg(long, requires = "when_not_matched_by_source")]
        by_source_filter: Option<String>,
        /// Look keys up by scanning even where a BTree covers the key column.
        #[arg(long)]
        no_index: bool,
        /// Print exactly `{"inserted_rows": I, "updated_rows": U, "deleted_rows": D, "version": V}`.
        #[arg(long)]
        json: bool,
    },
    /// Set or remove keys of the table's config, its metadata, its schema's metadata or a
    /// field's metadata (pylance's `update_config` / `update_metadata` /
    /// `update_schema_metadata` / `update_field_metadata`), in one UpdateConfig.
    Metadata {
        dataset: String,
        /// The config (Lance's settings) instead of the table metadata.
        #[arg(long, conflicts_with_all = ["schema", "field"])]
        config: bool,
        /// The schema's metadata.
        #[arg(long, conflicts_with = "field")]
        schema: bool,
        /// The metadata of the field at this path (`a.b`).
        #[arg(long)]
        field: Option<String>,
        /// `KEY=VALUE`, repeatable.
        #[arg(long = "set")]
        set: Vec<String>,
        /// `KEY`, repeatable.
        #[arg(long = "remove")]
        remove: Vec<String>,
        /// Make the map exactly the `--set` entries.
        #[arg(long)]
        replace: bool,
        /// Print exactly `{"version": V}`.
        #[arg(long)]
        json: bool,
    },
    /// Delete every row (pylance's `truncate_table`): schema, indexes and history stay.
    Truncate {
        dataset: String,
        /// Print exactly `{"deleted_rows": N, "version": V}`.
        #[arg(long)]
        json: bool,
    },
    /// Set columns on the rows where a filter is TRUE (`--set 'x = x * 2'`, repeatable).
    Update {
        dataset: String,
        #[arg(long)]
        filter: String,
        #[arg(long = "set", required = true)]
        set: Vec<String>,
        /// Print exactly `{"updated_rows": N, "version": V}`.
        #[arg(long)]
        json: bool,
    },
    /// Print a table's rows (fragment order, then offset), optionally filtered and projected.
    Scan {
        dataset: String,
        #[command(flatten)]
        at: At,
        /// Columns to print, comma-separated, in this order.
        #[arg(long, value_delimiter = ',')]
        columns: Option<Vec<String>>,
        #[arg(long)]
        filter: Option<String>,
        /// Add `_rowid`.
        #[arg(long)]
        with_row_id: bool,
        /// Add `_rowaddr`.
        #[arg(long)]
        with_row_address: bool,
        #[arg(long)]
        limit: Option<u64>,
        #[arg(long, default_value_t = 0)]
        offset: u64,
        /// table (default on a terminal), csv, jsonl (default otherwise), parquet, arrow.
        #[arg(long, value_enum)]
        format: Option<io::OutFormat>,
        /// Write to this file instead of stdout.
        #[arg(short = 'o', long = "output")]
        output: Option<std::path::PathBuf>,
    },
    /// What changed after version `--since` up to `--until` (the latest by default), on a
    /// stable-row-id table, as pylance's `delta`: one table of the rows inserted and updated
    /// (every column, `_rowid`, `_row_created_at_version`, `_row_last_updated_at_version`)
    /// and the row ids deleted, each row led by `_change` (inserted, updated, deleted).
    Changes {
        dataset: String,
        #[arg(long)]
        since: u64,
        #[arg(long)]
        until: Option<u64>,
        #[arg(long, value_enum)]
        format: Option<io::OutFormat>,
        #[arg(short = 'o', long = "output")]
        output: Option<std::path::PathBuf>,
    },
    /// Print the rows with these row ids, in the order given.
    Take {
        dataset: String,
        #[command(flatten)]
        at: At,
        #[arg(long = "row-ids", num_args = 1.., required = true)]
        row_ids: Vec<u64>,
        #[arg(long, value_delimiter = ',')]
        columns: Option<Vec<String>>,
        #[arg(long, value_enum)]
        format: Option<io::OutFormat>,
        #[arg(short = 'o', long = "output")]
        output: Option<std::path::PathBuf>,
    },
    /// Tags: names for versions, in Lance's `_refs/tags/` (pylance's `ds.tags`). A tagged
    /// version is kept by every cleanup; read commands open one with `--tag NAME`.
    Tag {
        #[command(subcommand)]
        command: tag::TagCommand,
    },
    /// Branches in Lance's layout (`_refs/branches/`, versions under `tree/NAME`): pylance's
    /// `create_branch` and `branches.list()` see lancet's, and the reverse.
    Branch {
        #[command(subcommand)]
        command: tag::BranchCommand,
    },
    /// Show one version of a table: flags, fragments, indices.
    Inspect {
        /// Dataset URI or local path.
        dataset: String,
        #[command(flatten)]
        at: At,
        /// Print one JSON object instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Stable row ids: every live row's id and address, lookups, segment encodings.
    Rowid {
        /// Dataset URI or local path.
        dataset: String,
        #[command(flatten)]
        at: At,
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
    /// Check every rule on one version (fragment tree, manifest, index entries, row ids)
    /// without opening data files; exit 0 when valid, 1 otherwise.
    Verify {
        /// Dataset URI or local path.
        dataset: String,
        #[command(flatten)]
        at: At,
        /// Print `{"valid","version","rule","object","detail"}` on stdout.
        #[arg(long)]
        json: bool,
        /// Also check `max_fragment_id` against the previous version.
        #[arg(long)]
        check_previous: bool,
        /// Also open every data file: it exists, holds `physical_rows` rows and the field ids
        /// its `DataFile` lists (one or two requests per file).
        #[arg(long)]
        data: bool,
    },
    /// Measure what commits cost.
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// The fragment metadata tree of a version.
    Tree {
        #[command(subcommand)]
        command: TreeCommand,
    },
    /// Create a shallow clone: a new table whose first version is a version of <source>,
    /// sharing its files through a base path (nothing is copied, nothing written to the source).
    Clone {
        source: String,
        target: String,
        #[command(flatten)]
        at: At,
    },
    /// Publish the next version with version N's content (Lance's Restore): the way back from
    /// a bad version. max_fragment_id and next_row_id are not lowered.
    Restore {
        dataset: String,
        /// The version whose content to restore.
        #[arg(long)]
        version: u64,
    },
    /// Remove old versions and every file only they (or no version) need. Kept: the latest
    /// version, tagged versions, versions branches forked from, the last N and those newer than
    /// the age. Files of other datasets (shallow-clone sources) are never touched.
    Cleanup {
        dataset: String,
        /// Versions committed longer ago than this go (`0s`, `90m`, `36h`, `7d`, `2w`). With
        /// neither this nor --retain-versions: 14d, as Lance.
        #[arg(long)]
        older_than: Option<String>,
        /// Keep the newest N versions whatever their age (N >= 1).
        #[arg(long)]
        retain_versions: Option<u64>,
        /// Files no version names are presumed in progress for 7 days; with this, only as long
        /// as --older-than (required with it) says.

        #[arg(long)]
        delete_unverified: bool,
        /// Report what would go; delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print one JSON object: versions kept and removed, objects and bytes per kind.
        #[arg(long)]
        json: bool,
        /// Deletes in flight at once.
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        /// At most this many deletes started per second.
        #[arg(long)]
        rate: Option<u32>,
    },
    /// Create a small real Lance dataset (data files by lance-file, manifest by lancet).
    Demo {
        /// Directory to create (must not hold a dataset yet).
        #[arg(default_value = "lancet-demo")]
        dir: String,
        /// `tree` also publishes a version with the fragments in a fragment tree.
        #[arg(long, value_parser = ["flat", "tree"], default_value = "flat")]
        layout: String,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
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
        workload: workload::Workload,
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

#[derive(Subcommand)]
enum TreeCommand {
    /// Publish version N+1 of a flat table with its fragments in a fragment tree (Lance 14
    /// refuses that version; N stays readable).
    Convert {
        dataset: String,
        /// Records per leaf (default: the tree writer's, 2048).
        #[arg(long)]
        leaf_records: Option<usize>,
        /// Keep the root in the manifest, however large.
        #[arg(long)]
        inline_root: bool,
    },
    /// Publish version N+1 of a tree table as a flat manifest (what Lance 14 reads).
    Flatten { dataset: String },
    /// Height, objects, buffers, watermarks and bytes per object kind (walks and checks the
    /// whole tree).
    Show {
        dataset: String,
        #[command(flatten)]
        at: At,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum FriCommand {
    /// Print the decoded history as JSON.
    Show {
        dataset: String,
        #[command(flatten)]
        at: At,
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
        /// Only maps last modified longer ago than this (`0s`, `90m`, `7d`): a younger one
        /// may belong to a rewrite whose version has not landed yet.
        #[arg(long, default_value = "7d")]
        older_than: String,
    },
    /// Translate row addresses read from stdin (one per line) to current addresses.
    Translate {
        dataset: String,
        #[command(flatten)]
        at: At,
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
        #[command(flatten)]
        at: At,
        #[arg(long)]
        json: bool,
    },
    /// Answer a filter in Lance's filter language exactly, with SQL NULL semantics: BTree
    /// indexes where they cover the column, the column read directly elsewhere. Comparisons,
    /// BETWEEN, IN, IS [NOT] NULL, IS [NOT] TRUE/FALSE, IS [NOT] DISTINCT FROM, LIKE,
    /// ILIKE, starts_with, NOT, AND, OR; DATE, TIMESTAMP and CAST literals; constant
    /// arithmetic.
    Search {
        dataset: String,
        #[arg(long)]
        filter: String,
        #[command(flatten)]
        at: At,
        #[arg(long)]
        json: bool,
        /// The index's raw answer, without applying deletion vectors.
        #[arg(long)]
        no_deletions: bool,
    },
    /// Train a BTree on a column and commit it as a new version.
    /// Extend every BTree over the fragments it does not cover (a new segment, or with
    /// `--merge` one segment of everything); after deferred compactions, rewrite segments
    /// with current addresses and trim the Fragment Reuse Index.
    Optimize {
        dataset: String,
        #[arg(long)]
        merge: bool,
        /// Print `{"version", "btree_segments"}`.
        #[arg(long)]
        json: bool,
    },
    Build {
        dataset: String,
        #[arg(long)]
        column: String,
        /// Rows per page.
        #[arg(long, default_value_t = lancet::btree::DEFAULT_PAGE_ROWS)]
        zone_size: u64,
    },
}

/// Which version a read command opens: the latest, `--version N`, the version `--tag NAME`
/// names, or branch `--branch NAME` (its latest version, or `--version` of it).
#[derive(clap::Args, Debug, Clone)]
struct At {
    /// Open this version (the latest by default; of the branch with `--branch`).
    #[arg(long)]
    version: Option<u64>,
    /// Open the version this tag names (`lancet tag list`) instead.
    #[arg(long, conflicts_with = "version")]
    tag: Option<String>,
    /// Read branch NAME (`lancet branch list`): its latest version, or `--version` of it.
    #[arg(long, conflicts_with = "tag")]
    branch: Option<String>,
}

impl At {
    /// The dataset root and version to open (`lancet::VersionRef::resolve`).
    async fn resolve(self, uri: &str) -> Result<(String, Option<u64>), CliError> {
        let at = lancet::VersionRef {
            version: self.version,
            tag: self.tag,
            branch: self.branch,
        };
        Ok(at.resolve(uri).await?)
    }
}

async fn run(cli: Cli) -> Result<std::process::ExitCode, CliError> {
    let done = |r: Result<(), CliError>| r.map(|()| std::process::ExitCode::SUCCESS);
    match cli.command {
        Command::Verify {
            dataset,
            at,
            json,
            check_previous,
            data,
        } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            verify::run(&dataset, version, json, check_previous, data).await
        }
        Command::Tree { command } => done(match command {
            TreeCommand::Show { dataset, at, json } => match at.resolve(&dataset).await {
                Ok((dataset, version)) => tree::show(&dataset, version, json).await,
                Err(e) => Err(e),
            },
            TreeCommand::Convert {
                dataset,
                leaf_records,
                inline_root,
            } => {
                let leaf_records = leaf_records
                    .unwrap_or(lancet::tree::TreeWriterConfig::default().leaf_max_records);
                tree::convert(&dataset, leaf_records, inline_root).await
            }
            TreeCommand::Flatten { dataset } => tree::flatten(&dataset).await,
        }),
        Command::Bench {
            command:
                BenchCommand::Cleanup {
                    fragments,
                    versions,
                    changed,
                    retain,
                    layout,
                    store,
                    json,
                },
        } => done(
            cleanup_bench::run(cleanup_bench::Options {
                fragments,
                versions,
                changed,
                retain,
                tree: layout == "tree",
                store,
                json,
            })
            .await,
        ),
        Command::Bench {
            command:
                BenchCommand::Search {
                    dataset,
                    filter,
                    iterations,
                    warmup,
                    json,
                },
        } => done(
            search_bench::run(search_bench::Options {
                dataset,
                filter,
                iterations,
                warmup,
                json,
            })
            .await,
        ),
        Command::Bench {
            command:
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
                },
        } => {
            let d = lancet::tree::TreeWriterConfig::default();
            let config = lancet::tree::TreeWriterConfig {
                leaf_max_records: leaf_records.unwrap_or(d.leaf_max_records),
                fanout_max: fanout.unwrap_or(d.fanout_max),
                since_root_max_bytes: since_root_bytes.unwrap_or(d.since_root_max_bytes),
                root_buffer_max_bytes: root_buffer_bytes.unwrap_or(d.root_buffer_max_bytes),
                node_buffer_max_bytes: node_buffer_bytes.unwrap_or(d.node_buffer_max_bytes),
                inline_root_max_bytes: inline_root_bytes.unwrap_or(d.inline_root_max_bytes),
                ..d
            };
            done(
                bench::commit(bench::Options {
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
                .await,
            )
        }
        Command::Cleanup {
            dataset,
            older_than,
            retain_versions,
            delete_unverified,
            dry_run,
            json,
            concurrency,
            rate,
        } => {
            cleanup::cleanup(
                &dataset,
                cleanup::Options {
                    older_than,
                    retain_versions,
                    delete_unverified,
                    dry_run,
                    json,
                    concurrency,
                    rate,
                },
            )
            .await
        }
        command => done(run_other(command).await),
    }
}

async fn run_other(command: Command) -> Result<(), CliError> {
    match command {
        Command::Create {
            dataset,
            from,
            stable_row_ids,
            layout,
            data_storage_version,
            max_rows_per_file,
            mode,
        } => {
            let options = data::Create {
                stable_row_ids,
                tree: layout == "tree",
                data_storage_version,
                max_rows_per_file,
                overwrite: mode == "overwrite",
            };
            data::create(&dataset, &from, options).await
        }
        Command::Compact {
            dataset,
            target_rows_per_fragment,
            max_rows_per_group,
            no_materialize_deletions,
            materialize_deletions_threshold,
            defer_index_remap,
            plan,
            execute,
            commit,
            json,
        } => {
            let options = lancet::CompactionOptions {
                target_rows_per_fragment,
                max_rows_per_group,
                materialize_deletions: !no_materialize_deletions,
                materialize_deletions_threshold,
                defer_index_remap,
                ..Default::default()
            };
            let step = match (plan, execute, commit.is_empty()) {
                (true, _, _) => compact::Step::Plan,
                (_, Some(task), _) => compact::Step::Execute(task),
                (_, None, false) => compact::Step::Commit(commit),
                (_, None, true) => compact::Step::All,
            };
            compact::run(&dataset, step, options, json).await
        }
        Command::AddColumn {
            dataset,
            name,
            expr,
            fragments_per_commit,
            json,
        } => data::add_column(&dataset, &name, &expr, fragments_per_commit, json).await,
        Command::Append {
            dataset,
            from,
            fragments,
        } => match from {
            Some(from) => data::append(&dataset, &from).await,
            None => data::append_fragments(&dataset, &fragments).await,
        },
        Command::MergeInsert {
            dataset,
            from,
            on,
            when_matched,
            condition,
            when_not_matched,
            when_not_matched_by_source,
            by_source_filter,
            no_index,
            json,
        } => {
            let how = data::MergeHow {
                on,
                when_matched,
                condition,
                when_not_matched,
                by_source: when_not_matched_by_source,
                by_source_filter,
                use_index: !no_index,
            };
            data::merge_insert(&dataset, &from, how, json).await
        }
        Command::Metadata {
            dataset,
            config,
            schema,
            field,
            set,
            remove,
            replace,
            json,
        } => {
            let target = match (config, schema, field.as_deref()) {
                (true, _, _) => lancet::MetadataTarget::Config,
                (_, true, _) => lancet::MetadataTarget::Schema,
                (_, _, Some(path)) => lancet::MetadataTarget::Field(path),
                _ => lancet::MetadataTarget::Table,
            };
            data::update_metadata(&dataset, target, &set, &remove, replace, json).await
        }
        Command::Truncate { dataset, json } => data::truncate(&dataset, json).await,
        Command::WriteFragments { dataset, from } => data::write_fragments(&dataset, &from).await,
        Command::Delete {
            dataset,
            filter,
            json,
        } => data::delete(&dataset, &filter, json).await,
        Command::DropColumns {
            dataset,
            columns,
            json,
        } => data::drop_columns(&dataset, &columns, json).await,
        Command::AlterColumn {
            dataset,
            column,
            rename,
            nullable,
            data_type,
            json,
        } => {
            let data_type = data_type.map(|t| data::sql_type(&t)).transpose()?;
            let alteration = lancet::ColumnAlteration {
                path: column,
                rename,
                nullable,
                data_type,
            };
            data::alter_column(&dataset, alteration, json).await
        }
        Command::Update {
            dataset,
            filter,
            set,
            json,
        } => data::update(&dataset, &filter, &set, json).await,
        Command::Scan {
            dataset,
            at,
            columns,
            filter,
            with_row_id,
            with_row_address,
            limit,
            offset,
            format,
            output,
        } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            let scan = data::Scan {
                version,
                filter,
                with_row_id,
                with_row_address,
                limit,
                offset,
            };
            let out = data::Output {
                columns,
                format,
                path: output.as_deref(),
            };
            data::scan(&dataset, scan, out).await
        }
        Command::Take {
            dataset,
            at,
            row_ids,
            columns,
            format,
            output,
        } => {
            let out = data::Output {
                columns,
                format,
                path: output.as_deref(),
            };
            let (dataset, version) = at.resolve(&dataset).await?;
            data::take(&dataset, version, &row_ids, out).await
        }
        Command::Changes {
            dataset,
            since,
            until,
            format,
            output,
        } => {
            let out = data::Output {
                columns: None,
                format,
                path: output.as_deref(),
            };
            data::changes(&dataset, since, until, out).await
        }
        Command::Restore { dataset, version } => restore::run(&dataset, version).await,
        Command::Inspect { dataset, at, json } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            inspect::run(&dataset, version, json).await
        }
        Command::Rowid {
            dataset,
            at,
            json,
            lookup,
            segments,
            versions,
        } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            rowid::run(&dataset, version, json, &lookup, segments, versions).await
        }
        Command::Tag { command } => tag::run(command).await,
        Command::Branch { command } => tag::branch(command).await,
        Command::Index { command } => match command {
            IndexCommand::List { dataset, at, json } => {
                let (dataset, version) = at.resolve(&dataset).await?;
                index::list(&dataset, version, json).await
            }
            IndexCommand::Search {
                dataset,
                filter,
                at,
                json,
                no_deletions,
            } => {
                let (dataset, version) = at.resolve(&dataset).await?;
                index::search(&dataset, version, &filter, json, no_deletions).await
            }
            IndexCommand::Build {
                dataset,
                column,
                zone_size,
            } => index::build(&dataset, &column, zone_size).await,
            IndexCommand::Optimize {
                dataset,
                merge,
                json,
            } => index::optimize(&dataset, merge, json).await,
        },
        Command::Fri { command } => match command {
            FriCommand::Show { dataset, at, .. } => {
                let (dataset, version) = at.resolve(&dataset).await?;
                fri::show(&dataset, version).await
            }
            FriCommand::Translate { dataset, at, .. } => {
                let (dataset, version) = at.resolve(&dataset).await?;
                fri::translate(&dataset, version).await
            }
            FriCommand::Upgrade { dataset } => fri::upgrade(&dataset).await,
            FriCommand::Trim { dataset } => fri::trim(&dataset).await,
            FriCommand::Unreferenced {
                dataset,
                delete,
                older_than,
            } => fri::unreferenced(&dataset, delete, &older_than).await,
        },
        Command::Demo { dir, layout } => demo::run(&dir, layout == "tree").await,
        Command::Clone { source, target, at } => {
            let (source, version) = at.resolve(&source).await?;
            cleanup::clone(&source, &target, version).await
        }
        Command::Verify { .. }
        | Command::Tree { .. }
        | Command::Bench { .. }
        | Command::Cleanup { .. } => Ok(()),
    }
}

/// Where the last panic happened, recorded by the panic hook for `main` to report.
static PANIC_AT: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// A panic is a lancet bug, never an answer: the hook only records where it happened (a
/// decoder's caught panic becomes a typed error); one that reaches `main` is reported as
/// `lancet: internal error at <location>` with exit status 101.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map_or_else(|| "an unknown location".to_string(), |l| l.to_string());
        if let Ok(mut slot) = PANIC_AT.lock() {
            *slot = Some(at);
        }
    }));
}

/// Sends lancet's tracing spans and events to stderr: `RUST_LOG` when set, otherwise the
/// level `-v` asks for (warnings only without it). From `-vv` on, each span's busy and idle
/// time is printed when it closes.
fn install_logging(verbose: u8) {
    use tracing_subscriber::fmt::format::FmtSpan;
    use tracing_subscriber::EnvFilter;
    let level = match verbose {
        0 => "warn",
        1 => "warn,lancet=info,lancet_tree=info,lancet_paths=info,lancet_btree=info",
        2 => "warn,lancet=debug,lancet_tree=debug,lancet_paths=debug,lancet_file=debug,lancet_btree=debug,lancet_reuse=debug,lancet_rowid=debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let spans = if verbose >= 2 {
        FmtSpan::CLOSE
    } else {
        FmtSpan::NONE
    };
    // A second subscriber (a test harness's) is not an error worth stopping for.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(spans)
        .with_writer(std::io::stderr)
        .with_target(true)
        .try_init();
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    install_panic_hook();
    install_logging(cli.verbose);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lancet: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on(run(cli))));
    match outcome {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            eprintln!("lancet: {e}");
            std::process::ExitCode::FAILURE
        }
        Err(_) => {
            let at = PANIC_AT
                .lock()
                .ok()
                .and_then(|s| s.clone())
                .unwrap_or_else(|| "an unknown location".into());
            eprintln!("lancet: internal error at {at}");
            std::process::ExitCode::from(101)
        }
    }
}
