//! The rules a candidate version must keep, checked on every write path before its
//! put-if-absent ([`check`]). Each rule is an [`Invariant`] variant with what it requires, why,
//! and the spec sentence or Lance 14.0.2 behaviour it keeps; each has a test that breaks it.
//!
//! A candidate is judged against the version it was prepared on ([`Candidate::previous`]) and
//! by the fragments it changes ([`Candidate::changes`]), so a tree commit costs what it changes:
//! rules on single fragments run over every fragment of a flat candidate (all of them are
//! re-encoded) and over the changed fragments of a tree candidate (the others were checked when
//! their leaves were written, and the tree reader checks them again). Rules on the whole table
//! (fragment ids, row ids) are stated so that the changes decide them, given that the previous
//! version kept them:
//!
//! - a fragment id new to the table is above the previous `max_fragment_id`, so ids never
//!   repeat within a lineage;
//! - a row id live after the commit that none of the changed fragments held live before is
//!   fresh (at or above the previous `next_row_id`), so an id is never live twice and a deleted
//!   id never comes back.
//!
//! Restore and Overwrite replace the table's content with an earlier or a new one: for them the
//! freshness rules do not apply (a restored fragment keeps its id), every other rule does.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use lancet_proto::flags;
use lancet_proto::modelled::UnmodelledFragment;
use lancet_proto::roaring_wire::decode_roaring32;
use lancet_proto::table::transaction::Operation;
use lancet_proto::table::{DataFragment, IndexMetadata, Manifest};
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{Result, TxnError};
use lancet_proto::FragmentChange;

/// The name of the Fragment Reuse Index entry (a system index).
pub const FRI_INDEX_NAME: &str = "__lance_frag_reuse";

/// Flags that stay set in both words once a version sets them (Lance's
/// `apply_feature_flags` carries them forward; FRI spec: "subsequent manifests retain both
/// bits" of 1024). Writer flag 32768 is sticky in the writer word too.
pub const STICKY_FLAGS: [u64; 4] = [
    flags::FRAGMENT_REUSE_INDEX,
    flags::MIXED_DATA_FILE_VERSIONS,
    flags::MANAGED_BLOBS,
    flags::ZONE_WRITE_SEEDS,
];

pub use crate::invariant::Invariant;

/// One version's manifest and index list.
#[derive(Debug, Clone, Copy)]
pub struct Version<'a> {
    pub manifest: &'a Manifest,
    pub indices: &'a [IndexMetadata],
}

/// The row ids of one fragment, as the caller decoded them (lancet-rowid decodes sequences and
/// deletion files; this crate states the rules).
#[derive(Debug, Clone, PartialEq)]
pub struct FragmentRowIds {
    pub fragment: u64,
    /// Ids in the sequence (one per physical row when [`Invariant::RowIdSequenceLength`] holds).
    pub sequence_len: u64,
    /// Rows of the sequence the deletion file deletes.
    pub deleted_rows: u64,
    /// The fragment names a deletion file that does not exist (its rows were then counted
    /// as not deleted).
    pub missing_deletion_file: bool,
    /// The ids of rows not deleted.
    pub live: RoaringTreemap,
}

/// What storage holds for one data file of a changed fragment, as the caller read it (this
/// crate does no I/O).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFileFacts {
    pub fragment: u64,
    /// `DataFile.path`, as the fragment records it.
    pub path: String,
    /// The file's row count and schema field ids, or why it could not be opened.
    pub stored: std::result::Result<StoredDataFile, String>,
}

/// A data file as its footer describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredDataFile {
    pub num_rows: u64,
    /// Every field id of the file's schema, nested fields included.
    pub field_ids: Vec<i32>,
    /// The ids among them of fields with children (structs): files of 2.1 and later store
    /// no column for them, and Lance's DataFile lists only fields with a column.
    pub parent_ids: Vec<i32>,
}

/// The row ids of the changed fragments before and after, on a stable-row-id table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowIdChanges {
    pub before: Vec<FragmentRowIds>,
    pub after: Vec<FragmentRowIds>,
    /// Fragments whose row ids are the same before and after (a conversion hands in every
    /// fragment unchanged): judged like `after` by the per-fragment rules and
    /// [`Invariant::RowIdLiveOnce`], but bringing no new id. Held once, not in both lists: at
    /// 10M fragments each copy is gigabytes.
    pub unchanged: Vec<FragmentRowIds>,
}

/// A version about to be published, with what it is judged by.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// The version number it would take.
    pub version: u64,
    /// The version it was prepared on; `None` for a table's first version.
    pub previous: Option<Version<'a>>,
    pub next: Version<'a>,
    /// Every fragment whose record differs from `previous` (see [`crate::diff_fragments`]).
    pub changes: &'a [FragmentChange],
    /// On a stable-row-id table (flag 2 in `next`): the row ids of the changed fragments.
    /// `None` there skips the row-id rules other than [`Invariant::RowIdSequencePresent`];
    /// writers that change fragments must give them.
    pub row_ids: Option<&'a RowIdChanges>,
    /// The operation the version records (Restore and Overwrite are exempt from the freshness
    /// rules).
    pub operation: Option<&'a Operation>,
    /// The data files of changed fragments, as stored. `None` skips the data-file rules (a
    /// caller that adds no data file, or a test judging other rules); every publishing path
    /// of the facade reads the files it adds.
    pub data_files: Option<&'a [DataFileFacts]>,
    /// The fragments of `previous`, when it is flat, that hold fields lancet does not model
    /// (`DecodedManifest::unmodelled_fragments`).
    pub unmodelled: &'a [UnmodelledFragment],
    /// Changed fragments whose new deletion file the caller found missing, on any table (on a
    /// stable-row-id table [`FragmentRowIds::missing_deletion_file`] says it too). Like
    /// `data_files`, given by writers that read what they add.
    pub missing_deletion_files: &'a [u64],
    /// Fragment ids at or below the previous `max_fragment_id` that the caller established as
    /// reserved (a ReserveFragments raised `max_fragment_id` over them, no version since
    /// held them, no index names them): a new fragment may take one
    /// ([`Invariant::FragmentIdFresh`]), as Lance's reserve-then-commit writes do.
    pub reserved: &'a [u64],
    /// The transitions the candidate's Fragment Reuse Index holds that the previous version's
    /// does not (the caller decodes both histories; lancet-reuse holds their format), judged
    /// by [`Invariant::FriTransitionCommitted`].
    pub fri_transitions: &'a [crate::compaction::GroupIds],
}

/// Checks every invariant on `candidate`, returning the first broken one (in
/// [`Invariant::ALL`] order within each group: manifest, fragments, row ids, indices, flags).
pub fn check(candidate: &Candidate<'_>) -> Result<()> {
    let c = Checker::new(candidate);
    c.manifest_rules()?;
    c.fragment_rules()?;
    c.row_id_rules()?;
    c.data_file_rules()?;
    c.operation_rules()?;
    c.index_rules()?;
    c.index_coverage_rules()?;
    c.fri_rules()?;
    c.flag_rules()
}

/// The rules between a version and the one before it that need none of their fragments:
/// `max_fragment_id` and `next_row_id` never decrease (a `max_fragment_id` set once is never
/// dropped). [`check`] judges them on every candidate; `lancet verify --check-previous` on a
/// stored version (decision 16: a lineage rule, so never part of a plain open).
pub fn check_lineage(version: u64, previous: &Manifest, next: &Manifest) -> Result<()> {
    let fail =
        |invariant, subject: &str, detail| TxnError::invalid(version, invariant, subject, detail);
    if next.max_fragment_id < previous.max_fragment_id {
        return Err(fail(
            Invariant::MaxFragmentIdMonotone,
            "max_fragment_id",
            format!(
                "{:?} after {:?}",
                next.max_fragment_id, previous.max_fragment_id
            ),
        ));
    }
    if next.next_row_id < previous.next_row_id {
        return Err(fail(
            Invariant::NextRowIdMonotone,
            "next_row_id",
            format!("{} after {}", next.next_row_id, previous.next_row_id),
        ));
    }
    Ok(())
}

