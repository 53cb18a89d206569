//! What each version lancet publishes did, as a Lance 14 `Transaction`, and whether a
//! commit prepared on an older version can be rebased over the versions published since.
//!
//! Operations lancet writes:
//! - storage actions: `Append` (only new fragments), `Delete` (deletion files added or
//!   fragments removed, data files untouched) or `Update` (anything else);
//! - index changes alone (index build, FRI upgrade or trim): `CreateIndex` with the entries
//!   added and the entries they replace;
//! - rewrites: `Rewrite` with one group (the sources and their destinations);
//! - flat ↔ tree conversion: `Rewrite` with no groups (the fragments' content does not change).
//!
//! The compatibility table ([`compatibility`]) is Lance 14.0.2's conflict resolver for the
//! operations lancet writes (rows) against every operation (columns), observed through
//! pylance and read off `conflict_resolver.rs`: see `docs/architecture.md` for the table.
//! Where Lance rebases by rewriting the caller's data (merging deletion vectors of two deletes
//! of one fragment) lancet reports a retryable conflict instead: the caller redoes its work.

use std::collections::BTreeSet;

use lancet_paths::transaction::operation_name;
use lancet_paths::{ObjectUuid, StoredTransaction};
use lancet_proto::table::transaction::{
    Append, CreateIndex, Delete, Operation, Rewrite, Update, UpdateMode,
};
use lancet_proto::table::{IndexMetadata, Transaction};
use lancet_tree::FragmentChange;

/// The name of the Fragment Reuse Index entry (a system index).
const FRI_NAME: &str = "__lance_frag_reuse";

/// A new transaction of `operation`, prepared on `read_version`, with a fresh uuid.
pub(crate) fn new_transaction(read_version: u64, operation: Operation) -> Transaction {
    Transaction {
        read_version,
        uuid: ObjectUuid::new_v4().to_string(),
        operation: Some(operation),
        ..Default::default()
    }
}

/// The operation of a commit of storage actions, from what they changed.
pub(crate) fn data_operation(changes: &[FragmentChange]) -> Operation {
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

/// `CreateIndex` for a change of the index list from `before` to `after` (entries compared
/// whole; an entry replaced under the same uuid counts as removed and added), or `None`
/// when the list did not change.
pub(crate) fn index_operation(
    before: &[IndexMetadata],
    after: &[IndexMetadata],
) -> Option<Operation> {
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

fn bitmap_ids(index: &IndexMetadata) -> Option<roaring::RoaringBitmap> {
    if index.fragment_bitmap.is_empty() {
        return None;
    }
    lancet_proto::roaring_wire::decode_roaring32(&index.fragment_bitmap).ok()
}

/// Lance 14's answer for committing `mine` over `theirs` (published since `mine` was
/// prepared). `stable_row_ids`: the table assigns row ids, which a rebased append would
/// reuse.
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
                                "{name} moved rows and index {:?} records no fragments",
                                index.name
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
            Operation::DataReplacement(d) => {
                let fields: BTreeSet<i32> = ci
                    .new_indices
                    .iter()
                    .flat_map(|i| i.fields.iter().copied())
                    .collect();
                let hit = d
                    .replacements
                    .iter()
                    .filter_map(|g| g.new_file.as_ref())
                    .flat_map(|f| f.fields.iter())
                    .find(|f| fields.contains(f));
                match hit {
                    Some(f) => Retryable(format!(
                        "{name} replaced field {f}, which the new index covers"
                    )),
                    None => Rebase,
                }
            }
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
                                    "{name} built index {:?} with no fragment bitmap",
                                    index.name
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
        other_mine => Retryable(format!(
            "lancet does not rebase {} commits",
            operation_name(other_mine)
        )),
    }
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
