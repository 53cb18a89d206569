//! Rewrites that defer index remapping: a caller has written new data files holding some
//! fragments' live rows in a new arrangement; lancet records how rows moved as an FRI
//! transition and commits the new fragments, the transition and the republished history in
//! one version. Also trimming the history once indexes have caught up, and finding `_fri/`
//! files no retained version references.
//!
//! The invariants checked before the conditional write (each a typed `InvalidInput` or
//! `Unsupported` error, nothing written to `_versions/` when one fails):
//! - sources are distinct fragments of this version; destinations are new (ids are assigned
//!   here), hold rows in at least one data file, and carry no deletion file and no row-id
//!   sequence;
//! - the destinations' physical rows add up to the sources' live rows, and for a stable
//!   partition each destination holds exactly the rows its label count says;
//! - the history lancet extends is one it can interpret entirely, and the table does not use
//!   stable row ids (Lance 14 refuses tagged histories there).

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use lancet_paths::ObjectUuid;
use lancet_proto::table::transaction::{Operation, Rewrite};
use lancet_proto::table::{DataFragment, IndexMetadata};
use lancet_reuse::is_fri_entry;
use lancet_reuse::{write_row_map, SourceRows};
use lancet_reuse::{Digest, Ledger, Mapping, Transition};
use lancet_reuse::{History, ReuseError};
use lancet_txn::build::Change;
use lancet_txn::rebase::{judge_since, ConflictCause, IndexIntent};
use object_store::path::Path;
use roaring::RoaringBitmap;

use crate::committed::Committed;
use crate::operations;
use lancet_read::error::Result;
use lancet_read::fri;
use lancet_read::history;
use lancet_read::indexes;
use lancet_read::rowids;
use lancet_read::snapshot::Snapshot;

/// How a history is published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// A tagged (index_version 1) entry with feature flag 1024.
    Tagged,
    /// As the table keeps it: legacy (index_version 0, no flag) while its history is not
    /// tagged and holds ordered compactions only, as pylance 14.0.2 writes it; tagged
    /// otherwise.
    AsTheTable,
}

/// One rewrite of `sources` into `destinations` (fragments whose data files the caller has
/// written; their ids are assigned at commit, in order).
#[derive(Debug, Clone)]
pub struct RewriteGroup<'a> {
    pub sources: Vec<u32>,
    pub destinations: Vec<DataFragment>,
    pub mapping: RewriteMapping<'a>,
}

/// How a rewrite moved the sources' live rows into the destinations.
#[derive(Debug, Clone, Copy)]
pub enum RewriteMapping<'a> {
    /// Live rows concatenated in source order (offsets ascending within each source) and
    /// split, in order, into the destinations.
    OrderedCompaction,
    /// One label per live source row, in the same order: the position of the destination
    /// that received the row; rows keep their relative order within a destination.
    StablePartition { labels: &'a [u16] },
}

fn invalid(rule: impl Into<String>) -> lancet_read::error::Error {
    ReuseError::InvalidInput(rule.into()).into()
}

/// Commits a rewrite of the fragments `sources` into `destinations` (fragments whose data
/// files the caller has written; their ids are assigned here, in order) as the next
/// version, recording `mapping` in the Fragment Reuse Index so existing indexes keep
/// answering through translation (their entries are left as they are). The history is
/// republished as a tagged (index_version 1) entry replacing the previous one, with
/// feature flag 1024 in both words. Stable partitions write their row map to
/// `_fri/{map_id}/stable_partition.lance` first.
///
/// Losing the race to compatible commits that took the destination ids prepares the
/// rewrite again on the latest version (new ids, the latest history extended, the row
/// map written again), at most eight times; other conflicts are returned.
pub(crate) async fn commit_rewrite(
    snap: &Snapshot,
    sources: &[u32],
    destinations: Vec<DataFragment>,
    mapping: RewriteMapping<'_>,
) -> Result<Committed> {
    let group = RewriteGroup {
        sources: sources.to_vec(),
        destinations,
        mapping,
    };
    rewrite_retrying(snap, sources, |base| {
        let group = group.clone();
        async move {
            commit_rewrite_groups(&base, std::slice::from_ref(&group), Format::Tagged)
                .await
        }
    })
    .await
}

