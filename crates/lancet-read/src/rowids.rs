//! Row ids of a `Dataset`: sequences, deletion vectors and the cached `RowIdIndex`.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use lancet_proto::table::DataFragment;
use lancet_rowid::deletion::read_deletion_vector;
use lancet_rowid::{LazyRowIds, RowIdIndex, RowIdSequence, VersionSequence};
use lancet_txn::FragmentRowIds as TxnRowIds;
use roaring::RoaringBitmap;

use crate::cache::StructureKey;
use crate::error::{Error, Result};
use crate::snapshot::Snapshot;

/// How many deletion files are read at once while building an index.
const DELETION_READ_CONCURRENCY: usize = 32;

/// The fragment's stable row id sequence, if it has one inline.
pub fn row_id_sequence(snap: &Snapshot, fragment: &DataFragment) -> Result<Option<RowIdSequence>> {
    Ok(lancet_rowid::row_ids_of(fragment, &snap.manifest_path())?)
}

/// The fragment's `(created_at, last_updated_at)` version sequences, where stored inline.
pub fn version_sequences(
    snap: &Snapshot,
    fragment: &DataFragment,
) -> Result<(Option<VersionSequence>, Option<VersionSequence>)> {
    Ok(lancet_rowid::versions_of(fragment, &snap.manifest_path())?)
}

/// The fragment's deleted offsets, if it has a deletion file.
pub async fn deletion_vector(
    snap: &Snapshot,
    fragment: &DataFragment,
) -> Result<Option<RoaringBitmap>> {
    Ok(cached_deletion_vector(snap, fragment)
        .await?
        .map(Arc::unwrap_or_clone))
}

/// The deletion vector of `fragment` read from storage (every read goes through the
/// session's cache: `Dataset::cached_deletion_vector`).
async fn fragment_deletions(
    snap: &Snapshot,
    fragment: &DataFragment,
) -> Result<Option<RoaringBitmap>> {
    let (Some(file), Some(loc)) = (
        &fragment.deletion_file,
        snap.deletion_file_location(fragment)?,
    ) else {
        return Ok(None);
    };
    let store = snap.store_for(&loc.base)?;
    let path = store.path(&loc.path);
    Ok(Some(
        read_deletion_vector(&store, &path, file, fragment.physical_rows).await?,
    ))
}

/// How many of `fragment`'s rows are deleted: the manifest's count, or, where a deletion file
/// leaves it unknown (0, as Lance 14 writes some), the rows its deletion vector holds (read
/// through the session's cache).
pub async fn deleted_rows(snap: &Snapshot, fragment: &DataFragment) -> Result<u64> {
    match &fragment.deletion_file {
        None => Ok(0),
        Some(d) if d.num_deleted_rows > 0 => Ok(d.num_deleted_rows),
        Some(_) => Ok(cached_deletion_vector(snap, fragment)
            .await?
            .map_or(0, |d| d.len())),
    }
}

/// `fragments` with every count known: physical rows (see `Snapshot::with_known_rows`) and
/// deleted rows ([`deleted_rows`]) where a record leaves them unknown; the same list when
/// none does.
pub async fn with_known_counts(
    snap: &Snapshot,
    fragments: Arc<[DataFragment]>,
) -> Result<Arc<[DataFragment]>> {
    let fragments = snap.with_known_rows(fragments).await?;
    let unknown = |f: &DataFragment| {
        f.deletion_file
            .as_ref()
            .is_some_and(|d| d.num_deleted_rows == 0)
    };
    if !fragments.iter().any(unknown) {
        return Ok(fragments);
    }
    let mut out = fragments.to_vec();
    for f in out.iter_mut().filter(|f| unknown(f)) {
        let deleted = deleted_rows(snap, f).await?;
        if let Some(d) = &mut f.deletion_file {
            d.num_deleted_rows = deleted;
        }
    }
    Ok(out.into())
}

