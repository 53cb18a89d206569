//! BTree indexes of a `Dataset`: segments, cached opening, column reads, building.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::ArrayRef;
use lancet_btree::BTreeIndex;
use lancet_paths::{files, ObjectUuid};
use lancet_proto::table::{DataFragment, IndexMetadata};
use roaring::RoaringBitmap;

use crate::cache::StructureKey;
use crate::error::{Error, Result};
use crate::rowids;
use crate::rows;
use crate::segment::BTreeSegment;
use crate::snapshot::Snapshot;

fn uuid_of(meta: &IndexMetadata) -> Result<ObjectUuid> {
    let bytes = meta
        .uuid
        .as_ref()
        .map(|u| u.uuid.as_slice())
        .unwrap_or_default();
    Ok(ObjectUuid::from_slice(bytes)?)
}

/// One index of a version, whatever its type: every entry (segment) of one name.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexSummary {
    pub name: String,
    /// The details message's type without package and `IndexDetails` suffix (`"BTree"`,
    /// `"Bitmap"`, `"ZoneMap"`, `"Inverted"`, `"Vector"`, `"FragmentReuse"`, ...), or
    /// `"unknown"` when the entry has no details lancet recognises.
    pub index_type: String,
    /// Names of the indexed columns, a nested field by its path (`s.x`); empty for system
    /// indexes.
    pub columns: Vec<String>,
    pub segments: usize,
    pub index_version: i32,
    /// The newest `dataset_version` among the segments.
    pub dataset_version: u64,
    /// Fragments the segments cover (decoded strictly; an entry without a bitmap adds none).
    pub fragments: RoaringBitmap,
    /// Whether lancet answers queries through this index (only BTrees today; `index search`
    /// refuses a column that has no BTree).
    pub answered_by_lancet: bool,
}

/// Every index of this version, grouped by name in manifest order, with its type: the
/// manifest alone. A `fragment_bitmap` that does not decode is an error naming the index.
pub fn index_summaries(snap: &Snapshot) -> Result<Vec<IndexSummary>> {
    let mut out: Vec<IndexSummary> = Vec::new();
    for m in snap.indices() {
        let index_type = m
            .index_details
            .as_ref()
            .and_then(|d| lancet_proto::index_type_name(&d.type_url))
            .unwrap_or_else(|| "unknown".into());
        let fragments = index_fragments(snap, m)?.unwrap_or_default();
        match out.iter_mut().find(|s| s.name == m.name) {
            Some(s) => {
                s.segments += 1;
                s.fragments |= fragments;
                s.dataset_version = s.dataset_version.max(m.dataset_version);
            }
            None => {
                let columns = m
                    .fields
                    .iter()
                    .filter_map(|id| crate::paths::of_id(&snap.manifest().fields, *id))
                    .map(|p| p.name())
                    .collect();
                out.push(IndexSummary {
                    name: m.name.clone(),
                    answered_by_lancet: index_type == "BTree",
                    index_type,
                    columns,
                    segments: 1,
                    index_version: m.index_version.unwrap_or(0),
                    dataset_version: m.dataset_version,
                    fragments,
                });
            }
        }
    }
    Ok(out)
}

/// How many rows the segments of index `name` cover, as Lance 14.0.2's
/// `describe_indices` counts them: each fragment of this version a segment covers adds its
/// live rows (physical rows less deleted ones), once per segment naming it; a fragment the
/// version no longer has adds none. Where the manifest leaves a count unknown Lance refuses to
/// count; lancet reads it (the snapshot's row count, the deletion file's rows).
pub async fn rows_indexed(snap: &Snapshot, name: &str) -> Result<u64> {
    let fragments = snap.with_known_rows(snap.fragments().await?).await?;
    let mut total = 0u64;
    for s in snap.indices().iter().filter(|m| m.name == name) {
        let bitmap = index_fragments(snap, s)?;
        for f in fragments.iter() {
            let covered = u32::try_from(f.id)
                .ok()
                .is_some_and(|id| bitmap.as_ref().is_none_or(|b| b.contains(id)));
            if covered {
                let deleted = rowids::deleted_rows(snap, f).await?;
                total = total.saturating_add(f.physical_rows.saturating_sub(deleted));
            }
        }
    }
    Ok(total)
}

/// The BTree index entries, grouped by name (one entry per segment).
pub fn btree_indices(snap: &Snapshot) -> Vec<(String, Vec<&IndexMetadata>)> {
    lancet_btree::segments_by_name(snap.indices())
}

/// The name of the BTree index on the field `field_id`, if any.
pub fn btree_on_field(snap: &Snapshot, field_id: i32) -> Option<String> {
    lancet_btree::btree_on_field(snap.indices(), field_id)
}