/// Runs `attempt` on this version, and again on the latest when another writer took the
/// destination ids it assigned (every version published since judged compatible with a
/// rewrite of `sources` first), at most eight times; other conflicts are returned.
pub(crate) async fn rewrite_retrying<T, F, Fut>(
    snap: &Snapshot,
    sources: &[u32],
    attempt: F,
) -> Result<T>
where
    F: Fn(Snapshot) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut base = snap.clone();
    let mut tries = 0;
    loop {
        tries += 1;
        match attempt(base.clone()).await {
            Err(lancet_read::error::Error::CommitConflict {
                cause: ConflictCause::IdsTaken,
                version,
                uri,
                ..
            }) if tries < 8 => {
                // every version up to `version` was judged compatible; judge the ones
                // published since before preparing on the latest
                let (latest, since) =
                    history::transactions_since(&base.checkout(version).await?).await?;
                let mine = rewrite_of(sources);
                if let Err(c) = judge_since(&mine, &since, base.has_stable_row_ids()) {
                    return Err(lancet_read::error::Error::CommitConflict {
                        uri,
                        version: c.version,
                        reason: c.reason,
                        retryable: c.retryable,
                        cause: c.cause,
                    });
                }
                base = latest;
            }
            done => return done,
        }
    }
}

/// Commits `groups` (each a rewrite of distinct sources into new destinations) in one
/// version, each recorded as a transition of the history, published in `format`.
pub(crate) async fn commit_rewrite_groups(
    snap: &Snapshot,
    groups: &[RewriteGroup<'_>],
    format: Format,
) -> Result<Committed> {
    let what = snap.manifest_ref().object;
    let mut ledger = extendable_history(snap, &what).await?;
    // the sources' rows are mapped by the rows their files hold
    let fragments = snap.with_known_rows(snap.fragments().await?).await?;
    let mut next_id = lancet_txn::build::next_fragment_id(snap.manifest());
    let mut recorded = Vec::with_capacity(groups.len());
    let mut seen = HashSet::new();
    for group in groups {
        let sources = rowids::with_deletions(snap, &fragments, &group.sources, &what).await?;
        // what makes a group (distinct sources, numbered destinations) is lancet-reuse's rule
        for f in &group.destinations {
            lancet_reuse::rules::check_destination(f)?;
        }
        let numbered = lancet_reuse::rules::number_group(
            sources,
            group.destinations.clone(),
            &mut seen,
            &mut next_id,
        )?;
        let mapping = match group.mapping {
            RewriteMapping::OrderedCompaction => {
                lancet_reuse::rules::ordered_compaction(&numbered.sources, &numbered.deleted)?
            }
            RewriteMapping::StablePartition { labels } => {
                let (src, del, dst) =
                    (&numbered.sources, &numbered.deleted, &numbered.destinations);
                write_partition(snap, src, del, dst, labels).await?
            }
        };
        let t = Transition {
            dataset_version: None,
            sources: numbered.sources,
            destinations: numbered.destinations,
            mapping,
        };
        ledger = Some(lancet_reuse::rules::extend(ledger, t, &what)?);
        recorded.push(numbered.recorded);
    }
    let Some(ledger) = ledger else {
        return Err(invalid("a rewrite needs at least one group"));
    };
    let operation = Operation::Rewrite(Rewrite {
        groups: recorded,
        ..Default::default()
    });
    publish_history(snap, Some(operation), ledger, format).await
}

/// The current history, if any, provided lancet may extend it.
pub(crate) async fn extendable_history(snap: &Snapshot, what: &str) -> Result<Option<Ledger>> {
    if snap.has_stable_row_ids() {
        // refused before the history is read
        return Ok(lancet_reuse::rules::extendable(None, true, what)?);
    }
    let ledger = fri::fri_ledger(snap).await?;
    Ok(lancet_reuse::rules::extendable(ledger, false, what)?)
}

/// Writes the row map of a stable partition and checks it against the destinations.
async fn write_partition(
    snap: &Snapshot,
    sources: &[Digest],
    deleted: &[RoaringBitmap],
    destinations: &[Digest],
    labels: &[u16],
) -> Result<Mapping> {
    let map_id = ObjectUuid::new_v4().to_string();
    let path = snap
        .store()
        .path(&lancet_reuse::row_map_path(&map_id, true));
    let rows: Vec<SourceRows> = sources
        .iter()
        .zip(deleted)
        .map(|(s, d)| SourceRows {
            physical_rows: s.physical_rows,
            deleted: Some(d),
        })
        .collect();
    let written = write_row_map(
        snap.file_store(),
        &path,
        &rows,
        destinations.len(),
        labels.iter().copied(),
        None,
    )
    .await?;
    let want: Vec<u64> = destinations.iter().map(|d| d.physical_rows).collect();
    if written.destination_rows != want {
        // the map is unreferenced; `unreferenced_fri_files` lists it for cleanup
        return Err(invalid(format!(
            "labels send {:?} rows to the destinations, which hold {want:?}",
            written.destination_rows
        )));
    }
    Ok(Mapping::StablePartition {
        map_id,
        map_size_bytes: written.size_bytes,
        base_id: None,
    })
}

/// Commits `ledger` as the FRI entry replacing the current one (no entry when the ledger
/// is empty), other index entries kept as they are: with `rewrite` (the Rewrite of the
/// groups whose transitions the ledger gained), or alone as an index-only
/// change (a CreateIndex of the FRI: an upgrade or a trim). The plan sets flag 1024 when the
/// entry is tagged.
pub(crate) async fn publish_history(
    snap: &Snapshot,
    rewrite: Option<Operation>,
    ledger: Ledger,
    format: Format,
) -> Result<Committed> {
    let mut indices: Vec<IndexMetadata> = snap
        .indices()
        .iter()
        .filter(|m| !is_fri_entry(m))
        .cloned()
        .collect();
    if !ledger.transitions.is_empty() {
        let uuid = ObjectUuid::new_v4();
        let created = u64::try_from(snap.clock().now_ms()).unwrap_or(0);
        let legacy = match format {
            Format::Tagged => None,
            Format::AsTheTable => lancet_reuse::rules::keeps_legacy(
                fri::fri_entry(snap),
                snap.manifest().reader_feature_flags,
            )
            .then(|| {
                lancet_reuse::publish::legacy_entry(
                    uuid.to_proto(),
                    snap.version(),
                    &ledger,
                    created,
                )
            })
            .flatten(),
        };
        let made = match legacy {
            Some(e) => e,
            None => lancet_reuse::publish::tagged_entry(
                uuid.to_proto(),
                snap.version(),
                &ledger,
                created,
            ),
        };
        indices.push(lancet_reuse::publish::write_external(snap.store(), uuid, made).await?);
    }
    let intent = IndexIntent::between(snap.indices(), &indices);
    let change = match rewrite {
        Some(operation) => Change::new(operation).with_indices(intent),
        None => Change::new(
            lancet_txn::operation::index_operation(snap.indices(), &indices)
                .unwrap_or(Operation::UpdateConfig(Default::default())),
        ),
    };
    operations::commit_change(snap, change).await
}

/// Drops the FRI transitions no index still needs, republishing the rest; `None` when
/// nothing can be dropped. An index (every non-FRI entry of this version) may hold
/// addresses of the fragments of the version it was built or last updated on
/// (`dataset_version`), which its `fragment_bitmap` no longer names once a deferred
/// rewrite moved it forward; when that version is gone, every ancestor of its bitmap's
/// fragments counts. Transitions reachable from those fragments are kept (see
/// `History::needed_for`), intermediates included.
pub(crate) async fn trim_fri(snap: &Snapshot) -> Result<Committed> {
    let what = snap.manifest_ref().object;
    let Some(ledger) = extendable_history(snap, &what).await? else {
        return Ok(Committed::nothing(snap.clone()));
    };
    let history = History::new(ledger, &what)?;
    // each index's coverage and the fragments of the version it was built on (read
    // here); what the trim keeps is lancet-reuse's rule
    let mut indexes: Vec<(RoaringBitmap, Option<Vec<u32>>)> = Vec::new();
    for m in snap.indices().iter().filter(|m| !is_fri_entry(m)) {
        let bitmap = indexes::index_fragments(snap, m)?.unwrap_or_default();
        let built_on = match snap.checkout(m.dataset_version).await {
            Ok(built_on) => Some(
                built_on
                    .fragments()
                    .await?
                    .iter()
                    .filter_map(|f| u32::try_from(f.id).ok())
                    .collect(),
            ),
            Err(_) => None,
        };
        indexes.push((bitmap, built_on));
    }
    let indexed = history.indexed_fragments(indexes.iter().map(|(b, on)| (b, on.as_deref())));
    let Some(ledger) = history.trimmed(&indexed) else {
        return Ok(Committed::nothing(snap.clone()));
    };
    publish_history(snap, None, ledger, Format::AsTheTable).await
}

/// Objects under the dataset root's `_fri/` that no version in `_versions/` references
/// (row maps of trimmed transitions, or of rewrites refused or lost before committing)
/// and that were last modified more than `older_than` ago: safe to delete while those
/// versions are the ones kept. The age is the in-progress guard: a rewrite writes its row
/// map before its manifest, so a map younger than any commit could take may belong to a
/// version about to land (cleanup's [`crate::cleanup::DEFAULT_UNVERIFIED_OLDER_THAN`] is the
/// default to use). Maps that skipped (unmodelled) transitions name are referenced too.
/// Row maps in other bases (`base_id` set) belong to those bases' tables and are not
/// listed.
pub(crate) async fn unreferenced_fri_files(
    snap: &Snapshot,
    older_than: Duration,
) -> Result<Vec<Path>> {
    let mut referenced: HashSet<String> = HashSet::new();
    for entry in lancet_paths::manifest::list_versions(snap.store()).await? {
        let ds = snap.checkout(entry.version).await?;
        if let Some(ledger) = fri::fri_ledger(&ds).await? {
            referenced.extend(
                ledger
                    .row_maps()
                    .filter(|(_, base)| base.is_none())
                    .map(|(m, _)| m.to_string()),
            );
        }
    }
    let cutoff = snap
        .clock()
        .now()
        .checked_sub(older_than)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut out = Vec::new();
    for meta in snap.store().list(lancet_paths::layout::FRI_DIR).await? {
        if SystemTime::from(meta.last_modified) > cutoff {
            continue;
        }
        let rel = snap.store().relative(&meta.location).unwrap_or_default();
        let map_id = lancet_paths::cleanup::row_map_id(&rel).unwrap_or_default();
        if !referenced.contains(map_id) {
            out.push(meta.location);
        }
    }
    out.sort();
    Ok(out)
}

/// Deletes [`Dataset::unreferenced_fri_files`] through cleanup's sweep (its concurrency,
/// rate and failure rules: `policy`'s), returning what was deleted; a delete that failed
/// is an `Unavailable` error naming the first (the others are deleted).
pub(crate) async fn delete_unreferenced_fri_files(
    snap: &Snapshot,
    older_than: Duration,
    policy: &crate::cleanup::CleanupPolicy,
) -> Result<Vec<Path>> {
    let files = unreferenced_fri_files(snap, older_than).await?;
    let mut locations = std::collections::HashMap::new();
    let mut doomed = Vec::with_capacity(files.len());
    for path in &files {
        let rel = snap.store().relative(path).unwrap_or_default();
        locations.insert(rel.clone(), path.clone());
        doomed.push((
            lancet_paths::cleanup::Listed {
                path: rel,
                size: 0,
                last_modified_ms: 0,
            },
            lancet_paths::cleanup::ObjectKind::RowMap,
        ));
    }
    let (failed, _) =
        lancet_paths::sweep::delete_planned(snap.store(), &locations, &doomed, policy, &|_, _| {})
            .await;
    if let Some((path, why)) = failed.first() {
        // the store failed (kind Unavailable): running it again deletes what is left
        return Err(lancet_paths::PathsError::Store {
            path: snap.store().path(path),
            source: std::sync::Arc::new(object_store::Error::Generic {
                store: "cleanup sweep",
                source: format!("{} row maps left undeleted, first: {why}", failed.len()).into(),
            }),
        }
        .into());
    }
    Ok(files)
}

/// The Lance operation a rewrite of `sources` is judged as.
fn rewrite_of(sources: &[u32]) -> lancet_proto::table::transaction::Operation {
    use lancet_proto::table::transaction::{rewrite::RewriteGroup, Operation, Rewrite};
    Operation::Rewrite(Rewrite {
        groups: vec![RewriteGroup {
            old_fragments: sources
                .iter()
                .map(|&id| DataFragment {
                    id: u64::from(id),
                    ..Default::default()
                })
                .collect(),
            new_fragments: Vec::new(),
        }],
        ..Default::default()
    })
}

/// Re-publishes this version's FRI history as a tagged (index_version 1) entry in the next
/// version: every transition as a v1 `Transition`, feature flag 1024 set in both words, the
/// previous entry replaced in the same commit. Refused on stable-row-id tables (Lance 14
/// release builds refuse FRI there) and when the history has transitions lancet cannot
/// interpret (it would have to carry them unread).
pub(crate) async fn upgrade_fri(snap: &Snapshot) -> Result<crate::committed::Committed> {
    let what = snap.manifest_ref().object;
    let ledger = extendable_history(snap, &what)
        .await?
        .ok_or_else(|| ReuseError::InvalidInput(format!("{what} has no Fragment Reuse Index")))?;
    // the graph rules hold before anything is republished
    let ledger = History::new(ledger, &what)?.ledger;
    publish_history(snap, None, ledger, Format::Tagged).await
}
