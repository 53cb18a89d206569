//! Index optimize: [`Optimizer::optimize_indices`](crate::Optimizer::optimize_indices).
//!
//! Composition only. For each BTree index: the fragments its segments do not answer (appended
//! since, or written by updates) are trained into a new segment, or merged with the newest
//! `merge` segments into one (lancet-btree's ordered merge of page streams, bounded by the external
//! sorter's memory); after deferred compactions every segment is first written again with
//! the rows' current addresses (translated through the Fragment Reuse Index), so the history
//! can then be trimmed (`Dataset::trim_fri`, which this runs when a history is left). On a
//! stable-row-id table an index with a legacy row-id segment (`index_version` 0) is rebuilt
//! from its column into one address segment, as Lance 14.0.2's `optimize_indices` does: an
//! index never mixes the two (lancet-txn's `IndexRowIdDomain`). Each index is committed as a
//! CreateIndex replacing its segments, which pylance queries through.

use lancet_btree::{BTreeIndex, TrainOptions};
use lancet_paths::ObjectUuid;
use lancet_proto::table::transaction::{CreateIndex, Operation};
use lancet_proto::table::IndexMetadata;
use lancet_reuse::Translation;
use roaring::RoaringBitmap;

use crate::committed::Committed;
use crate::operations;
use crate::rewrite;
use lancet_read::error::{Error, Result};
use lancet_read::fri;
use lancet_read::index_answer;
use lancet_read::indexes;
use lancet_read::segment::BTreeSegment;
use lancet_read::snapshot::Snapshot;

/// How [`Optimizer::optimize_indices`](crate::Optimizer::optimize_indices) extends indexes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OptimizeOptions {
    /// How many segments, the newest first, are merged with the new rows into one segment
    /// (Lance's `num_indices_to_merge`; pylance's default is 1): with 0 the new rows become a
    /// segment of their own, with `usize::MAX` every segment is merged.
    pub merge: usize,
}

/// Rows of a segment translated at a time.
const CHUNK_ROWS: u64 = 64 * 1024;

/// Extends every BTree index over the fragments it does not cover, and rewrites segments
/// that hold addresses from before deferred compactions (see the module docs). Returns
/// a version per index changed, and the trimmed history's (none when nothing needed doing).
pub(crate) async fn optimize_indices(
    snap: &Snapshot,
    options: &OptimizeOptions,
) -> Result<Committed> {
    let mut done = Committed::nothing(snap.clone());
    for (name, _) in indexes::btree_indices(snap) {
        if let Some(next) = optimize_index(&done.dataset.snap, &name, options).await? {
            done = done.then(next);
        }
    }
    if fri::fri_entry(&done.dataset.snap).is_some() {
        let trimmed = rewrite::trim_fri(&done.dataset.snap).await?;
        done = done.then(trimmed);
    }
    Ok(done)
}

/// One index, optimized; `None` when it covers every fragment and needs no translation.
async fn optimize_index(
    snap: &Snapshot,
    name: &str,
    options: &OptimizeOptions,
) -> Result<Option<Committed>> {
    let segments = indexes::btree_segments(snap, name).await?;
    let Some(first) = segments.first() else {
        return Ok(None);
    };
    let field_id = first.metadata.fields.first().copied().unwrap_or(-1);
    let covered = index_answer::answered_fragments(snap, &segments).await?;
    let live: RoaringBitmap = snap
        .fragments()
        .await?
        .iter()
        .filter_map(|f| u32::try_from(f.id).ok())
        .collect();
    // Lance 14.0.2 never extends a legacy row-id segment (index_version 0) of a
    // stable-row-id table with an address segment, nor merges it: the index is rebuilt
    // from the column into one address segment replacing them all
    if snap.has_stable_row_ids() && segments.iter().any(|s| !s.ids_are_addresses(true)) {
        return rebuild_index(snap, name, &segments, &live).await.map(Some);
    }
    let uncovered = &live - &covered;
    let translate = fri::fri_history(snap).await?.is_some();
    // the newest `merged` segments are merged with the new rows; the others are kept
    let merged = options.merge.min(segments.len());
    let kept = segments.len() - merged;
    if uncovered.is_empty() && !translate && merged < 2 {
        return Ok(None);
    }
    let value_type = first.index.lookup().value_type().clone();
    let train = TrainOptions {
        page_rows: first.index.lookup().page_rows(),
        ..Default::default()
    };
    let mut new_indices = Vec::new();
    let mut removed_indices = Vec::new();
    let mut pairs: Vec<arrow_array::RecordBatch> =
        indexes::training_pairs(snap, field_id, &uncovered).await?;
    let mut fragments = uncovered;
    for (i, s) in segments.iter().enumerate() {
        if i >= kept {
            pairs.extend(segment_pairs(snap, s).await?);
            fragments |= segment_coverage(snap, s, &live).await?;
        } else if translate {
            // written again alone, with current addresses
            let rows = segment_pairs(snap, s).await?;
            let fragments = segment_coverage(snap, s, &live).await?;
            new_indices.push(
                train_segment(snap, name, field_id, &value_type, rows, fragments, train).await?,
            );
        } else {
            continue;
        }
        removed_indices.push(s.metadata.clone());
    }
    if !fragments.is_empty() || merged > 0 {
        new_indices
            .push(train_segment(snap, name, field_id, &value_type, pairs, fragments, train).await?);
    }
    let op = Operation::CreateIndex(CreateIndex {
        new_indices,
        removed_indices,
    });
    Ok(Some(operations::commit(snap, op).await?))
}

