//! Cleanup: removing old versions, and the objects only they need.
//!
//! [`Dataset::cleanup`] follows Lance 14.0.2's `cleanup_old_versions`
//! (`docs/research/lance-cleanup-and-clone.md`; `docs/architecture.md`, "Cleanup"):
//!
//! 1. **Versions.** Every manifest in `_versions/` is read (a corrupt one stops the cleanup
//!    before anything is deleted). A version is removed when it is older than the policy's
//!    age (by the manifest's commit timestamp) **and** outside the last `retain_versions`;
//!    it is always kept when it is this handle's version or newer, when a tag names it, or
//!    when a branch forked from it still uses this dataset's files.
//! 2. **References.** From each version's *resolved* state (the fragment tree walked with
//!    its buffers applied, so a file only a superseded mutation names is not reached): data,
//!    deletion and overlay files, tree objects, index directories, the FRI's row maps and
//!    the version's transaction. A kept version's references are *referenced*; a removed
//!    version's are *verified*. Branches' versions add what they use of this dataset.
//!    Objects in another dataset (reached through a `base_id`) are never candidates.
//! 3. **Decision** ([`lancet_paths::cleanup::plan`]): referenced objects stay; verified ones
//!    go; objects no version names go only when older than `unverified_older_than` (an
//!    in-progress commit's objects are younger).
//! 4. **Deletes**: the removed versions' manifests first (a version still listed stays
//!    complete if the cleanup stops half-way), then the objects, concurrently and at a
//!    bounded rate. A failed delete is reported and the run goes on.

use std::collections::{BTreeSet, HashSet};

use futures::{StreamExt, TryStreamExt};
use lancet_paths::cleanup::{plan, Decide, ObjectKind, References, Retention};
pub use lancet_paths::cleanup::{CleanupPolicy, DEFAULT_OLDER_THAN, DEFAULT_UNVERIFIED_OLDER_THAN};
pub use lancet_paths::cleanup_report::{CleanupProgress, CleanupReport, KindTotals};
use lancet_paths::manifest::{self, ManifestFile};
use lancet_paths::refs;
use lancet_paths::sweep::{delete_planned, list_objects, remove_empty_index_dirs, Collector};
use lancet_paths::{files, ObjectLocation, ObjectUuid};
use lancet_proto::table::DataFragment;
use object_store::path::Path;
use tracing::Instrument;

use lancet_read::error::{Error, Result};
use lancet_read::fri;
use lancet_read::snapshot::Snapshot;

const READ_CONCURRENCY: usize = 16;

/// Removes the versions `policy` selects and every object only they (or no version)
/// need (module docs). Runs from this handle's version: it and newer versions are kept.
pub(crate) async fn cleanup(snap: &Snapshot, policy: &CleanupPolicy) -> Result<CleanupReport> {
    cleanup_with_progress(snap, policy, |_| {}).await
}

/// [`Dataset::cleanup`], telling `progress` how far it is.
pub(crate) async fn cleanup_with_progress(
    snap: &Snapshot,
    policy: &CleanupPolicy,
    progress: impl Fn(CleanupProgress) + Send + Sync,
) -> Result<CleanupReport> {
    let span = tracing::info_span!("cleanup", uri = %snap.uri(), dry_run = policy.dry_run);
    cleanup_inner(snap, policy, &progress)
        .instrument(span)
        .await
}

