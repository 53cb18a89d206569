//! `lancet fri show|translate`: the Fragment Reuse Index of a version.

use clap::Subcommand;

use crate::at::At;
use std::io::{BufRead, Write};

use lancet::reuse::{Mapping, Translation};
use lancet::Dataset;
use serde_json::{json, Value};

use crate::error::CliError;

async fn open(uri: &str, version: Option<u64>) -> Result<Dataset, CliError> {
    let store = lancet::paths::DatasetStore::open(uri)?;
    Ok(Dataset::open_with(store, version, lancet::Caches::new(Default::default())).await?)
}

pub async fn show(uri: &str, version: Option<u64>) -> Result<(), CliError> {
    let ds = open(uri, version).await?;
    let Some(history) = ds.storage().fri_history().await? else {
        println!("{}", json!({ "fri": null }));
        return Ok(());
    };
    let entry = ds.storage().fri_entry();
    let digests = |list: &[lancet::reuse::Digest]| -> Vec<Value> {
        list.iter()
            .map(|d| json!({"id": d.id, "physical_rows": d.physical_rows, "num_deleted_rows": d.num_deleted_rows}))
            .collect()
    };
    let transitions: Vec<Value> = history
        .ledger
        .transitions
        .iter()
        .map(|t| {
            let mapping = match &t.mapping {
                Mapping::OrderedCompaction { surviving } => {
                    json!({"ordered_compaction": {"surviving_rows": surviving.len()}})
                }
                Mapping::StablePartition { map_id, map_size_bytes, base_id } => json!({
                    "stable_partition": {"map_id": map_id, "map_size_bytes": map_size_bytes, "base_id": base_id}
                }),
            };
            json!({
                "dataset_version": t.dataset_version,
                "sources": digests(&t.sources),
                "destinations": digests(&t.destinations),
                "mapping": mapping,
            })
        })
        .collect();
    let uuid = entry
        .and_then(|e| e.uuid.as_ref())
        .and_then(|u| lancet::paths::ObjectUuid::from_slice(&u.uuid).ok())
        .map(|u| u.to_string());
    println!(
        "{}",
        json!({
            "fri": {
                "uuid": uuid,
                "index_version": history.ledger.index_version,
                "dataset_version": entry.map(|e| e.dataset_version),
                "has_unsupported_transitions": history.ledger.has_unsupported,
                "transitions": transitions,
            }
        })
    );
    Ok(())
}

/// Reads one row address per line on stdin; prints each one's current address, or null when
/// the row was deleted. Without an FRI every address is returned unchanged.
pub async fn translate(uri: &str, version: Option<u64>) -> Result<(), CliError> {
    let ds = open(uri, version).await?;
    let mut addrs = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        addrs.push(
            t.parse::<u64>()
                .map_err(|_| CliError::Usage(format!("not a row address: {t:?}")))?,
        );
    }
    let out: Vec<Value> = match ds.storage().fri_history().await? {
        None => addrs.iter().map(|a| json!(a)).collect(),
        Some(h) => h
            .translate(&addrs)
            .await
            .map_err(lancet::Error::from)?
            .into_iter()
            .map(|t| match t {
                Translation::Address(a) => json!(a),
                Translation::Deleted => Value::Null,
            })
            .collect(),
    };
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    writeln!(w, "{}", json!({ "translated": out }))?;
    Ok(())
}

/// Re-publishes the history as a tagged (v1) entry in a new version.
pub async fn trim(uri: &str) -> Result<(), CliError> {
    let ds = open(uri, None).await?;
    let before = ds
        .storage()
        .fri_ledger()
        .await?
        .map_or(0, |l| l.transitions.len());
    let trimmed = ds.storage().trim_fri().await?;
    match (trimmed.versions > 0).then_some(trimmed.dataset) {
        Some(next) => {
            let after = next
                .storage()
                .fri_ledger()
                .await?
                .map_or(0, |l| l.transitions.len());
            println!(
                "{}",
                json!({"version": next.version(), "transitions_before": before, "transitions_after": after})
            );
        }
        None => println!(
            "{}",
            json!({"version": null, "transitions_before": before, "transitions_after": before})
        ),
    }
    Ok(())
}

pub async fn unreferenced(uri: &str, delete: bool, older_than: &str) -> Result<(), CliError> {
    let older_than = crate::cleanup::parse_duration(older_than)?;
    let ds = open(uri, None).await?;
    let files = match delete {
        true => {
            ds.storage()
                .delete_unreferenced_fri_files(older_than, &Default::default())
                .await?
        }
        false => ds.storage().unreferenced_fri_files(older_than).await?,
    };
    let names: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    println!("{}", json!({"unreferenced": names, "deleted": delete}));
    Ok(())
}

pub async fn upgrade(uri: &str) -> Result<(), CliError> {
    let ds = open(uri, None).await?;
    let next = ds.storage().upgrade_fri().await?.dataset;
    println!("{}", json!({"version": next.version(), "index_version": 1}));
    Ok(())
}

#[derive(Subcommand)]
pub enum FriCommand {
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

/// `lancet fri ...`.
pub async fn run(command: FriCommand) -> Result<(), CliError> {
    match command {
        FriCommand::Show { dataset, at, .. } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            show(&dataset, version).await
        }
        FriCommand::Translate { dataset, at, .. } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            translate(&dataset, version).await
        }
        FriCommand::Upgrade { dataset } => upgrade(&dataset).await,
        FriCommand::Trim { dataset } => trim(&dataset).await,
        FriCommand::Unreferenced {
            dataset,
            delete,
            older_than,
        } => unreferenced(&dataset, delete, &older_than).await,
    }
}