/// A row id live in two of `fragments`, and the second fragment holding it. Each fragment's
/// ids are compared only with the fragments whose id span overlaps its own (sorted by their
/// lowest id), so tables of `Range` sequences cost a sort, not a comparison of every pair.
fn live_twice<'f>(fragments: impl Iterator<Item = &'f FragmentRowIds>) -> Option<(u64, u64)> {
    let mut spans: Vec<(u64, u64, &FragmentRowIds)> = fragments
        .filter_map(|f| Some((f.live.min()?, f.live.max()?, f)))
        .collect();
    spans.sort_by_key(|(lo, hi, _)| (*lo, *hi));
    // the fragments seen whose span may still overlap what comes
    let mut open: Vec<(u64, &FragmentRowIds)> = Vec::new();
    for (lo, hi, f) in spans {
        open.retain(|(end, _)| *end >= lo);
        for (_, other) in &open {
            if let Some(twice) = (&other.live & &f.live).min() {
                return Some((f.fragment, twice));
            }
        }
        open.push((hi, f));
    }
    None
}

/// Every rule runs in time linear in what the candidate holds (its fragments, changes, index
/// entries and transitions): a commit of N fragment changes is judged in O(N log N), so a
/// distributed append of 1M fragments is not judged pair by pair. Lookups by fragment id go
/// through the maps built here once.
struct Checker<'a, 'b> {
    c: &'b Candidate<'a>,
    /// The changes by fragment id.
    changes: HashMap<u64, &'b FragmentChange>,
    /// The reserved ids ([`Candidate::reserved`]).
    reserved: HashSet<u64>,
}

impl<'a, 'b> Checker<'a, 'b> {
    fn new(c: &'b Candidate<'a>) -> Self {
        Checker {
            c,
            changes: c.changes.iter().map(|ch| (ch.id, ch)).collect(),
            reserved: c.reserved.iter().copied().collect(),
        }
    }

