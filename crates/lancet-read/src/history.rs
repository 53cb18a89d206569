//! The versions after a snapshot and their transactions, read once: what a commit that lost
//! a race rebases over, and what a staged write checks its base against.

use lancet_paths::StoredTransaction;

use crate::error::Result;
use crate::snapshot::Snapshot;

/// The versions after this one up to the latest, each with its transaction
/// ([`lancet_paths::transaction::versions_since`]); and the latest version. Manifests read
/// here seed the manifest cache, so opening the latest version reads nothing twice.
pub async fn transactions_since(
    snap: &Snapshot,
) -> Result<(Snapshot, Vec<(u64, Option<StoredTransaction>)>)> {
    transactions_through(snap, snap.version()).await
}

/// `Dataset::transactions_since` when version `known` is known to exist (the version a
/// commit lost): the hint is read while the manifests through `known` are, not before.
pub async fn transactions_through(
    snap: &Snapshot,
    known: u64,
) -> Result<(Snapshot, Vec<(u64, Option<StoredTransaction>)>)> {
    let scheme = snap.naming_scheme();
    let read =
        lancet_paths::transaction::versions_since(snap.store(), scheme, snap.version(), known)
            .await?;
    let mut out = Vec::with_capacity(read.len());
    let mut files = Vec::with_capacity(read.len());
    for (file, txn) in read {
        out.push((file.entry.version, txn));
        files.push(file);
    }
    for file in files {
        snap.cache_manifest(file).await;
    }
    let latest = snap.checkout(snap.version() + out.len() as u64).await?;
    Ok((latest, out))
}

/// This version's transaction (what the commit that made it did), if it records one.
pub async fn transaction(snap: &Snapshot) -> Result<Option<StoredTransaction>> {
    Ok(lancet_paths::transaction::read_transaction(snap.store(), snap.manifest_file()).await?)
}
