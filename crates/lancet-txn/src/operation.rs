//! The Lance 14 operation a commit records, derived from what it changed.
//!
//! Operations lancet writes:
//! - storage actions: `Append` (only new fragments), `Delete` (deletion files added or
//!   fragments removed, data files untouched), `DataReplacement` (data files put in place of
//!   files holding the same fields, or added for fields no file holds: a column backfill) or
//!   `Update` (anything else);
//! - index changes alone (index build, FRI upgrade or trim): `CreateIndex` with the entries
//!   added and the entries they replace;
//! - rewrites: `Rewrite` with a group per rewrite (the sources and their destinations), built by
//!   the rewriting path ([`crate::build::Change`]);
//! - flat ↔ tree conversion: `Rewrite` with no groups (the fragments' content does not change);
//! - restore: `Restore` naming the version whose content it publishes;
//! - rows written again (update, merge_insert): an `Update` in `RewriteRows` mode
//!   ([`rows_rewritten`]).

use lancet_proto::table::transaction::KeyExistenceFilter;
use lancet_proto::table::transaction::{
    Append, CreateIndex, DataReplacement, DataReplacementGroup, Delete, Operation, Restore,
    Rewrite, Update, UpdateMode,
};
use lancet_proto::table::{DataFragment, IndexMetadata, Transaction};

use crate::replacement::{replace_data_file, same_fields};
use lancet_proto::file::Field;
use lancet_proto::FragmentChange;

/// A new transaction of `operation`, prepared on `read_version`, with a fresh uuid.
pub fn new_transaction(read_version: u64, operation: Operation) -> Transaction {
    Transaction {
        read_version,
        uuid: uuid::Uuid::new_v4().hyphenated().to_string(),
        operation: Some(operation),
        ..Default::default()
    }
}

/// The operation of a commit of storage actions, from what they changed, on a version of
/// `schema` numbered `read_version`.
pub fn data_operation(
    changes: &[FragmentChange],
    schema: &[Field],
    read_version: u64,
) -> Operation {
    let appended = |c: &FragmentChange| c.before.is_none() && c.after.is_some();
    if changes.iter().all(appended) {
        return Operation::Append(Append {
            fragments: changes.iter().filter_map(|c| c.after.clone()).collect(),
        });
    }
    let deletion_only = |c: &FragmentChange| match (&c.before, &c.after) {
        (Some(_), None) => true,
        (Some(b), Some(a)) => b.files == a.files && b.overlays == a.overlays,
        _ => false,
    };
    if changes.iter().all(deletion_only) {
        return Operation::Delete(Delete {
            updated_fragments: changes.iter().filter_map(|c| c.after.clone()).collect(),
            deleted_fragment_ids: changes
                .iter()
                .filter(|c| c.after.is_none())
                .map(|c| c.id)
                .collect(),
            predicate: String::new(),
        });
    }
    if let Some(replacement) = replacement_operation(changes, schema, read_version) {
        return replacement;
    }
    let mut update = Update {
        update_mode: UpdateMode::RewriteRows as i32,
        ..Default::default()
    };
    for c in changes {
        match (&c.before, &c.after) {
            (Some(_), None) => update.removed_fragment_ids.push(c.id),
            (Some(_), Some(a)) => update.updated_fragments.push(a.clone()),
            (None, Some(a)) => update.new_fragments.push(a.clone()),
            (None, None) => {}
        }
    }
    Operation::Update(update)
}

/// A `DataReplacement` when every change only puts data files in place (Lance's rule,
/// [`replace_data_file`]): checked by replaying it, so each fragment's files before with the
/// new ones put in give exactly its record after, and the new files hold one field list;
/// `None` otherwise. It lists the new files alone, where an `Update` would list every whole
/// fragment again: a backfill's inline transaction is half the size.
fn replacement_operation(
    changes: &[FragmentChange],
    schema: &[Field],
    read_version: u64,
) -> Option<Operation> {
    let mut replacements = Vec::new();
    for c in changes {
        let (Some(before), Some(after)) = (&c.before, &c.after) else {
            return None;
        };
        let mut replayed = before.clone();
        for file in after.files.iter().filter(|f| !before.files.contains(f)) {
            replayed = replace_data_file(&replayed, file, schema, read_version).ok()?;
            replacements.push(DataReplacementGroup {
                fragment_id: c.id,
                new_file: Some(file.clone()),
            });
        }
        if replayed != *after {
            return None;
        }
    }
    same_fields(replacements.iter().filter_map(|g| g.new_file.as_ref())).ok()?;
    (!replacements.is_empty())
        .then_some(Operation::DataReplacement(DataReplacement { replacements }))
}

