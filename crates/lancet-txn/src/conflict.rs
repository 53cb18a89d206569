//! Whether a commit prepared on an older version can be rebased over the versions published
//! since: Lance 14.0.2's conflict resolver for the operations lancet writes (rows) against
//! every operation (columns), observed through pylance and read off `conflict_resolver.rs`
//! (`docs/architecture.md` draws the table). Where Lance rebases by rewriting the caller's
//! data (merging deletion vectors of two deletes of one fragment) lancet reports a retryable
//! conflict instead: the caller redoes its work.

use std::collections::BTreeSet;

use lancet_proto::table::transaction::{CreateIndex, Operation, Rewrite, UpdateConfig};
use lancet_proto::table::IndexMetadata;
use lancet_proto::transaction::operation_name;
use lancet_proto::StoredTransaction;

use crate::invariants::FRI_INDEX_NAME as FRI_NAME;

/// Retryable when one of `files` writes a field an index `ci` adds covers (`did` says what
/// the other operation did to it), else Rebase.
fn covered_field<'a>(
    ci: &CreateIndex,
    files: impl Iterator<Item = &'a lancet_proto::table::DataFile>,
    did: &str,
) -> Compatibility {
    let fields: BTreeSet<i32> = ci
        .new_indices
        .iter()
        .flat_map(|i| i.fields.iter().copied())
        .collect();
    let mut written = files.flat_map(|f| f.fields.iter());
    match written.find(|f| fields.contains(f)) {
        Some(f) => Compatibility::Retryable(format!("{did} field {f}, which the new index covers")),
        None => Compatibility::Rebase,
    }
}

/// Whether a commit can be rebased over a version published since it was prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compatibility {
    /// Rebuild on the newer version and commit.
    Rebase,
    /// A conflict the caller may resolve by redoing its work on the newer version.
    Retryable(String),
    /// A conflict no redo resolves (the other version replaced the table's history).
    Incompatible(String),
}

/// The fragment ids a data operation reads and changes.
fn touched(op: &Operation) -> BTreeSet<u64> {
    match op {
        Operation::Delete(d) => d
            .updated_fragments
            .iter()
            .map(|f| f.id)
            .chain(d.deleted_fragment_ids.iter().copied())
            .collect(),
        Operation::Update(u) => u
            .updated_fragments
            .iter()
            .map(|f| f.id)
            .chain(u.removed_fragment_ids.iter().copied())
            .collect(),
        Operation::Rewrite(r) => rewritten(r),
        Operation::DataReplacement(d) => d.replacements.iter().map(|g| g.fragment_id).collect(),
        Operation::DataOverlay(d) => d.groups.iter().map(|g| g.fragment_id).collect(),
        _ => BTreeSet::new(),
    }
}

/// The source fragments of a rewrite.
fn rewritten(r: &Rewrite) -> BTreeSet<u64> {
    r.groups
        .iter()
        .flat_map(|g| g.old_fragments.iter().map(|f| f.id))
        .chain(r.old_fragments.iter().map(|f| f.id))
        .collect()
}

/// The fragments an index entry records. `None` when it records none, or when its bitmap
/// does not decode: either way nothing can be said about what it covers, so the callers
/// answer Retryable (never proceed on a guess); [`no_bitmap`] says which in the message.
fn bitmap_ids(index: &IndexMetadata) -> Option<roaring::RoaringBitmap> {
    if index.fragment_bitmap.is_empty() {
        return None;
    }
    lancet_proto::roaring_wire::decode_roaring32(&index.fragment_bitmap).ok()
}

/// How an index entry without usable fragment ids is described in a Retryable answer.
fn no_bitmap(index: &IndexMetadata) -> &'static str {
    if index.fragment_bitmap.is_empty() {
        "records no fragments"
    } else {
        "has a fragment bitmap that does not decode"
    }
}

/// Lance 14.0.2's rule for a Rewrite that remaps the indexes covering its sources in its own
/// commit (it carries no Fragment Reuse Index entry, `check_rewrite_txn`): an index another
/// writer built since, over any of the rewrite's sources or over every fragment (no bitmap),
/// was not remapped, so the rewrite is retried on the newer version. A CreateIndex of the
/// Fragment Reuse Index itself is left to [`compatibility`]. `None` when the rule does not
/// decide (`mine` is no Rewrite, or `theirs` no such CreateIndex).
pub fn remapping_rewrite_rule(
    mine: &Operation,
    theirs: &StoredTransaction,
) -> Option<Compatibility> {
    let (Operation::Rewrite(r), Some(Operation::CreateIndex(ci))) =
        (mine, &theirs.transaction.operation)
    else {
        return None;
    };
    if ci.new_indices.iter().any(|i| i.name == FRI_NAME) {
        return None;
    }
    let sources = rewritten(r);
    for index in &ci.new_indices {
        let Some(b) = bitmap_ids(index) else {
            return Some(Compatibility::Retryable(format!(
                "CreateIndex built index {:?}, which {}, so this rewrite did not remap it",
                index.name,
                no_bitmap(index)
            )));
        };
        if let Some(id) = sources
            .iter()
            .find(|id| u32::try_from(**id).is_ok_and(|i| b.contains(i)))
        {
            return Some(Compatibility::Retryable(format!(
                "CreateIndex built index {:?} over fragment {id}, which this rewrite replaces \
                 without remapping that index",
                index.name
            )));
        }
    }
    None
}

