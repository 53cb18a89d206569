//! A change planned on one version in two pure calls, with the reads between them left to
//! the caller: [`needs`] names the fragment records and facts a [`Plan`] needs from the
//! version it is planned on; [`finish`] turns the plan and those facts into the records the
//! commit writes. A rebase is `finish` again, over the newer version's facts.
//!
//! Rules stated here (each as Lance 14.0.2 commits it):
//! - **Explicit fragment ids.** A new fragment whose id is at or below the version's
//!   `max_fragment_id` must not name a fragment the version has (it would replace it); it may
//!   take an id a ReserveFragments reserved ([0006](../../../docs/decisions/0006-explicit-fragment-ids-only-when-reserved.md)).
//! - **Whole-table edits** (an Overwrite's removals, a Merge's listing, a Project's file
//!   pruning) are judged against every fragment of the version.
//! - **Data replacements** apply to the fragment's current record, or to its record as the
//!   same change already updates it.
//! - **A Delete or an Update prepared on an older version** is applied to the current records
//!   ([`crate::build::rebased_record`]).
//! - **The files a change adds** are those of its new fragments, and those an updated record
//!   holds that its record before did not: what the invariants read the footers of.
//!
//! Row ids and version sequences of what the change creates are the row-id crate's
//! (`lancet_rowid::assign::stamp_change`), over [`Finished`].

use std::collections::{HashMap, HashSet};

use lancet_proto::table::transaction::Operation;
use lancet_proto::table::{DataFragment, IndexMetadata, Manifest};

use crate::build::{files_rewritten, rebased_record, Plan};
use crate::error::{Result, TxnError};
use crate::replacement::replace_data_file;
use lancet_proto::transaction::operation_name;

/// What finishing a [`Plan`] reads from the version it is planned on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// Every fragment record of the version (an Overwrite removes them all, a Merge lists
    /// every one, a Project may edit any).
    pub all_fragments: bool,
    /// The records of these fragments, when not every record is read: those the change
    /// updates, removes or replaces data files of. Sorted, without repeats.
    pub records: Vec<u64>,
    /// New fragment ids at or below the version's `max_fragment_id`: the caller says which
    /// of them the version holds ([`Facts::held`]) and which a ReserveFragments reserved
    /// ([`Facts::reserved`]). Sorted, without repeats.
    pub explicit_ids: Vec<u64>,
}

/// The facts [`Needs`] names, read from the version a plan is finished on.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The version's number.
    pub version: u64,
    /// Every fragment record of the version, in id order, when [`Needs::all_fragments`].
    pub all: Option<&'a [DataFragment]>,
    /// The records of [`Needs::records`] the version has, in id order (ignored when `all`
    /// is given). An id named there and absent here is not in the version.
    pub records: &'a [DataFragment],
    /// Those of [`Needs::explicit_ids`] the version holds.
    pub held: &'a [u64],
    /// Those of [`Needs::explicit_ids`] a ReserveFragments reserved and nothing used since.
    pub reserved: &'a [u64],
}

/// A plan finished on one version: the next version's manifest and index list, and the
/// fragment records the commit writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    pub manifest: Manifest,
    pub indices: Vec<IndexMetadata>,
    /// Every fragment of the version is removed (an Overwrite): the ids of them all.
    pub removed_all: Vec<u64>,
    /// Fragments removed by id: their records on the version.
    pub removed: Vec<DataFragment>,
    /// Each updated fragment: its record on the version, and its new record.
    pub updated: Vec<(DataFragment, DataFragment)>,
    /// New fragments, numbered, in the operation's order.
    pub created: Vec<DataFragment>,
    /// Reserved fragment ids the new fragments take.
    pub reserved: Vec<u64>,
    /// Updated fragments whose data files the change rewrote (a Merge or a
    /// DataReplacement): on a stable-row-id table their rows are updated at this version.
    pub rewritten: Vec<u64>,
    /// A `RewriteColumns` Update's matched offsets per rewritten fragment: on a stable-row-id
    /// table those rows are updated at this version.
    pub matched_offsets: std::collections::BTreeMap<u64, roaring::RoaringBitmap>,
}