/// Index `name` trained again from its column over every live fragment, in one segment
/// replacing `segments`, committed as a CreateIndex.
async fn rebuild_index(
    snap: &Snapshot,
    name: &str,
    segments: &[BTreeSegment],
    live: &RoaringBitmap,
) -> Result<Committed> {
    let Some(first) = segments.first() else {
        return Err(Error::Internal(format!("index {name:?} has no segment")));
    };
    let field_id = first.metadata.fields.first().copied().unwrap_or(-1);
    let value_type = first.index.lookup().value_type().clone();
    let train = TrainOptions {
        page_rows: first.index.lookup().page_rows(),
        ..Default::default()
    };
    let pairs = indexes::training_pairs(snap, field_id, live).await?;
    let segment = train_segment(
        snap,
        name,
        field_id,
        &value_type,
        pairs,
        live.clone(),
        train,
    )
    .await?;
    let op = Operation::CreateIndex(CreateIndex {
        new_indices: vec![segment],
        removed_indices: segments.iter().map(|s| s.metadata.clone()).collect(),
    });
    operations::commit(snap, op).await
}

/// The live fragments `segment` answers for now (through the history when there is one).
async fn segment_coverage(
    snap: &Snapshot,
    segment: &BTreeSegment,
    live: &RoaringBitmap,
) -> Result<RoaringBitmap> {
    Ok(&index_answer::answered_fragments(snap, std::slice::from_ref(segment)).await? & live)
}

/// A segment's `(value, id)` rows with its ids as current row addresses: translated
/// through the history, rows it deleted left out; row-id segments keep their ids.
async fn segment_pairs(
    snap: &Snapshot,
    segment: &BTreeSegment,
) -> Result<Vec<arrow_array::RecordBatch>> {
    let index: &BTreeIndex = &segment.index;
    let history = match segment.ids_are_addresses(snap.has_stable_row_ids()) {
        true => fri::fri_history(snap).await?,
        false => None,
    };
    let rows = index.data_rows().await?;
    let mut out = Vec::new();
    // every row is kept (as pairs) anyway: the pages are read in one request, and
    // translated a chunk at a time
    let (all_values, all_ids) = index.read_rows(0..rows).await?;
    let mut start = 0;
    while start < rows {
        let end = (start + CHUNK_ROWS).min(rows);
        let (offset, len) = (
            usize::try_from(start).unwrap_or(usize::MAX),
            usize::try_from(end - start).unwrap_or(0),
        );
        let (values, ids) = (all_values.slice(offset, len), all_ids.slice(offset, len));
        let (values, ids) = match &history {
            None => (values, ids),
            Some(h) => {
                let translated = h.translate(ids.values()).await?;
                let keep = arrow_array::BooleanArray::from_iter(
                    translated
                        .iter()
                        .map(|t| Some(matches!(t, Translation::Address(_)))),
                );
                let values = arrow_select::filter::filter(values.as_ref(), &keep)
                    .map_err(|e| Error::Internal(format!("filtering index rows: {e}")))?;
                let ids = arrow_array::UInt64Array::from_iter_values(
                    translated.into_iter().filter_map(|t| match t {
                        Translation::Address(a) => Some(a),
                        Translation::Deleted => None,
                    }),
                );
                (values, ids)
            }
        };
        out.push(
            arrow_array::RecordBatch::try_from_iter([
                ("value", values),
                ("id", std::sync::Arc::new(ids) as arrow_array::ArrayRef),
            ])
            .map_err(|e| Error::Internal(format!("index rows: {e}")))?,
        );
        start = end;
    }
    Ok(out)
}

/// Trains a segment of index `name` from `pairs`, covering `fragments`.
pub(crate) async fn train_segment(
    snap: &Snapshot,
    name: &str,
    field_id: i32,
    value_type: &arrow_schema::DataType,
    pairs: Vec<arrow_array::RecordBatch>,
    fragments: RoaringBitmap,
    options: TrainOptions,
) -> Result<IndexMetadata> {
    let uuid = ObjectUuid::new_v4();
    let dir = snap.store().path(&lancet_paths::layout::index_dir(uuid));
    let pairs = futures::stream::iter(pairs.into_iter().map(Ok));
    let trained = lancet_btree::train(snap.file_store(), &dir, value_type, pairs, options).await?;
    Ok(trained.entry(lancet_btree::EntryFields {
        uuid: uuid.to_proto(),
        name,
        field_id,
        dataset_version: snap.version(),
        fragments,
        stable_row_ids: snap.has_stable_row_ids(),
        created_at: u64::try_from(snap.clock().now_ms()).unwrap_or(0),
    }))
}