/// Opens every segment of the BTree index `name`; lookups are cached per segment, pages in
/// the session's page cache.
/// The fragments an index entry covers (`None`: no bitmap stored), decoded strictly: one
/// Roaring bitmap occupying the whole field, or a typed error naming the index.
pub fn index_fragments(snap: &Snapshot, meta: &IndexMetadata) -> Result<Option<RoaringBitmap>> {
    if meta.fragment_bitmap.is_empty() {
        return Ok(None);
    }
    lancet_proto::roaring_wire::decode_roaring32(&meta.fragment_bitmap)
        .map(Some)
        .map_err(|e| Error::Corrupt {
            at: snap.manifest_ref(),
            rule: format!(
                "index {:?}: fragment_bitmap does not decode: {e}",
                meta.name
            ),
        })
}

/// The segments of this version's BTree index `name`, opened (kept in the session's
/// structure cache per version: a hot search opens nothing).
pub async fn btree_segments(snap: &Snapshot, name: &str) -> Result<Arc<Vec<BTreeSegment>>> {
    let key = StructureKey::BTreeSegments {
        uri: snap.uri().to_string(),
        version: snap.version(),
        name: name.to_string(),
    };
    snap.caches()
        .structure(
            key,
            Box::pin(async { Ok(Arc::new(open_btree_segments(snap, name).await?)) }),
        )
        .await
}

async fn open_btree_segments(snap: &Snapshot, name: &str) -> Result<Vec<BTreeSegment>> {
    let metas: Vec<IndexMetadata> = btree_indices(snap)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, m)| m.into_iter().cloned().collect())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(metas.len());
    for meta in metas {
        let uuid = uuid_of(&meta)?;
        let dir = files::index_dir_location(&uuid, meta.base_id, snap.bases(), &snap.root())?;
        let store = snap.store_for(&dir.base)?;
        let fs = crate::snapshot::file_store_for(&store)?;
        let sizes: HashMap<String, u64> = meta
            .files
            .iter()
            .filter(|f| f.size_bytes > 0)
            .map(|f| (f.path.clone(), f.size_bytes))
            .collect();
        let key = StructureKey::BTreeSegment {
            dir: dir.display_uri(),
        };
        let pages: Arc<dyn lancet_btree::PageCache> = snap.caches().pages.clone();
        let load = async {
            let index = BTreeIndex::open(&fs, &store.path(&dir.path), pages, &sizes).await?;
            tracing::debug!(pages = index.lookup().num_pages(), "btree segment");
            Ok(Arc::new(index))
        };
        let span = tracing::debug_span!("index_load", index = %meta.name, dir = %dir.path);
        let index: Arc<BTreeIndex> = snap
            .caches()
            .structure(key, Box::pin(tracing::Instrument::instrument(load, span)))
            .await?;
        let fragments = index_fragments(snap, &meta)?.unwrap_or_default();
        out.push(BTreeSegment {
            metadata: meta,
            index,
            fragments,
        });
    }
    Ok(out)
}

/// The column `field_id` of `fragment`, read as a scan reads it (lancet-file's
/// `read_fragment`: the last data file listing the field holds it; a fragment no file of
/// which holds it reads as NULL, as a column added after the fragment was written).
pub async fn read_column(
    snap: &Snapshot,
    fragment: &DataFragment,
    field_id: i32,
) -> Result<ArrayRef> {
    let unknown = || Error::Unsupported {
        uri: snap.uri().to_string(),
        version: snap.version(),
        rule: format!("no field with id {field_id} under a top-level column"),
    };
    let path = crate::paths::of_id(&snap.manifest().fields, field_id).ok_or_else(unknown)?;
    let column = rows::projection(snap, None)?
        .into_iter()
        .find(|c| c.id() == path.top_id)
        .ok_or_else(unknown)?;
    let batch = rows::read_rows(
        snap,
        fragment,
        std::slice::from_ref(&column),
        lancet_file::Rows::All,
    )
    .await?;
    let values = batch
        .columns()
        .first()
        .cloned()
        .ok_or_else(|| Error::Internal("a one-column read returned no column".into()))?;
    crate::paths::extract(&values, &path.children).map_err(|rule| Error::Corrupt {
        at: snap.manifest_ref(),
        rule: format!("field {field_id}: {rule}"),
    })
}

/// The training pairs (`value`, row address) of column `field_id` in the fragments
/// `which` names, their deleted rows left out, one batch per fragment.
pub async fn training_pairs(
    snap: &Snapshot,
    field_id: i32,
    which: &RoaringBitmap,
) -> Result<Vec<arrow_array::RecordBatch>> {
    let mut batches = Vec::new();
    for f in snap.fragments().await?.iter() {
        let Some(id) = u32::try_from(f.id).ok().filter(|id| which.contains(*id)) else {
            continue;
        };
        let deleted = rowids::cached_deletion_vector(snap, f).await?;
        let values = read_column(snap, f, field_id).await?;
        batches.push(lancet_btree::fragment_pairs(
            id,
            &values,
            deleted.as_deref(),
        )?);
    }
    Ok(batches)
}