/// What finishing `plan` reads from a version whose manifest is `base`.
pub fn needs(plan: &Plan, base: &Manifest) -> Needs {
    let all_fragments = plan.remove_all || plan.merge_listing.is_some() || plan.project.is_some();
    let mut records: Vec<u64> = match all_fragments {
        true => Vec::new(),
        false => plan
            .updated
            .iter()
            .map(|f| f.id)
            .chain(plan.removed.iter().copied())
            .chain(plan.replacements.iter().map(|(id, _)| *id))
            .collect(),
    };
    records.sort_unstable();
    records.dedup();
    let max = base.max_fragment_id.map(u64::from);
    let mut explicit_ids: Vec<u64> = plan
        .created
        .iter()
        .map(|f| f.id)
        .filter(|id| max.is_some_and(|m| *id <= m))
        .collect();
    explicit_ids.sort_unstable();
    explicit_ids.dedup();
    Needs {
        all_fragments,
        records,
        explicit_ids,
    }
}

/// `plan` (of `operation`) finished over `facts`: new fragments checked against the ids the
/// version holds, whole-table edits applied, data replacements put on the current records, a
/// Delete's or Update's records re-applied to the current ones, and every touched record
/// paired with its record on the version. A fragment the change names and the version does
/// not have is refused, naming the version.
pub fn finish(mut plan: Plan, operation: &Operation, facts: Facts<'_>) -> Result<Finished> {
    let name = operation_name(operation);
    let not_in = |id: u64| {
        TxnError::operation(
            name,
            format!("fragment {id} is not in version {}", facts.version),
        )
    };
    if let Some(id) = plan
        .created
        .iter()
        .map(|f| f.id)
        .find(|id| facts.held.contains(id))
    {
        return Err(TxnError::operation(
            name,
            format!(
                "new fragment {id} is in version {} already; give it id 0 to have it numbered",
                facts.version
            ),
        ));
    }
    if let Some(all) = facts.all {
        plan.apply_merge(all)?;
        plan.apply_project(all)?;
    }
    let lookup = |id: u64| -> Option<&DataFragment> {
        lancet_proto::fragment_by_id(facts.all.unwrap_or(facts.records), id)
    };
    // the updated records by id: a replacement of N fragments looks each up once
    let mut slot: HashMap<u64, usize> = plan
        .updated
        .iter()
        .enumerate()
        .map(|(i, f)| (f.id, i))
        .collect();
    // the plan's manifest is the version it was prepared on until the commit numbers it
    let read_version = plan.manifest.version;
    let schema = plan.manifest.fields.clone();
    for (id, file) in std::mem::take(&mut plan.replacements) {
        match slot.get(&id).and_then(|i| plan.updated.get_mut(*i)) {
            Some(current) => {
                *current = replace_data_file(current, &file, &schema, read_version)?;
            }
            None => {
                let current = lookup(id).ok_or_else(|| not_in(id))?;
                slot.insert(id, plan.updated.len());
                plan.updated
                    .push(replace_data_file(current, &file, &schema, read_version)?);
            }
        }
    }
    let removed_all: Vec<u64> = match (plan.remove_all, facts.all) {
        (true, Some(all)) => all.iter().map(|f| f.id).collect(),
        _ => Vec::new(),
    };
    let removed = plan
        .removed
        .iter()
        .map(|id| lookup(*id).cloned().ok_or_else(|| not_in(*id)))
        .collect::<Result<Vec<_>>>()?;
    let schema: Vec<i32> = plan.manifest.fields.iter().map(|f| f.id).collect();
    let rebases = matches!(operation, Operation::Delete(_) | Operation::Update(_));
    let rewrites = matches!(
        operation,
        Operation::Merge(_) | Operation::DataReplacement(_)
    );
    let mut updated = Vec::with_capacity(plan.updated.len());
    let mut rewritten = Vec::new();
    for f in plan.updated {
        let before = lookup(f.id).ok_or_else(|| not_in(f.id))?.clone();
        let after = match rebases {
            true => rebased_record(operation, &before, &f, &schema),
            false => f,
        };
        if rewrites && files_rewritten(&before, &after) {
            rewritten.push(after.id);
        }
        updated.push((before, after));
    }
    let explicit: HashSet<u64> = plan.created.iter().map(|f| f.id).collect();
    let reserved = facts
        .reserved
        .iter()
        .copied()
        .filter(|id| explicit.contains(id))
        .collect();
    Ok(Finished {
        manifest: plan.manifest,
        indices: plan.indices,
        removed_all,
        removed,
        updated,
        created: plan.created,
        reserved,
        rewritten,
        matched_offsets: plan.matched_offsets,
    })
}

