//! The one way a version is published, for every write path (commits of actions, conversion,
//! flattening, rewrites, FRI publication, restore, clones):
//!
//! 1. the manifest object is encoded and decoded again as a reader decodes it
//!    (`lancet_paths::manifest::prepare_manifest`), then opened as [`Dataset::open_with`] opens
//!    a version (reader flags, base paths, the fragment tree's root);
//! 2. the candidate is judged by `lancet-txn`'s invariants against the version it was
//!    prepared on, with the row ids of the changed fragments on a stable-row-id table;
//! 3. only then are the transaction file, the manifest (put-if-absent: the visibility
//!    boundary) and the latest-version hint written.
//!
//! A refusal at 1 or 2 writes nothing visible: no manifest, no hint (tree objects a commit
//! staged are unreferenced, and cleanup's age rule removes them). The handle returned is
//! the candidate opened in step 1, so a published version is never read back to be checked.

use std::sync::Arc;

use lancet_paths::manifest::{self, NamingScheme};
use lancet_paths::{DatasetStore, PathsError};
use lancet_proto::table::{IndexMetadata, Manifest, Transaction};
use lancet_txn::{Candidate, FragmentChange, Invariant, RowIdChanges, TxnError};

use lancet_read::error::{Error, ErrorKind, Result};
use lancet_read::session_caches::Caches;
use lancet_read::snapshot::Snapshot;
use lancet_read::{fri, rowids};

/// A version about to be published.
pub(crate) struct Publication<'a> {
    /// With `version` set to the number it takes.
    pub manifest: &'a Manifest,
    pub indices: &'a [IndexMetadata],
    /// Manifest fields lancet does not model, carried over.
    pub unknown_fields: &'a [u8],
    pub scheme: NamingScheme,
    pub transaction: Option<&'a Transaction>,
    /// The version it was prepared on, in the same table; `None` for a table's first version.
    pub previous: Option<&'a Snapshot>,
    /// The fragments that differ from `previous`; `None` on a flat candidate computes them
    /// from the two flat lists.
    pub changes: Option<&'a [FragmentChange]>,
    /// The data files the candidate adds, as stored; `None` when the writer did not read them.
    pub data_files: Option<&'a [lancet_txn::DataFileFacts]>,
    /// Reserved fragment ids the candidate's new fragments may take (see
    /// `lancet_txn::Candidate::reserved`).
    pub reserved: &'a [u64],
}

/// Judges `p` and publishes it in `store`, returning the new version and its manifest's size.
/// Losing the put-if-absent race is `PathsError::AlreadyExists` (the caller decides whether
/// the version is its own, and whether to rebase).
pub(crate) async fn publish(
    store: &DatasetStore,
    caches: &Arc<Caches>,
    p: Publication<'_>,
) -> Result<(Snapshot, u64)> {
    let version = p.manifest.version;
    let refused = |e: Error| -> Error {
        match e.kind() {
            ErrorKind::Corrupt | ErrorKind::Unsupported => Error::Txn(TxnError::invalid(
                version,
                Invariant::ManifestDecodes,
                format!("manifest of version {version}"),
                e.to_string(),
            )),
            _ => e,
        }
    };
    judge(&p).await?;
    let prepared = manifest::prepare_manifest(
        store,
        &manifest::ManifestContent {
            indices: p.indices,
            unknown_fields: p.unknown_fields,
            scheme: p.scheme,
            transaction: p.transaction,
            ..manifest::ManifestContent::new(p.manifest)
        },
    )
    .map_err(|e| refused(e.into()))?;
    let candidate = Snapshot::from_manifest(
        store.clone(),
        Arc::new(prepared.file.clone()),
        caches.clone(),
        p.previous.map(|prev| prev.file_store().clone()),
    )
    .await
    .map_err(refused)?;
    let candidate = match p.previous {
        Some(prev) => candidate.with_clock(prev.clock().clone()),
        None => candidate,
    };
    manifest::publish_prepared(store, &prepared).await?;
    candidate.cache_manifest(prepared.file).await;
    Ok((candidate, prepared.bytes.len() as u64))
}