/// `CreateIndex` for a change of the index list from `before` to `after` (entries compared
/// whole; an entry replaced under the same uuid counts as removed and added), or `None`
/// when the list did not change.
pub fn index_operation(before: &[IndexMetadata], after: &[IndexMetadata]) -> Option<Operation> {
    let new_indices: Vec<IndexMetadata> = after
        .iter()
        .filter(|a| !before.contains(a))
        .cloned()
        .collect();
    let removed_indices: Vec<IndexMetadata> = before
        .iter()
        .filter(|b| !after.contains(b))
        .cloned()
        .collect();
    if new_indices.is_empty() && removed_indices.is_empty() {
        return None;
    }
    Some(Operation::CreateIndex(CreateIndex {
        new_indices,
        removed_indices,
    }))
}

/// Lance's `drop_index`: a CreateIndex removing every entry named `name` (each segment of
/// the index; no file is deleted, cleanup removes them once no version names them), or `None`
/// when no entry has that name (Lance 14.0.2's "index not found"). The entries are removed
/// without being opened, so an index lancet cannot read can be dropped too.
pub fn drop_index_operation(indices: &[IndexMetadata], name: &str) -> Option<Operation> {
    let removed_indices: Vec<IndexMetadata> =
        indices.iter().filter(|m| m.name == name).cloned().collect();
    if removed_indices.is_empty() {
        return None;
    }
    Some(Operation::CreateIndex(CreateIndex {
        new_indices: Vec::new(),
        removed_indices,
    }))
}

/// A conversion between flat and tree layouts: a `Rewrite` with no groups (no fragment's
/// content changes).
pub fn conversion_operation() -> Operation {
    Operation::Rewrite(Rewrite::default())
}

/// The `Update` of rows written again: `delete` removes their old copies (fragments removed
/// or given deletion files), `new_fragments` hold the new copies (and any inserted rows,
/// whose keys `inserted_rows` records for merge_insert's conflict check), in Lance's
/// `RewriteRows` mode.
///
/// `preserving` names the fields whose index coverage the moved rows' old fragments keep
/// (`fields_for_preserving_frag_bitmap`): Lance records the assigned fields and their
/// descendants for an update, and every field for a merge_insert (it rewrites whole rows:
/// `fields_pre_order`). No field is recorded as modified: no data file is rewritten in place.
pub fn rows_rewritten(
    delete: Delete,
    new_fragments: Vec<DataFragment>,
    preserving: Vec<u32>,
    inserted_rows: Option<KeyExistenceFilter>,
) -> Operation {
    Operation::Update(Update {
        removed_fragment_ids: delete.deleted_fragment_ids,
        updated_fragments: delete.updated_fragments,
        new_fragments,
        fields_modified: Vec::new(),
        fields_for_preserving_frag_bitmap: preserving,
        update_mode: UpdateMode::RewriteRows as i32,
        inserted_rows,
        ..Default::default()
    })
}

/// Lance's `Restore` of `version`'s content.
pub fn restore_operation(version: u64) -> Operation {
    Operation::Restore(Restore { version })
}

#[cfg(test)]
mod drop_index_tests {
    use super::*;

    fn entry(name: &str, uuid: u8) -> IndexMetadata {
        IndexMetadata {
            name: name.into(),
            uuid: Some(lancet_proto::table::Uuid {
                uuid: vec![uuid; 16],
            }),
            ..Default::default()
        }
    }

    #[test]
    fn every_segment_of_the_name_is_removed_and_nothing_else() {
        let indices = [entry("a_idx", 1), entry("b_idx", 2), entry("a_idx", 3)];
        let Some(Operation::CreateIndex(op)) = drop_index_operation(&indices, "a_idx") else {
            panic!("a CreateIndex");
        };
        assert!(op.new_indices.is_empty());
        assert_eq!(op.removed_indices, [indices[0].clone(), indices[2].clone()]);
        assert!(drop_index_operation(&indices, "c_idx").is_none());
        assert!(drop_index_operation(&[], "a_idx").is_none());
    }
}