impl Finished {
    /// The records the change writes reduced to the data files they did not hold before (a
    /// new fragment's every file; an updated record's new files; records that gain none are
    /// left out): the files whose footers the invariants read.
    pub fn added_files(&self) -> Vec<DataFragment> {
        let created = self.created.iter().filter_map(|f| files_added(None, f));
        let updated = self
            .updated
            .iter()
            .filter_map(|(before, after)| files_added(Some(before), after));
        created.chain(updated).collect()
    }
}

/// `after` reduced to the data files `before` (the fragment's record before a change; `None`
/// for a new fragment) did not hold, or `None` when it gains none: what a change adds to
/// storage.
pub fn files_added(before: Option<&DataFragment>, after: &DataFragment) -> Option<DataFragment> {
    let old = before.map(|b| b.files.as_slice()).unwrap_or(&[]);
    let mut f = after.clone();
    f.files.retain(|file| !old.contains(file));
    (!f.files.is_empty()).then_some(f)
}

#[cfg(test)]
mod tests {
    use lancet_proto::table::transaction::{Append, DataReplacement, Delete, Overwrite};
    use lancet_proto::table::{DataFile, DeletionFile};

    use super::*;
    use crate::build::{plan_change, Change};
    use crate::invariants::Version;

    fn frag(id: u64, file: &str) -> DataFragment {
        DataFragment {
            id,
            physical_rows: 10,
            files: vec![DataFile {
                path: file.into(),
                fields: vec![0],
                column_indices: vec![0],
                file_major_version: 2,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn table() -> Manifest {
        Manifest {
            fields: vec![lancet_proto::file::Field {
                id: 0,
                name: "a".into(),
                ..Default::default()
            }],
            max_fragment_id: Some(5),
            ..Default::default()
        }
    }

    fn planned(m: &Manifest, op: &Operation) -> Plan {
        let base = Version {
            manifest: m,
            indices: &[],
        };
        plan_change(base, &Change::new(op.clone())).unwrap()
    }

    fn facts<'a>(all: Option<&'a [DataFragment]>, records: &'a [DataFragment]) -> Facts<'a> {
        Facts {
            version: 3,
            all,
            records,
            held: &[],
            reserved: &[],
        }
    }

    fn delete(updated: DataFragment, removed: &[u64]) -> Operation {
        Operation::Delete(Delete {
            updated_fragments: vec![updated],
            deleted_fragment_ids: removed.to_vec(),
            predicate: "a > 1".into(),
        })
    }

    fn with_deletions(mut f: DataFragment, n: u64) -> DataFragment {
        f.deletion_file = Some(DeletionFile {
            file_type: 0,
            read_version: 3,
            id: 7,
            num_deleted_rows: n,
            base_id: None,
        });
        f
    }

    #[test]
    fn a_change_names_the_records_it_touches_and_the_explicit_ids_it_takes() {
        let m = table();
        let op = delete(with_deletions(frag(2, "b.lance"), 3), &[4, 2]);
        let needs = needs(&planned(&m, &op), &m);
        assert_eq!(
            needs,
            Needs {
                all_fragments: false,
                records: vec![2, 4],
                explicit_ids: vec![],
            }
        );
        let append = Operation::Append(Append {
            fragments: vec![frag(5, "n.lance"), frag(0, "m.lance"), frag(9, "o.lance")],
        });
        // 5 is at or below max_fragment_id; 0 is numbered; 9 is beyond it
        assert_eq!(needs_of(&m, &append).explicit_ids, vec![5]);
        let overwrite = Operation::Overwrite(Overwrite {
            fragments: vec![frag(0, "n.lance")],
            schema: m.fields.clone(),
            ..Default::default()
        });
        assert!(needs_of(&m, &overwrite).all_fragments);
    }

    fn needs_of(m: &Manifest, op: &Operation) -> Needs {
        needs(&planned(m, op), m)
    }

    #[test]
    fn a_new_fragment_on_an_id_the_version_holds_is_refused() {
        let m = table();
        let op = Operation::Append(Append {
            fragments: vec![frag(5, "n.lance")],
        });
        let facts = Facts {
            held: &[5],
            ..facts(None, &[])
        };
        let err = finish(planned(&m, &op), &op, facts).unwrap_err();
        assert!(
            err.to_string()
                .contains("new fragment 5 is in version 3 already"),
            "{err}"
        );
        // reserved, and not held: taken
        let facts = Facts {
            reserved: &[5],
            ..self::facts(None, &[])
        };
        let done = finish(planned(&m, &op), &op, facts).unwrap();
        assert_eq!(done.reserved, vec![5]);
        assert_eq!(done.added_files().len(), 1);
    }

    #[test]
    fn a_fragment_the_version_does_not_have_is_refused_naming_the_version() {
        let m = table();
        let op = delete(with_deletions(frag(2, "b.lance"), 3), &[4]);
        // fragment 4 was removed since the change was staged
        let records = [frag(2, "b.lance")];
        let err = finish(planned(&m, &op), &op, facts(None, &records)).unwrap_err();
        assert!(
            err.to_string().contains("fragment 4 is not in version 3"),
            "{err}"
        );
    }

    #[test]
    fn a_staged_delete_keeps_the_current_record_and_adds_only_its_deletion_file() {
        let m = table();
        let staged = with_deletions(frag(2, "old.lance"), 3);
        let op = delete(staged, &[]);
        // since staging, fragment 2's data file was replaced
        let records = [frag(2, "new.lance")];
        let done = finish(planned(&m, &op), &op, facts(None, &records)).unwrap();
        let (before, after) = &done.updated[0];
        assert_eq!(before, &records[0]);
        assert_eq!(after.files, records[0].files);
        assert_eq!(
            after.deletion_file.as_ref().map(|d| d.num_deleted_rows),
            Some(3)
        );
        // a deletion file alone adds no data file
        assert!(done.added_files().is_empty());
    }

    #[test]
    fn a_replacement_applies_to_the_current_record_and_is_a_rewrite_of_its_files() {
        let m = table();
        let mut file = frag(0, "c2.lance").files.remove(0);
        file.fields = vec![0];
        let op = Operation::DataReplacement(DataReplacement {
            replacements: vec![lancet_proto::table::transaction::DataReplacementGroup {
                fragment_id: 2,
                new_file: Some(file),
            }],
        });
        let records = [frag(2, "c.lance")];
        let done = finish(planned(&m, &op), &op, facts(None, &records)).unwrap();
        assert_eq!(done.updated[0].1.files[0].path, "c2.lance");
        assert_eq!(done.rewritten, vec![2]);
        assert_eq!(done.added_files()[0].files[0].path, "c2.lance");
        // missing: refused
        let err = finish(planned(&m, &op), &op, facts(None, &[])).unwrap_err();
        assert!(
            err.to_string().contains("fragment 2 is not in version 3"),
            "{err}"
        );
    }

    #[test]
    fn an_overwrite_removes_every_fragment_of_the_version_it_is_finished_on() {
        let m = table();
        let op = Operation::Overwrite(Overwrite {
            fragments: vec![frag(0, "n.lance")],
            schema: m.fields.clone(),
            ..Default::default()
        });
        let all = [frag(1, "a.lance"), frag(4, "b.lance")];
        let done = finish(planned(&m, &op), &op, facts(Some(&all), &[])).unwrap();
        assert_eq!(done.removed_all, vec![1, 4]);
        assert_eq!(done.created.len(), 1);
    }
}
