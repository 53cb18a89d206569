//! What changed between two versions, for change-data capture on a stable-row-id table, as
//! Lance 14.0.2's `delta` answers it: rows inserted (created in the range), rows updated
//! (created before it, last updated in it), and row ids deleted (live at the first version,
//! not at the last). Which rows are inserted or updated is lancet-rowid's rule
//! (`lancet_rowid::changes`); this module reads and assembles them.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use lancet_rowid::changes::{Change, ChangedRows};

use crate::error::{Error, Result};
use crate::rowids;
use crate::snapshot::Snapshot;
use crate::take;

/// The changes of versions `(begin, end]` (`Dataset::changes`).
#[derive(Debug, Clone)]
pub struct Changes {
    /// Rows created in the range: every column, then `_rowid`, `_row_created_at_version`
    /// and `_row_last_updated_at_version`, in scan order.
    pub inserted: RecordBatch,
    /// Rows created at or before `begin` and last updated in the range, as `inserted`.
    pub updated: RecordBatch,
    /// Row ids live at `begin` and not at `end`, ascending.
    pub deleted_row_ids: Vec<u64>,
}

/// The rows inserted and updated, and the row ids deleted, in versions `(begin, end]`,
/// equal to pylance's `delta(begin_version=begin, end_version=end)`: inserted and updated
/// rows are read from this handle's version (as Lance reads its dataset's), deleted ids
/// by comparing versions `begin` and `end`. Asked of a handle at a version after `end`,
/// the rows are this handle's: a row inserted in the range comes with this version's
/// values, a row updated in the range and again after `end` is not reported as updated
/// (its last update is outside the range), and a row deleted since is absent, as pylance
/// answers on a dataset opened at a later version; open the handle at `end` for the rows
/// as `end` held them. Needs stable row ids (`InvalidInput`
/// otherwise, where pylance answers nothing silently); `begin` after `end` is
/// `InvalidInput`; a version cleaned up is `NotFound`.
pub async fn changes(snap: &Snapshot, begin: u64, end: u64) -> Result<Changes> {
    let invalid = |reason: String| Error::InvalidArgument {
        what: format!("changes between versions {begin} and {end}"),
        reason,
    };
    if begin > end {
        return Err(invalid(format!(
            "begin version {begin} is newer than end version {end}"
        )));
    }
    if !snap.has_stable_row_ids() {
        return Err(invalid(
            "the table does not use stable row ids: a row's identity and versions are not tracked"
                .into(),
        ));
    }
    let inserted = rows_changed(snap, Change::Inserted, begin, end).await?;
    let updated = rows_changed(snap, Change::Updated, begin, end).await?;
    let deleted_row_ids = match begin {
        0 => Vec::new(),
        _ => {
            let (first, last) = (snap.checkout(begin).await?, snap.checkout(end).await?);
            for v in [&first, &last] {
                if !v.has_stable_row_ids() {
                    return Err(invalid(format!(
                        "version {} does not use stable row ids",
                        v.version()
                    )));
                }
            }
            let after: std::collections::HashSet<u64> = rowids::live_row_ids(&last)
                .await?
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            let mut gone: Vec<u64> = rowids::live_row_ids(&first)
                .await?
                .into_iter()
                .map(|(id, _)| id)
                .filter(|id| !after.contains(id))
                .collect();
            gone.sort_unstable();
            gone
        }
    };
    Ok(Changes {
        inserted,
        updated,
        deleted_row_ids,
    })
}

/// This version's live rows `change` selects, in scan order, with their row id and
/// versions appended.
async fn rows_changed(
    snap: &Snapshot,
    change: Change,
    begin: u64,
    end: u64,
) -> Result<RecordBatch> {
    let mut changed = ChangedRows::default();
    let manifest = snap.manifest_path();
    for f in snap.fragments().await?.iter() {
        let deleted = rowids::deletion_vector(snap, f).await?.unwrap_or_default();
        changed.add_fragment(f, &manifest, &deleted, change, (begin, end))?;
    }
    let rows = take::take_addresses(snap, &changed.addresses, None).await?;
    let mut fields: Vec<Arc<Field>> = rows.schema().fields().iter().cloned().collect();
    let mut columns: Vec<ArrayRef> = rows.columns().to_vec();
    for (name, values) in [
        ("_rowid", changed.row_ids),
        ("_row_created_at_version", changed.created_at),
        ("_row_last_updated_at_version", changed.updated_at),
    ] {
        fields.push(Arc::new(Field::new(name, DataType::UInt64, true)));
        columns.push(Arc::new(UInt64Array::from(values)));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| Error::Internal(format!("changed rows: {e}")))
}
