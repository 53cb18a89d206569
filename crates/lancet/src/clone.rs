//! Shallow clones: a new dataset whose first version is a version of this one, sharing every
//! data, deletion, index and tree object by reference.
//!
//! What [`Dataset::shallow_clone`] writes in the target, as pylance 14.0.2's `shallow_clone`
//! does (`docs/research/lance-cleanup-and-clone.md`): a transaction
//! (`Clone { is_shallow, ref_version, ref_path }`, read version = the source version), the
//! manifest **with the source's version number**, and the latest-version hint; for a tree
//! version also the clone's own external root when the source's root is external. The
//! manifest is the source's with a new commit time, feature flag 16 (base paths), the
//! source root added to `base_paths` (`lancet_paths::clone`) and every inherited reference
//! it holds pointed there: fragments' data and deletion files, index entries, a tree's
//! root (`lancet_tree::clone_tree`) and, for lancet's tagged FRI, the row maps its history
//! names. Nothing is written to the source.
//!
//! The contract with the source (`docs/architecture.md`, "Shallow clones and cleanup"): the
//! clone needs the source version's objects for as long as it references them; a cleanup of
//! the source does not know about clones, so the cloned version must stay retained there
//! (tag it) while the clone lives.

use lancet_paths::clone::{clone_base_paths, inherit_fragment_from, inherit_index_from};
use lancet_paths::{manifest, DatasetStore, ObjectUuid};
use lancet_proto::table::transaction::{Clone as CloneOp, Operation};
use lancet_proto::table::IndexMetadata;
use lancet_reuse::is_fri_entry;
use tracing::Instrument;

use lancet_read::error::{Error, Result};
use lancet_read::fri;
use lancet_read::snapshot::Snapshot;
use lancet_txn::operation::new_transaction;

/// Creates a shallow clone of `version` (this handle's version when `None`) at `target`,
/// which must not hold a table yet: its first version, opened.
pub(crate) async fn shallow_clone(
    snap: &Snapshot,
    target: &str,
    version: Option<u64>,
) -> Result<crate::committed::Committed> {
    let span = tracing::info_span!("shallow_clone", source = %snap.uri(), target, ?version);
    shallow_clone_inner(snap, target, version, None)
        .instrument(span)
        .await
}

/// The clone, as a branch's first version when `branch` names one (Lance 14.0.2's
/// `create_branch`: the same shallow clone under `tree/{branch}`, its manifest and its
/// Clone transaction naming the branch).
pub(crate) async fn shallow_clone_inner(
    snap: &Snapshot,
    target: &str,
    version: Option<u64>,
    branch: Option<&str>,
) -> Result<crate::committed::Committed> {
    let source = match version {
        Some(v) if v != snap.version() => snap.checkout(v).await?,
        _ => snap.clone(),
    };
    // a clone that fails leaves no directory it created (what it wrote there is the
    // failed clone's, and nothing names it)
    let created = local_dir_created(target);
    let store = DatasetStore::create(target)?;
    let cloned = clone_into(snap, &source, &store, target, branch).await;
    if cloned.is_err() {
        if let Some(dir) = created {
            remove_written(&store, &dir).await;
        }
    }
    cloned
}

/// The local directory `target` names when it does not exist yet (so this clone creates it).
fn local_dir_created(target: &str) -> Option<std::path::PathBuf> {
    if target.contains("://") && !target.starts_with("file://") {
        return None;
    }
    let dir = std::path::PathBuf::from(target.strip_prefix("file://").unwrap_or(target));
    (!dir.exists()).then_some(dir)
}

/// Deletes what a failed clone wrote in the directory it created, and the directory.
async fn remove_written(store: &DatasetStore, dir: &std::path::Path) {
    if let Ok(objects) = store.list("").await {
        for object in objects {
            if let Err(e) = store.delete(&object.location).await {
                tracing::warn!(path = %object.location, error = %e, "a failed clone's object was left");
            }
        }
    }
    lancet_paths::sweep::remove_empty_dirs(dir);
}

