//! Changing rows by filter: [`Dataset::delete`] and [`Dataset::update`].
//!
//! Composition only. The filter is answered by [`Dataset::search`]; a delete merges the
//! matched rows into each fragment's deletion vector ([`Dataset::delete_operation`]); an
//! update reads the matched rows, computes the assigned columns with lancet-filter, writes
//! them as new fragments and deletes the old copies, in one Update. With stable row ids the
//! moved rows keep their `_rowid` (their new fragments carry the old ids) and get the new
//! version as last updated.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use lancet_file::Rows;
use lancet_filter::{Filter, Scalar};
use lancet_txn::operation::rows_rewritten;
use roaring::RoaringBitmap;

use crate::committed::Committed;
use crate::operations;
use crate::redo;
use crate::write;
use lancet_filter::exprs::Assignment;
use lancet_read::error::{Error, Result};
use lancet_read::rowids;
use lancet_read::rows;
use lancet_read::search;
use lancet_read::snapshot::Snapshot;

/// Deletes the live rows where `filter` is TRUE, as one Delete recording the filter. A
/// fragment left with no live row is removed. A filter no row matches still commits (an
/// empty Delete), as Lance does. Another writer's change to the matched rows first makes it
/// answer the filter again on the latest version ([`redo`]). [`Committed::rows`]: the rows
/// deleted.
pub(crate) async fn delete(snap: &Snapshot, filter: &Filter) -> Result<Committed> {
    let once = |base: Snapshot| async move { delete_once(&base, filter).await };
    redo::redo_on_conflict(snap, redo::CONFLICT_RETRIES, "delete", once).await
}

async fn delete_once(snap: &Snapshot, filter: &Filter) -> Result<Committed> {
    let matched = search::search_addresses(snap, filter).await?;
    let offsets: Vec<(u64, RoaringBitmap)> = matched
        .into_iter()
        .map(|(f, o)| (u64::from(f), o))
        .collect();
    operations::delete_rows(snap, &offsets, filter.text()).await
}

/// Sets the columns of `assignments` (`"x = x + 1"` as SQL text, or a column and its
/// value: [`Assignment`]) on the live rows where
/// `filter` is TRUE, as one Update: the rows are written again as new fragments with the
/// new values (cast to each column's type; a value that does not fit is an error) and
/// their old copies deleted. A filter no row matches commits an empty Update. Another
/// writer's change to the matched rows first makes it run again on the latest version
/// ([`redo`]). [`Committed::rows`]: the rows updated.
pub(crate) async fn update(
    snap: &Snapshot,
    filter: &Filter,
    assignments: &[impl Assignment],
) -> Result<Committed> {
    let once = |base: Snapshot| async move { update_once(&base, filter, assignments).await };
    redo::redo_on_conflict(snap, redo::CONFLICT_RETRIES, "update", once).await
}

async fn update_once(
    snap: &Snapshot,
    filter: &Filter,
    assignments: &[impl Assignment],
) -> Result<Committed> {
    let assignments = assignments
        .iter()
        .map(Assignment::to_assignment)
        .collect::<Result<Vec<_>, _>>()?;
    let assignments = assignments.as_slice();
    if assignments.is_empty() {
        return Err(Error::InvalidArgument {
            what: "update".into(),
            reason: "no column is assigned".into(),
        });
    }
    let projection = rows::projection(snap, None)?;
    // the assigned columns and their descendants, as Lance records them
    let mut preserving = Vec::new();
    for (column, _) in assignments {
        let assigned = projection
            .iter()
            .find(|c| c.field.name() == column)
            .ok_or_else(|| Error::InvalidArgument {
                what: format!("column {column:?}"),
                reason: "the table has no such column".into(),
            })?;
        preserving.extend(assigned.ids.iter().filter_map(|id| u32::try_from(*id).ok()));
    }
    let matched = search::search_addresses(snap, filter).await?;
    let rows: u64 = matched.values().map(RoaringBitmap::len).sum();
    let mut batches = Vec::new();
    let mut moved_ids = Vec::new();
    for (id, offsets) in &matched {
        let fragment = snap
            .fragment(u64::from(*id))
            .await?
            .ok_or_else(|| Error::Internal(format!("fragment {id} was matched but is gone")))?;
        let offsets: Vec<u64> = offsets.iter().map(u64::from).collect();
        let old = rows::read_rows(snap, &fragment, &projection, Rows::At(&offsets)).await?;
        batches.push(Ok(assign(&old, assignments, filter)?));
        if let Some(sequence) = rowids::row_id_sequence(snap, &fragment)? {
            moved_ids.extend(offsets.iter().filter_map(|o| sequence.get(*o)));
        }
    }
    let mut new_fragments = write::write_fragments(snap, futures::stream::iter(batches)).await?;
    if snap.has_stable_row_ids() {
        lancet_rowid::assign::keep_moved_ids(&mut new_fragments, moved_ids);
    }
    let offsets: Vec<(u64, RoaringBitmap)> = matched
        .into_iter()
        .map(|(f, o)| (u64::from(f), o))
        .collect();
    let delete = operations::delete_operation(snap, &offsets, filter.text()).await?;
    let update = rows_rewritten(delete, new_fragments, preserving, None);
    Ok(operations::commit(snap, update).await?.with_rows(rows))
}

/// `batch` with each assigned column replaced by its new value, cast to the column's type.
fn assign(
    batch: &RecordBatch,
    assignments: &[(String, Scalar)],
    filter: &Filter,
) -> Result<RecordBatch> {
    let schema = batch.schema();
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    let new: HashMap<&str, &Scalar> = assignments.iter().map(|(c, v)| (c.as_str(), v)).collect();
    for (i, field) in schema.fields().iter().enumerate() {
        if let (Some(value), Some(slot)) = (new.get(field.name().as_str()), columns.get_mut(i)) {
            *slot = value
                .evaluate_as(batch, field.data_type())
                .map_err(|reason| Error::InvalidArgument {
                    what: format!("SET {} (where {})", field.name(), filter.text()),
                    reason,
                })?;
        }
    }
    RecordBatch::try_new(Arc::clone(&schema), columns).map_err(|e| Error::InvalidArgument {
        what: "updated rows".into(),
        reason: e.to_string(),
    })
}
