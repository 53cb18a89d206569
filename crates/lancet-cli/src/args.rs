//! The `lancet` command line: every command and its arguments (clap's derive). What each
//! command does is in the module named after it; `main` dispatches.

use clap::{Parser, Subcommand};

use crate::at::At;
use crate::bench_cmd::BenchCommand;
use crate::fri::FriCommand;
use crate::index::IndexCommand;
use crate::tree::TreeCommand;
use crate::{data, io, tag};

#[derive(Parser)]
#[command(
    name = "lancet",
    version,
    about = "Inspect, verify and operate on Lance tables"
)]
pub struct Cli {
    /// Log what lancet does to stderr: -v commits and retries, -vv every object read and
    /// span timings, -vvv everything. `RUST_LOG` (tracing's filter syntax) overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Hold every storage request back this long first, as a slow object store would: `50ms`,
    /// or a range `20ms-80ms` each request draws from (benchmarks of cold commands).
    #[arg(long, global = true, value_name = "LATENCY")]
    pub store_latency: Option<String>,
    /// At exit, print what the command asked of storage as one JSON line on stderr: requests
    /// by kind, bytes each way, the longest chain of sequential requests, the wall time.
    #[arg(long, global = true)]
    pub store_stats: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
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
        /// The data file version: 2.0, 2.1 or 2.2 (a new table's default, as Lance 14's);
        /// an overwrite keeps the table's unless this is given, and makes it the table's.
        #[arg(long)]
        data_storage_version: Option<String>,
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
    /// Count a version's rows (pylance's `count_rows`): without a filter from the recorded
    /// counts alone (the manifest, or a tree's root), with one as `scan --filter` answers it.
    Count {
        dataset: String,
        #[command(flatten)]
        at: At,
        #[arg(long)]
        filter: Option<String>,
        /// Print `{"rows": N, "version": V}`.
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
    /// SQL over lancet tables (DataFusion): `lancet sql "SELECT ..." --table t=/data/t`.
    /// Joins across tables work; filters lancet answers exactly are pushed into its scans
    /// (through a BTree where one covers the column), the rest DataFusion evaluates.
    #[cfg(feature = "sql")]
    Sql {
        query: String,
        /// A table the query names: NAME=URI (its latest version) or NAME=URI@VERSION.
        #[arg(long = "table", required = true, value_parser = crate::sql::parse_table)]
        tables: Vec<crate::sql::TableArg>,
        /// Give every table `_rowid` and `_rowaddr` columns.
        #[arg(long)]
        row_columns: bool,
        /// Print the plan instead of the rows: each lancet scan with its filter and the
        /// BTree answering it.
        #[arg(long)]
        explain: bool,
        /// With --explain: run the query and show what each step read.
        #[arg(long, requires = "explain")]
        analyze: bool,
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
    /// Rows are read as version `--until` holds them (the table opened there); pylance's
    /// `delta` asked of a later handle reads that handle's rows, as the Python package does.
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
    /// A picture of one version as a self-contained HTML page (no server, no network):
    /// fragment sizes and deleted shares against compaction's plan, index and FRI coverage,
    /// the fragment tree's shape, the version history and row-id segments.
    Report {
        /// Dataset URI or local path.
        dataset: String,
        #[command(flatten)]
        at: At,
        /// Write the page to this file instead of stdout.
        #[arg(short = 'o', long = "output")]
        output: Option<std::path::PathBuf>,
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
