//! `Dataset::verify`: every rule lancet knows, checked over one version without opening data
//! or deletion files.
//!
//! A tree version is walked whole by lancet-tree (every object reachable, every rule). A flat
//! version's manifest rules were checked when it was decoded; here each index entry's
//! `fragment_bitmap` and each fragment's inline row-id sequence are decoded too. Then every
//! fragment is judged by lancet-txn's invariants as if the version created it (ids within
//! `max_fragment_id`, known `base_id`s, deletions within rows, needed flags, index entries)
//! and, with stable row ids, every live row id is checked to be live once and below
//! `next_row_id` (deletion files are read for that; data files never). A broken invariant is
//! `Corrupt` naming it. `Storage::verify_data` also opens every data file: it exists, holds
//! `physical_rows` rows and the field ids its `DataFile` lists. `Dataset::check_lineage`
//! judges it against the version before it.

use futures::{StreamExt, TryStreamExt};
use lancet_paths::DatasetStore;
use lancet_proto::roaring_wire::decode_roaring32;
use lancet_proto::table::DataFragment;
use lancet_tree::TreeStats;
use lancet_txn::{
    Candidate, DataFileFacts, FragmentChange, RowIdChanges, StoredDataFile, TxnError,
};

use crate::error::{Error, Result};
use crate::rowids;
use crate::snapshot::Snapshot;

/// What a successful verify saw.
#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    pub version: u64,
    pub fragments: u64,
    /// The tree's statistics, for a tree version.
    pub tree: Option<TreeStats>,
}

/// Checks every rule on this version (see the module doc).
pub async fn verify(snap: &Snapshot) -> Result<VerifyReport> {
    verify_with(snap, false).await
}

/// `Dataset::verify`, and every data file opened (footer and schema read, no pages):
/// it exists and opens, holds the fragment's `physical_rows` rows, and its schema holds
/// the field ids its `DataFile.fields` lists. One request or two per file, 16 at a time.
pub async fn verify_data(snap: &Snapshot) -> Result<VerifyReport> {
    verify_with(snap, true).await
}

async fn verify_with(snap: &Snapshot, data: bool) -> Result<VerifyReport> {
    let tree = match snap.tree() {
        Some(reader) => Some(reader.verify().await?),
        None => None,
    };
    for index in snap.indices() {
        if !index.fragment_bitmap.is_empty() {
            decode_roaring32(&index.fragment_bitmap).map_err(|e| Error::Corrupt {
                at: snap.manifest_ref(),
                rule: format!("index {:?}: fragment_bitmap: {e}", index.name),
            })?;
        }
    }
    let fragments = snap.fragments().await?;
    for f in fragments.iter() {
        rowids::row_id_sequence(snap, f)?;
    }
    let facts = match data {
        true => Some(data_file_facts(snap, &fragments).await?),
        false => None,
    };
    check_invariants(snap, &fragments, facts.as_deref()).await?;
    Ok(VerifyReport {
        version: snap.version(),
        fragments: fragments.len() as u64,
        tree,
    })
}

/// lancet-txn's invariants over every fragment of the version, as created by it.
async fn check_invariants(
    snap: &Snapshot,
    fragments: &[DataFragment],
    data_files: Option<&[DataFileFacts]>,
) -> Result<()> {
    let changes: Vec<FragmentChange> = fragments.iter().map(FragmentChange::created).collect();
    let mut rows = RowIdChanges::default();
    if snap.has_stable_row_ids() {
        for f in fragments {
            if let Some(ids) = crate::rowids::fragment_row_ids(snap, f).await? {
                rows.after.push(ids);
            }
        }
    }
    let candidate = Candidate {
        version: snap.version(),
        previous: None,
        next: lancet_txn::Version {
            manifest: snap.manifest(),
            indices: snap.indices(),
        },
        changes: &changes,
        row_ids: Some(&rows),
        operation: None,
        data_files,
        unmodelled: &[],
        missing_deletion_files: &[],
        reserved: &[],
        fri_transitions: &[],
    };
    lancet_txn::check(&candidate).map_err(|e| invariant_broken(snap, e))
}