async fn cleanup_inner(
    snap: &Snapshot,
    policy: &CleanupPolicy,
    progress: &(impl Fn(CleanupProgress) + Send + Sync),
) -> Result<CleanupReport> {
    refuse(snap, policy)?;
    let now_ms = snap.clock().now_ms();
    let store = snap.store();
    let entries = manifest::list_versions(store).await?;
    let total = entries.len() as u64 + 1;
    let files = manifest::read_all(store, &entries, snap.manifest_file()).await?;

    let (retention, referenced_by_branches) = retention(snap, policy, &entries, now_ms).await?;
    let removed = |file: &ManifestFile| {
        retention.removes(
            file.entry.version,
            manifest::timestamp_ms(&file.decoded.manifest),
        )
    };

    let mut report = CleanupReport {
        dry_run: policy.dry_run,
        ..Default::default()
    };
    let mut referenced = referenced_by_branches;
    let sorted = sort_versions(snap, files, &removed, &|done| {
        progress(CleanupProgress::Reading { done, total })
    })
    .await?;
    report.removed_versions = sorted.removed;
    report.kept_versions = sorted.kept;
    referenced.extend(sorted.referenced);
    let (verified, removed_manifests) = (sorted.verified, sorted.removed_manifests);

    let (listing, locations) = list_objects(store).await?;
    report.kept_outside = (store.refused_outside().0.into_iter())
        .map(|p| {
            let relative = Path::parse(&p).ok().and_then(|p| store.relative(&p));
            relative.unwrap_or(p)
        })
        .collect();
    progress(CleanupProgress::Reading { done: total, total });
    let decided = plan(
        listing,
        Decide {
            referenced: &referenced,
            verified: &verified,
            removed_manifests: &removed_manifests,
            unverified_before_ms: policy.unverified_before_ms(now_ms),
        },
    );
    report.kept_young = decided.kept_young;
    let mut doomed = decided.delete;
    // manifests first: a version still listed keeps everything it names
    doomed.sort_by_key(|(o, kind)| (*kind != ObjectKind::Manifest, o.path.clone()));
    tracing::info!(
        removed_versions = report.removed_versions.len(),
        objects = doomed.len(),
        kept_young = report.kept_young,
        "cleanup decided"
    );
    if !policy.dry_run {
        for &v in &report.removed_versions {
            snap.forget_manifest(v).await;
        }
        let deleting = |done, total| progress(CleanupProgress::Deleting { done, total });
        let (failed, attempted) =
            delete_planned(store, &locations, &doomed, policy, &deleting).await;
        // what was not attempted or failed is still there, and is not reported deleted
        let failed_paths: HashSet<&str> = failed.iter().map(|(p, _)| p.as_str()).collect();
        doomed.truncate(attempted);
        doomed.retain(|(o, _)| !failed_paths.contains(o.path.as_str()));
        report.failed = failed;
        remove_empty_index_dirs(store, &doomed);
    }
    report.tally(doomed);
    Ok(report)
}

/// Which versions `policy` keeps (tagged versions and the versions branches forked from
/// among them), and what the branches' versions reference.
async fn retention(
    snap: &Snapshot,
    policy: &CleanupPolicy,
    entries: &[manifest::VersionEntry],
    now_ms: i64,
) -> Result<(Retention, References)> {
    let store = snap.store();
    let tagged: BTreeSet<u64> = refs::list_tags(store)
        .await?
        .into_iter()
        .filter(|t| t.branch.is_none())
        .map(|t| t.version)
        .collect();
    let (referenced_by_branches, forked_from) = branch_references(snap).await?;

    let versions: Vec<u64> = entries.iter().map(|e| e.version).collect();
    let retention = Retention::new(
        policy,
        &versions,
        now_ms,
        snap.version(),
        tagged.union(&forked_from).copied().collect(),
    );
    Ok((retention, referenced_by_branches))
}

/// Refuses a policy that is not valid and a branch (its tags and sub-branches live under
/// the main dataset's `_refs/`).
fn refuse(snap: &Snapshot, policy: &CleanupPolicy) -> Result<()> {
    policy.check().map_err(|reason| Error::InvalidArgument {
        what: "cleanup policy".into(),
        reason: reason.into(),
    })?;
    if let Some(branch) = &snap.manifest().branch {
        return Err(Error::Unsupported {
            uri: snap.uri().to_string(),
            version: snap.version(),
            rule: format!(
                "cleanup of branch {branch:?}: clean the main dataset, which keeps what its branches use"
            ),
        });
    }
    Ok(())
}

/// The versions of `files`, sorted by `removed` into kept and removed ones, with what each
/// side references; `progress` hears how many were read.
struct Sorted {
    kept: Vec<u64>,
    removed: Vec<u64>,
    /// What kept versions reference.
    referenced: References,
    /// What removed versions reference (deleted when nothing kept references it).
    verified: References,
    removed_manifests: HashSet<String>,
}