/// `p` judged by lancet-txn's invariants, with the facts they need read first: the
/// fragments changed (diffed from a flat previous version when the caller does not name
/// them), row-id changes, new deletion files missing from storage, and new FRI transitions.
async fn judge(p: &Publication<'_>) -> Result<()> {
    let version = p.manifest.version;
    let diffed;
    let changes = match (p.changes, p.previous) {
        (Some(c), _) => c,
        (None, Some(prev)) if prev.tree().is_none() && p.manifest.fragment_tree.is_none() => {
            diffed = lancet_txn::diff_fragments(&prev.manifest().fragments, &p.manifest.fragments);
            &diffed
        }
        (None, _) => &[],
    };
    let stable = lancet_txn::protocol::has_stable_row_ids(p.manifest);
    let row_ids = match p.previous {
        Some(prev) if stable && !changes.is_empty() => row_id_changes(prev, changes).await?,
        _ => None,
    };
    // A writer that reads the files it adds (every commit of fragments) has its new deletion
    // files looked up too; on a stable-row-id table they were read with the row ids.
    let missing_deletion_files = match p.previous {
        Some(prev) if !stable && p.data_files.is_some() => {
            missing_deletion_files(prev, changes).await?
        }
        _ => Vec::new(),
    };
    let fri_transitions = match p.previous {
        Some(prev) => new_fri_transitions(prev, p.manifest, p.indices).await?,
        None => Vec::new(),
    };
    lancet_txn::check(&Candidate {
        version,
        previous: p.previous.map(|d| lancet_txn::Version {
            manifest: d.manifest(),
            indices: d.indices(),
        }),
        next: lancet_txn::Version {
            manifest: p.manifest,
            indices: p.indices,
        },
        changes,
        row_ids: row_ids.as_ref(),
        operation: p.transaction.and_then(|t| t.operation.as_ref()),
        data_files: p.data_files,
        unmodelled: match p.previous {
            Some(prev) if prev.tree().is_none() => {
                prev.manifest_file().decoded.unmodelled_fragments()
            }
            _ => &[],
        },
        missing_deletion_files: &missing_deletion_files,
        reserved: p.reserved,
        fri_transitions: &fri_transitions,
    })?;
    Ok(())
}

/// The changed fragments whose new deletion file (one the fragment did not name before) is
/// not in storage: one size request each, at most 16 at once.
/// The transitions the candidate's Fragment Reuse Index entry holds that the previous
/// version's does not (none when the entry is the same object): each a rewrite this commit
/// records, judged by `Invariant::FriTransitionCommitted`.
async fn new_fri_transitions(
    prev: &Snapshot,
    manifest: &Manifest,
    indices: &[IndexMetadata],
) -> Result<Vec<lancet_txn::compaction::GroupIds>> {
    let Some(next) = indices.iter().find(|m| lancet_reuse::is_fri_entry(m)) else {
        return Ok(Vec::new());
    };
    if fri::fri_entry(prev).is_some_and(|e| e.uuid == next.uuid) {
        return Ok(Vec::new());
    }
    let ids = |t: &lancet_reuse::Transition| lancet_txn::compaction::GroupIds {
        sources: t.sources.iter().map(|d| d.id).collect(),
        destinations: t.destinations.iter().map(|d| d.id).collect(),
    };
    let old: Vec<_> = match fri::fri_ledger(prev).await? {
        Some(l) => l.transitions.iter().map(ids).collect(),
        None => Vec::new(),
    };
    let ledger = fri::decode_fri_under(prev, next, manifest).await?;
    Ok(ledger
        .transitions
        .iter()
        .map(ids)
        .filter(|t| !old.contains(t))
        .collect())
}

async fn missing_deletion_files(prev: &Snapshot, changes: &[FragmentChange]) -> Result<Vec<u64>> {
    use futures::{StreamExt, TryStreamExt};
    let mut located = Vec::new();
    for c in changes {
        let Some(after) = &c.after else { continue };
        let before = c.before.as_ref().and_then(|b| b.deletion_file.as_ref());
        if after.deletion_file.is_none() || after.deletion_file.as_ref() == before {
            continue;
        }
        // one this session wrote (or read) is stored
        if rowids::deletion_vector_known(prev, after).await? {
            continue;
        }
        if let Some(location) = prev.deletion_file_location(after)? {
            located.push((after.id, location));
        }
    }
    let found: Vec<Option<u64>> = futures::stream::iter(located)
        .map(|(id, location)| async move {
            let store = prev.store_for(&location.base)?;
            match store.size(&store.path(&location.path)).await {
                Ok(_) => Ok(None),
                Err(PathsError::NotFound { .. }) => Ok(Some(id)),
                Err(e) => Err(Error::from(e)),
            }
        })
        .buffered(16)
        .try_collect()
        .await?;
    Ok(found.into_iter().flatten().collect())
}

/// The row ids of the changed fragments before and after, their deletion files read through
/// `prev` (a commit keeps its table's base paths; a clone, which changes them, changes no
/// fragment). `None` when a sequence is not inline (flag 2048,
/// which lancet does not read): the row-id rules other than presence are then not judged.
async fn row_id_changes(
    prev: &Snapshot,
    changes: &[FragmentChange],
) -> Result<Option<RowIdChanges>> {
    let mut out = RowIdChanges::default();
    for c in changes {
        // a conversion gives most fragments unchanged: read their deletion files once
        if let (Some(b), Some(a)) = (&c.before, &c.after) {
            if a == b {
                match rowids::fragment_row_ids(prev, a).await? {
                    Some(ids) => out.unchanged.push(ids),
                    None if a.row_id_sequence.is_none() => {}
                    None => return Ok(None),
                }
                continue;
            }
        }
        for (side, list) in [(&c.before, &mut out.before), (&c.after, &mut out.after)] {
            let Some(f) = side else { continue };
            match rowids::fragment_row_ids(prev, f).await? {
                Some(ids) => list.push(ids),
                None if f.row_id_sequence.is_none() => {} // judged by RowIdSequencePresent
                None => return Ok(None),
            }
        }
    }
    Ok(Some(out))
}
