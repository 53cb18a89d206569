//! `lancet index list|search|build`: indexes of a table, and exact filter answers
//! ([`lancet::Dataset::search`]).

use clap::Subcommand;

use crate::at::At;
use std::io::Write;

use lancet::Dataset;
use serde_json::json;

use crate::error::CliError;

async fn open(uri: &str, version: Option<u64>) -> Result<Dataset, CliError> {
    let store = lancet::paths::DatasetStore::open(uri)?;
    Ok(Dataset::open_with(store, version, lancet::Caches::new(Default::default())).await?)
}

pub async fn list(uri: &str, version: Option<u64>, json_out: bool) -> Result<(), CliError> {
    let ds = open(uri, version).await?;
    let mut out = Vec::new();
    for s in ds.storage().index_summaries()? {
        out.push(json!({
            "name": s.name,
            "type": s.index_type,
            "columns": s.columns,
            "segments": s.segments,
            "index_version": s.index_version,
            "dataset_version": s.dataset_version,
            "fragment_ids": s.fragments.iter().collect::<Vec<_>>(),
            "answered_by_lancet": s.answered_by_lancet,
        }));
    }
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    if json_out {
        writeln!(w, "{}", json!({ "indices": out }))?;
    } else if out.is_empty() {
        writeln!(w, "no indexes")?;
    } else {
        for i in &out {
            let answered = if i["answered_by_lancet"] == json!(true) {
                "answered through it"
            } else {
                "not used by lancet"
            };
            writeln!(
                w,
                "{} ({}) on {} ({} segment(s), built at version {}, {} fragments; {answered})",
                i["name"].as_str().unwrap_or(""),
                i["type"].as_str().unwrap_or(""),
                i["columns"],
                i["segments"],
                i["dataset_version"],
                i["fragment_ids"].as_array().map_or(0, Vec::len)
            )?;
        }
    }
    Ok(())
}

pub async fn search(
    uri: &str,
    version: Option<u64>,
    filter_text: &str,
    json_out: bool,
    no_deletions: bool,
) -> Result<(), CliError> {
    let filter = lancet::Filter::parse(filter_text)?;
    let ds = open(uri, version).await?;
    let options = lancet::SearchOptions {
        apply_deletions: !no_deletions,
    };
    let found = ds.storage().search_with(&filter, &options).await?;
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    if json_out {
        let out = json!({
            "row_ids": found.row_ids.iter().collect::<Vec<_>>(),
            "null_row_ids": found.null_row_ids.iter().collect::<Vec<_>>(),
            "pages_read": found.pages_read,
            "scanned_fragments": found.scanned_fragments,
        });
        writeln!(w, "{out}")?;
    } else {
        writeln!(
            w,
            "{} rows match, {} rows are NULL for the filter, {} pages read, {} fragments scanned",
            found.row_ids.len(),
            found.null_row_ids.len(),
            found.pages_read,
            found.scanned_fragments
        )?;
        let shown: Vec<u64> = found.row_ids.iter().take(20).collect();
        writeln!(w, "first row ids: {shown:?}")?;
    }
    Ok(())
}

pub async fn build(uri: &str, column: &str, zone_size: u64) -> Result<(), CliError> {
    let ds = open(uri, None).await?;
    let next = ds.build_btree(column, zone_size).await?.dataset;
    println!(
        "built BTree {column}_idx ({zone_size}-row pages) and committed version {}",
        next.version()
    );
    Ok(())
}

pub async fn optimize(uri: &str, merge: bool, json: bool) -> Result<(), CliError> {
    let ds = open(uri, None).await?;
    let next = ds
        .optimize()
        .optimize_indices(&lancet::OptimizeOptions {
            merge: if merge { usize::MAX } else { 0 },
        })
        .await?
        .dataset;
    let segments: usize = next
        .storage()
        .btree_indices()
        .iter()
        .map(|(_, s)| s.len())
        .sum();
    if json {
        println!(
            "{}",
            serde_json::json!({ "version": next.version(), "btree_segments": segments })
        );
    } else if next.version() == ds.version() {
        println!(
            "every index covers every fragment (version {})",
            next.version()
        );
    } else {
        println!(
            "optimized indexes: {segments} BTree segments, version {}",
            next.version()
        );
    }
    Ok(())
}

pub async fn drop(uri: &str, name: &str) -> Result<(), CliError> {
    let ds = open(uri, None).await?;
    let segments = ds
        .storage()
        .indices()
        .iter()
        .filter(|m| m.name == name)
        .count();
    let next = ds.storage().drop_index(name).await?.dataset;
    println!(
        "dropped index {name} ({segments} segments) and committed version {}",
        next.version()
    );
    Ok(())
}

#[derive(Subcommand)]
pub enum IndexCommand {
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
    /// Drop an index (every segment of it) in a new version, as Lance's `drop_index`; its
    /// files stay until cleanup.
    Drop {
        dataset: String,
        #[arg(long)]
        name: String,
    },
    /// Train a BTree on a column and commit it as a new version.
    Build {
        dataset: String,
        #[arg(long)]
        column: String,
        /// Rows per page.
        #[arg(long, default_value_t = lancet::btree::DEFAULT_PAGE_ROWS)]
        zone_size: u64,
    },
}

/// `lancet index ...`.
pub async fn run(command: IndexCommand) -> Result<(), CliError> {
    match command {
        IndexCommand::List { dataset, at, json } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            list(&dataset, version, json).await
        }
        IndexCommand::Search {
            dataset,
            filter,
            at,
            json,
            no_deletions,
        } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            search(&dataset, version, &filter, json, no_deletions).await
        }
        IndexCommand::Build {
            dataset,
            column,
            zone_size,
        } => build(&dataset, &column, zone_size).await,
        IndexCommand::Optimize {
            dataset,
            merge,
            json,
        } => optimize(&dataset, merge, json).await,
        IndexCommand::Drop { dataset, name } => drop(&dataset, &name).await,
    }
}