/// Each version's references, several versions at once, in version order.
async fn sort_versions(
    snap: &Snapshot,
    files: Vec<ManifestFile>,
    removed: &(impl Fn(&ManifestFile) -> bool + Sync),
    progress: &(impl Fn(u64) + Send + Sync),
) -> Result<Sorted> {
    let mut sorted = Sorted {
        kept: Vec::new(),
        removed: Vec::new(),
        referenced: References::default(),
        verified: References::default(),
        removed_manifests: HashSet::new(),
    };
    let mut read = futures::stream::iter(files)
        .map(|file| async move {
            let version = file.entry.version;
            let manifest_path = snap.store().relative(&file.entry.path).ok_or_else(|| {
                Error::Internal(format!(
                    "manifest {} lies outside the dataset root",
                    file.entry.path
                ))
            })?;
            let is_removed = removed(&file);
            snap.cache_manifest(file).await;
            let ds = snap.checkout(version).await?;
            let refs = references_of(snap, &ds, true).await?;
            Ok::<_, Error>((version, manifest_path, is_removed, refs))
        })
        .buffered(READ_CONCURRENCY);
    let mut done = 0;
    while let Some(next) = read.next().await {
        let (version, manifest_path, is_removed, refs) = next?;
        if is_removed {
            sorted.removed.push(version);
            sorted.removed_manifests.insert(manifest_path);
            sorted.verified.extend(refs);
        } else {
            sorted.kept.push(version);
            sorted.referenced.extend(refs);
        }
        done += 1;
        progress(done);
    }
    Ok(sorted)
}

/// What `ds` (a version of this dataset, or of one of its branches) names in this
/// dataset. `own`: `ds` is a version of this dataset (its transaction file is ours).
async fn references_of(snap: &Snapshot, ds: &Snapshot, own: bool) -> Result<References> {
    let span = tracing::debug_span!("references", version = ds.version(), own);
    references_inner(snap, ds, own).instrument(span).await
}

async fn references_inner(snap: &Snapshot, ds: &Snapshot, own: bool) -> Result<References> {
    let mut refs = Collector::new(snap.store(), snap.uri());
    let tf = &ds.manifest().transaction_file;
    if own && !tf.is_empty() {
        refs.path(lancet_paths::layout::transaction_path(tf));
    }
    let walked: Vec<DataFragment>;
    let fragments: &[DataFragment] = match ds.tree() {
        Some(tree) => {
            let walk = tree.walk().await?;
            for object in walk.objects() {
                refs.location(object)?;
            }
            walked = walk.into_stream().try_collect().await?;
            &walked
        }
        None => &ds.manifest().fragments,
    };
    for f in fragments {
        for location in files::fragment_locations(f, ds.bases(), &ds.root())? {
            refs.location(&location)?;
        }
    }
    for index in ds.indices() {
        let Some(uuid) = index.uuid.as_ref() else {
            continue;
        };
        let uuid = ObjectUuid::from_slice(&uuid.uuid)?;
        let location = files::index_dir_location(&uuid, index.base_id, ds.bases(), &ds.root())?;
        // only this dataset's own `_indices/{uuid}` (not a branch's, not a plain directory)
        if refs.places.local(&location)? == Some(lancet_paths::layout::index_dir(uuid)) {
            refs.out.add_index(uuid.to_string());
        }
    }
    if let Some(ledger) = fri::fri_ledger(ds).await? {
        // skipped (unmodelled) transitions' maps too: the version still names them
        for (map_id, base_id) in ledger.row_maps() {
            let base =
                ds.bases()
                    .resolve(base_id, &ds.root(), lancet_paths::BaseRequirement::Any)?;
            let location = ObjectLocation {
                base,
                path: lancet_paths::layout::fri_dir(map_id),
            };
            if refs.places.local(&location)? == Some(lancet_paths::layout::fri_dir(map_id)) {
                refs.out.add_row_map(map_id.to_string());
            }
        }
    }
    Ok(refs.out)
}

/// What this dataset's branches use of it, and the versions of the main line they forked
/// from (always kept while the branch exists).
async fn branch_references(snap: &Snapshot) -> Result<(References, BTreeSet<u64>)> {
    let span = tracing::debug_span!("branches");
    async {
        let mut out = References::default();
        let mut forked_from = BTreeSet::new();
        for branch in refs::list_branches(snap.store()).await? {
            if branch.parent_branch.is_none() {
                forked_from.insert(branch.parent_version);
            }
            // the branch's own dataset, below this one (a branch with no version yet has
            // no directory, and lists none); a link at its root leading out is refused
            let store = snap.store().below(&branch.root())?;
            for entry in manifest::list_versions(&store).await? {
                let ds = Snapshot::open(store.clone(), Some(entry.version), snap.caches().clone())
                    .await?;
                out.extend(references_of(snap, &ds, false).await?);
            }
        }
        Ok((out, forked_from))
    }
    .instrument(span)
    .await
}