/// Why a merge_insert that inserted keys (`mine` records them) cannot be rebased over
/// `other`: another merge inserting one of its keys (or keys it cannot compare), an update
/// that does not say what it inserted, or an append. Lance 14.0.2's primary-key rule
/// (`check_update_txn`), applied by lancet to every merge that inserts, so two merges racing
/// to insert one key never both land: the loser redoes its merge on the newer version, where
/// the key is a match.
fn inserted_key_race(mine: &Operation, other: &Operation, name: &str) -> Option<String> {
    let Operation::Update(u) = mine else {
        return None;
    };
    let keys = u.inserted_rows.as_ref()?;
    match other {
        Operation::Update(theirs) => match theirs.inserted_rows.as_ref() {
            None => Some(format!(
                "{name} may have inserted keys this merge inserts (it records none)"
            )),
            Some(t) => match crate::merge::keys_intersect(keys, t) {
                Some(false) => None,
                Some(true) => Some(format!("{name} inserted a key this merge also inserts")),
                None => Some(format!(
                    "{name} inserted keys this merge cannot compare with its own"
                )),
            },
        },
        Operation::Append(_) => Some(format!(
            "{name} appended rows that may hold keys this merge inserts"
        )),
        // new values of a key column may be a key this merge inserts
        Operation::DataReplacement(d) => d
            .replacements
            .iter()
            .filter_map(|g| g.new_file.as_ref())
            .any(|f| f.fields.iter().any(|id| keys.field_ids.contains(id)))
            .then(|| format!("{name} rewrote a key column this merge inserts into")),
        Operation::DataOverlay(d) => d
            .groups
            .iter()
            .flat_map(|g| g.overlays.iter())
            .filter_map(|o| o.data_file.as_ref())
            .any(|f| f.fields.iter().any(|id| keys.field_ids.contains(id)))
            .then(|| format!("{name} overlaid a key column this merge inserts into")),
        _ => None,
    }
}