/// What storage holds for every data file of `fragments`. A file that is missing or does
/// not open is a fact (the invariant names it); a store that fails otherwise is an error.
pub async fn data_file_facts(
    snap: &Snapshot,
    fragments: &[DataFragment],
) -> Result<Vec<DataFileFacts>> {
    // a fragment naming a base_id the manifest lacks is judged by `BaseIdKnown` (which
    // `check` runs before the data-file rules): its files are not looked for
    let files: Vec<(u64, lancet_proto::table::DataFile, _)> = fragments
        .iter()
        .filter_map(|f| Some((f, snap.data_file_locations(f).ok()?)))
        .flat_map(|(f, locations)| {
            f.files
                .iter()
                .zip(locations)
                .map(move |(file, location)| (f.id, file.clone(), location))
        })
        .collect();
    // one store and lance-file handle per base, not per file (a handle starts lance-io's
    // scheduler); the table's own are the dataset's
    let mut stores: std::collections::HashMap<String, (DatasetStore, lancet_file::FileStore)> =
        Default::default();
    for (_, _, location) in &files {
        if !stores.contains_key(&location.base.uri) {
            let handles = match location.base.base_id {
                None => (snap.store().clone(), snap.file_store().clone()),
                Some(_) => {
                    let store = snap.store_for(&location.base)?;
                    let fs = crate::snapshot::file_store_for(&store)?;
                    (store, fs)
                }
            };
            stores.insert(location.base.uri.clone(), handles);
        }
    }
    let stores = &stores;
    // each distinct file opened once (fragments may share one: a bench's pooled files)
    let mut distinct: Vec<(lancet_proto::table::DataFile, _)> = Vec::new();
    let mut index: std::collections::HashMap<(String, String), usize> = Default::default();
    let mut which = Vec::with_capacity(files.len());
    for (fragment, file, location) in files {
        let key = (location.base.uri.clone(), location.path.clone());
        let i = *index.entry(key).or_insert_with(|| {
            distinct.push((file.clone(), location));
            distinct.len() - 1
        });
        which.push((fragment, file.path, i));
    }
    let stored: Vec<std::result::Result<StoredDataFile, String>> = futures::stream::iter(distinct)
        .map(|(file, location)| async move {
            let (store, fs) = stores
                .get(&location.base.uri)
                .ok_or_else(|| Error::Internal("a data file's base was not resolved".into()))?;
            let size = (file.file_size_bytes > 0).then_some(file.file_size_bytes);
            let opened = lancet_file::LanceFile::open(fs, &store.path(&location.path), size).await;
            Ok(match opened {
                Ok(f) => Ok(StoredDataFile {
                    num_rows: f.num_rows(),
                    field_ids: f.field_ids().to_vec(),
                    parent_ids: f.parent_field_ids().to_vec(),
                }),
                Err(e) if e.is_not_found() => Err("no such object".to_string()),
                Err(e) if e.is_unreadable() => Err(e.to_string()),
                Err(e) => return Err(Error::from(e)),
            })
        })
        .buffered(16)
        .try_collect()
        .await?;
    Ok(which
        .into_iter()
        .map(|(fragment, path, i)| DataFileFacts {
            fragment,
            path,
            stored: stored
                .get(i)
                .cloned()
                .unwrap_or_else(|| Err("not opened".to_string())),
        })
        .collect())
}

/// This version against `previous` by the lineage rules ([`lancet_txn::check_lineage`]:
/// `max_fragment_id` and `next_row_id` never decrease); a broken one is
/// [`Error::BrokenInvariant`], as `Dataset::verify` reports them.
pub fn check_lineage(snap: &Snapshot, previous: &Snapshot) -> Result<()> {
    lancet_txn::check_lineage(snap.version(), previous.manifest(), snap.manifest())
        .map_err(|e| invariant_broken(snap, e))
}

/// A stored version's broken invariant, at the subject.
fn invariant_broken(snap: &Snapshot, e: TxnError) -> Error {
    match e {
        TxnError::Invalid {
            invariant,
            subject,
            detail,
            ..
        } => Error::BrokenInvariant {
            at: snap.manifest_ref().within(subject),
            invariant,
            detail,
        },
        other => Error::Txn(other),
    }
}
