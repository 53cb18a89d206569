//! The Fragment Reuse Index of a `Dataset`: the entry, its history, row maps, translation.

use std::sync::Arc;

use lancet_paths::{files, BaseRequirement, ObjectUuid};
use lancet_proto::table::IndexMetadata;
use lancet_reuse::decode_inline;
use lancet_reuse::History;
use lancet_reuse::RowMap;
use lancet_reuse::{content_location, is_fri_entry, ContentLocation};

use crate::cache::StructureKey;
use crate::error::{Error, Result};
use crate::snapshot::Snapshot;

/// The `__lance_frag_reuse` entry, if the version has one.
pub fn fri_entry(snap: &Snapshot) -> Option<&IndexMetadata> {
    snap.indices().iter().find(|m| is_fri_entry(m))
}

/// The FRI history of this version, validated and ready to translate (row maps of stable
/// partitions opened, counts checked, no labels read). Cached per version.
pub async fn fri_history(snap: &Snapshot) -> Result<Option<Arc<History>>> {
    let Some(entry) = fri_entry(snap).cloned() else {
        return Ok(None);
    };
    let key = StructureKey::FriHistory {
        uri: snap.uri().to_string(),
        version: snap.version(),
    };
    snap.caches()
        .structure(
            key,
            Box::pin(async { Ok(Arc::new(load_fri(snap, &entry).await?)) }),
        )
        .await
        .map(Some)
}

/// The decoded (not yet opened) FRI history of this version, if it has one: no row map
/// is touched.
pub async fn fri_ledger(snap: &Snapshot) -> Result<Option<lancet_reuse::Ledger>> {
    match fri_entry(snap).cloned() {
        Some(entry) => Ok(Some(decode_fri(snap, &entry).await?)),
        None => Ok(None),
    }
}

async fn load_fri(snap: &Snapshot, entry: &IndexMetadata) -> Result<History> {
    let what = snap.manifest_ref().object;
    let ledger = decode_fri(snap, entry).await?;
    let mut history = History::new(ledger, &what)?;
    for (i, map_id, _, base_id) in history.row_maps_needed() {
        let base = snap
            .bases()
            .resolve(base_id, &snap.root(), BaseRequirement::Any)?;
        let store = snap.store_for(&base)?;
        let fs = crate::snapshot::file_store_for(&store)?;
        let t = history
            .transition(i)
            .cloned()
            .ok_or_else(|| Error::Internal(format!("history has no transition {i}")))?;
        let rel = lancet_reuse::row_map_path(&map_id, base.is_dataset_root);
        history.attach_row_map(i, RowMap::open_at(&store, &fs, &rel, &t).await?);
    }
    Ok(history)
}

async fn decode_fri(snap: &Snapshot, entry: &IndexMetadata) -> Result<lancet_reuse::Ledger> {
    decode_fri_under(snap, entry, snap.manifest()).await
}

/// `entry`'s history read from this table's storage, judged under the flags of `m` (the
/// manifest that holds the entry: this version's, or a candidate's).
pub async fn decode_fri_under(
    snap: &Snapshot,
    entry: &IndexMetadata,
    m: &lancet_proto::table::Manifest,
) -> Result<lancet_reuse::Ledger> {
    let what = snap.manifest_ref().object;
    let index_version = entry.index_version.unwrap_or(0);
    lancet_reuse::rules::check_entry_flags(
        index_version,
        m.reader_feature_flags,
        m.writer_feature_flags,
        lancet_txn::protocol::has_stable_row_ids(m),
        &what,
    )?;
    let bytes = match content_location(entry)? {
        ContentLocation::Inline(bytes) => bytes,
        ContentLocation::External(file) => {
            let uuid = ObjectUuid::from_slice(
                entry
                    .uuid
                    .as_ref()
                    .map(|u| u.uuid.as_slice())
                    .unwrap_or_default(),
            )?;
            let dir = files::index_dir_location(&uuid, entry.base_id, snap.bases(), &snap.root())?;
            let store = snap.store_for(&dir.base)?;
            lancet_reuse::read_external(&store, &dir.path, &file).await?
        }
    };
    Ok(decode_inline(&bytes, index_version, &what)?)
}