/// Lance 14's answer for committing `mine` over `theirs` (published since `mine` was
/// prepared). `stable_row_ids`: the table assigns row ids and `mine`'s new fragments took
/// theirs before the race (storage actions), so a rebase would reuse them; false for a
/// commit that assigns them when it is planned again on the latest version (an operation,
/// as Lance's own commits do).
pub fn compatibility(
    mine: &Operation,
    theirs: &StoredTransaction,
    stable_row_ids: bool,
) -> Compatibility {
    use Compatibility::*;
    let Some(other) = &theirs.transaction.operation else {
        return Incompatible(format!(
            "the other version's operation is {}, which lancet cannot judge",
            theirs.operation_name()
        ));
    };
    let name = operation_name(other);
    let overlap = |a: &BTreeSet<u64>, b: &BTreeSet<u64>| a.intersection(b).next().copied();
    if let Operation::UpdateConfig(mine) = mine {
        return update_config_over(mine, other, name);
    }
    // Operations that replace or rewind the table's history conflict with every data change.
    if matches!(other, Operation::Overwrite(_) | Operation::Restore(_))
        || matches!(other, Operation::UpdateMemWalState(_))
    {
        return Incompatible(format!("the other version is {name}"));
    }
    let preserves = match other {
        Operation::Merge(m) => m.preserves_nullability,
        Operation::Project(p) => p.preserves_nullability,
        _ => true,
    };
    match mine {
        Operation::Append(a) => {
            if !preserves {
                return Retryable(format!(
                    "{name} may change the schema the append was written in"
                ));
            }
            let adds_rows = match other {
                Operation::Append(_) | Operation::Merge(_) | Operation::DataReplacement(_) => true,
                Operation::Update(u) => !u.new_fragments.is_empty(),
                _ => false,
            };
            if stable_row_ids && adds_rows && !a.fragments.is_empty() {
                return Retryable(format!(
                    "{name} assigned row ids the appended fragments also took"
                ));
            }
            Rebase
        }
        Operation::Delete(_) | Operation::Update(_) => {
            if let Some(reason) = inserted_key_race(mine, other, name) {
                return Retryable(reason);
            }
            let mut mine_ids = touched(mine);
            if let Operation::Update(u) = mine {
                mine_ids.extend(u.new_fragments.iter().map(|f| f.id));
                if stable_row_ids && !u.new_fragments.is_empty() {
                    if let Operation::Append(_) | Operation::Update(_) = other {
                        return Retryable(format!("{name} assigned row ids this update also took"));
                    }
                }
            }
            match other {
                Operation::Merge(_) => {
                    Retryable(format!("{name} rewrote fragments this change read"))
                }
                Operation::Project(_) if !preserves && matches!(mine, Operation::Update(_)) => {
                    Retryable(format!("{name} may have dropped a field this update wrote"))
                }
                Operation::Delete(_)
                | Operation::Update(_)
                | Operation::Rewrite(_)
                | Operation::DataReplacement(_)
                | Operation::DataOverlay(_) => match overlap(&mine_ids, &touched(other)) {
                    Some(id) => Retryable(format!("{name} also changed fragment {id}")),
                    None => Rebase,
                },
                _ => Rebase,
            }
        }
        Operation::CreateIndex(ci) => match other {
            Operation::Rewrite(r) => {
                let sources = rewritten(r);
                for index in &ci.new_indices {
                    match bitmap_ids(index) {
                        None => {
                            return Retryable(format!(
                                "{name} moved rows and index {:?} {}",
                                index.name,
                                no_bitmap(index)
                            ))
                        }
                        Some(b) => {
                            if let Some(id) = sources
                                .iter()
                                .find(|id| u32::try_from(**id).is_ok_and(|i| b.contains(i)))
                            {
                                return Retryable(format!(
                                    "{name} rewrote fragment {id}, which index {:?} covers",
                                    index.name
                                ));
                            }
                        }
                    }
                }
                Rebase
            }
            Operation::CreateIndex(theirs_ci) => create_index_pair(ci, theirs_ci),
            Operation::Update(u) if !u.fields_modified.is_empty() => {
                let fields: BTreeSet<i32> = ci
                    .new_indices
                    .iter()
                    .flat_map(|i| i.fields.iter().copied())
                    .collect();
                match u
                    .fields_modified
                    .iter()
                    .find(|f| i32::try_from(**f).is_ok_and(|f| fields.contains(&f)))
                {
                    Some(f) => Retryable(format!(
                        "{name} rewrote field {f}, which the new index covers"
                    )),
                    None => Rebase,
                }
            }
            Operation::DataReplacement(d) => covered_field(
                ci,
                d.replacements.iter().filter_map(|g| g.new_file.as_ref()),
                &format!("{name} replaced"),
            ),
            // an overlay replaces values of its fields: an index of one of them, built
            // without it, would answer from the values it replaced
            Operation::DataOverlay(d) => covered_field(
                ci,
                d.groups
                    .iter()
                    .flat_map(|g| g.overlays.iter())
                    .filter_map(|o| o.data_file.as_ref()),
                &format!("{name} overlaid"),
            ),
            _ => Rebase,
        },
        Operation::Rewrite(r) => {
            let sources = rewritten(r);
            match other {
                Operation::Merge(_) => {
                    Retryable(format!("{name} rewrote fragments this rewrite read"))
                }
                Operation::Rewrite(_) => Retryable(format!(
                    "{name} also rewrote fragments; the Fragment Reuse Index history changed"
                )),
                Operation::CreateIndex(theirs_ci) => {
                    if theirs_ci
                        .new_indices
                        .iter()
                        .chain(&theirs_ci.removed_indices)
                        .any(|i| i.name == FRI_NAME)
                    {
                        return Retryable(format!("{name} changed the Fragment Reuse Index"));
                    }
                    for index in &theirs_ci.new_indices {
                        match bitmap_ids(index) {
                            None => {
                                return Retryable(format!(
                                    "{name} built index {:?}, which {}",
                                    index.name,
                                    no_bitmap(index)
                                ))
                            }
                            Some(b) => {
                                let covered = sources
                                    .iter()
                                    .filter(|id| u32::try_from(**id).is_ok_and(|i| b.contains(i)))
                                    .count();
                                if covered != 0 && covered != sources.len() {
                                    return Retryable(format!(
                                        "{name} built index {:?} over part of this rewrite's sources", index.name
                                    ));
                                }
                            }
                        }
                    }
                    Rebase
                }
                Operation::Delete(_)
                | Operation::Update(_)
                | Operation::DataReplacement(_)
                | Operation::DataOverlay(_) => match overlap(&sources, &touched(other)) {
                    Some(id) => Retryable(format!(
                        "{name} changed fragment {id}, which this rewrite read"
                    )),
                    None => Rebase,
                },
                _ => Rebase,
            }
        }
        // Lance 14 rebases a replacement over appends, deletes, updates and merges, and
        // refuses it over any rewrite or other replacement. lancet's rebase applies the
        // replacement to the latest record again, so it refuses only what a replay cannot
        // judge: a fragment removed, rewritten or given other files since, or a field an
        // index now covers. A delete's new deletion files leave the data files alone.
        Operation::DataReplacement(d) => {
            let mine_ids = touched(mine);
            let gone = |ids: BTreeSet<u64>| overlap(&mine_ids, &ids);
            match other {
                Operation::CreateIndex(ci) => covered_field(
                    ci,
                    d.replacements.iter().filter_map(|g| g.new_file.as_ref()),
                    "this replacement writes",
                ),
                Operation::Merge(_) => Retryable(format!(
                    "{name} rewrote the fragments this replacement changes"
                )),
                Operation::Project(_) if !preserves => Retryable(format!(
                    "{name} may have dropped a field this replacement writes"
                )),
                Operation::Delete(x) => {
                    match gone(x.deleted_fragment_ids.iter().copied().collect()) {
                        Some(id) => Retryable(format!("{name} removed fragment {id}")),
                        None => Rebase,
                    }
                }
                Operation::Update(_)
                | Operation::Rewrite(_)
                | Operation::DataReplacement(_)
                | Operation::DataOverlay(_) => match gone(touched(other)) {
                    Some(id) => Retryable(format!("{name} also changed fragment {id}")),
                    None => Rebase,
                },
                _ => Rebase,
            }
        }
        other_mine => Retryable(format!(
            "lancet does not rebase {} commits",
            operation_name(other_mine)
        )),
    }
}