/// The clone's first version, written into `store`.
async fn clone_into(
    snap: &Snapshot,
    source: &Snapshot,
    store: &DatasetStore,
    target: &str,
    branch: Option<&str>,
) -> Result<crate::committed::Committed> {
    let store = store.clone();
    if !store.list(manifest::VERSIONS_DIR).await?.is_empty() {
        return Err(Error::InvalidArgument {
            what: format!("clone target {target}"),
            reason: "it already holds a table".into(),
        });
    }
    let source_uri = absolute(source.uri());
    let mut manifest = source.manifest().clone();
    let (mut bases, id) = clone_base_paths(&manifest.base_paths, &source_uri)?;
    // a clone of a branch's version names the branch (as Lance does) and is itself a
    // main line
    let parent_branch = manifest.branch.take();
    if let Some(source) = bases.iter_mut().find(|b| b.id == id) {
        source.name.clone_from(&parent_branch);
    }
    manifest.branch = branch.map(str::to_string);
    manifest.base_paths = bases;
    for f in &mut manifest.fragments {
        inherit_fragment_from(f, id);
    }
    if let Some(tree) = &manifest.fragment_tree {
        let (cloned, written) = lancet_tree::clone_tree(tree, source.store(), &store, id).await?;
        tracing::debug!(objects = written.len(), "clone root written");
        manifest.fragment_tree = Some(cloned);
    }
    let indices = cloned_indices(source, id, &store).await?;
    manifest.timestamp = Some(snap.clock().timestamp());
    // flag 16 for the base path the clone names, decided by lancet-txn
    lancet_txn::protocol::settle(&mut manifest, &indices);
    let txn = new_transaction(
        source.version(),
        Operation::Clone(CloneOp {
            is_shallow: true,
            ref_name: parent_branch,
            ref_version: source.version(),
            ref_path: source_uri.clone(),
            branch_name: branch.map(str::to_string),
        }),
    );
    let (clone, size) = crate::publish::publish(
        &store,
        snap.caches(),
        crate::publish::Publication {
            manifest: &manifest,
            indices: &indices,
            unknown_fields: &source.manifest_file().decoded.unknown_fields,
            scheme: source.naming_scheme(),
            transaction: Some(&txn),
            previous: None,
            changes: None,
            data_files: None,
            reserved: &[],
        },
    )
    .await?;
    tracing::info!(version = clone.version(), "shallow clone committed");
    Ok(crate::committed::Committed {
        versions: 1,
        attempts: 1,
        // the manifest and its transaction file
        objects_written: 2,
        bytes_written: size,
        ..crate::committed::Committed::nothing(clone.with_clock(snap.clock().clone()))
    })
}

/// The source version's index entries as the clone names them: each inherits the source
/// through base `id`, except an FRI entry whose row maps are written again for the clone.
async fn cloned_indices(
    source: &Snapshot,
    id: u32,
    store: &DatasetStore,
) -> Result<Vec<IndexMetadata>> {
    let mut indices: Vec<IndexMetadata> = Vec::with_capacity(source.indices().len());
    for index in source.indices() {
        indices.push(match fri_with_row_maps(source, index, id, store).await? {
            Some(entry) => entry,
            None => {
                let mut index = index.clone();
                inherit_index_from(&mut index, id);
                index
            }
        });
    }
    Ok(indices)
}

/// lancet's tagged FRI names its row maps with their own `base_id`s: when one inherits
/// the source dataset, the clone gets the same history with those maps pointed at the
/// source, as a new entry of its own (written into the clone when it is external).
/// `None` for every other index (its entry's `base_id` is enough).
async fn fri_with_row_maps(
    snap: &Snapshot,
    index: &IndexMetadata,
    id: u32,
    store: &DatasetStore,
) -> Result<Option<IndexMetadata>> {
    if !is_fri_entry(index) || index.index_version.unwrap_or(0) == 0 {
        return Ok(None);
    }
    let Some(source) = fri::fri_ledger(snap).await? else {
        return Ok(None);
    };
    let Some(ledger) = source.for_clone(&format!("of {}", snap.uri()), id)? else {
        return Ok(None);
    };
    let uuid = ObjectUuid::new_v4();
    let created = index.created_at.unwrap_or(0);
    let made = lancet_reuse::publish::tagged_entry(
        uuid.to_proto(),
        index.dataset_version,
        &ledger,
        created,
    );
    Ok(Some(
        lancet_reuse::publish::write_external(store, uuid, made).await?,
    ))
}

/// The source's location as a clone must record it: a local path made absolute (pylance
/// records what the user typed, which breaks when the clone is opened from elsewhere).
fn absolute(uri: &str) -> String {
    let plain = uri.strip_prefix("file://").unwrap_or(uri);
    if plain.contains("://") {
        return uri.trim_end_matches('/').to_string();
    }
    std::fs::canonicalize(plain)
        .ok()
        .and_then(|p| p.to_str().map(str::to_string))
        .unwrap_or_else(|| plain.trim_end_matches('/').to_string())
}
