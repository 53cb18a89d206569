//! The write API: a Lance operation committed as the next version.
//!
//! Composition only: lancet-txn plans the operation on the version it is prepared on
//! (fragment ids, index list, manifest fields: [`lancet_txn::build::plan`]), lancet-rowid
//! gives new fragments their row ids and version sequences ([`lancet_rowid::assign`]), and the
//! commit loop applies the result as storage actions, judges it by the invariants (with the
//! footers of the data files it adds) and publishes it, planning again on the latest version
//! after a lost race. The transaction recorded is the operation as the caller gave it, as
//! Lance records it (new fragments at id 0, without row ids).

use lancet_proto::table::transaction::{Delete, Operation};
use lancet_txn::build::Change;
use lancet_txn::TxnError;
use roaring::RoaringBitmap;

use crate::commit;
use crate::committed::Committed;
use crate::convert;
use crate::plan;
use crate::prepare::Intent;
use lancet_read::error::{Error, Result};
use lancet_read::rowids;
use lancet_read::snapshot::Snapshot;

/// Commits `operation` as the next version: Append, Delete, Update, Overwrite, Merge,
/// DataReplacement, CreateIndex, ReserveFragments, UpdateBases and UpdateConfig, and a
/// Restore (as [`Dataset::restore`]); a Rewrite through [`crate::storage::Storage::commit_rewrite`] or
/// [`Optimizer::compact`](crate::Optimizer::compact), which write what it needs beside it. New fragments at id
/// 0 are numbered; on a stable-row-id table they get row ids from `next_row_id` and
/// version sequences. The candidate is judged by the invariants, with the footers of the
/// data files it adds read; a lost race is rebased (the operation planned again on the
/// latest version) or fails typed.
pub(crate) async fn commit(snap: &Snapshot, change: impl Into<Change>) -> Result<Committed> {
    let change = change.into();
    match &change.operation {
        Operation::Restore(r) => return convert::restore(snap, r.version).await,
        // its index entries and its history are written with it, by the paths that move rows
        Operation::Rewrite(_) => {
            return Err(Error::Txn(TxnError::Unsupported {
                operation: "Rewrite",
                reason: "a rewrite's index entries and Fragment Reuse Index history are written with it: commit it with Dataset::commit_rewrite or Dataset::compact".into(),
            }))
        }
        _ => {}
    }
    commit_change(snap, change).await
}

/// Commits `change` (see [`Dataset::commit`]): planned on this version, and again on the
/// latest after a lost race.
pub(crate) async fn commit_change(snap: &Snapshot, change: Change) -> Result<Committed> {
    commit::commit_rebasing(
        snap,
        Intent::Change {
            change: Box::new(change),
            judged: None,
        },
    )
    .await
}

/// Deletes the rows at `offsets` of each fragment named (see
/// [`Dataset::delete_operation`]), committing a Delete recording `predicate`.
pub(crate) async fn delete_rows(
    snap: &Snapshot,
    offsets: &[(u64, RoaringBitmap)],
    predicate: &str,
) -> Result<Committed> {
    let delete = delete_operation(snap, offsets, predicate).await?;
    let rows = offsets.iter().map(|(_, o)| o.len()).sum();
    Ok(commit(snap, Operation::Delete(delete))
        .await?
        .with_rows(rows))
}

/// The Delete of the rows at `offsets` of each fragment named, merged with the rows its
/// deletion file deletes already: the fragment with a new deletion file (written now, in
/// Lance's choice of `.arrow` or `.bin`), or removed when no row is left. Not committed:
/// an Update uses its fragments for the rows it moves.
pub(crate) async fn delete_operation(
    snap: &Snapshot,
    offsets: &[(u64, RoaringBitmap)],
    predicate: &str,
) -> Result<Delete> {
    let mut delete = Delete {
        predicate: predicate.to_string(),
        ..Default::default()
    };
    for (id, rows) in offsets {
        // a count a legacy manifest leaves unknown is read from the data file (the record
        // is committed as stored, its deletion file added)
        let fragment = plan::require_fragment(snap, *id, "Delete").await?;
        let fragment = snap.with_known_row_count(fragment).await?;
        if let Some(beyond) = rows
            .max()
            .filter(|m| u64::from(*m) >= fragment.physical_rows)
        {
            return Err(Error::Txn(TxnError::Operation {
                operation: "Delete",
                reason: format!(
                    "fragment {id} has {} rows; offset {beyond} is beyond them",
                    fragment.physical_rows
                ),
            }));
        }
        let mut deleted = rowids::deletion_vector(snap, &fragment)
            .await?
            .unwrap_or_default();
        deleted |= rows;
        if deleted.len() >= fragment.physical_rows {
            delete.deleted_fragment_ids.push(*id);
            continue;
        }
        let mut updated = fragment.clone();
        let file = lancet_rowid::deletion::write_deletion_file(
            snap.store(),
            *id,
            snap.version(),
            &deleted,
        )
        .await?;
        updated.deletion_file = Some(file);
        rowids::remember_deletion_vector(snap, &updated, &deleted).await?;
        delete.updated_fragments.push(updated);
    }
    Ok(delete)
}