/// Lance 14.0.2's rule for an UpdateConfig committed over `other` (`check_update_config_txn`):
/// two updates of one config key (set by both, or set by one and removed by the other), of
/// one table-metadata key (or either replacing the map), of the schema's metadata, or of one
/// field's metadata are incompatible: retrying would silently drop the other writer's value.
/// An Overwrite setting a config key this update changes, or any Overwrite or Restore under a
/// schema or field metadata change, is incompatible too; a Merge under one is retryable (the
/// schema may have changed). Everything else rebases: the update is applied again on the
/// latest version, key by key.
fn update_config_over(mine: &UpdateConfig, other: &Operation, name: &str) -> Compatibility {
    use Compatibility::*;
    let touches_schema = config_touches_schema(mine);
    match other {
        Operation::UpdateConfig(theirs) => {
            let (my_set, my_removed) = config_keys(mine);
            let (their_set, their_removed) = config_keys(theirs);
            let key = my_set
                .iter()
                .find(|k| their_set.contains(*k) || their_removed.contains(*k))
                .or_else(|| their_set.iter().find(|k| my_removed.contains(*k)));
            if let Some(key) = key {
                return Incompatible(format!("{name} also changed config key {key:?}"));
            }
            if let Some(what) = same_metadata(mine, theirs) {
                return Incompatible(format!("{name} also changed {what}"));
            }
            Rebase
        }
        Operation::Overwrite(o) => {
            let (my_set, my_removed) = config_keys(mine);
            let key = (o.config_upsert_values.keys())
                .find(|k| my_set.contains(k.as_str()) || my_removed.contains(k.as_str()));
            match (touches_schema, key) {
                (true, _) => {
                    Incompatible(format!("{name} replaced the schema this update changes"))
                }
                (false, Some(k)) => Incompatible(format!("{name} also set config key {k:?}")),
                (false, None) => Rebase,
            }
        }
        Operation::Restore(_) if touches_schema => {
            Incompatible(format!("{name} rewound the schema this update changes"))
        }
        Operation::Merge(_) if touches_schema => Retryable(format!(
            "{name} may have changed the schema this update changes"
        )),
        _ => Rebase,
    }
}

/// The config keys an UpdateConfig sets and removes (the map form, and the older fields).
fn config_keys(u: &UpdateConfig) -> (BTreeSet<&str>, BTreeSet<&str>) {
    let entries = u
        .config_updates
        .iter()
        .flat_map(|m| m.update_entries.iter());
    let set = (entries
        .clone()
        .filter(|e| e.value.is_some())
        .map(|e| e.key.as_str()))
    .chain(u.upsert_values.keys().map(String::as_str))
    .collect();
    let removed = (entries
        .filter(|e| e.value.is_none())
        .map(|e| e.key.as_str()))
    .chain(u.delete_keys.iter().map(String::as_str))
    .collect();
    (set, removed)
}

/// Whether an UpdateConfig changes the schema's or a field's metadata.
fn config_touches_schema(u: &UpdateConfig) -> bool {
    u.schema_metadata_updates.is_some()
        || !u.field_metadata_updates.is_empty()
        || !u.schema_metadata.is_empty()
        || !u.field_metadata.is_empty()
}

/// Which metadata two UpdateConfigs both change (Lance's `modifies_same_metadata`): a
/// table-metadata key (any, when either replaces the map), the schema's, or one field's.
fn same_metadata(a: &UpdateConfig, b: &UpdateConfig) -> Option<String> {
    if let (Some(x), Some(y)) = (&a.table_metadata_updates, &b.table_metadata_updates) {
        if x.replace || y.replace {
            return Some("the table metadata (replacing it)".into());
        }
        let keys: BTreeSet<&str> = x.update_entries.iter().map(|e| e.key.as_str()).collect();
        if let Some(e) = y
            .update_entries
            .iter()
            .find(|e| keys.contains(e.key.as_str()))
        {
            return Some(format!("table metadata key {:?}", e.key));
        }
    }
    let schema =
        |u: &UpdateConfig| u.schema_metadata_updates.is_some() || !u.schema_metadata.is_empty();
    if schema(a) && schema(b) {
        return Some("the schema's metadata".into());
    }
    let fields = |u: &UpdateConfig| -> BTreeSet<i64> {
        (u.field_metadata_updates.keys().map(|&k| i64::from(k)))
            .chain(u.field_metadata.keys().map(|&k| i64::from(k)))
            .collect()
    };
    let theirs = fields(b);
    fields(a)
        .into_iter()
        .find(|f| theirs.contains(f))
        .map(|f| format!("the metadata of field {f}"))
}