    fn change(&self, id: u64) -> Option<&'b FragmentChange> {
        self.changes.get(&id).copied()
    }
    fn fail(&self, invariant: Invariant, subject: impl Into<String>, detail: String) -> TxnError {
        TxnError::Invalid {
            version: self.c.version,
            invariant,
            subject: subject.into(),
            detail,
        }
    }

    fn next(&self) -> &Manifest {
        self.c.next.manifest
    }

    fn stable_row_ids(&self) -> bool {
        self.next().reader_feature_flags & flags::STABLE_ROW_IDS != 0
    }

    /// Restore and Overwrite bring back or replace content; freshness does not apply.
    fn replaces_content(&self) -> bool {
        matches!(
            self.c.operation,
            Some(Operation::Restore(_) | Operation::Overwrite(_))
        )
    }

    /// The fragments the single-fragment rules run over: all of a flat candidate, the changed
    /// ones of a tree candidate.
    fn checked_fragments(&self) -> Box<dyn Iterator<Item = &DataFragment> + '_> {
        if self.next().fragment_tree.is_some() {
            Box::new(self.c.changes.iter().filter_map(|c| c.after.as_ref()))
        } else {
            Box::new(self.next().fragments.iter())
        }
    }

    fn manifest_rules(&self) -> Result<()> {
        let listed: HashSet<u64> = match self.c.unmodelled.is_empty() {
            true => HashSet::new(),
            false => self.next().fragments.iter().map(|f| f.id).collect(),
        };
        let kept = self
            .c
            .unmodelled
            .iter()
            .find(|u| self.next().fragment_tree.is_some() || listed.contains(&u.id));
        if let Some(u) = kept {
            return Err(self.fail(
                Invariant::UnmodelledFieldsKept,
                format!("fragment {}", u.id),
                format!(
                    "holds fields lancet does not model ({}); writing it again would drop them",
                    u.fields.join(", ")
                ),
            ));
        }
        flags::validate_flags(self.next())
            .map_err(|e| self.fail(Invariant::ManifestFlags, "feature flags", e.to_string()))?;
        match self.c.previous {
            Some(p) => check_lineage(self.c.version, p.manifest, self.next()),
            None => Ok(()),
        }
    }

    fn fragment_rules(&self) -> Result<()> {
        let m = self.next();
        for pair in m.fragments.windows(2) {
            if let [a, b] = pair {
                if a.id >= b.id {
                    return Err(self.fail(
                        Invariant::FragmentIdsIncrease,
                        format!("fragment {}", b.id),
                        format!("follows fragment {}", a.id),
                    ));
                }
            }
        }
        let max = m.max_fragment_id.map(u64::from);
        let bases: BTreeSet<u32> = m.base_paths.iter().map(|b| b.id).collect();
        for f in self.checked_fragments() {
            let subject = || format!("fragment {}", f.id);
            if max.is_none_or(|max| f.id > max) {
                return Err(self.fail(
                    Invariant::FragmentIdWithinMax,
                    subject(),
                    format!("max_fragment_id is {:?}", m.max_fragment_id),
                ));
            }
            if let Some(d) = &f.deletion_file {
                if f.physical_rows != 0 && d.num_deleted_rows > f.physical_rows {
                    return Err(self.fail(
                        Invariant::DeletionsWithinRows,
                        subject(),
                        format!(
                            "deletes {} of {} physical rows",
                            d.num_deleted_rows, f.physical_rows
                        ),
                    ));
                }
            }
            let data_files =
                || (f.files.iter()).chain(f.overlays.iter().filter_map(|o| o.data_file.as_ref()));
            for d in data_files() {
                if let Err(rule) = lancet_proto::relative_path::check(&d.path) {
                    return Err(self.fail(
                        Invariant::DataFilePathInside,
                        subject(),
                        format!("names data file {:?}: {rule}", d.path),
                    ));
                }
            }
            let file_bases = data_files().filter_map(|d| d.base_id.map(|b| (b, d.path.as_str())));
            let deletion_base = f
                .deletion_file
                .as_ref()
                .and_then(|d| d.base_id.map(|b| (b, "its deletion file")));
            for (base, what) in file_bases.chain(deletion_base) {
                if !bases.contains(&base) {
                    return Err(self.fail(
                        Invariant::BaseIdKnown,
                        subject(),
                        format!("{what} names base_id {base}, which base_paths does not hold"),
                    ));
                }
            }
            if self.stable_row_ids() && f.row_id_sequence.is_none() {
                return Err(self.fail(
                    Invariant::RowIdSequencePresent,
                    subject(),
                    "has no row id sequence".into(),
                ));
            }
        }
        if let (Some(prev), false) = (self.c.previous, self.replaces_content()) {
            let p = prev.manifest;
            let prev_max = p
                .max_fragment_id
                .map(u64::from)
                .or_else(|| p.fragments.iter().map(|f| f.id).max());
            for c in self.c.changes.iter().filter(|c| c.is_created()) {
                if prev_max.is_some_and(|max| c.id <= max) && !self.reserved.contains(&c.id) {
                    return Err(self.fail(
                        Invariant::FragmentIdFresh,
                        format!("fragment {}", c.id),
                        format!(
                            "is new to the table but not above the previous max_fragment_id {}",
                            prev_max.unwrap_or_default()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn row_id_rules(&self) -> Result<()> {
        if let Some(id) = self.c.missing_deletion_files.first() {
            return Err(self.fail(
                Invariant::DeletionFileExists,
                format!("fragment {id}"),
                "its deletion file does not exist".into(),
            ));
        }
        let Some(rows) = self.c.row_ids.filter(|_| self.stable_row_ids()) else {
            return Ok(());
        };
        let next_row_id = self.next().next_row_id;
        let physical: HashMap<u64, u64> = self
            .c
            .changes
            .iter()
            .filter_map(|c| c.after.as_ref().map(|f| (c.id, f.physical_rows)))
            .collect();
        for f in rows.after.iter().chain(&rows.unchanged) {
            let subject = || format!("fragment {}", f.fragment);
            if f.missing_deletion_file {
                return Err(self.fail(
                    Invariant::DeletionFileExists,
                    subject(),
                    "its deletion file does not exist".into(),
                ));
            }
            if let Some(rows) = physical.get(&f.fragment).filter(|r| **r != f.sequence_len) {
                return Err(self.fail(
                    Invariant::RowIdSequenceLength,
                    subject(),
                    format!("{} row ids for {rows} physical rows", f.sequence_len),
                ));
            }
            if f.live.len() + f.deleted_rows != f.sequence_len {
                return Err(self.fail(
                    Invariant::RowIdLiveOnce,
                    subject(),
                    format!(
                        "its sequence of {} ids holds {} distinct live ids and {} deleted rows: an id repeats",
                        f.sequence_len,
                        f.live.len(),
                        f.deleted_rows
                    ),
                ));
            }
            if let Some(high) = f.live.max().filter(|m| *m >= next_row_id) {
                return Err(self.fail(
                    Invariant::RowIdBelowNext,
                    subject(),
                    format!("row id {high} is not below next_row_id {next_row_id}"),
                ));
            }
        }
        if let Some((fragment, twice)) = live_twice(rows.after.iter().chain(&rows.unchanged)) {
            return Err(self.fail(
                Invariant::RowIdLiveOnce,
                format!("fragment {fragment}"),
                format!("row id {twice} is live in another fragment too"),
            ));
        }
        if self.replaces_content() {
            return Ok(());
        }
        let prev_next = self.c.previous.map_or(0, |p| p.manifest.next_row_id);
        // a fragment whose live ids did not change (a conversion hands in every fragment)
        // brings no new id: only the others are unioned
        let before: HashMap<u64, &RoaringTreemap> =
            rows.before.iter().map(|f| (f.fragment, &f.live)).collect();
        let after: HashMap<u64, &RoaringTreemap> =
            rows.after.iter().map(|f| (f.fragment, &f.live)).collect();
        let unchanged = |id: &u64, live: &RoaringTreemap| {
            before.get(id).is_some_and(|b| *b == live) && after.get(id).is_some_and(|a| *a == live)
        };
        let mut live_after = RoaringTreemap::new();
        for f in rows
            .after
            .iter()
            .filter(|f| !unchanged(&f.fragment, &f.live))
        {
            live_after |= &f.live;
        }
        let mut live_before = RoaringTreemap::new();
        for f in rows
            .before
            .iter()
            .filter(|f| !unchanged(&f.fragment, &f.live))
        {
            live_before |= &f.live;
        }
        // the lowest new id, when it lies below the previous next_row_id (not a remove_range
        // of the ids above: roaring drops those containers one Vec::remove at a time, which
        // took minutes for an append of 2M fragments)
        let new_ids = live_after - live_before;
        if let Some(id) = new_ids.min().filter(|id| *id < prev_next) {
            let holder = rows
                .after
                .iter()
                .find(|f| f.live.contains(id))
                .map_or(0, |f| f.fragment);
            return Err(self.fail(
                Invariant::RowIdFresh,
                format!("fragment {holder}"),
                format!(
                    "row id {id} is new to the changed fragments but below the previous next_row_id {prev_next}"
                ),
            ));
        }
        Ok(())
    }

    fn data_file_rules(&self) -> Result<()> {
        for facts in self.c.data_files.unwrap_or_default() {
            let subject = || format!("fragment {} data file {}", facts.fragment, facts.path);
            let stored = facts
                .stored
                .as_ref()
                .map_err(|why| self.fail(Invariant::DataFileOpens, subject(), why.clone()))?;
            let fragment = self.change(facts.fragment).and_then(|c| c.after.as_ref());
            let Some((fragment, file)) = fragment.and_then(|f| {
                f.files
                    .iter()
                    .find(|d| d.path == facts.path)
                    .map(|d| (f, d))
            }) else {
                continue;
            };
            if fragment.physical_rows != 0 && stored.num_rows != fragment.physical_rows {
                return Err(self.fail(
                    Invariant::DataFileRows,
                    subject(),
                    format!(
                        "{} rows in the file, physical_rows {}",
                        stored.num_rows, fragment.physical_rows
                    ),
                ));
            }
            // a tombstone (-2) stands for a field the file holds that a cast retired: the
            // file may hold as many fields beyond those listed as the list has tombstones
            let listed: BTreeSet<i32> = file.fields.iter().copied().filter(|f| *f >= 0).collect();
            let tombstones = file.fields.iter().filter(|f| **f == -2).count();
            let held: BTreeSet<i32> = stored.field_ids.iter().copied().collect();
            // a struct holds no column of its own (2.1 and later): listed or not
            let unlisted = (held.difference(&listed))
                .filter(|id| !stored.parent_ids.contains(id))
                .count();
            if !listed.is_subset(&held) || unlisted > tombstones {
                return Err(self.fail(
                    Invariant::DataFileFields,
                    subject(),
                    format!("the file holds fields {held:?}, its DataFile lists {listed:?}"),
                ));
            }
        }
        Ok(())
    }

    /// What an operation may change: Merge keeps every fragment, Overwrite writes fresh ones,
    /// field ids are never reused, new data files hold fields of the schema.
    fn operation_rules(&self) -> Result<()> {
        if let Some(Operation::Merge(_)) = self.c.operation {
            for c in self.c.changes {
                let (Some(before), after) = (&c.before, &c.after) else {
                    continue;
                };
                let detail = match after {
                    None => "is removed".to_string(),
                    Some(a) if a.physical_rows != before.physical_rows => format!(
                        "changes physical_rows from {} to {}",
                        before.physical_rows, a.physical_rows
                    ),
                    Some(_) => continue,
                };
                return Err(self.fail(
                    Invariant::MergeKeepsFragments,
                    format!("fragment {}", c.id),
                    detail,
                ));
            }
        }
        if let (Some(Operation::Overwrite(_)), Some(prev)) = (self.c.operation, self.c.previous) {
            let prev_max = prev.manifest.max_fragment_id.map(u64::from);
            for f in self.c.changes.iter().filter_map(|c| c.after.as_ref()) {
                let detail = if prev_max.is_some_and(|m| f.id <= m) {
                    format!(
                        "is not above the previous max_fragment_id {}",
                        prev_max.unwrap_or_default()
                    )
                } else if f.deletion_file.is_some() {
                    "carries a deletion file".to_string()
                } else {
                    continue;
                };
                return Err(self.fail(
                    Invariant::OverwriteFresh,
                    format!("fragment {}", f.id),
                    detail,
                ));
            }
        }
        if let (Some(prev), false) = (self.c.previous, self.replaces_content()) {
            let p = prev.manifest;
            let old: BTreeSet<i32> = p.fields.iter().map(|f| f.id).collect();
            // the ids the previous version's schema and data files name (a tree's fragments
            // are not in its manifest: its schema and record then)
            let allocated = crate::fields::max_field_id(p, p.fragments.iter());
            if let Some(f) = self
                .next()
                .fields
                .iter()
                .find(|f| !old.contains(&f.id) && allocated.is_some_and(|a| f.id <= a))
            {
                return Err(self.fail(
                    Invariant::FieldIdFresh,
                    format!("field {:?}", f.name),
                    format!(
                        "is new with id {}, but ids up to {} were allocated",
                        f.id,
                        allocated.unwrap_or_default()
                    ),
                ));
            }
        }
        let schema: BTreeSet<i32> = self.next().fields.iter().map(|f| f.id).collect();
        // (a manifest that records no schema, as hand-built test manifests do, names none)
        // A stored version judged whole (no previous version, no operation: `verify`) may
        // hold files listing a column a Project dropped since, as Lance leaves them: there a
        // field id is judged against the ids ever allocated (`max_allocated_field_id`), and
        // not at all where the table does not record them (pylance's default).
        // A Restore brings a stored version back as it was (Lance 14.0.2 restores the old
        // manifest whole): its files are judged as that version's are.
        let stored = (self.c.previous.is_none() && self.c.operation.is_none())
            || matches!(self.c.operation, Some(Operation::Restore(_)));
        let allocated = self.next().max_allocated_field_id;
        let foreign = |f: &i32| match (stored, allocated) {
            (true, Some(a)) => *f > a,
            (true, None) => false,
            (false, _) => !schema.contains(f),
        };
        for c in self.c.changes.iter().filter(|_| !schema.is_empty()) {
            let Some(after) = &c.after else { continue };
            let old = c.before.as_ref().map(|b| b.files.as_slice()).unwrap_or(&[]);
            for file in after.files.iter().filter(|f| !old.contains(f)) {
                // a file the fragment already had (a column of it tombstoned by an in-place
                // rewrite) adds only the fields it did not list before: one a Project dropped
                // since stays listed, as Lance leaves it
                let before = old
                    .iter()
                    .find(|o| o.path == file.path && o.base_id == file.base_id);
                let listed = |f: &i32| before.is_some_and(|b| b.fields.contains(f));
                let added = |f: &&i32| **f >= 0 && foreign(f) && !listed(f);
                if let Some(field) = file.fields.iter().find(added) {
                    return Err(self.fail(
                        Invariant::DataFileFieldsInSchema,
                        format!("fragment {} data file {}", c.id, file.path),
                        format!("lists field {field}, which the schema does not hold"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Index coverage follows what was indexed, and one index keeps one row-id domain.
    fn index_coverage_rules(&self) -> Result<()> {
        let Some(prev) = self.c.previous else {
            return Ok(());
        };
        if self.replaces_content() {
            return Ok(());
        }
        let bitmap = |m: &IndexMetadata| -> Result<Option<RoaringBitmap>> {
            if m.fragment_bitmap.is_empty() {
                return Ok(None);
            }
            decode_roaring32(&m.fragment_bitmap).map(Some).map_err(|e| {
                self.fail(
                    Invariant::IndexEntriesDistinct,
                    format!("index {:?}", m.name),
                    format!("fragment_bitmap does not decode: {e}"),
                )
            })
        };
        // coverage by index name, before and after (an entry with no bitmap covers all)
        let union = |indices: &[IndexMetadata]| -> Result<BTreeMap<String, Option<RoaringBitmap>>> {
            let mut out: BTreeMap<String, Option<RoaringBitmap>> = BTreeMap::new();
            for m in indices.iter().filter(|m| m.name != FRI_INDEX_NAME) {
                let b = bitmap(m)?;
                let slot = out
                    .entry(m.name.clone())
                    .or_insert(Some(RoaringBitmap::new()));
                *slot = match (slot.take(), b) {
                    (Some(a), Some(b)) => Some(a | b),
                    _ => None,
                };
            }
            Ok(out)
        };
        let before = union(prev.indices)?;
        let after = union(self.c.next.indices)?;
        let created: HashSet<u64> = self
            .c
            .changes
            .iter()
            .filter(|c| c.is_created())
            .map(|c| c.id)
            .collect();
        // a Rewrite's new fragments, by the group that wrote them
        let rewritten_into: HashMap<u64, usize> = match self.c.operation {
            Some(Operation::Rewrite(r)) => r
                .groups
                .iter()
                .enumerate()
                .flat_map(|(g, group)| group.new_fragments.iter().map(move |f| (f.id, g)))
                .collect(),
            _ => HashMap::new(),
        };
        for (name, covered) in &after {
            let Some(covered) = covered else { continue };
            let had = before.get(name).cloned().flatten();
            let gained = match &had {
                Some(h) => covered - h,
                // new to the table, or it covered everything: it was built by this commit
                None => continue,
            };
            let indexed = self.indexed_by_commit(had.as_ref(), &created, &rewritten_into);
            for id in &gained {
                if !indexed(u64::from(id)) {
                    return Err(self.fail(
                        Invariant::IndexCoverageIndexed,
                        format!("index {name:?}"),
                        format!("covers fragment {id}, which the commit did not index"),
                    ));
                }
            }
        }
        // a column rewritten in place leaves its indexes (each bitmap decoded once)
        let mut coverage = Vec::new();
        for m in self
            .c
            .next
            .indices
            .iter()
            .filter(|m| m.name != FRI_INDEX_NAME)
        {
            coverage.push((m, bitmap(m)?));
        }
        for c in self.c.changes {
            let (Some(b), Some(a)) = (&c.before, &c.after) else {
                continue;
            };
            let rewritten: BTreeSet<i32> = crate::coverage::rewritten_fields(b, a)
                .into_iter()
                .collect();
            if rewritten.is_empty() {
                continue;
            }
            let id = u32::try_from(c.id).unwrap_or(u32::MAX);
            for (m, covered) in &coverage {
                if !m.fields.iter().any(|f| rewritten.contains(f)) {
                    continue;
                }
                if covered.as_ref().is_some_and(|b| b.contains(id)) {
                    return Err(self.fail(
                        Invariant::IndexCoverageRewritten,
                        format!("index {:?}", m.name),
                        format!(
                            "still covers fragment {}, whose data file for its column is rewritten",
                            c.id
                        ),
                    ));
                }
            }
        }
        if self.stable_row_ids() {
            let old: BTreeSet<&[u8]> = prev
                .indices
                .iter()
                .filter_map(|m| m.uuid.as_ref().map(|u| u.uuid.as_slice()))
                .collect();
            let mut domains: BTreeMap<&str, (bool, bool)> = BTreeMap::new();
            let mut touched: BTreeSet<&str> = BTreeSet::new();
            for m in self.c.next.indices.iter().filter(|m| {
                m.index_details
                    .as_ref()
                    .is_some_and(|d| lancet_proto::is_btree_type_url(&d.type_url))
            }) {
                let d = domains.entry(&m.name).or_default();
                match m.index_version.unwrap_or(0) >= 1 {
                    true => d.1 = true,
                    false => d.0 = true,
                }
                if m.uuid
                    .as_ref()
                    .is_none_or(|u| !old.contains(u.uuid.as_slice()))
                {
                    touched.insert(&m.name);
                }
            }
            if let Some(name) = touched
                .iter()
                .find(|n| domains.get(*n).is_some_and(|(ids, addrs)| *ids && *addrs))
            {
                return Err(self.fail(
                    Invariant::IndexRowIdDomain,
                    format!("index {name:?}"),
                    "mixes row-id segments (index_version 0) and row-address segments; rebuild every segment in one commit".into(),
                ));
            }
        }
        Ok(())
    }

    /// Every new FRI transition moves fragments this commit removes into ones it creates.
    fn fri_rules(&self) -> Result<()> {
        // a restore brings back an older history whole
        if self.replaces_content() {
            return Ok(());
        }
        for t in self.c.fri_transitions {
            let removed = |id: &u32| self.change(u64::from(*id)).is_some_and(|c| c.is_removed());
            let created = |id: &u32| self.change(u64::from(*id)).is_some_and(|c| c.is_created());
            let stray =
                t.sources
                    .iter()
                    .find(|s| !removed(s))
                    .map(|s| format!("source fragment {s} is not removed by this commit"))
                    .or_else(|| {
                        t.destinations.iter().find(|d| !created(d)).map(|d| {
                            format!("destination fragment {d} is not created by this commit")
                        })
                    });
            if let Some(detail) = stray {
                return Err(self.fail(
                    Invariant::FriTransitionCommitted,
                    format!("FRI transition {:?} -> {:?}", t.sources, t.destinations),
                    detail,
                ));
            }
        }
        Ok(())
    }

    /// Which fragments the commit indexed for an index that covered `had` before, as a
    /// predicate over fragment ids: linear to build, constant per question.
    fn indexed_by_commit<'h>(
        &self,
        had: Option<&'h RoaringBitmap>,
        created: &'h HashSet<u64>,
        rewritten_into: &'h HashMap<u64, usize>,
    ) -> Box<dyn Fn(u64) -> bool + 'h>
    where
        'b: 'h,
    {
        let covers =
            move |i: u64| had.is_none_or(|h| u32::try_from(i).is_ok_and(|i| h.contains(i)));
        match self.c.operation {
            Some(Operation::CreateIndex(_)) => Box::new(|_| true),
            Some(Operation::Rewrite(r)) => {
                // a new fragment is indexed when every fragment its group rewrote was covered
                let group_covered: Vec<bool> = r
                    .groups
                    .iter()
                    .map(|g| g.old_fragments.iter().all(|f| covers(f.id)))
                    .collect();
                Box::new(move |id| {
                    rewritten_into
                        .get(&id)
                        .is_some_and(|g| group_covered.get(*g).copied().unwrap_or(false))
                })
            }
            Some(Operation::Update(u)) => {
                let all_covered = u.removed_fragment_ids.iter().all(|i| covers(*i))
                    && u.updated_fragments.iter().all(|f| covers(f.id));
                Box::new(move |id| all_covered && created.contains(&id))
            }
            _ => Box::new(|_| false),
        }
    }

    fn index_rules(&self) -> Result<()> {
        let indices = self.c.next.indices;
        let bases: BTreeSet<u32> = self.next().base_paths.iter().map(|b| b.id).collect();
        let mut uuids = BTreeSet::new();
        let mut fields_by_name: std::collections::BTreeMap<&str, &[i32]> = Default::default();
        let mut fri = 0;
        for (i, index) in indices.iter().enumerate() {
            let subject = || format!("index entry {i} ({:?})", index.name);
            let uuid = index
                .uuid
                .as_ref()
                .map(|u| u.uuid.as_slice())
                .unwrap_or(&[]);
            if !uuids.insert(uuid) {
                return Err(self.fail(
                    Invariant::IndexEntriesDistinct,
                    subject(),
                    "has the uuid of an earlier entry".into(),
                ));
            }
            if let Some(fields) = fields_by_name.insert(&index.name, &index.fields) {
                if fields != index.fields.as_slice() {
                    return Err(self.fail(
                        Invariant::IndexEntriesDistinct,
                        subject(),
                        format!(
                            "covers fields {:?}, another segment of the index {fields:?}",
                            index.fields
                        ),
                    ));
                }
            }
            if let Some(base) = index.base_id.filter(|b| !bases.contains(b)) {
                return Err(self.fail(
                    Invariant::BaseIdKnown,
                    subject(),
                    format!("names base_id {base}, which base_paths does not hold"),
                ));
            }
            if index.name == FRI_INDEX_NAME {
                fri += 1;
                if fri > 1 {
                    return Err(self.fail(
                        Invariant::SingleFragmentReuseIndex,
                        subject(),
                        "is a second Fragment Reuse Index entry".into(),
                    ));
                }
            }
        }
        Ok(())
    }

    fn flag_rules(&self) -> Result<()> {
        let m = self.next();
        let both =
            |flag: u64| m.reader_feature_flags & flag != 0 && m.writer_feature_flags & flag != 0;
        let require = |flag: u64, why: String| {
            if both(flag) {
                Ok(())
            } else {
                Err(self.fail(
                    Invariant::FlagRequired,
                    format!("flag {flag}"),
                    format!("{why}, but the flag is not set in both words"),
                ))
            }
        };
        for f in self.checked_fragments() {
            if f.deletion_file.is_some() {
                require(
                    flags::DELETION_FILES,
                    format!("fragment {} has a deletion file", f.id),
                )?;
            }
            if !f.overlays.is_empty() {
                require(
                    flags::DATA_OVERLAY_FILES,
                    format!("fragment {} has data overlay files", f.id),
                )?;
            }
        }
        if !m.base_paths.is_empty() {
            require(flags::BASE_PATHS, "the manifest has base paths".into())?;
        }
        let fri = self
            .c
            .next
            .indices
            .iter()
            .find(|i| i.name == FRI_INDEX_NAME);
        if let Some(fri) = fri {
            let index_version = fri.index_version.unwrap_or(0);
            if index_version != 0 {
                require(
                    flags::FRAGMENT_REUSE_INDEX,
                    "the FRI entry is tagged (index_version 1)".into(),
                )?;
                if self.stable_row_ids() {
                    return Err(self.fail(
                        Invariant::TaggedFriWithoutStableRowIds,
                        "the FRI entry",
                        format!("has index_version {index_version} on a stable-row-id table"),
                    ));
                }
            }
            if self.stable_row_ids() {
                require(
                    flags::FRAG_REUSE_WITH_STABLE_ROW_IDS,
                    "the table has stable row ids and an FRI".into(),
                )?;
            }
        }
        let Some(prev) = self.c.previous.map(|p| p.manifest) else {
            return Ok(());
        };
        let mut sticky = STICKY_FLAGS.to_vec();
        if !matches!(self.c.operation, Some(Operation::Overwrite(_))) {
            sticky.push(flags::STABLE_ROW_IDS);
        }
        for flag in sticky {
            let had =
                prev.reader_feature_flags & flag != 0 && prev.writer_feature_flags & flag != 0;
            if had && !both(flag) {
                return Err(self.fail(
                    Invariant::FlagKept,
                    format!("flag {flag}"),
                    "was set in the previous version and is dropped".into(),
                ));
            }
        }
        let writer_only = flags::NON_REUSABLE_FIELD_IDS;
        if prev.writer_feature_flags & writer_only != 0 && m.writer_feature_flags & writer_only == 0
        {
            return Err(self.fail(
                Invariant::FlagKept,
                format!("flag {writer_only}"),
                "was set in the previous version's writer word and is dropped".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use lancet_proto::table::transaction::Restore;
    use lancet_proto::table::{BasePath, DataFile, DeletionFile, Uuid};

    fn frag(id: u64) -> DataFragment {
        DataFragment {
            id,
            physical_rows: 10,
            files: vec![DataFile {
                path: format!("{id}.lance"),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn stable(mut f: DataFragment) -> DataFragment {
        f.row_id_sequence =
            Some(lancet_proto::table::data_fragment::RowIdSequence::InlineRowIds(vec![1]));
        f
    }

    fn manifest(ids: &[u64]) -> Manifest {
        Manifest {
            fragments: ids.iter().map(|&i| frag(i)).collect(),
            max_fragment_id: ids.iter().max().map(|m| *m as u32),
            ..Default::default()
        }
    }

    fn ids(range: std::ops::Range<u64>) -> RoaringTreemap {
        range.collect()
    }

    fn rows(fragment: u64, live: RoaringTreemap) -> FragmentRowIds {
        FragmentRowIds {
            fragment,
            sequence_len: 10,
            deleted_rows: 10 - live.len(),
            missing_deletion_file: false,
            live,
        }
    }

    /// Judges `next` as the version after `prev`, with the flat diff as its changes.
    fn judge(
        prev: &Manifest,
        next: &Manifest,
        indices: &[IndexMetadata],
        row_ids: Option<&RowIdChanges>,
        operation: Option<&Operation>,
    ) -> Result<()> {
        let changes = crate::diff_fragments(&prev.fragments, &next.fragments);
        check(&Candidate {
            version: 2,
            previous: Some(Version {
                manifest: prev,
                indices: &[],
            }),
            next: Version {
                manifest: next,
                indices,
            },
            changes: &changes,
            row_ids,
            operation,
            data_files: None,
            unmodelled: &[],
            missing_deletion_files: &[],
            reserved: &[],
            fri_transitions: &[],
        })
    }

    fn broken(r: Result<()>) -> Invariant {
        r.unwrap_err().invariant().unwrap()
    }

    #[test]
    fn a_valid_append_passes() {
        let prev = manifest(&[0, 1]);
        judge(&prev, &manifest(&[0, 1, 2]), &[], None, None).unwrap();
    }

    #[test]
    fn fragment_id_rules() {
        let prev = manifest(&[0, 1, 5]);
        let mut next = manifest(&[0, 1, 5]);
        next.fragments.swap(0, 1);
        assert_eq!(
            broken(judge(&prev, &next, &[], None, None)),
            Invariant::FragmentIdsIncrease
        );
        let mut next = manifest(&[0, 1, 5, 6]);
        next.max_fragment_id = Some(5);
        let err = judge(&prev, &next, &[], None, None).unwrap_err();
        assert_eq!(err.invariant(), Some(Invariant::FragmentIdWithinMax));
        assert!(err.to_string().contains("fragment 6"), "{err}");
        // fragment 3 was never in prev, but ids up to 5 were allocated: 3 stays dead
        let mut next = manifest(&[0, 1, 3, 5]);
        next.max_fragment_id = Some(5);
        assert_eq!(
            broken(judge(&prev, &next, &[], None, None)),
            Invariant::FragmentIdFresh
        );
        // a restore brings old ids back
        let restore = Operation::Restore(Restore { version: 1 });
        judge(&prev, &next, &[], None, Some(&restore)).unwrap();
        let mut next = manifest(&[0, 1]);
        next.max_fragment_id = Some(1);
        assert_eq!(
            broken(judge(&prev, &next, &[], None, None)),
            Invariant::MaxFragmentIdMonotone
        );
    }

    #[test]
    fn next_row_id_never_decreases() {
        let mut prev = manifest(&[0]);
        prev.next_row_id = 10;
        let next = manifest(&[0]);
        assert_eq!(
            broken(judge(&prev, &next, &[], None, None)),
            Invariant::NextRowIdMonotone
        );
    }

    #[test]
    fn deletions_and_bases() {
        let prev = manifest(&[0]);
        let mut next = manifest(&[0]);
        next.reader_feature_flags = flags::DELETION_FILES;
        next.writer_feature_flags = flags::DELETION_FILES;
        next.fragments[0].deletion_file = Some(DeletionFile {
            num_deleted_rows: 11,
            ..Default::default()
        });
        assert_eq!(
            broken(judge(&prev, &next, &[], None, None)),
            Invariant::DeletionsWithinRows
        );
        next.fragments[0].deletion_file = Some(DeletionFile {
            num_deleted_rows: 1,
            ..Default::default()
        });
        judge(&prev, &next, &[], None, None).unwrap();
        next.reader_feature_flags = 0;
        next.writer_feature_flags = 0;
        assert_eq!(
            broken(judge(&prev, &next, &[], None, None)),
            Invariant::FlagRequired
        );
        let mut next = manifest(&[0]);
        next.fragments[0].files[0].base_id = Some(3);
        assert_eq!(
            broken(judge(&prev, &next, &[], None, None)),
            Invariant::BaseIdKnown
        );
        next.base_paths = vec![BasePath {
            id: 3,
            ..Default::default()
        }];
        assert_eq!(
            broken(judge(&prev, &next, &[], None, None)),
            Invariant::FlagRequired
        );
        next.reader_feature_flags = flags::BASE_PATHS;
        next.writer_feature_flags = flags::BASE_PATHS;
        judge(&prev, &next, &[], None, None).unwrap();
    }

    #[test]
    fn manifest_flag_pairing() {
        let prev = manifest(&[0]);
        let mut next = manifest(&[0]);
        next.reader_feature_flags = flags::FRAGMENT_REUSE_INDEX;
        assert_eq!(
            broken(judge(&prev, &next, &[], None, None)),
            Invariant::ManifestFlags
        );
    }

    fn with_flags(mut m: Manifest, word: u64) -> Manifest {
        m.reader_feature_flags = word;
        m.writer_feature_flags = word;
        m
    }

    #[test]
    fn data_file_rules() {
        let prev = manifest(&[0]);
        let mut next = manifest(&[0, 1]);
        next.fragments[1].files[0].fields = vec![0, -2, 3];
        next.fields = [0, 3]
            .map(|id| lancet_proto::file::Field {
                id,
                ..Default::default()
            })
            .to_vec();
        let changes = crate::diff_fragments(&prev.fragments, &next.fragments);
        let judge_files = |stored: std::result::Result<StoredDataFile, String>| {
            let facts = [DataFileFacts {
                fragment: 1,
                path: "1.lance".into(),
                stored,
            }];
            check(&Candidate {
                version: 2,
                previous: Some(Version {
                    manifest: &prev,
                    indices: &[],
                }),
                next: Version {
                    manifest: &next,
                    indices: &[],
                },
                changes: &changes,
                row_ids: None,
                operation: None,
                data_files: Some(&facts),
                unmodelled: &[],
                missing_deletion_files: &[],
                reserved: &[],
                fri_transitions: &[],
            })
        };
        let file = |num_rows, field_ids: &[i32]| {
            Ok(StoredDataFile {
                num_rows,
                field_ids: field_ids.to_vec(),
                parent_ids: Vec::new(),
            })
        };
        judge_files(file(10, &[3, 0])).unwrap();
        let err = judge_files(Err("not found".into())).unwrap_err();
        assert_eq!(err.invariant(), Some(Invariant::DataFileOpens));
        assert!(err.to_string().contains("1.lance"), "{err}");
        assert_eq!(
            broken(judge_files(file(9, &[0, 3]))),
            Invariant::DataFileRows
        );
        // the tombstone stands for one retired column the file still holds
        judge_files(file(10, &[0, 3, 4])).unwrap();
        assert_eq!(
            broken(judge_files(file(10, &[0, 3, 4, 5]))),
            Invariant::DataFileFields
        );
        assert_eq!(
            broken(judge_files(file(10, &[0]))),
            Invariant::DataFileFields
        );
        // a struct (5) has no column of its own: unlisted, it takes no tombstone
        let with_struct = |ids: &[i32], parents: &[i32]| {
            judge_files(Ok(StoredDataFile {
                num_rows: 10,
                field_ids: ids.to_vec(),
                parent_ids: parents.to_vec(),
            }))
        };
        with_struct(&[0, 3, 4, 5], &[5]).unwrap();
        assert_eq!(
            broken(with_struct(&[0, 3, 4, 5], &[])),
            Invariant::DataFileFields
        );
    }

    #[test]
    fn row_id_rules() {
        let word = flags::STABLE_ROW_IDS;
        let mut prev = with_flags(manifest(&[]), word);
        prev.fragments = vec![stable(frag(0)), stable(frag(1))];
        prev.max_fragment_id = Some(1);
        prev.next_row_id = 20;
        let mut next = prev.clone();
        next.fragments.push(frag(2));
        next.max_fragment_id = Some(2);
        next.next_row_id = 30;
        assert_eq!(
            broken(judge(&prev, &next, &[], None, None)),
            Invariant::RowIdSequencePresent
        );
        next.fragments[2] = stable(frag(2));
        let append = |live: RoaringTreemap, len: u64| RowIdChanges {
            before: vec![],
            after: vec![FragmentRowIds {
                fragment: 2,
                sequence_len: len,
                deleted_rows: len - live.len(),
                missing_deletion_file: false,
                live,
            }],
            unchanged: vec![],
        };
        judge(&prev, &next, &[], Some(&append(ids(20..30), 10)), None).unwrap();
        assert_eq!(
            broken(judge(
                &prev,
                &next,
                &[],
                Some(&append(ids(20..29), 9)),
                None
            )),
            Invariant::RowIdSequenceLength
        );
        // next_row_id not advanced
        let mut lagging = next.clone();
        lagging.next_row_id = 25;
        assert_eq!(
            broken(judge(
                &prev,
                &lagging,
                &[],
                Some(&append(ids(20..30), 10)),
                None
            )),
            Invariant::RowIdBelowNext
        );
        // ids of fragment 0 given to the new fragment
        assert_eq!(
            broken(judge(
                &prev,
                &next,
                &[],
                Some(&append(ids(5..15), 10)),
                None
            )),
            Invariant::RowIdFresh
        );
        // an update: fragment 0's row 3 deleted and written again in fragment 2, same id
        let mut update = next.clone();
        update.fragments[0].deletion_file = Some(DeletionFile {
            num_deleted_rows: 1,
            ..Default::default()
        });
        update = with_flags(update, word | flags::DELETION_FILES);
        let mut kept = ids(0..10);
        kept.remove(3);
        let moved = RowIdChanges {
            before: vec![rows(0, ids(0..10))],
            after: vec![rows(0, kept.clone()), rows(2, ids(3..4) | ids(20..29))],
            unchanged: vec![],
        };
        judge(&prev, &update, &[], Some(&moved), None).unwrap();
        // the same, with the old copy not deleted: live twice
        let twice = RowIdChanges {
            before: vec![rows(0, ids(0..10))],
            after: vec![rows(0, ids(0..10)), rows(2, ids(3..4) | ids(20..29))],
            unchanged: vec![],
        };
        assert_eq!(
            broken(judge(&prev, &update, &[], Some(&twice), None)),
            Invariant::RowIdLiveOnce
        );
        // an unchanged fragment is judged with the changed ones: its ids live in the new
        // fragment too, and its own rules hold
        let shared = RowIdChanges {
            before: vec![],
            after: vec![rows(2, ids(5..6) | ids(20..29))],
            unchanged: vec![rows(0, ids(0..10))],
        };
        assert_eq!(
            broken(judge(&prev, &next, &[], Some(&shared), None)),
            Invariant::RowIdLiveOnce
        );
        let mut short = rows(0, ids(0..10));
        short.sequence_len = 9;
        let lying = RowIdChanges {
            unchanged: vec![short],
            ..RowIdChanges::default()
        };
        assert_eq!(
            broken(judge(&prev, &prev, &[], Some(&lying), None)),
            Invariant::RowIdLiveOnce
        );
        // the deletion file does not exist
        let mut gone = moved.clone();
        gone.after[0].missing_deletion_file = true;
        assert_eq!(
            broken(judge(&prev, &update, &[], Some(&gone), None)),
            Invariant::DeletionFileExists
        );
        // dropping flag 2
        let dropped = with_flags(next.clone(), 0);
        assert_eq!(
            broken(judge(&prev, &dropped, &[], None, None)),
            Invariant::FlagKept
        );
    }

    fn entry(name: &str, uuid: u8, fields: &[i32]) -> IndexMetadata {
        IndexMetadata {
            uuid: Some(Uuid {
                uuid: vec![uuid; 16],
            }),
            name: name.into(),
            fields: fields.to_vec(),
            ..Default::default()
        }
    }

    /// Judges `next` (indices `after`) as the version after `prev` (indices `before`).
    fn judge_indexed(
        prev: &Manifest,
        before: &[IndexMetadata],
        next: &Manifest,
        after: &[IndexMetadata],
        operation: Option<&Operation>,
    ) -> Result<()> {
        let changes = crate::diff_fragments(&prev.fragments, &next.fragments);
        check(&Candidate {
            version: 2,
            previous: Some(Version {
                manifest: prev,
                indices: before,
            }),
            next: Version {
                manifest: next,
                indices: after,
            },
            changes: &changes,
            row_ids: None,
            operation,
            data_files: None,
            unmodelled: &[],
            missing_deletion_files: &[],
            reserved: &[],
            fri_transitions: &[],
        })
    }

    fn covering(name: &str, uuid: u8, fragments: &[u32]) -> IndexMetadata {
        IndexMetadata {
            fragment_bitmap: lancet_proto::roaring_wire::encode_roaring32(
                &fragments.iter().copied().collect(),
            ),
            ..entry(name, uuid, &[0])
        }
    }

    #[test]
    fn index_coverage_grows_only_by_what_was_indexed() {
        use lancet_proto::table::transaction::{rewrite::RewriteGroup, CreateIndex, Rewrite};
        // fragments 0-1 indexed, 2-3 not; a compaction of {0,1} -> 4 and {2,3} -> 5
        let prev = manifest(&[0, 1, 2, 3]);
        let mut next = manifest(&[4, 5]);
        next.max_fragment_id = Some(5);
        let group = |old: &[u64], new: &[u64]| RewriteGroup {
            old_fragments: old.iter().map(|&i| frag(i)).collect(),
            new_fragments: new.iter().map(|&i| frag(i)).collect(),
        };
        let rewrite = Operation::Rewrite(Rewrite {
            groups: vec![group(&[0, 1], &[4]), group(&[2, 3], &[5])],
            ..Default::default()
        });
        let before = [covering("v_idx", 1, &[0, 1])];
        // per group: the index follows {0,1} into 4
        judge_indexed(
            &prev,
            &before,
            &next,
            &[covering("v_idx", 2, &[4])],
            Some(&rewrite),
        )
        .unwrap();
        // issue 30's compaction defect: the index also claims 5, whose rows it never indexed
        let wrong = judge_indexed(
            &prev,
            &before,
            &next,
            &[covering("v_idx", 2, &[4, 5])],
            Some(&rewrite),
        );
        assert_eq!(broken(wrong), Invariant::IndexCoverageIndexed);
        // an append never extends an index; an index build may
        let appended = manifest(&[0, 1, 2, 3, 4]);
        let grown = [covering("v_idx", 1, &[0, 1, 4])];
        assert_eq!(
            broken(judge_indexed(&prev, &before, &appended, &grown, None)),
            Invariant::IndexCoverageIndexed
        );
        let build = Operation::CreateIndex(CreateIndex::default());
        judge_indexed(&prev, &before, &prev, &grown, Some(&build)).unwrap();
    }

    #[test]
    fn a_column_rewritten_in_place_leaves_its_indexes() {
        let mut prev = manifest(&[0, 1]);
        prev.fragments[0].files[0].fields = vec![0];
        prev.fields = vec![lancet_proto::file::Field {
            id: 0,
            ..Default::default()
        }];
        let mut next = prev.clone();
        next.fragments[0].files[0].path = "new.lance".into();
        let before = [covering("v_idx", 1, &[0, 1])];
        assert_eq!(
            broken(judge_indexed(&prev, &before, &next, &before, None)),
            Invariant::IndexCoverageRewritten
        );
        judge_indexed(&prev, &before, &next, &[covering("v_idx", 1, &[1])], None).unwrap();
    }

    #[test]
    fn one_index_holds_one_row_id_domain() {
        let mut prev = manifest(&[0, 1]);
        for f in &mut prev.fragments {
            *f = stable(f.clone());
        }
        prev.reader_feature_flags = flags::STABLE_ROW_IDS;
        prev.writer_feature_flags = flags::STABLE_ROW_IDS;
        let btree = |uuid: u8, version: i32| IndexMetadata {
            index_version: Some(version),
            index_details: Some(lancet_proto::prost_types::Any {
                type_url: "/lance.index.pb.BTreeIndexDetails".into(),
                value: Vec::new(),
            }),
            ..covering("v_idx", uuid, &[0])
        };
        let legacy = [btree(1, 0)];
        let mixed = [btree(1, 0), btree(2, 1)];
        assert_eq!(
            broken(judge_indexed(&prev, &legacy, &prev, &mixed, None)),
            Invariant::IndexRowIdDomain
        );
        judge_indexed(&prev, &legacy, &prev, &[btree(2, 1)], None).unwrap();
    }

    #[test]
    fn a_new_reuse_transition_names_only_what_the_commit_rewrote() {
        use crate::compaction::GroupIds;
        // fragments 0 and 1 rewritten into 2
        let prev = manifest(&[0, 1]);
        let next = manifest(&[2]);
        let changes = crate::diff_fragments(&prev.fragments, &next.fragments);
        let judge = |t: GroupIds| {
            check(&Candidate {
                version: 2,
                previous: Some(Version {
                    manifest: &prev,
                    indices: &[],
                }),
                next: Version {
                    manifest: &next,
                    indices: &[],
                },
                changes: &changes,
                row_ids: None,
                operation: None,
                data_files: None,
                unmodelled: &[],
                missing_deletion_files: &[],
                reserved: &[],
                fri_transitions: std::slice::from_ref(&t),
            })
        };
        let t = |s: &[u32], d: &[u32]| GroupIds {
            sources: s.to_vec(),
            destinations: d.to_vec(),
        };
        judge(t(&[0, 1], &[2])).unwrap();
        // a destination of another version, a source still live
        assert_eq!(
            broken(judge(t(&[0, 1], &[9]))),
            Invariant::FriTransitionCommitted
        );
        assert_eq!(
            broken(judge(t(&[0, 5], &[2]))),
            Invariant::FriTransitionCommitted
        );
    }

    #[test]
    fn merge_overwrite_and_schema_rules() {
        use lancet_proto::table::transaction::{Merge, Overwrite};
        let field = |id: i32| lancet_proto::file::Field {
            id,
            name: format!("c{id}"),
            ..Default::default()
        };
        let mut prev = manifest(&[0, 1]);
        prev.fields = vec![field(0)];
        prev.max_allocated_field_id = Some(3);
        prev.writer_feature_flags = flags::NON_REUSABLE_FIELD_IDS;
        let merge = Operation::Merge(Merge::default());
        // a merge that drops fragment 1, or changes fragment 0's rows
        let mut dropped = prev.clone();
        dropped.fragments.pop();
        assert_eq!(
            broken(judge(&prev, &dropped, &[], None, Some(&merge))),
            Invariant::MergeKeepsFragments
        );
        let mut grown = prev.clone();
        grown.fragments[0].physical_rows = 11;
        assert_eq!(
            broken(judge(&prev, &grown, &[], None, Some(&merge))),
            Invariant::MergeKeepsFragments
        );
        // an overwrite reusing id 1, or carrying a deletion file
        let overwrite = Operation::Overwrite(Overwrite::default());
        let mut reused = manifest(&[1]);
        reused.fragments[0].physical_rows = 5;
        reused.max_fragment_id = Some(1);
        reused.writer_feature_flags = prev.writer_feature_flags;
        reused.max_allocated_field_id = prev.max_allocated_field_id;
        assert_eq!(
            broken(judge(&prev, &reused, &[], None, Some(&overwrite))),
            Invariant::OverwriteFresh
        );
        // a new field taking an id allocated before (3), or a new file naming no field
        let mut reuse = prev.clone();
        reuse.fields.push(field(3));
        assert_eq!(
            broken(judge(&prev, &reuse, &[], None, None)),
            Invariant::FieldIdFresh
        );
        reuse.fields[1].id = 4;
        judge(&prev, &reuse, &[], None, None).unwrap();
        // without max_allocated_field_id, an id a data file still names (a dropped
        // column's) counts as allocated
        let mut unrecorded = prev.clone();
        unrecorded.max_allocated_field_id = None;
        unrecorded.writer_feature_flags = 0;
        unrecorded.fragments[0].files[0].fields.push(9);
        let mut takes_dropped = unrecorded.clone();
        takes_dropped.fields.push(field(9));
        assert_eq!(
            broken(judge(&unrecorded, &takes_dropped, &[], None, None)),
            Invariant::FieldIdFresh
        );
        let mut stray = prev.clone();
        stray.fragments[1].files.push(DataFile {
            path: "x.lance".into(),
            fields: vec![7],
            ..Default::default()
        });
        assert_eq!(
            broken(judge(&prev, &stray, &[], None, None)),
            Invariant::DataFileFieldsInSchema
        );
        // a fragment's own file still listing a column a Project dropped, with another of its
        // columns tombstoned by an in-place rewrite (found by the differential tester: add a
        // column, update rows, drop the column, update_columns): the file adds no field
        let mut listing_dropped = prev.clone();
        listing_dropped.fragments[1].files[0].fields.push(8);
        let mut tombstoned = listing_dropped.clone();
        tombstoned.fragments[1].files[0].fields[0] = -2;
        judge(&listing_dropped, &tombstoned, &[], None, None).unwrap();
        // the same file listing one more field than before adds that field
        let mut grown = tombstoned.clone();
        grown.fragments[1].files[0].fields.push(7);
        assert_eq!(
            broken(judge(&listing_dropped, &grown, &[], None, None)),
            Invariant::DataFileFieldsInSchema
        );
        // a Restore brings back a fragment whose file lists a column dropped since (found
        // by the differential tester: drop a column, delete the fragment, restore the drop's
        // version): judged as a stored version is, by the ids ever allocated
        let restore = Operation::Restore(Restore { version: 1 });
        let mut dropped_since = prev.clone();
        dropped_since.fragments[1].files.push(DataFile {
            path: "y.lance".into(),
            fields: vec![2],
            ..Default::default()
        });
        judge(&prev, &dropped_since, &[], None, Some(&restore)).unwrap();
        assert_eq!(
            broken(judge(&prev, &stray, &[], None, Some(&restore))),
            Invariant::DataFileFieldsInSchema,
            "field 7 was never allocated"
        );
    }

    #[test]
    fn index_rules() {
        let prev = manifest(&[0]);
        let next = manifest(&[0]);
        // two segments of one index are fine
        judge(
            &prev,
            &next,
            &[entry("a", 1, &[0]), entry("a", 2, &[0])],
            None,
            None,
        )
        .unwrap();
        let cases = [
            (
                vec![entry("a", 1, &[0]), entry("b", 1, &[1])],
                Invariant::IndexEntriesDistinct,
            ),
            (
                vec![entry("a", 1, &[0]), entry("a", 2, &[1])],
                Invariant::IndexEntriesDistinct,
            ),
            (
                vec![entry(FRI_INDEX_NAME, 1, &[]), entry(FRI_INDEX_NAME, 2, &[])],
                Invariant::SingleFragmentReuseIndex,
            ),
        ];
        for (indices, want) in cases {
            assert_eq!(broken(judge(&prev, &next, &indices, None, None)), want);
        }
        let mut based = entry("a", 1, &[0]);
        based.base_id = Some(9);
        assert_eq!(
            broken(judge(&prev, &next, &[based], None, None)),
            Invariant::BaseIdKnown
        );
    }

    #[test]
    fn fri_flag_rules() {
        let mut tagged = entry(FRI_INDEX_NAME, 1, &[]);
        tagged.index_version = Some(1);
        let prev = manifest(&[0]);
        let next = manifest(&[0]);
        assert_eq!(
            broken(judge(
                &prev,
                &next,
                std::slice::from_ref(&tagged),
                None,
                None
            )),
            Invariant::FlagRequired
        );
        let next = with_flags(manifest(&[0]), flags::FRAGMENT_REUSE_INDEX);
        judge(&prev, &next, std::slice::from_ref(&tagged), None, None).unwrap();
        // 1024 is sticky
        assert_eq!(
            broken(judge(&next, &manifest(&[0]), &[], None, None)),
            Invariant::FlagKept
        );
        // a tagged entry on a stable-row-id table
        let word = flags::FRAGMENT_REUSE_INDEX | flags::STABLE_ROW_IDS;
        let mut prev = with_flags(manifest(&[]), word);
        prev.fragments = vec![stable(frag(0))];
        prev.max_fragment_id = Some(0);
        let next = prev.clone();
        assert_eq!(
            broken(judge(
                &prev,
                &next,
                std::slice::from_ref(&tagged),
                None,
                None
            )),
            Invariant::TaggedFriWithoutStableRowIds
        );
        // an untagged FRI on a stable-row-id table needs 512
        let untagged = entry(FRI_INDEX_NAME, 1, &[]);
        assert_eq!(
            broken(judge(
                &prev,
                &next,
                std::slice::from_ref(&untagged),
                None,
                None
            )),
            Invariant::FlagRequired
        );
    }

    #[test]
    fn a_fragment_with_unmodelled_fields_is_never_written_again() {
        let prev = manifest(&[0, 1, 2]);
        let unmodelled = [UnmodelledFragment {
            id: 1,
            fields: vec!["files[0].9".into()],
        }];
        let judge_with = |next: &Manifest| {
            let changes = crate::diff_fragments(&prev.fragments, &next.fragments);
            check(&Candidate {
                version: 2,
                previous: Some(Version {
                    manifest: &prev,
                    indices: &[],
                }),
                next: Version {
                    manifest: next,
                    indices: &[],
                },
                changes: &changes,
                row_ids: None,
                operation: None,
                data_files: None,
                unmodelled: &unmodelled,
                missing_deletion_files: &[],
                reserved: &[],
                fri_transitions: &[],
            })
        };
        // listed again (re-encoded): refused, as lancet's limit
        let err = judge_with(&manifest(&[0, 1, 2, 3])).unwrap_err();
        assert_eq!(err.invariant(), Some(Invariant::UnmodelledFieldsKept));
        assert_eq!(err.kind(), crate::ErrorKind::Unsupported);
        assert!(err.to_string().contains("files[0].9"), "{err}");
        // carried into a tree: refused
        let mut tree = manifest(&[]);
        tree.max_fragment_id = Some(2);
        tree.fragment_tree = Some(Default::default());
        assert_eq!(broken(judge_with(&tree)), Invariant::UnmodelledFieldsKept);
        // removed: nothing is re-encoded
        let mut removed = manifest(&[0, 2]);
        removed.max_fragment_id = Some(2);
        judge_with(&removed).unwrap();
    }

    #[test]
    fn a_missing_deletion_file_is_refused_without_stable_row_ids() {
        let prev = manifest(&[0, 1]);
        let mut next = prev.clone();
        next.reader_feature_flags |= flags::DELETION_FILES;
        next.writer_feature_flags |= flags::DELETION_FILES;
        next.fragments[1].deletion_file = Some(lancet_proto::table::DeletionFile {
            num_deleted_rows: 1,
            ..Default::default()
        });
        let changes = crate::diff_fragments(&prev.fragments, &next.fragments);
        let judge_missing = |missing: &[u64]| {
            check(&Candidate {
                version: 2,
                previous: Some(Version {
                    manifest: &prev,
                    indices: &[],
                }),
                next: Version {
                    manifest: &next,
                    indices: &[],
                },
                changes: &changes,
                row_ids: None,
                operation: None,
                data_files: None,
                unmodelled: &[],
                missing_deletion_files: missing,
                reserved: &[],
                fri_transitions: &[],
            })
        };
        judge_missing(&[]).unwrap();
        let err = judge_missing(&[1]).unwrap_err();
        assert_eq!(err.invariant(), Some(Invariant::DeletionFileExists));
        assert!(err.to_string().contains("fragment 1"), "{err}");
    }

    #[test]
    fn every_invariant_has_a_rule_and_a_name() {
        let names: BTreeSet<String> = Invariant::ALL.iter().map(|i| i.to_string()).collect();
        assert_eq!(names.len(), Invariant::ALL.len());
        assert!(Invariant::ALL.iter().all(|i| !i.rule().is_empty()));
    }
}