/// `Dataset::deletion_vector`, kept in the session's structure cache (deletion files
/// are immutable, so the key is the file alone).
pub async fn cached_deletion_vector(
    snap: &Snapshot,
    fragment: &DataFragment,
) -> Result<Option<Arc<RoaringBitmap>>> {
    let (Some(_), Some(loc)) = (
        &fragment.deletion_file,
        snap.deletion_file_location(fragment)?,
    ) else {
        return Ok(None);
    };
    let key = StructureKey::DeletionVector {
        file: loc.display_uri(),
    };
    let d = snap
        .caches()
        .structure(
            key,
            Box::pin(async {
                let d = fragment_deletions(snap, fragment)
                    .await?
                    .unwrap_or_default();
                Ok(Arc::new(d))
            }),
        )
        .await?;
    Ok(Some(d))
}

/// Remembers `deleted` as the deletion vector of `fragment`'s deletion file, which this
/// session has just written: reading it again, or checking before a commit that it is
/// stored, needs no request.
pub async fn remember_deletion_vector(
    snap: &Snapshot,
    fragment: &DataFragment,
    deleted: &RoaringBitmap,
) -> Result<()> {
    let Some(loc) = snap.deletion_file_location(fragment)? else {
        return Ok(());
    };
    let key = StructureKey::DeletionVector {
        file: loc.display_uri(),
    };
    let known = Arc::new(deleted.clone());
    snap.caches()
        .structure::<RoaringBitmap>(key, Box::pin(async { Ok(known) }))
        .await?;
    Ok(())
}

/// Whether this session holds `fragment`'s deletion vector (read or written here): then
/// its deletion file is stored.
pub async fn deletion_vector_known(snap: &Snapshot, fragment: &DataFragment) -> Result<bool> {
    let Some(loc) = snap.deletion_file_location(fragment)? else {
        return Ok(false);
    };
    let key = StructureKey::DeletionVector {
        file: loc.display_uri(),
    };
    Ok(snap
        .caches()
        .cached_structure::<RoaringBitmap>(&key)
        .await
        .is_some())
}

/// Every fragment's deletion vector (None where it has none), read concurrently, in
/// fragment order, through the session's cache (`Dataset::cached_deletion_vector`).
pub async fn deletion_vectors(snap: &Snapshot) -> Result<Vec<Option<Arc<RoaringBitmap>>>> {
    let fragments = snap.fragments().await?;
    // by position, not by reference: a stream closure taking `&DataFragment` makes the
    // future unprovably `Send`
    futures::stream::iter(0..fragments.len())
        .map(|i| {
            let fragments = fragments.clone();
            async move {
                let Some(f) = fragments.get(i) else {
                    return Ok(None);
                };
                cached_deletion_vector(snap, f).await
            }
        })
        .buffered(snap.fanout(DELETION_READ_CONCURRENCY))
        .try_collect()
        .await
}

/// The fragments `ids` of `fragments` (this version's, with known row counts) with their
/// deleted offsets: a rewrite group's sources as lancet-reuse's rules take them.
/// An id this version does not list is the caller's error (`what` names the version).
pub async fn with_deletions<'a>(
    snap: &Snapshot,
    fragments: &'a [DataFragment],
    ids: &[u32],
    what: &str,
) -> Result<Vec<(&'a DataFragment, RoaringBitmap)>> {
    let mut sources = Vec::with_capacity(ids.len());
    for &id in ids {
        let f = lancet_proto::fragment_by_id(fragments, u64::from(id)).ok_or_else(|| {
            lancet_reuse::ReuseError::InvalidInput(format!("fragment {id} is not in {what}"))
        })?;
        sources.push((f, deletion_vector(snap, f).await?.unwrap_or_default()));
    }
    Ok(sources)
}

/// The `RowIdIndex` of this version (stable-row-id tables only), built once per version and
/// kept in the session's index cache.
pub async fn row_id_index(snap: &Snapshot) -> Result<Arc<RowIdIndex>> {
    if !snap.has_stable_row_ids() {
        return Err(Error::Unsupported {
            uri: snap.uri().to_string(),
            version: snap.version(),
            rule: "the table has no stable row ids; _rowid is the row address".into(),
        });
    }
    let key = StructureKey::RowIdIndex {
        uri: snap.uri().to_string(),
        version: snap.version(),
    };
    snap.caches()
        .structure(
            key,
            Box::pin(async { Ok(Arc::new(build_row_id_index(snap).await?)) }),
        )
        .await
}