/// Lance's CreateIndex × CreateIndex rule: the same index name built twice, an index
/// dropped by one side and extended by the other, or one uuid replaced twice, conflict.
fn create_index_pair(mine: &CreateIndex, theirs: &CreateIndex) -> Compatibility {
    let names =
        |v: &[IndexMetadata]| -> BTreeSet<String> { v.iter().map(|i| i.name.clone()).collect() };
    let uuids = |v: &[IndexMetadata]| -> BTreeSet<Vec<u8>> {
        v.iter()
            .filter_map(|i| i.uuid.as_ref().map(|u| u.uuid.clone()))
            .collect()
    };
    let (my_new, my_removed) = (names(&mine.new_indices), names(&mine.removed_indices));
    let (their_new, their_removed) = (names(&theirs.new_indices), names(&theirs.removed_indices));
    if let Some(n) = my_new.intersection(&their_new).next() {
        return Compatibility::Retryable(format!("CreateIndex also built index {n:?}"));
    }
    for n in my_new.difference(&my_removed) {
        if their_removed.contains(n) && !their_new.contains(n) {
            return Compatibility::Retryable(format!("CreateIndex dropped index {n:?}"));
        }
    }
    for n in their_new.difference(&their_removed) {
        if my_removed.contains(n) && !my_new.contains(n) {
            return Compatibility::Retryable(format!(
                "CreateIndex extended index {n:?} this commit drops"
            ));
        }
    }
    if uuids(&mine.removed_indices)
        .intersection(&uuids(&theirs.removed_indices))
        .next()
        .is_some()
        && !(my_new.is_empty() && their_new.is_empty())
    {
        return Compatibility::Retryable("CreateIndex replaced the same index".into());
    }
    Compatibility::Rebase
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::operation::{data_operation, index_operation};
    use lancet_proto::table::transaction::rewrite::RewriteGroup;
    use lancet_proto::table::transaction::{Append, Delete, Update};
    use lancet_proto::table::transaction::{
        DataReplacement, DataReplacementGroup, Merge, Overwrite, Project, ReserveFragments,
        Restore, UpdateConfig,
    };
    use lancet_proto::table::Transaction;
    use lancet_proto::table::{DataFile, DataFragment, Uuid};
    use lancet_proto::FragmentChange;

    fn frag(id: u64) -> DataFragment {
        DataFragment {
            id,
            ..Default::default()
        }
    }

    fn index(name: &str, uuid: u8, fields: &[i32], fragments: &[u32]) -> IndexMetadata {
        let bitmap: roaring::RoaringBitmap = fragments.iter().copied().collect();
        IndexMetadata {
            uuid: Some(Uuid {
                uuid: vec![uuid; 16],
            }),
            name: name.into(),
            fields: fields.to_vec(),
            fragment_bitmap: lancet_proto::roaring_wire::encode_roaring32(&bitmap),
            ..Default::default()
        }
    }

    fn theirs(op: Operation) -> StoredTransaction {
        StoredTransaction {
            transaction: Transaction {
                operation: Some(op),
                ..Default::default()
            },
            unknown_operation: None,
        }
    }

    fn append() -> Operation {
        Operation::Append(Append {
            fragments: vec![frag(9)],
        })
    }
    fn delete(ids: &[u64]) -> Operation {
        Operation::Delete(Delete {
            updated_fragments: ids.iter().map(|&i| frag(i)).collect(),
            ..Default::default()
        })
    }
    fn update(ids: &[u64], fields_modified: &[u32], new: bool) -> Operation {
        Operation::Update(Update {
            updated_fragments: ids.iter().map(|&i| frag(i)).collect(),
            new_fragments: if new { vec![frag(20)] } else { vec![] },
            fields_modified: fields_modified.to_vec(),
            ..Default::default()
        })
    }
    fn merge(keys: &[i64]) -> Operation {
        let column: arrow_array::ArrayRef =
            std::sync::Arc::new(arrow_array::Int64Array::from(keys.to_vec()));
        Operation::Update(Update {
            new_fragments: vec![frag(20)],
            inserted_rows: Some(
                crate::merge::inserted_keys(&[0], &[column], 0..keys.len()).unwrap(),
            ),
            ..Default::default()
        })
    }

    #[test]
    fn merges_inserting_one_key_never_both_land() {
        let rebase =
            |mine: &Operation, other: Operation| compatibility(mine, &theirs(other), false);
        let mine = merge(&[1, 2, 3]);
        assert!(
            matches!(rebase(&mine, merge(&[3, 4])), Compatibility::Retryable(r) if r.contains("also inserts"))
        );
        assert_eq!(rebase(&mine, merge(&[4, 5])), Compatibility::Rebase);
        // an update that records no keys, or an append, may have inserted one of them
        assert!(matches!(
            rebase(&mine, update(&[], &[], true)),
            Compatibility::Retryable(_)
        ));
        assert!(matches!(
            rebase(&mine, append()),
            Compatibility::Retryable(_)
        ));
        // a merge that inserted nothing records nothing and rebases over both
        assert_eq!(
            rebase(&update(&[], &[], true), append()),
            Compatibility::Rebase
        );
        // new values of the key column may create one; of another column, no
        let replace = |field: i32| {
            Operation::DataReplacement(DataReplacement {
                replacements: vec![DataReplacementGroup {
                    fragment_id: 4,
                    new_file: Some(DataFile {
                        fields: vec![field],
                        ..Default::default()
                    }),
                }],
            })
        };
        assert!(matches!(
            rebase(&mine, replace(0)),
            Compatibility::Retryable(_)
        ));
        assert_eq!(rebase(&mine, replace(5)), Compatibility::Rebase);
        // deletes and rewrites of other fragments create no key
        assert_eq!(rebase(&mine, delete(&[4])), Compatibility::Rebase);
        assert_eq!(rebase(&mine, rewrite(&[4])), Compatibility::Rebase);
    }

    fn rewrite(ids: &[u64]) -> Operation {
        Operation::Rewrite(Rewrite {
            groups: vec![RewriteGroup {
                old_fragments: ids.iter().map(|&i| frag(i)).collect(),
                new_fragments: vec![frag(30)],
            }],
            ..Default::default()
        })
    }
    fn create_index(new: Vec<IndexMetadata>, removed: Vec<IndexMetadata>) -> Operation {
        Operation::CreateIndex(CreateIndex {
            new_indices: new,
            removed_indices: removed,
        })
    }
    fn replacement(id: u64, field: i32) -> Operation {
        Operation::DataReplacement(DataReplacement {
            replacements: vec![DataReplacementGroup {
                fragment_id: id,
                new_file: Some(DataFile {
                    fields: vec![field],
                    ..Default::default()
                }),
            }],
        })
    }

    fn judge(mine: &Operation, other: Operation) -> char {
        match compatibility(mine, &theirs(other), false) {
            Compatibility::Rebase => 'R',
            Compatibility::Retryable(_) => 'C',
            Compatibility::Incompatible(_) => 'X',
        }
    }

    /// Each row of the conflict table in docs/architecture.md, against pylance's operations.
    #[test]
    fn the_conflict_table() {
        let others = || {
            vec![
                ("append", append()),
                ("delete 1", delete(&[1])),
                ("delete 5", delete(&[5])),
                ("update 1", update(&[1], &[], true)),
                ("merge", Operation::Merge(Merge::default())),
                ("rewrite 1,2", rewrite(&[1, 2])),
                ("rewrite 5,6", rewrite(&[5, 6])),
                (
                    "create other",
                    create_index(vec![index("b_idx", 2, &[1], &[0, 1])], vec![]),
                ),
                ("overwrite", Operation::Overwrite(Overwrite::default())),
                ("restore", Operation::Restore(Restore { version: 1 })),
                (
                    "reserve",
                    Operation::ReserveFragments(ReserveFragments { num_fragments: 2 }),
                ),
                ("config", Operation::UpdateConfig(UpdateConfig::default())),
                ("replace 1", replacement(1, 0)),
                ("project", Operation::Project(Project::default())),
            ]
        };
        let row = |mine: Operation| -> String {
            others().into_iter().map(|(_, o)| judge(&mine, o)).collect()
        };
        // columns: append, delete 1, delete 5, update 1, merge, rewrite 1,2, rewrite 5,6,
        // create other, overwrite, restore, reserve, config, replace 1, project
        assert_eq!(row(append()), "RRRRCRRRXXRRRC");
        assert_eq!(row(delete(&[1])), "RCRCCCRRXXRRCR");
        assert_eq!(row(update(&[1], &[], false)), "RCRCCCRRXXRRCC");
        let idx = index("a_idx", 1, &[0], &[1, 2]);
        assert_eq!(
            row(create_index(vec![idx.clone()], vec![])),
            "RRRRRCRRXXRRCR"
        );
        // "create other" covers fragments 0 and 1: it straddles this rewrite's sources
        assert_eq!(row(rewrite(&[1, 2])), "RCRCCCCCXXRRCR");
        // a backfill of field 0 on fragment 1: a delete's new deletion files leave its data
        // files alone; what rewrote fragment 1 or may have dropped field 0 conflicts
        assert_eq!(row(replacement(1, 0)), "RRRCCCRRXXRRCC");
        let removed = Operation::Delete(Delete {
            deleted_fragment_ids: vec![1],
            ..Default::default()
        });
        assert_eq!(judge(&replacement(1, 0), removed), 'C');
        let covers = create_index(vec![index("a_idx", 1, &[0], &[1])], vec![]);
        assert_eq!(judge(&replacement(1, 0), covers), 'C');
        // an index covering every source, or none, is translated through the FRI
        let whole = create_index(vec![index("c_idx", 4, &[0], &[1, 2])], vec![]);
        assert_eq!(judge(&rewrite(&[1, 2]), whole), 'R');
        let none = create_index(vec![index("c_idx", 4, &[0], &[7])], vec![]);
        assert_eq!(judge(&rewrite(&[1, 2]), none), 'R');
        // an unknown operation is incompatible with everything
        let unknown = StoredTransaction {
            transaction: Transaction::default(),
            unknown_operation: Some((150, bytes::Bytes::new())),
        };
        assert!(matches!(
            compatibility(&append(), &unknown, false),
            Compatibility::Incompatible(_)
        ));
    }

    /// Lance 14.0.2's UpdateConfig row (`check_update_config_txn`, and its conflict-matrix
    /// test): one key changed by both sides is incompatible, different keys rebase.
    #[test]
    fn the_update_config_row() {
        use lancet_proto::table::transaction::{UpdateMap, UpdateMapEntry};
        let map = |entries: &[(&str, Option<&str>)]| UpdateMap {
            update_entries: entries
                .iter()
                .map(|(k, v)| UpdateMapEntry {
                    key: k.to_string(),
                    value: v.map(str::to_string),
                })
                .collect(),
            replace: false,
        };
        let config = |entries: &[(&str, Option<&str>)]| {
            Operation::UpdateConfig(UpdateConfig {
                config_updates: Some(map(entries)),
                ..Default::default()
            })
        };
        let table_meta = |entries: &[(&str, Option<&str>)], replace: bool| {
            Operation::UpdateConfig(UpdateConfig {
                table_metadata_updates: Some(UpdateMap {
                    replace,
                    ..map(entries)
                }),
                ..Default::default()
            })
        };
        let schema_meta = || {
            Operation::UpdateConfig(UpdateConfig {
                schema_metadata_updates: Some(map(&[("s", Some("1"))])),
                ..Default::default()
            })
        };
        let field_meta = |id: i32| {
            Operation::UpdateConfig(UpdateConfig {
                field_metadata_updates: [(id, map(&[("f", Some("1"))]))].into(),
                ..Default::default()
            })
        };
        let set = |k: &str| config(&[(k, Some("v"))]);
        let remove = |k: &str| config(&[(k, None)]);
        assert_eq!(judge(&set("a"), set("a")), 'X');
        assert_eq!(judge(&set("a"), remove("a")), 'X');
        assert_eq!(judge(&remove("a"), set("a")), 'X');
        assert_eq!(judge(&remove("a"), remove("a")), 'R');
        assert_eq!(judge(&set("a"), set("b")), 'R');
        let old_style = Operation::UpdateConfig(UpdateConfig {
            upsert_values: [("a".to_string(), "w".to_string())].into(),
            ..Default::default()
        });
        assert_eq!(judge(&set("a"), old_style), 'X');
        assert_eq!(
            judge(
                &table_meta(&[("t", Some("1"))], false),
                table_meta(&[("t", None)], false)
            ),
            'X'
        );
        assert_eq!(
            judge(
                &table_meta(&[("t", Some("1"))], false),
                table_meta(&[("u", None)], false)
            ),
            'R'
        );
        assert_eq!(
            judge(
                &table_meta(&[("t", Some("1"))], false),
                table_meta(&[], true)
            ),
            'X'
        );
        assert_eq!(judge(&schema_meta(), schema_meta()), 'X');
        assert_eq!(judge(&field_meta(3), field_meta(3)), 'X');
        assert_eq!(judge(&field_meta(3), field_meta(4)), 'R');
        assert_eq!(judge(&set("a"), schema_meta()), 'R');
        // over other operations: data changes rebase; what replaces the schema or a key does not
        for other in [append(), delete(&[1]), rewrite(&[1, 2]), replacement(1, 0)] {
            assert_eq!(judge(&set("a"), other.clone()), 'R');
            assert_eq!(judge(&field_meta(0), other), 'R');
        }
        let overwrite = |keys: &[&str]| {
            Operation::Overwrite(Overwrite {
                config_upsert_values: keys
                    .iter()
                    .map(|k| (k.to_string(), "o".to_string()))
                    .collect(),
                ..Default::default()
            })
        };
        assert_eq!(judge(&set("a"), overwrite(&["a"])), 'X');
        assert_eq!(judge(&set("a"), overwrite(&["b"])), 'R');
        assert_eq!(judge(&schema_meta(), overwrite(&[])), 'X');
        let restore = || Operation::Restore(Restore { version: 1 });
        assert_eq!(judge(&set("a"), restore()), 'R');
        assert_eq!(judge(&field_meta(0), restore()), 'X');
        assert_eq!(
            judge(&field_meta(0), Operation::Merge(Merge::default())),
            'C'
        );
        assert_eq!(judge(&set("a"), Operation::Merge(Merge::default())), 'R');
    }

    #[test]
    fn the_rest_of_the_conflict_table() {
        use lancet_proto::table::transaction::{
            Clone as CloneOp, DataOverlay, DataOverlayGroup, UpdateBases, UpdateMemWalState,
        };
        use lancet_proto::table::DataOverlayFile;
        // columns: clone, update bases, MemWAL state, overlay on fragment 1 field 0,
        // overlay on fragment 5 field 0
        let overlay = |id: u64| {
            Operation::DataOverlay(DataOverlay {
                groups: vec![DataOverlayGroup {
                    fragment_id: id,
                    overlays: vec![DataOverlayFile {
                        data_file: Some(DataFile {
                            fields: vec![0],
                            ..Default::default()
                        }),
                        ..Default::default()
                    }],
                }],
            })
        };
        let others = || {
            vec![
                Operation::Clone(CloneOp::default()),
                Operation::UpdateBases(UpdateBases::default()),
                Operation::UpdateMemWalState(UpdateMemWalState {}),
                overlay(1),
                overlay(5),
            ]
        };
        let row =
            |mine: Operation| -> String { others().into_iter().map(|o| judge(&mine, o)).collect() };
        // Clone and UpdateBases rebase; a MemWAL state change is incompatible; an overlay
        // conflicts with what touches its fragment, and with an index of a field it overlays
        assert_eq!(row(append()), "RRXRR");
        assert_eq!(row(delete(&[1])), "RRXCR");
        assert_eq!(row(update(&[1], &[], false)), "RRXCR");
        let idx = index("a_idx", 1, &[0], &[1, 2]);
        assert_eq!(row(create_index(vec![idx], vec![])), "RRXCC");
        let other_field = index("b_idx", 2, &[3], &[1, 2]);
        assert_eq!(row(create_index(vec![other_field], vec![])), "RRXRR");
        assert_eq!(row(rewrite(&[1, 2])), "RRXCR");
        assert_eq!(row(replacement(1, 0)), "RRXCR");
    }

    #[test]
    fn create_index_pairs_follow_lance() {
        let a1 = index("a_idx", 1, &[0], &[0]);
        let a2 = index("a_idx", 2, &[0], &[0, 1]);
        let b = index("b_idx", 3, &[1], &[0]);
        // the same name built twice
        assert_eq!(
            judge(
                &create_index(vec![a2.clone()], vec![]),
                create_index(vec![a1.clone()], vec![])
            ),
            'C'
        );
        // different names
        assert_eq!(
            judge(
                &create_index(vec![b.clone()], vec![]),
                create_index(vec![a1.clone()], vec![])
            ),
            'R'
        );
        // I extend a_idx while they dropped it
        assert_eq!(
            judge(
                &create_index(vec![a2.clone()], vec![]),
                create_index(vec![], vec![a1.clone()])
            ),
            'C'
        );
        // both replace the same uuid
        assert_eq!(
            judge(
                &create_index(vec![a2.clone()], vec![a1.clone()]),
                create_index(vec![b.clone()], vec![a1.clone()])
            ),
            'C'
        );
        // an update that rewrote the indexed field, or another
        assert_eq!(
            judge(
                &create_index(vec![a1.clone()], vec![]),
                update(&[0], &[0], false)
            ),
            'C'
        );
        assert_eq!(
            judge(
                &create_index(vec![a1.clone()], vec![]),
                update(&[0], &[7], false)
            ),
            'R'
        );
        // a rewrite of fragments the index does not cover
        assert_eq!(
            judge(&create_index(vec![a1], vec![]), rewrite(&[4, 5])),
            'R'
        );
        // an index without a bitmap cannot be judged against a rewrite
        let mut bare = b.clone();
        bare.fragment_bitmap.clear();
        assert_eq!(judge(&create_index(vec![bare], vec![]), rewrite(&[4])), 'C');
        // nor one whose bitmap does not decode, whichever side built it; the answer says so
        let mut garbled = b;
        garbled.fragment_bitmap = vec![0x3a, 0x30, 0, 0, 9];
        for answer in [
            compatibility(
                &create_index(vec![garbled.clone()], vec![]),
                &theirs(rewrite(&[4])),
                false,
            ),
            compatibility(
                &rewrite(&[4]),
                &theirs(create_index(vec![garbled], vec![])),
                false,
            ),
        ] {
            match answer {
                Compatibility::Retryable(why) => {
                    assert!(why.contains("does not decode"), "{why}")
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn stable_row_ids_make_concurrent_appends_conflict() {
        let t = theirs(append());
        assert!(matches!(
            compatibility(&append(), &t, true),
            Compatibility::Retryable(_)
        ));
        assert_eq!(compatibility(&append(), &t, false), Compatibility::Rebase);
        let t = theirs(delete(&[1]));
        assert_eq!(compatibility(&append(), &t, true), Compatibility::Rebase);
    }

    #[test]
    fn operations_follow_what_changed() {
        let c = |id, before: Option<DataFragment>, after: Option<DataFragment>| FragmentChange {
            id,
            before,
            after,
        };
        let with_deletion = DataFragment {
            id: 1,
            deletion_file: Some(Default::default()),
            ..Default::default()
        };
        assert!(matches!(
            data_operation(&[c(3, None, Some(frag(3)))], &[], 1),
            Operation::Append(_)
        ));
        assert!(matches!(
            data_operation(&[c(1, Some(frag(1)), Some(with_deletion)), c(2, Some(frag(2)), None)], &[], 1),
            Operation::Delete(d) if d.deleted_fragment_ids == vec![2] && d.updated_fragments.len() == 1
        ));
        let mut moved = frag(1);
        moved.files.push(DataFile::default());
        assert!(matches!(
            data_operation(&[c(1, Some(frag(1)), Some(moved)), c(4, None, Some(frag(4)))], &[], 1),
            Operation::Update(u) if u.updated_fragments.len() == 1 && u.new_fragments.len() == 1
        ));
        // a file for a field no file held (a backfill), and one in place of the file holding
        // the same fields: a replacement listing the new files alone
        let file = |path: &str, fields: &[i32]| DataFile {
            path: path.into(),
            fields: fields.to_vec(),
            ..Default::default()
        };
        let mut before = frag(1);
        before.files = vec![file("a", &[0]), file("b", &[1])];
        let schema: Vec<lancet_proto::file::Field> = (0..3)
            .map(|id| lancet_proto::file::Field {
                id,
                parent_id: -1,
                ..Default::default()
            })
            .collect();
        let mut after = before.clone();
        after.files[1] = file("b2", &[1]);
        let mut added = before.clone();
        added.files.push(file("c", &[2]));
        for after in [after.clone(), added] {
            assert!(matches!(
                data_operation(&[c(1, Some(before.clone()), Some(after))], &schema, 1),
                Operation::DataReplacement(d) if d.replacements.len() == 1
                    && d.replacements.iter().all(|g| g.fragment_id == 1)
            ));
        }
        // files of two field lists are no replacement (Lance refuses them), nor is a file
        // holding some fields of another, nor a dropped file
        let mut mixed = after;
        mixed.files.push(file("c", &[2]));
        let mut partial = before.clone();
        partial.files.push(file("d", &[1, 2]));
        let mut dropped = before.clone();
        dropped.files.pop();
        for after in [mixed, partial, dropped] {
            assert!(matches!(
                data_operation(&[c(1, Some(before.clone()), Some(after))], &schema, 1),
                Operation::Update(_)
            ));
        }
        let a = index("a_idx", 1, &[0], &[0]);
        let b = index("a_idx", 2, &[0], &[0, 1]);
        assert!(index_operation(std::slice::from_ref(&a), std::slice::from_ref(&a)).is_none());
        assert!(matches!(
            index_operation(&[a], &[b]),
            Some(Operation::CreateIndex(ci)) if ci.new_indices.len() == 1 && ci.removed_indices.len() == 1
        ));
    }
}
