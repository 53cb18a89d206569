//! BTree indexes built and committed: trained on a column (whole, or one segment of some
//! fragments for a distributed build) and published as a CreateIndex.

use lancet_btree::TrainOptions;
use lancet_proto::table::transaction::{CreateIndex, Operation};
use lancet_proto::table::IndexMetadata;
use roaring::RoaringBitmap;

use crate::operations;
use crate::optimize;
use lancet_read::error::{Error, Result};
use lancet_read::indexes;
use lancet_read::paths;
use lancet_read::snapshot::Snapshot;

/// Trains a BTree on `column` over every live row (ids are row addresses) and commits it as
/// the next version under the name `{column}_idx`, replacing an index of that name.
/// `page_rows`: rows per index page, or `None` for Lance's default, 4,096
/// ([`lancet_btree::DEFAULT_PAGE_ROWS`]): `ds.build_btree("id", None)`.
pub(crate) async fn build_btree(
    snap: &Snapshot,
    column: &str,
    page_rows: impl Into<Option<u64>>,
) -> Result<crate::committed::Committed> {
    let page_rows = page_rows.into().unwrap_or(lancet_btree::DEFAULT_PAGE_ROWS);
    let segment = train_btree_segment(snap, column, None, page_rows).await?;
    commit_btree_segments(snap, column, vec![segment]).await
}

/// Trains one segment of the BTree `{column}_idx` over the live rows of `fragments` (every
/// fragment when `None`) and writes its files, without committing: the distributed form of
/// [`Dataset::build_btree`]. Workers train disjoint fragment sets of one version; one
/// commits every segment with [`Storage::commit_btree_segments`](crate::Storage::commit_btree_segments).
pub(crate) async fn train_btree_segment(
    snap: &Snapshot,
    column: &str,
    fragments: Option<&[u64]>,
    page_rows: u64,
) -> Result<IndexMetadata> {
    let field =
        paths::resolve(&snap.manifest().fields, column).ok_or_else(|| Error::InvalidArgument {
            what: format!("column {column:?}"),
            reason: "the table has no such column (or field inside a struct column)".into(),
        })?;
    let chosen = match fragments {
        None => snap.fragments().await?,
        Some(ids) => snap.fragments_with_ids(ids).await?,
    };
    let covered: RoaringBitmap = chosen
        .iter()
        .map(|f| {
            u32::try_from(f.id).map_err(|_| Error::Corrupt {
                at: snap.manifest_ref(),
                rule: format!("fragment id {} exceeds 32 bits", f.id),
            })
        })
        .collect::<Result<_>>()?;
    let batches = indexes::training_pairs(snap, field.id, &covered).await?;
    // no fragments (a truncated table): an empty index of the column's type, as Lance
    // 14.0.2 builds one
    let value_type = match batches.first() {
        Some(b) => b.column(0).data_type().clone(),
        None => (paths::projection(snap, Some(&[column.to_string()]))?.fields())
            .first()
            .map(|f| f.data_type().clone())
            .ok_or_else(|| Error::Internal(format!("column {column:?} has no type")))?,
    };
    let name = format!("{column}_idx");
    let options = TrainOptions {
        page_rows,
        ..Default::default()
    };
    optimize::train_segment(
        snap,
        &name,
        field.id,
        &value_type,
        batches,
        covered,
        options,
    )
    .await
}

/// Commits `segments` ([`Storage::train_btree_segment`](crate::Storage::train_btree_segment)'s, of this table's column
/// `column`) as the one BTree `{column}_idx` in one CreateIndex, replacing an index of
/// that name. Segments of another index or column, or two covering one fragment, are
/// refused with nothing published.
pub(crate) async fn commit_btree_segments(
    snap: &Snapshot,
    column: &str,
    segments: Vec<IndexMetadata>,
) -> Result<crate::committed::Committed> {
    let name = format!("{column}_idx");
    let invalid = |reason: String| Error::InvalidArgument {
        what: format!("segments of {name}"),
        reason,
    };
    let field = paths::resolve(&snap.manifest().fields, column)
        .ok_or_else(|| invalid(format!("the table has no column {column:?}")))?;
    if segments.is_empty() {
        return Err(invalid("no segments".into()));
    }
    let mut seen = RoaringBitmap::new();
    for s in &segments {
        if s.name != name || s.fields != [field.id] {
            return Err(invalid(format!(
                "segment {:?} on fields {:?} is not one of {name} on field {}",
                s.name, s.fields, field.id
            )));
        }
        let covered = indexes::index_fragments(snap, s)?.unwrap_or_default();
        if !(&seen & &covered).is_empty() {
            return Err(invalid("two segments cover the same fragment".to_string()));
        }
        seen |= covered;
    }
    let removed_indices = snap
        .indices()
        .iter()
        .filter(|m| m.name == name)
        .cloned()
        .collect();
    let op = Operation::CreateIndex(CreateIndex {
        new_indices: segments,
        removed_indices,
    });
    judge_since_training(snap, &op).await?;
    operations::commit(snap, op).await
}

/// Lance's `drop_index` (lancet-txn's `drop_index_operation`), committed.
pub(crate) async fn drop_index(snap: &Snapshot, name: &str) -> Result<crate::committed::Committed> {
    let op =
        lancet_txn::operation::drop_index_operation(snap.indices(), name).ok_or_else(|| {
            Error::IndexNotFound {
                uri: snap.uri().to_string(),
                version: snap.version(),
                name: name.to_string(),
            }
        })?;
    operations::commit(snap, op).await
}

/// Segments trained on a version older than this one (their `dataset_version`) are judged
/// against every version published since their training, as their commit would have been
/// had it been prepared there: Lance replays staged segments against the snapshot they are
/// committed on. A version that rewrote the indexed column, or compacted fragments a segment
/// covers, is a retryable conflict (train again on this version), by lancet-txn's conflict
/// table; anything else lands, the fragments added since left to scans.
async fn judge_since_training(snap: &Snapshot, op: &Operation) -> Result<()> {
    let Operation::CreateIndex(ci) = op else {
        return Ok(());
    };
    let trained = ci.new_indices.iter().map(|s| s.dataset_version).min();
    let Some(trained) = trained.filter(|v| *v < snap.version()) else {
        return Ok(());
    };
    let read = lancet_paths::transaction::versions_since(
        snap.store(),
        snap.naming_scheme(),
        trained,
        snap.version(),
    )
    .await?;
    let since: Vec<_> = read
        .into_iter()
        .map(|(file, txn)| (file.entry.version, txn))
        .filter(|(v, _)| *v <= snap.version())
        .collect();
    lancet_txn::rebase::judge_since(op, &since, false).map_err(|c| Error::CommitConflict {
        uri: snap.uri().to_string(),
        version: c.version,
        reason: format!("segments trained on version {trained}: {}", c.reason),
        retryable: c.retryable,
        cause: c.cause,
    })
}