/// The addresses of the `_rowid`s `ids` (None when not live). With stable row ids: the
/// cached `RowIdIndex` when this version has one, otherwise answered lazily, reading only
/// the deletion files of the fragments that hold the ids (what a first take after opening
/// needs). Without them `_rowid` is the address: each id itself when live.
pub async fn lookup_row_ids(snap: &Snapshot, ids: &[u64]) -> Result<Vec<Option<u64>>> {
    if !snap.has_stable_row_ids() {
        return live_addresses(snap, ids).await;
    }
    let key = StructureKey::RowIdIndex {
        uri: snap.uri().to_string(),
        version: snap.version(),
    };
    if let Some(index) = snap.caches().cached_structure::<RowIdIndex>(&key).await {
        return Ok(ids.iter().map(|id| index.get(*id)).collect());
    }
    let all = snap.fragments().await?;
    let fragments = lancet_rowid::live::lazy_inputs(&all, &snap.manifest_path())?;
    let by_id: std::collections::HashMap<u64, &DataFragment> =
        all.iter().map(|f| (f.id, f)).collect();
    let lazy = LazyRowIds::new(fragments)?;
    lazy.get_many(ids, |id| {
        let f = by_id.get(&u64::from(id)).copied();
        async move {
            match f {
                Some(f) => Ok(deletion_vector(snap, f).await?.map(Arc::new)),
                None => Ok(None),
            }
        }
    })
    .await
}

/// Without stable row ids `_rowid` is the row address: each of `ids` itself when a live
/// row of this version (its fragment exists, the offset is below `physical_rows`, and no
/// deletion file deletes it), `None` otherwise.
async fn live_addresses(snap: &Snapshot, ids: &[u64]) -> Result<Vec<Option<u64>>> {
    let deletions = deletion_vectors(snap).await?;
    let fragments = snap.fragments().await?;
    let live = |id| lancet_rowid::live::is_live_address(&fragments, &deletions, id);
    Ok(ids.iter().map(|&id| live(id).then_some(id)).collect())
}

/// Every live row's `(_rowid, row address)`, sorted by row id: the row-id index with
/// stable row ids; otherwise each live address twice (`_rowid` is the address).
pub async fn live_row_ids(snap: &Snapshot) -> Result<Vec<(u64, u64)>> {
    if snap.has_stable_row_ids() {
        return Ok(row_id_index(snap).await?.iter().collect());
    }
    let deletions = deletion_vectors(snap).await?;
    let fragments = snap.fragments().await?;
    let addresses = lancet_rowid::live::live_addresses(&fragments, &deletions)?;
    Ok(addresses.into_iter().map(|a| (a, a)).collect())
}

async fn build_row_id_index(snap: &Snapshot) -> Result<RowIdIndex> {
    let deletions = deletion_vectors(snap).await?;
    let fragments = snap.fragments().await?;
    let inputs = lancet_rowid::live::index_inputs(&fragments, deletions, &snap.manifest_path())?;
    Ok(RowIdIndex::build(inputs)?)
}

/// The row ids of `f` read through `ds`; `None` when its sequence is not inline.
pub async fn fragment_row_ids(ds: &Snapshot, f: &DataFragment) -> Result<Option<TxnRowIds>> {
    if !matches!(
        f.row_id_sequence,
        Some(lancet_proto::table::data_fragment::RowIdSequence::InlineRowIds(_))
    ) {
        return Ok(None);
    }
    let Some(sequence) = row_id_sequence(ds, f)? else {
        return Ok(None);
    };
    let mut missing_deletion_file = false;
    let deleted = match deletion_vector(ds, f).await {
        Ok(d) => d.unwrap_or_default(),
        // judged by DeletionFileExists, with the rows counted as not deleted
        Err(
            Error::Paths(lancet_paths::PathsError::NotFound { .. })
            | Error::RowId(lancet_rowid::RowIdError::Paths(lancet_paths::PathsError::NotFound {
                ..
            })),
        ) => {
            missing_deletion_file = true;
            Default::default()
        }
        Err(e) => return Err(e),
    };
    Ok(Some(lancet_rowid::live::txn_row_ids(
        f.id,
        &sequence,
        &deleted,
        missing_deletion_file,
    )))
}
