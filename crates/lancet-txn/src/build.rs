//! What a Lance operation does to the version it is committed on: Lance 14's manifest build,
//! stated over one base version so that a retry builds the same intent on a newer one.
//!
//! Rules kept from Lance (each checked against pylance 14.0.2's writes):
//! - **Fragment ids.** A new fragment whose id is 0 takes the next id after the base's
//!   `max_fragment_id`, in the operation's order (Lance writers leave new fragments at 0 and
//!   the commit numbers them); a non-zero id is kept, and the invariants judge it fresh.
//! - **Append** adds its fragments; **Delete** replaces the fragments it updated (their new
//!   deletion files) and removes those it deleted whole; **Update** does both and adds its new
//!   fragments; **Overwrite** removes every fragment and index of the base and adds its own,
//!   with its schema, schema metadata and config upserts; its fragments are renumbered after
//!   `max_fragment_id` whatever ids they carry, and one with a deletion file is refused (ids
//!   and row ids continue, as in Lance: an overwrite never hands an id out twice).
//! - **CreateIndex** removes the entries it names (by uuid) and adds its new ones;
//!   **ReserveFragments** advances `max_fragment_id`; **UpdateBases** adds base paths whose
//!   ids are new (and sets flag 16, base paths, in both words); **UpdateConfig** applies its
//!   config, table-metadata, schema-metadata and field-metadata updates as Lance 14.0.2's
//!   `apply_update_map` does (a value upserts, none deletes, `replace` starts from empty; the
//!   deprecated fields read as the new ones, never mixed with them; an unknown field refused).
//! - Row ids and version sequences are the row-id crate's (lancet-rowid `assign`); the
//!   caller gives the created fragments their ids in [`Plan::created`]'s order.
//! - **Merge** lists every fragment of the table with the files it adds (ids kept; a fragment
//!   left out, a changed `physical_rows` or an existing fragment after a new one is refused,
//!   [`Plan::apply_merge`]), then new fragments (id 0 numbered as new, even where the table has
//!   a fragment 0), and the new schema (`max_allocated_field_id` raised to it); **DataReplacement** puts a new data file in place of the one holding
//!   exactly its fields, adds it, or tombstones the fields it replaces
//!   ([`crate::replacement`]).
//! - **Rewrite** (a compaction, a rewrite recorded in the Fragment Reuse Index) removes each
//!   group's old fragments and adds its new ones, numbered when at id 0 and kept otherwise (a
//!   rewrite whose history records its destinations numbers them itself; an id another writer
//!   took since is refused, [`crate::rebase::ids_fixed`]); its index entries are the change's
//!   [`Change::indices`] (remapped segments, the FRI entry), as Lance's Rust `Rewrite` carries
//!   its `frag_reuse_index` beside the protobuf. A Rewrite with no group is a flat ↔ tree
//!   conversion ([`Content::Tree`] or [`Content::Flat`]); **Restore** publishes
//!   [`Content::Restored`] with ids and sticky flags not lowered ([`restored_manifest`]).
//! - Feature flags follow the content ([`crate::protocol::settle`]), for every change.
//! - Clone makes a new table (`Dataset::shallow_clone`); the rest of Lance 14's operations are
//!   refused as unsupported, never guessed.

use std::collections::BTreeMap;

use lancet_proto::file::Field;
use lancet_proto::flags;
use lancet_proto::roaring_wire::encode_roaring32;
use lancet_proto::table::manifest::{DataStorageFormat, WriterVersion};
use lancet_proto::table::transaction::{Operation, Update, UpdateMode};
use lancet_proto::table::{DataFile, DataFragment, FragmentTreeMetadata, IndexMetadata, Manifest};
use lancet_proto::transaction::operation_name;
use roaring::RoaringBitmap;

use crate::error::{Result, TxnError};
use crate::invariants::{Invariant, Version};
use crate::rebase::IndexIntent;

/// A change to commit, described once: the Lance operation the version records, with what
/// Lance 14's Rust `Operation` carries beside its protobuf. Every publishing path (an operation
/// a caller commits, a compaction, a rewrite recorded in the Fragment Reuse Index, an FRI
/// upgrade or trim, a restore, a layout conversion) describes its change so, and
/// [`plan_change`] applies it to the version each commit attempt is prepared on.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub operation: Operation,
    /// Index entries the change adds, and those it removes (by uuid), beside what the
    /// operation says: a rewrite's remapped segments and its FRI entry.
    pub indices: IndexIntent,
    /// The content a restore or a conversion publishes in place of the base's fragments.
    pub content: Option<Content>,
    /// The data storage version the writer asked for ("2.1"; Lance's `user_requested_version`):
    /// an Overwrite publishes it as the table's `data_format`; without one the table keeps
    /// its own. Other operations ignore it, as Lance does.
    pub storage_version: Option<String>,
    /// What the writer records beside the operation in the transaction
    /// (`Transaction.transaction_properties`: pylance's `commit_message` is the key
    /// `__lance_commit_message`). Recorded, never interpreted.
    pub properties: BTreeMap<String, String>,
}

/// What a restore or a layout conversion publishes.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A restore: the manifest and index list of the version restored.
    Restored {
        manifest: Box<Manifest>,
        indices: Vec<IndexMetadata>,
    },
    /// Flat → tree: the tree holding every fragment of the base, and the highest id in it.
    Tree {
        metadata: FragmentTreeMetadata,
        max_fragment_id: Option<u32>,
    },
    /// Tree → flat: the caller lists every fragment in `Manifest.fragments`.
    Flat,
}

impl Change {
    /// `operation` alone.
    pub fn new(operation: Operation) -> Self {
        Self {
            operation,
            indices: IndexIntent::default(),
            content: None,
            storage_version: None,
            properties: BTreeMap::new(),
        }
    }

    /// With `properties` recorded in its transaction (see [`Change::properties`]).
    pub fn with_properties(mut self, properties: BTreeMap<String, String>) -> Self {
        self.properties = properties;
        self
    }

    /// With the data storage version the writer asked for (see [`Change::storage_version`]).
    pub fn with_storage_version(mut self, version: Option<String>) -> Self {
        self.storage_version = version;
        self
    }

    /// With `indices` beside the operation's own index changes.
    pub fn with_indices(mut self, indices: IndexIntent) -> Self {
        self.indices = indices;
        self
    }

    /// With `content` published in place of the base's fragments.
    pub fn with_content(mut self, content: Content) -> Self {
        self.content = Some(content);
        self
    }
}

impl From<Operation> for Change {
    fn from(operation: Operation) -> Self {
        Change::new(operation)
    }
}

/// `change` on `base`: [`plan`] of its operation, its index entries applied, a restore's or a
/// conversion's content put in place, and the feature flags the result needs.
pub fn plan_change(base: Version<'_>, change: &Change) -> Result<Plan> {
    let name = operation_name(&change.operation);
    let mut plan = match (&change.operation, &change.content) {
        (op, None) => plan(base, op)?,
        (Operation::Restore(_), Some(Content::Restored { manifest, indices })) => {
            let mut plan = Plan::on(base);
            plan.manifest = restored_manifest(manifest, base.manifest);
            plan.indices = indices.clone();
            plan.replaces_content = true;
            plan
        }
        (Operation::Rewrite(r), Some(Content::Tree { metadata, max_fragment_id }))
            if r.groups.is_empty() =>
        {
            let mut plan = Plan::on(base);
            plan.manifest.fragments.clear();
            plan.manifest.fragment_tree = Some(metadata.clone());
            plan.manifest.max_fragment_id = plan.manifest.max_fragment_id.max(*max_fragment_id);
            plan.replaces_content = true;
            plan
        }
        (Operation::Rewrite(r), Some(Content::Flat)) if r.groups.is_empty() => {
            let mut plan = Plan::on(base);
            plan.manifest.fragment_tree = None;
            plan.replaces_content = true;
            plan
        }
        (_, Some(_)) => {
            return Err(TxnError::operation(
                name,
                "only a Restore or a layout conversion (a Rewrite with no group) publishes content of its own",
            ))
        }
    };
    plan.indices = change.indices.apply(&plan.indices);
    if let (Operation::Overwrite(_), Some(version)) = (&change.operation, &change.storage_version) {
        plan.manifest.data_format = Some(DataStorageFormat {
            file_format: "lance".into(),
            version: version.clone(),
        });
    }
    crate::protocol::settle(&mut plan.manifest, &plan.indices);
    Ok(plan)
}

/// An operation applied to a base version, before row ids: the next version's manifest
/// (fragments as the base's: the caller applies the edits), its index list, and the fragment
/// edits.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub manifest: Manifest,
    pub indices: Vec<IndexMetadata>,
    /// New fragments, numbered, in the operation's order.
    pub created: Vec<DataFragment>,
    /// New records of fragments the base has.
    pub updated: Vec<DataFragment>,
    /// Fragments removed: the ids named, or with [`Plan::remove_all`] every base fragment.
    pub removed: Vec<u64>,
    /// Every fragment of the base is removed (Overwrite).
    pub remove_all: bool,
    /// Data files replacing (or joining) a fragment's files (DataReplacement): apply each
    /// with [`crate::replacement::replace_data_file`] to the fragment's current record.
    pub replacements: Vec<(u64, DataFile)>,
    /// A Merge's fragment list, to be judged against every fragment of the base with
    /// [`Plan::apply_merge`].
    pub merge_listing: Option<Vec<DataFragment>>,
    /// The manifest holds the change's own fragments or tree (a restore, a conversion): no
    /// fragment edit applies.
    pub replaces_content: bool,
    /// A Project's remaining field ids, to be applied to every fragment of the base with
    /// [`Plan::apply_project`].
    pub project: Option<Vec<i32>>,
    /// A `RewriteColumns` Update's matched offsets per rewritten fragment
    /// ([`crate::offsets::judged`]).
    pub matched_offsets: BTreeMap<u64, RoaringBitmap>,
}

/// `op` on `base`: ids for new fragments, the index list, the manifest fields it changes.
pub fn plan(base: Version<'_>, op: &Operation) -> Result<Plan> {
    let name = operation_name(op);
    let mut plan = Plan::on(base);
    match op {
        Operation::Append(a) => plan.create(&a.fragments, name)?,
        Operation::Delete(d) => {
            plan.updated = d.updated_fragments.clone();
            plan.removed = d.deleted_fragment_ids.clone();
        }
        Operation::Update(u) => {
            plan.matched_offsets = crate::offsets::judged(u)?;
            let modified: Vec<i32> = u
                .fields_modified
                .iter()
                .filter_map(|f| i32::try_from(*f).ok())
                .collect();
            if !modified.is_empty() {
                for f in &u.updated_fragments {
                    prune_rewritten(&mut plan.indices, f.id, &modified)?;
                }
            }
            plan.updated = u.updated_fragments.clone();
            plan.removed = u.removed_fragment_ids.clone();
            plan.create(&u.new_fragments, name)?;
        }
        Operation::Overwrite(o) => {
            if !o.initial_bases.is_empty() {
                return Err(TxnError::operation(
                    name,
                    "initial_bases are a new table's; an existing table adds bases with UpdateBases",
                ));
            }
            plan.remove_all = true;
            plan.indices.clear();
            if !o.schema.is_empty() {
                plan.manifest.fields = o.schema.clone();
                plan.manifest.schema_metadata = o.schema_metadata.clone();
            }
            for (k, v) in &o.config_upsert_values {
                plan.manifest.config.insert(k.clone(), v.clone());
            }
            // every fragment is newly written: numbered after max_fragment_id whatever id it
            // comes with, and without deletions (Lance 14.0.2's `overwrite_fragments_valid`)
            let mut fresh = o.fragments.clone();
            for f in &mut fresh {
                if let Some(d) = &f.deletion_file {
                    return Err(TxnError::invalid(
                        base.manifest.version + 1,
                        Invariant::OverwriteFresh,
                        format!("fragment {}", f.id),
                        format!(
                            "carries deletion file {}: an Overwrite's fragments are newly written (commit deletions with Delete)",
                            d.id
                        ),
                    ));
                }
                f.id = 0;
            }
            plan.create(&fresh, name)?;
        }
        Operation::CreateIndex(c) => {
            plan.indices
                .retain(|i| !c.removed_indices.iter().any(|r| r.uuid == i.uuid));
            plan.indices.extend(c.new_indices.iter().cloned());
        }
        Operation::ReserveFragments(r) => {
            let max = plan.manifest.max_fragment_id.unwrap_or(0);
            let reserved = max.checked_add(r.num_fragments).ok_or_else(|| {
                TxnError::operation(name, format!("{max} + {} overflows u32", r.num_fragments))
            })?;
            plan.manifest.max_fragment_id = Some(reserved);
        }
        Operation::UpdateBases(b) => {
            for new in &b.new_bases {
                if plan.manifest.base_paths.iter().any(|p| p.id == new.id) {
                    return Err(TxnError::operation(
                        name,
                        format!("base id {} is taken", new.id),
                    ));
                }
                plan.manifest.base_paths.push(new.clone());
            }
            // Lance's writers set flag 16 with the first base path: `protocol::settle`
            crate::protocol::settle(&mut plan.manifest, &plan.indices);
        }
        Operation::Merge(m) => {
            // the listing is judged against the base's fragments by `Plan::apply_merge`
            plan.merge_listing = Some(m.fragments.clone());
            if !m.schema.is_empty() {
                let max_field = m.schema.iter().map(|f| f.id).max();
                plan.manifest.fields = m.schema.clone();
                plan.manifest.schema_metadata = m.schema_metadata.clone();
                if let (Some(allocated), Some(max)) =
                    (plan.manifest.max_allocated_field_id, max_field)
                {
                    plan.manifest.max_allocated_field_id = Some(allocated.max(max));
                }
            }
        }
        Operation::DataReplacement(d) => {
            for g in &d.replacements {
                let file = g.new_file.clone().ok_or_else(|| {
                    TxnError::operation(
                        name,
                        format!("the replacement for fragment {} has no file", g.fragment_id),
                    )
                })?;
                let fields: Vec<i32> = file.fields.clone();
                prune_rewritten(&mut plan.indices, g.fragment_id, &fields)?;
                plan.replacements.push((g.fragment_id, file));
            }
            crate::replacement::same_fields(plan.replacements.iter().map(|(_, f)| f))?;
        }
        Operation::UpdateConfig(u) => apply_update_config(&mut plan.manifest, u)?,
        Operation::Restore(_) => {
            return Err(TxnError::unsupported(
                name,
                "a restore publishes another version's content: commit it with Dataset::restore",
            ))
        }
        Operation::Rewrite(r) => {
            if r.groups.is_empty() {
                return Err(TxnError::operation(
                    name,
                    "a Rewrite with no group is a layout conversion: it needs the content it publishes",
                ));
            }
            // lancet carries a rewrite's remapped entries whole ([`Change::indices`]); entries
            // named only by uuid would be left covering removed fragments, so none is guessed
            if !r.rewritten_indices.is_empty() {
                return Err(TxnError::unsupported(
                    name,
                    "rewritten_indices are not applied: give the remapped entries as the change's indices",
                ));
            }
            let max = base.manifest.max_fragment_id.map(u64::from);
            for g in &r.groups {
                plan.removed.extend(g.old_fragments.iter().map(|f| f.id));
                if let Some(taken) = g
                    .new_fragments
                    .iter()
                    .find(|f| f.id != 0 && max.is_some_and(|m| f.id <= m))
                {
                    return Err(TxnError::operation(
                        name,
                        format!(
                            "destination fragment {} is at or below max_fragment_id {}: another writer took it",
                            taken.id,
                            max.unwrap_or(0)
                        ),
                    ));
                }
                plan.create(&g.new_fragments, name)?;
            }
        }
        Operation::Clone(_) => {
            return Err(TxnError::unsupported(
                name,
                "a clone is made with Dataset::shallow_clone",
            ))
        }
        Operation::Project(p) => {
            if p.schema.is_empty() {
                return Err(TxnError::operation(
                    name,
                    "Cannot drop all columns from a dataset",
                ));
            }
            plan.manifest.fields = p.schema.clone();
            // field ids are never handed out twice: the allocation mark stays
            plan.project = Some(p.schema.iter().map(|f| f.id).collect());
        }
        Operation::UpdateMemWalState(_) | Operation::DataOverlay(_) => {
            return Err(TxnError::unsupported(name, "lancet does not commit it yet"))
        }
    }
    Ok(plan)
}

/// The manifest a restore of `old` publishes after `latest`: `old`'s content with
/// `max_fragment_id`, `next_row_id` and `max_allocated_field_id` not lowered (ids handed
/// out since stay dead) and `latest`'s sticky flags kept ([`crate::STICKY_FLAGS`]).
pub fn restored_manifest(old: &Manifest, latest: &Manifest) -> Manifest {
    let mut m = old.clone();
    m.max_fragment_id = m.max_fragment_id.max(latest.max_fragment_id);
    m.next_row_id = m.next_row_id.max(latest.next_row_id);
    let sticky = crate::STICKY_FLAGS.iter().fold(0, |a, f| a | f);
    m.reader_feature_flags |= latest.reader_feature_flags & sticky;
    let writer_sticky = sticky | flags::NON_REUSABLE_FIELD_IDS;
    m.writer_feature_flags |= latest.writer_feature_flags & writer_sticky;
    if m.writer_feature_flags & flags::NON_REUSABLE_FIELD_IDS != 0 {
        m.max_allocated_field_id = m.max_allocated_field_id.max(latest.max_allocated_field_id);
    }
    m
}

/// The id a new fragment of `manifest`'s next version takes: past `max_fragment_id`, or, as
/// Lance writers before `max_fragment_id` left it unset, past the highest id listed.
pub fn next_fragment_id(manifest: &Manifest) -> u64 {
    match manifest.max_fragment_id {
        Some(m) => u64::from(m) + 1,
        None => manifest.fragments.last().map_or(0, |f| f.id + 1),
    }
}

/// The indexes a Project keeps, as Lance 14.0.2's `retain_relevant_indices`: an entry on a
/// field the schema no longer holds goes (the Fragment Reuse Index and other system indexes
/// stay); of the segments of one index, those covering no live fragment (`live`) go unless
/// every segment does, when the earliest created stays (an empty definition still answers by
/// scanning); a segment with no bitmap, a lone segment, and every segment under a tagged FRI
/// history stay.
pub fn retain_relevant_indices(
    indices: &mut Vec<IndexMetadata>,
    fields: &[i32],
    live: &[u32],
) -> Result<()> {
    let system = |i: &IndexMetadata| i.name == crate::FRI_INDEX_NAME || i.name == "__lance_mem_wal";
    indices.retain(|i| i.fields.iter().all(|f| fields.contains(f)) || system(i));
    let tagged = indices
        .iter()
        .any(|i| i.name == crate::FRI_INDEX_NAME && i.index_version.unwrap_or(0) >= 1);
    if tagged {
        return Ok(());
    }
    let live: roaring::RoaringBitmap = live.iter().copied().collect();
    let mut keep: Vec<bool> = vec![true; indices.len()];
    let mut names: Vec<String> = indices
        .iter()
        .filter(|i| i.name != crate::FRI_INDEX_NAME)
        .map(|i| i.name.clone())
        .collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let measured: Vec<usize> = (0..indices.len())
            .filter(|&k| {
                indices
                    .get(k)
                    .is_some_and(|i| i.name == name && !i.fragment_bitmap.is_empty())
            })
            .collect();
        if measured.len() <= 1 {
            continue;
        }
        let mut empty = Vec::new();
        for &k in &measured {
            let Some(index) = indices.get(k) else {
                continue;
            };
            let covered = crate::coverage::index_bitmap(index, "Project")?.unwrap_or_default();
            if (covered & &live).is_empty() {
                empty.push(k);
            }
        }
        // every segment empty: the earliest created stays
        let oldest = match empty.len() == measured.len() {
            true => empty.iter().copied().min_by_key(|&k| {
                indices
                    .get(k)
                    .map(|i| (i.created_at.is_none(), i.created_at, i.dataset_version))
            }),
            false => None,
        };
        for &k in &empty {
            if Some(k) != oldest {
                if let Some(slot) = keep.get_mut(k) {
                    *slot = false;
                }
            }
        }
    }
    let mut flags = keep.into_iter();
    indices.retain(|_| flags.next().unwrap_or(true));
    Ok(())
}

/// `fields` (a manifest's flat field list) without the top-level columns named `columns`
/// and everything under them, as Lance 14.0.2's `drop_columns` plans it: a column the schema
/// does not hold is refused, and so is dropping every column.
pub fn drop_fields(fields: &[Field], columns: &[&str]) -> Result<Vec<Field>> {
    let name = "Project";
    let mut dropped: Vec<i32> = Vec::new();
    for column in columns {
        let field = crate::fields::top_level(fields, column).ok_or_else(|| {
            TxnError::operation(
                name,
                format!("Column {column} does not exist in the dataset"),
            )
        })?;
        dropped.push(field.id);
    }
    // descendants follow their parents: a field whose parent goes, goes
    let mut changed = true;
    while changed {
        changed = false;
        for f in fields {
            if dropped.contains(&f.parent_id) && !dropped.contains(&f.id) {
                dropped.push(f.id);
                changed = true;
            }
        }
    }
    let kept: Vec<Field> = fields
        .iter()
        .filter(|f| !dropped.contains(&f.id))
        .cloned()
        .collect();
    if kept.is_empty() {
        return Err(TxnError::operation(
            name,
            "Cannot drop all columns from a dataset",
        ));
    }
    Ok(kept)
}

/// One column's change for [`alter_fields`]: a new name, a new nullability.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ColumnAlteration {
    /// The column (a top-level name).
    pub path: String,
    pub rename: Option<String>,
    pub nullable: Option<bool>,
    /// A new type: the column is rewritten, cast, under a new field id (see [`cast_allowed`]).
    pub data_type: Option<arrow_schema::DataType>,
}

/// Whether Lance 14.0.2's `alter_columns` casts a column of type `from` to `to`: Arrow can
/// cast it, and it stays in its family (integers to integers, floats to floats, temporal to
/// temporal, strings, binaries, decimals among themselves, lists by their items; a
/// dictionary by its values) — `is_upcast_downcast` for Lance 2.x files.
pub fn cast_allowed(from: &arrow_schema::DataType, to: &arrow_schema::DataType) -> bool {
    fn family(from: &arrow_schema::DataType, to: &arrow_schema::DataType) -> bool {
        use arrow_schema::DataType::*;
        match (from, to) {
            (Dictionary(_, v), _) => family(v, to),
            (_, Dictionary(_, v)) => family(from, v),
            (f, t) if f.is_integer() => t.is_integer(),
            (f, t) if f.is_floating() => t.is_floating(),
            (f, t) if f.is_temporal() => t.is_temporal(),
            (Boolean, t) => matches!(t, Boolean),
            (Utf8 | LargeUtf8, t) => matches!(t, Utf8 | LargeUtf8),
            (Binary | LargeBinary, t) => matches!(t, Binary | LargeBinary),
            (Decimal128(..) | Decimal256(..), t) => matches!(t, Decimal128(..) | Decimal256(..)),
            (
                List(a) | LargeList(a) | FixedSizeList(a, _),
                List(b) | LargeList(b) | FixedSizeList(b, _),
            ) => family(a.data_type(), b.data_type()),
            _ => false,
        }
    }
    arrow_cast::can_cast_types(from, to) && family(from, to)
}

/// `fields` with the field `old` (and its children) replaced, at its place, by `new` (a
/// field and its children, with their new ids).
pub fn replace_field(fields: &[Field], old: i32, new: &[Field]) -> Vec<Field> {
    let mut gone = std::collections::HashSet::from([old]);
    let mut out = Vec::with_capacity(fields.len() + new.len());
    for f in fields {
        if f.id == old {
            out.extend(new.iter().cloned());
        } else if gone.contains(&f.parent_id) {
            gone.insert(f.id);
        } else {
            out.push(f.clone());
        }
    }
    out
}

/// A fragment's data files once a cast rewrote columns into new files, as Lance 14.0.2's
/// `alter_columns` leaves them: a file keeps listing the old field id (no longer in the
/// schema, as after a drop: decision 0033), and a file left holding no field of `schema`
/// leaves the fragment.
pub fn keep_files_with_fields(files: &mut Vec<lancet_proto::table::DataFile>, schema: &[Field]) {
    files.retain(|f| f.fields.iter().any(|id| schema.iter().any(|s| s.id == *id)));
}

/// `fields` with `alterations` applied, as Lance 14.0.2's `alter_columns` without a cast: the
/// field keeps its id (its data is untouched), takes the new name or nullability. A column
/// the schema does not hold, or a name another column of the same parent has, is refused.
/// Returns the fields and whether a column was made non-nullable (the caller checks it holds
/// no NULL; the Project then does not assert `preserves_nullability`).
pub fn alter_fields(
    fields: &[Field],
    alterations: &[ColumnAlteration],
) -> Result<(Vec<Field>, bool)> {
    let name = "Project";
    let mut out = fields.to_vec();
    let mut tightens = false;
    for a in alterations {
        // a path names a column of the schema as it was, as Lance resolves it (a swap of two
        // names is two renames, not a rename of the renamed)
        let id = crate::fields::top_level(fields, &a.path)
            .map(|f| f.id)
            .ok_or_else(|| {
                TxnError::operation(
                    name,
                    format!("Column \"{}\" does not exist in the dataset", a.path),
                )
            })?;
        let field = out.iter_mut().find(|f| f.id == id).ok_or_else(|| {
            TxnError::operation(name, format!("Column \"{}\" was altered away", a.path))
        })?;
        if let Some(rename) = &a.rename {
            if rename.is_empty() {
                return Err(TxnError::operation(name, "a column name cannot be empty"));
            }
            field.name.clone_from(rename);
        }
        if let Some(nullable) = a.nullable {
            tightens |= field.nullable && !nullable;
            field.nullable = nullable;
        }
    }
    check_unique_names(&out, name)?;
    Ok((out, tightens))
}

/// Refuses a schema where two fields under one parent share a name (Lance's
/// "Duplicate field name").
pub fn check_unique_names(fields: &[Field], operation: &'static str) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for f in fields {
        if !seen.insert((f.parent_id, f.name.as_str())) {
            return Err(TxnError::operation(
                operation,
                format!("Duplicate field name \"{}\" in schema", f.name),
            ));
        }
    }
    Ok(())
}

/// Withdraws `fragment` from every index on one of `fields` (a column whose data the commit
/// rewrites in place: DataReplacement, an Update's `fields_modified`, a Merge replacing a
/// file), as Lance 14.0.2's `prune_updated_fields_from_indices` does: the entry stays, its
/// bitmap loses the fragment. An entry with no bitmap (covering every fragment) is left
/// alone, as in Lance. The Fragment Reuse Index is no column's index.
fn prune_rewritten(indices: &mut [IndexMetadata], fragment: u64, fields: &[i32]) -> Result<()> {
    let id = u32::try_from(fragment).unwrap_or(u32::MAX);
    for index in indices.iter_mut() {
        if index.fragment_bitmap.is_empty() || !index.fields.iter().any(|f| fields.contains(f)) {
            continue;
        }
        let Some(mut bitmap) = crate::coverage::index_bitmap(index, "commit")? else {
            continue;
        };
        if bitmap.remove(id) {
            index.fragment_bitmap = encode_roaring32(&bitmap);
        }
    }
    Ok(())
}

/// The record a Delete or Update commits for a fragment whose record on the version it is
/// planned on is `current`, when the caller staged `staged` (prepared on an older version,
/// perhaps): as Lance 14.0.2 rebases them, a Delete takes only the staged deletion file onto
/// the current record; an Update keeps its staged record, with the current overlays, less
/// any data file none of whose fields the schema (`schema_fields`) still holds (a column
/// dropped meanwhile stays dropped).
pub fn rebased_record(
    operation: &Operation,
    current: &DataFragment,
    staged: &DataFragment,
    schema_fields: &[i32],
) -> DataFragment {
    match operation {
        Operation::Delete(_) => {
            let mut f = current.clone();
            f.deletion_file = staged.deletion_file;
            f
        }
        Operation::Update(_) => {
            let mut f = staged.clone();
            f.overlays = current.overlays.clone();
            if !schema_fields.is_empty() {
                f.files
                    .retain(|d| d.fields.iter().any(|x| schema_fields.contains(x)));
            }
            f
        }
        _ => staged.clone(),
    }
}

/// The four map updates of an UpdateConfig, as Lance 14.0.2 reads one: the new fields as they
/// are, or the deprecated ones (upserts and deletes of config, schema and field metadata as
/// replacements) read as the new ones; the two forms mixed is refused.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateConfigMaps {
    pub config: Option<lancet_proto::table::transaction::UpdateMap>,
    pub table_metadata: Option<lancet_proto::table::transaction::UpdateMap>,
    pub schema_metadata: Option<lancet_proto::table::transaction::UpdateMap>,
    pub field_metadata:
        std::collections::BTreeMap<i32, lancet_proto::table::transaction::UpdateMap>,
}

/// `u`'s map updates (see [`UpdateConfigMaps`]).
pub fn update_config_maps(
    u: &lancet_proto::table::transaction::UpdateConfig,
) -> Result<UpdateConfigMaps> {
    use lancet_proto::table::transaction::{UpdateMap, UpdateMapEntry};
    let name = "UpdateConfig";
    let new_style = u.config_updates.is_some()
        || u.table_metadata_updates.is_some()
        || u.schema_metadata_updates.is_some()
        || !u.field_metadata_updates.is_empty();
    let old_style = !u.upsert_values.is_empty()
        || !u.delete_keys.is_empty()
        || !u.schema_metadata.is_empty()
        || !u.field_metadata.is_empty();
    if new_style && old_style {
        return Err(TxnError::operation(
            name,
            "Cannot mix old and new style UpdateConfig fields",
        ));
    }
    if !old_style {
        return Ok(UpdateConfigMaps {
            config: u.config_updates.clone(),
            table_metadata: u.table_metadata_updates.clone(),
            schema_metadata: u.schema_metadata_updates.clone(),
            field_metadata: u.field_metadata_updates.clone(),
        });
    }
    let entries = |m: &std::collections::BTreeMap<String, String>| -> Vec<UpdateMapEntry> {
        m.iter()
            .map(|(k, v)| UpdateMapEntry {
                key: k.clone(),
                value: Some(v.clone()),
            })
            .collect()
    };
    let mut config = entries(&u.upsert_values);
    config.extend(u.delete_keys.iter().map(|k| UpdateMapEntry {
        key: k.clone(),
        value: None,
    }));
    let replace = |m: &std::collections::BTreeMap<String, String>| UpdateMap {
        update_entries: entries(m),
        replace: true,
    };
    let mut field_metadata = std::collections::BTreeMap::new();
    for (id, f) in &u.field_metadata {
        let id = i32::try_from(*id)
            .map_err(|_| TxnError::operation(name, format!("Field with id {id} does not exist")))?;
        field_metadata.insert(id, replace(&f.metadata));
    }
    Ok(UpdateConfigMaps {
        config: Some(UpdateMap {
            update_entries: config,
            replace: false,
        }),
        table_metadata: None,
        schema_metadata: (!u.schema_metadata.is_empty()).then(|| replace(&u.schema_metadata)),
        field_metadata,
    })
}

/// `u` applied to `manifest` (see the module docs).
fn apply_update_config(
    manifest: &mut Manifest,
    u: &lancet_proto::table::transaction::UpdateConfig,
) -> Result<()> {
    use lancet_proto::table::transaction::UpdateMap;
    let UpdateConfigMaps {
        config,
        table_metadata: table,
        schema_metadata: schema,
        field_metadata: fields,
    } = update_config_maps(u)?;
    let apply = |map: &mut std::collections::BTreeMap<String, Vec<u8>>, update: &UpdateMap| {
        if update.replace {
            map.clear();
        }
        for e in &update.update_entries {
            match &e.value {
                Some(v) => {
                    map.insert(e.key.clone(), v.clone().into_bytes());
                }
                None => {
                    map.remove(&e.key);
                }
            }
        }
    };
    let apply_strings = |map: &mut std::collections::BTreeMap<String, String>,
                         update: &UpdateMap| {
        let mut bytes = map
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
            .collect();
        apply(&mut bytes, update);
        *map = bytes
            .into_iter()
            .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
            .collect();
    };
    if let Some(c) = &config {
        apply_strings(&mut manifest.config, c);
    }
    if let Some(t) = &table {
        apply_strings(&mut manifest.table_metadata, t);
    }
    if let Some(s) = &schema {
        apply(&mut manifest.schema_metadata, s);
    }
    let before = (
        crate::keys::primary_key(&manifest.fields),
        crate::keys::clustering_key(&manifest.fields),
    );
    let writes = crate::keys::writes_keys(
        fields
            .values()
            .flat_map(|u| u.update_entries.iter().map(|e| e.key.as_str())),
    );
    for (id, update) in &fields {
        let field = manifest
            .fields
            .iter_mut()
            .find(|f| f.id == *id)
            .ok_or_else(|| {
                TxnError::operation("UpdateConfig", format!("Field with id {id} does not exist"))
            })?;
        apply(&mut field.metadata, update);
    }
    if !fields.is_empty() {
        let updated: Vec<i32> = fields.keys().copied().collect();
        crate::keys::settle(&mut manifest.fields, &updated, before, writes)?;
    }
    Ok(())
}

/// Whether `next` rewrote `prev`'s data files (Lance 14.0.2's
/// `merge_fragment_physically_rewritten`): another count of files, or a file at another path,
/// of other fields, column indices, file version or base. A new deletion file alone is not.
pub fn files_rewritten(prev: &DataFragment, next: &DataFragment) -> bool {
    prev.files.len() != next.files.len()
        || prev.files.iter().zip(&next.files).any(|(a, b)| {
            a.path != b.path
                || a.fields != b.fields
                || a.column_indices != b.column_indices
                || a.file_major_version != b.file_major_version
                || a.file_minor_version != b.file_minor_version
                || a.base_id != b.base_id
        })
}

/// What a new table is before its first version: Lance 14's create writes an Overwrite of
/// this (no fragments, no index) with the table's schema. Its feature flags are none, or
/// stable row ids (2) in both words; its data storage format is `version` ("2.0", "2.1",
/// "2.2").
pub fn new_table(fields: &[Field], version: &str, stable_row_ids: bool, writer: &str) -> Manifest {
    let flags = match stable_row_ids {
        true => flags::STABLE_ROW_IDS,
        false => 0,
    };
    Manifest {
        fields: fields.to_vec(),
        version: 0,
        reader_feature_flags: flags,
        writer_feature_flags: flags,
        writer_version: Some(WriterVersion {
            library: "lancet".into(),
            version: writer.into(),
            prerelease: None,
            build_metadata: None,
        }),
        data_format: Some(DataStorageFormat {
            file_format: "lance".into(),
            version: version.into(),
        }),
        ..Default::default()
    }
}

/// Lance 14's index rule for an Update that moves rows (`RewriteRows`) on a stable-row-id
/// table: an index whose fragment bitmap covers every fragment the rows came from (the
/// removed and the updated), on no column the update assigned
/// (`fields_for_preserving_frag_bitmap`), and holding row ids rather than row addresses, also
/// covers the new fragments that hold only moved rows (`pure`): their rows keep their ids, and
/// the indexed values did not change. No index loses a fragment. Entries in the address
/// domain are left alone: ZoneMap and BloomFilter, and every entry with `index_version` 1 or
/// more (a BTree pylance 14.0.2 trains holds addresses, and it does not extend those either:
/// the moved rows are not at the addresses the index holds). An Update in another mode moves
/// no row: nothing changes.
pub fn cover_moved_rows(
    indices: &mut [IndexMetadata],
    update: &Update,
    pure: &[u32],
) -> Result<()> {
    if pure.is_empty() || update.update_mode != UpdateMode::RewriteRows as i32 {
        return Ok(());
    }
    let sources: Vec<u32> = update
        .removed_fragment_ids
        .iter()
        .copied()
        .chain(update.updated_fragments.iter().map(|f| f.id))
        .map(|id| u32::try_from(id).unwrap_or(u32::MAX))
        .collect();
    for index in indices.iter_mut() {
        let by_address = lancet_proto::results_are_row_addrs(index);
        let assigned = index.fields.iter().any(|f| {
            u32::try_from(*f).is_ok_and(|f| update.fields_for_preserving_frag_bitmap.contains(&f))
        });
        if by_address || assigned || index.fragment_bitmap.is_empty() {
            continue;
        }
        let Some(mut bitmap) = crate::coverage::index_bitmap(index, "Update")? else {
            continue;
        };
        if sources.iter().all(|s| bitmap.contains(*s)) {
            bitmap.extend(pure.iter().copied());
            index.fragment_bitmap = encode_roaring32(&bitmap);
        }
    }
    Ok(())
}

impl Plan {
    /// Nothing yet done to `base`.
    fn on(base: Version<'_>) -> Self {
        Plan {
            manifest: base.manifest.clone(),
            indices: base.indices.to_vec(),
            created: Vec::new(),
            updated: Vec::new(),
            removed: Vec::new(),
            remove_all: false,
            replacements: Vec::new(),
            merge_listing: None,
            replaces_content: false,
            project: None,
            matched_offsets: BTreeMap::new(),
        }
    }

    /// Applies a Project to `base` (every fragment of the base version): each fragment keeps
    /// the data files holding a remaining field (Lance 14.0.2 removes a file none of whose
    /// fields remains, and keeps the others as they are, listing the dropped ids), and the index
    /// list keeps what [`retain_relevant_indices`] keeps. Fragments whose files do not change
    /// are not edited (a tree rewrites no leaf for them).
    pub fn apply_project(&mut self, base: &[DataFragment]) -> Result<()> {
        let Some(remaining) = self.project.take() else {
            return Ok(());
        };
        for f in base {
            let kept: Vec<DataFile> = f
                .files
                .iter()
                .filter(|d| d.fields.iter().any(|id| remaining.contains(id)))
                .cloned()
                .collect();
            if kept.len() != f.files.len() {
                let mut f = f.clone();
                f.files = kept;
                self.updated.push(f);
            }
        }
        let live: Vec<u32> = base
            .iter()
            .filter_map(|f| u32::try_from(f.id).ok())
            .collect();
        retain_relevant_indices(&mut self.indices, &remaining, &live)
    }

    /// Judges a Merge's listing against `base` (every fragment of the base version, in id
    /// order) as Lance 14.0.2 validates it, and splits it: a listed fragment the base has (its
    /// first listing) is updated, any other is created, numbered after `max_fragment_id` when
    /// its id is 0 (how staged `write_fragments` output comes). Refused, with nothing applied:
    /// a base fragment left out (a Merge never removes one), a changed `physical_rows`, an
    /// existing fragment listed after a new one, a new id listed twice, a new fragment
    /// carrying row ids, an existing one that lost its row ids.
    pub fn apply_merge(&mut self, base: &[DataFragment]) -> Result<()> {
        let Some(listing) = self.merge_listing.take() else {
            return Ok(());
        };
        let name = "Merge";
        let mut seen_existing = std::collections::HashSet::new();
        let mut new_ids = std::collections::HashSet::new();
        let mut created = Vec::new();
        for f in listing {
            let prev = base
                .binary_search_by_key(&f.id, |b| b.id)
                .ok()
                .and_then(|i| base.get(i));
            match prev {
                Some(prev) if seen_existing.insert(f.id) => {
                    if !created.is_empty() {
                        return Err(TxnError::operation(
                            name,
                            format!("it lists existing fragment {} after a new fragment; new fragments must be listed after every existing fragment", f.id),
                        ));
                    }
                    if prev.physical_rows != f.physical_rows {
                        return Err(TxnError::invalid(
                            self.manifest.version + 1,
                            Invariant::MergeKeepsFragments,
                            format!("fragment {}", f.id),
                            format!(
                                "the Merge changes its row count from {} to {}",
                                prev.physical_rows, f.physical_rows
                            ),
                        ));
                    }
                    // columns whose data file the merge replaced leave their indexes
                    let rewritten = crate::coverage::rewritten_fields(prev, &f);
                    if !rewritten.is_empty() {
                        prune_rewritten(&mut self.indices, f.id, &rewritten)?;
                    }
                    if prev.row_id_sequence.is_some() && f.row_id_sequence.is_none() {
                        return Err(TxnError::operation(
                            name,
                            format!("it drops the row id metadata of fragment {}", f.id),
                        ));
                    }
                    self.updated.push(f);
                }
                _ => {
                    if f.id != 0 && !new_ids.insert(f.id) {
                        return Err(TxnError::operation(
                            name,
                            format!("it lists new fragment id {} twice; new fragments take id 0 or a unique reserved id", f.id),
                        ));
                    }
                    if f.row_id_sequence.is_some() {
                        return Err(TxnError::operation(
                            name,
                            format!("new fragment (id {}) carries row id metadata", f.id),
                        ));
                    }
                    let mut f = f;
                    if prev.is_some() {
                        // a second listing of an existing id is a new fragment
                        f.id = 0;
                    }
                    created.push(f);
                }
            }
        }
        let missing: Vec<u64> = base
            .iter()
            .map(|b| b.id)
            .filter(|id| !seen_existing.contains(id))
            .collect();
        if let Some(first) = missing.first() {
            return Err(TxnError::invalid(
                self.manifest.version + 1,
                Invariant::MergeKeepsFragments,
                format!("fragment {first}"),
                format!("the Merge leaves out fragments {missing:?}; it lists every fragment of the table"),
            ));
        }
        self.create(&created, name)
    }

    /// Adds `fragments` as created, numbering those at id 0 after `max_fragment_id`.
    fn create(&mut self, fragments: &[DataFragment], name: &'static str) -> Result<()> {
        let mut next = next_fragment_id(&self.manifest);
        for f in fragments {
            let mut f = f.clone();
            if f.id == 0 {
                f.id = next;
                next += 1;
            }
            let id = u32::try_from(f.id).map_err(|_| {
                TxnError::operation(name, format!("fragment id {} is beyond 32 bits", f.id))
            })?;
            self.manifest.max_fragment_id = self.manifest.max_fragment_id.max(Some(id));
            // a fragment numbered by its writer above the rest: the next one at 0 follows it
            next = next.max(f.id.saturating_add(1));
            self.created.push(f);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lancet_proto::table::transaction::{
        Append, CreateIndex, Delete, Overwrite, ReserveFragments, Update, UpdateBases,
    };
    use lancet_proto::table::{BasePath, Uuid};

    fn frag(id: u64, rows: u64) -> DataFragment {
        DataFragment {
            id,
            physical_rows: rows,
            ..Default::default()
        }
    }

    fn manifest(max: u32) -> Manifest {
        Manifest {
            fragments: vec![frag(1, 2), frag(max.into(), 2)],
            max_fragment_id: Some(max),
            next_row_id: 40,
            ..Default::default()
        }
    }

    fn on<'a>(m: &'a Manifest, indices: &'a [IndexMetadata]) -> Version<'a> {
        Version {
            manifest: m,
            indices,
        }
    }

    fn rewrite(old: &[u64], new: &[u64]) -> Operation {
        use lancet_proto::table::transaction::{rewrite::RewriteGroup, Rewrite};
        Operation::Rewrite(Rewrite {
            groups: vec![RewriteGroup {
                old_fragments: old.iter().map(|id| frag(*id, 2)).collect(),
                new_fragments: new.iter().map(|id| frag(*id, 2)).collect(),
            }],
            ..Default::default()
        })
    }

    #[test]
    fn a_rewrite_removes_its_sources_and_adds_its_destinations_with_their_index_entries() {
        let m = manifest(7);
        let fri = IndexMetadata {
            name: crate::FRI_INDEX_NAME.into(),
            index_version: Some(1),
            uuid: Some(lancet_proto::table::Uuid { uuid: vec![9; 16] }),
            ..Default::default()
        };
        let change = Change::new(rewrite(&[1, 7], &[8, 0])).with_indices(IndexIntent {
            added: vec![fri.clone()],
            ..Default::default()
        });
        let p = plan_change(on(&m, &[]), &change).unwrap();
        assert_eq!(p.removed, vec![1, 7]);
        // an id the rewrite numbered is kept; one at 0 is numbered after it
        assert_eq!(
            p.created.iter().map(|f| f.id).collect::<Vec<_>>(),
            vec![8, 9]
        );
        assert_eq!(p.manifest.max_fragment_id, Some(9));
        assert_eq!(p.indices, vec![fri]);
        // the tagged history needs flag 1024: the plan sets it, no writer does
        assert_ne!(
            p.manifest.reader_feature_flags & flags::FRAGMENT_REUSE_INDEX,
            0
        );
        assert_ne!(
            p.manifest.writer_feature_flags & flags::FRAGMENT_REUSE_INDEX,
            0
        );
        assert!(crate::rebase::ids_fixed(&change.operation));
    }

    #[test]
    fn a_rewrite_refuses_destination_ids_another_writer_took() {
        let m = manifest(7);
        let err = plan(on(&m, &[]), &rewrite(&[1], &[7])).unwrap_err();
        assert!(
            matches!(
                err,
                TxnError::Operation {
                    operation: "Rewrite",
                    ..
                }
            ),
            "{err}"
        );
        // a Rewrite with no group is a conversion, which needs its content
        let conversion = crate::operation::conversion_operation();
        assert!(plan(on(&m, &[]), &conversion).is_err());
        // remapped entries named by uuid alone are refused, not ignored
        let mut named = rewrite(&[1], &[8]);
        if let Operation::Rewrite(r) = &mut named {
            r.rewritten_indices.push(Default::default());
        }
        let err = plan(on(&m, &[]), &named).unwrap_err();
        assert!(matches!(err, TxnError::Unsupported { .. }), "{err}");
    }

    #[test]
    fn a_restore_never_lowers_ids_or_drops_sticky_flags() {
        let old = Manifest {
            max_fragment_id: Some(3),
            next_row_id: 10,
            ..Default::default()
        };
        let latest = Manifest {
            max_fragment_id: Some(7),
            next_row_id: 40,
            reader_feature_flags: flags::FRAGMENT_REUSE_INDEX | flags::DELETION_FILES,
            writer_feature_flags: flags::FRAGMENT_REUSE_INDEX | flags::DELETION_FILES,
            ..Default::default()
        };
        let m = restored_manifest(&old, &latest);
        assert_eq!((m.max_fragment_id, m.next_row_id), (Some(7), 40));
        // 1024 is sticky; deletion files are the old content's business
        assert_eq!(m.reader_feature_flags, flags::FRAGMENT_REUSE_INDEX);
        assert_eq!(m.writer_feature_flags, flags::FRAGMENT_REUSE_INDEX);
    }

    #[test]
    fn a_restore_publishes_the_old_content_without_lowering_ids() {
        let latest = manifest(9);
        let mut old = manifest(3);
        old.next_row_id = 5;
        let kept = IndexMetadata {
            name: "x".into(),
            ..Default::default()
        };
        let change =
            Change::new(crate::operation::restore_operation(2)).with_content(Content::Restored {
                manifest: Box::new(old.clone()),
                indices: vec![kept.clone()],
            });
        let p = plan_change(on(&latest, &[]), &change).unwrap();
        assert!(p.replaces_content);
        assert_eq!(p.manifest.fragments, old.fragments);
        assert_eq!(p.manifest.max_fragment_id, Some(9));
        assert_eq!(p.manifest.next_row_id, 40);
        assert_eq!(p.indices, vec![kept]);
        // content with any other operation is refused
        let wrong = Change::new(Operation::Append(Default::default())).with_content(Content::Flat);
        assert!(plan_change(on(&latest, &[]), &wrong).is_err());
    }

    #[test]
    fn a_conversion_puts_the_layout_in_place_and_its_flags_follow() {
        let flat = manifest(7);
        let to_tree =
            Change::new(crate::operation::conversion_operation()).with_content(Content::Tree {
                metadata: FragmentTreeMetadata::default(),
                max_fragment_id: Some(7),
            });
        let p = plan_change(on(&flat, &[]), &to_tree).unwrap();
        assert!(p.replaces_content && p.manifest.fragments.is_empty());
        assert_eq!(p.manifest.reader_feature_flags, flags::FRAGMENT_TREE);
        assert_eq!(p.manifest.writer_feature_flags, flags::TREE_WRITER);
        let back =
            Change::new(crate::operation::conversion_operation()).with_content(Content::Flat);
        let p = plan_change(on(&p.manifest, &[]), &back).unwrap();
        assert!(p.manifest.fragment_tree.is_none());
        assert_eq!(p.manifest.reader_feature_flags, 0);
        assert_eq!(
            p.manifest.writer_feature_flags,
            flags::DISABLE_TRANSACTION_FILE
        );
    }

    #[test]
    fn new_fragments_at_zero_are_numbered_after_max_fragment_id() {
        let m = manifest(7);
        let op = Operation::Append(Append {
            fragments: vec![frag(0, 3), frag(0, 1)],
        });
        let p = plan(on(&m, &[]), &op).unwrap();
        let ids: Vec<u64> = p.created.iter().map(|f| f.id).collect();
        assert_eq!(ids, vec![8, 9]);
        assert_eq!(p.manifest.max_fragment_id, Some(9));
        // next_row_id is the row-id crate's business
        assert_eq!(p.manifest.next_row_id, 40);
    }

    #[test]
    fn update_replaces_removes_and_creates() {
        let m = manifest(7);
        let op = Operation::Update(Update {
            removed_fragment_ids: vec![1],
            updated_fragments: vec![frag(7, 2)],
            new_fragments: vec![frag(0, 1)],
            ..Default::default()
        });
        let p = plan(on(&m, &[]), &op).unwrap();
        assert_eq!(p.removed, vec![1]);
        assert_eq!(p.updated, vec![frag(7, 2)]);
        assert_eq!(p.created, vec![frag(8, 1)]);
        let d = Operation::Delete(Delete {
            deleted_fragment_ids: vec![7],
            ..Default::default()
        });
        assert_eq!(plan(on(&m, &[]), &d).unwrap().removed, vec![7]);
    }

    #[test]
    fn overwrite_drops_fragments_and_indices_but_never_reuses_ids() {
        let m = manifest(7);
        let idx = [IndexMetadata {
            name: "i".into(),
            ..Default::default()
        }];
        // a fragment id the table used (3) is renumbered too
        let op = Operation::Overwrite(Overwrite {
            fragments: vec![frag(0, 5), frag(3, 1)],
            config_upsert_values: [("k".to_string(), "v".to_string())].into(),
            ..Default::default()
        });
        let p = plan(on(&m, &idx), &op).unwrap();
        assert!(p.remove_all && p.indices.is_empty());
        assert_eq!(p.created[0].id, 8);
        assert_eq!(p.created[1].id, 9);
        let mut deleted = frag(0, 5);
        deleted.deletion_file = Some(Default::default());
        let e = plan(
            on(&m, &idx),
            &Operation::Overwrite(Overwrite {
                fragments: vec![deleted],
                ..Default::default()
            }),
        )
        .unwrap_err();
        assert!(e.to_string().contains("deletion file"), "{e}");
        assert_eq!(p.manifest.config.get("k").map(String::as_str), Some("v"));
        let bases = Operation::Overwrite(Overwrite {
            initial_bases: vec![BasePath::default()],
            ..Default::default()
        });
        let e = plan(on(&m, &idx), &bases).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidInput);
    }

    #[test]
    fn create_index_replaces_by_uuid_and_reserve_advances_max() {
        let m = manifest(7);
        let uuid = |b: u8| Some(Uuid { uuid: vec![b; 16] });
        let old = IndexMetadata {
            uuid: uuid(1),
            name: "a".into(),
            ..Default::default()
        };
        let new = IndexMetadata {
            uuid: uuid(2),
            name: "a".into(),
            ..Default::default()
        };
        let op = Operation::CreateIndex(CreateIndex {
            new_indices: vec![new.clone()],
            removed_indices: vec![old.clone()],
        });
        assert_eq!(plan(on(&m, &[old]), &op).unwrap().indices, vec![new]);
        let r = Operation::ReserveFragments(ReserveFragments { num_fragments: 3 });
        assert_eq!(
            plan(on(&m, &[]), &r).unwrap().manifest.max_fragment_id,
            Some(10)
        );
        let over = Operation::ReserveFragments(ReserveFragments {
            num_fragments: u32::MAX,
        });
        assert!(plan(on(&m, &[]), &over).is_err());
    }

    #[test]
    fn a_data_replacement_needs_its_files_and_one_field_list() {
        let m = manifest(7);
        let op = Operation::DataReplacement(lancet_proto::table::transaction::DataReplacement {
            replacements: vec![lancet_proto::table::transaction::DataReplacementGroup {
                fragment_id: 7,
                new_file: None,
            }],
        });
        assert!(plan(on(&m, &[]), &op).is_err());
        let group =
            |id: u64, fields: &[i32]| lancet_proto::table::transaction::DataReplacementGroup {
                fragment_id: id,
                new_file: Some(DataFile {
                    path: format!("r{id}.lance"),
                    fields: fields.to_vec(),
                    ..Default::default()
                }),
            };
        let op = Operation::DataReplacement(lancet_proto::table::transaction::DataReplacement {
            replacements: vec![group(7, &[0]), group(8, &[1])],
        });
        let e = plan(on(&m, &[]), &op).unwrap_err();
        assert!(e.to_string().contains("same fields"), "{e}");
    }

    #[test]
    fn merge_lists_the_whole_next_fragment_list_and_raises_the_field_allocation() {
        let mut m = manifest(7);
        m.max_allocated_field_id = Some(1);
        let field = |id: i32| lancet_proto::file::Field {
            id,
            name: format!("c{id}"),
            ..Default::default()
        };
        let op = Operation::Merge(lancet_proto::table::transaction::Merge {
            fragments: vec![frag(7, 2)],
            schema: vec![field(0), field(4)],
            ..Default::default()
        });
        let mut p = plan(on(&m, &[]), &op).unwrap();
        p.apply_merge(&[frag(7, 2)]).unwrap();
        assert!(p.created.is_empty());
        assert_eq!(p.updated, vec![frag(7, 2)]);
        assert_eq!(p.manifest.fields.len(), 2);
        assert_eq!(p.manifest.max_allocated_field_id, Some(4));
    }

    #[test]
    fn update_config_applies_its_maps_as_lance_does() {
        use lancet_proto::table::transaction::{UpdateConfig, UpdateMap, UpdateMapEntry};
        let mut m = manifest(3);
        m.config.insert("keep".into(), "1".into());
        m.config.insert("gone".into(), "2".into());
        m.fields = vec![lancet_proto::file::Field {
            id: 0,
            ..Default::default()
        }];
        let entry = |k: &str, v: Option<&str>| UpdateMapEntry {
            key: k.into(),
            value: v.map(str::to_string),
        };
        let op = Operation::UpdateConfig(UpdateConfig {
            config_updates: Some(UpdateMap {
                update_entries: vec![entry("new", Some("3")), entry("gone", None)],
                replace: false,
            }),
            table_metadata_updates: Some(UpdateMap {
                update_entries: vec![entry("owner", Some("me"))],
                replace: true,
            }),
            field_metadata_updates: [(
                0,
                UpdateMap {
                    update_entries: vec![entry("unit", Some("m"))],
                    replace: false,
                },
            )]
            .into(),
            ..Default::default()
        });
        let p = plan(on(&m, &[]), &op).unwrap();
        let keys: Vec<&String> = p.manifest.config.keys().collect();
        assert_eq!(keys, ["keep", "new"]);
        assert_eq!(
            p.manifest.table_metadata.get("owner").map(String::as_str),
            Some("me")
        );
        assert_eq!(
            p.manifest.fields[0].metadata.get("unit"),
            Some(&b"m".to_vec())
        );
        // an unknown field, and the two styles mixed, are refused
        let unknown = Operation::UpdateConfig(UpdateConfig {
            field_metadata_updates: [(5, UpdateMap::default())].into(),
            ..Default::default()
        });
        assert!(plan(on(&m, &[]), &unknown).is_err());
        let mixed = Operation::UpdateConfig(UpdateConfig {
            config_updates: Some(UpdateMap::default()),
            delete_keys: vec!["keep".into()],
            ..Default::default()
        });
        assert!(plan(on(&m, &[]), &mixed)
            .unwrap_err()
            .to_string()
            .contains("mix"));
        // the deprecated form: upserts and deletes
        let old = Operation::UpdateConfig(UpdateConfig {
            upsert_values: [("x".to_string(), "9".to_string())].into(),
            delete_keys: vec!["keep".into()],
            ..Default::default()
        });
        let p = plan(on(&m, &[]), &old).unwrap();
        let keys: Vec<&String> = p.manifest.config.keys().collect();
        assert_eq!(keys, ["gone", "x"]);
    }

    #[test]
    fn the_deprecated_update_config_reads_as_the_new_one() {
        use lancet_proto::table::transaction::update_config::FieldMetadataUpdate;
        use lancet_proto::table::transaction::{UpdateConfig, UpdateMap};
        let old = UpdateConfig {
            upsert_values: [("x".to_string(), "9".to_string())].into(),
            delete_keys: vec!["keep".into()],
            schema_metadata: [("s".to_string(), "1".to_string())].into(),
            field_metadata: [(
                2,
                FieldMetadataUpdate {
                    metadata: [("f".to_string(), "2".to_string())].into(),
                },
            )]
            .into(),
            ..Default::default()
        };
        let maps = update_config_maps(&old).unwrap();
        let config = maps.config.unwrap();
        assert!(!config.replace);
        let entries: Vec<(&str, Option<&str>)> = config
            .update_entries
            .iter()
            .map(|e| (e.key.as_str(), e.value.as_deref()))
            .collect();
        assert_eq!(entries, [("x", Some("9")), ("keep", None)]);
        assert!(maps.table_metadata.is_none());
        assert!(maps.schema_metadata.unwrap().replace);
        assert!(maps.field_metadata[&2].replace);
        // the new form is read as it is; mixed forms are refused
        let new = UpdateConfig {
            table_metadata_updates: Some(UpdateMap::default()),
            ..Default::default()
        };
        assert_eq!(
            update_config_maps(&new).unwrap().table_metadata,
            Some(UpdateMap::default())
        );
        let mixed = UpdateConfig {
            delete_keys: vec!["k".into()],
            ..new
        };
        assert!(update_config_maps(&mixed).is_err());
    }

    #[test]
    fn a_rebased_delete_takes_only_its_deletion_file() {
        let file = |path: &str, fields: Vec<i32>| DataFile {
            path: path.into(),
            fields,
            ..Default::default()
        };
        // staged on a version whose fragment held columns 0 and 1; column 1 dropped since
        let mut staged = frag(3, 10);
        staged.files = vec![file("a", vec![0]), file("b", vec![1])];
        staged.deletion_file = Some(lancet_proto::table::DeletionFile {
            id: 9,
            ..Default::default()
        });
        let mut current = frag(3, 10);
        current.files = vec![file("a", vec![0])];
        let delete = Operation::Delete(Default::default());
        let d = rebased_record(&delete, &current, &staged, &[0]);
        assert_eq!(d.files, current.files);
        assert_eq!(d.deletion_file, staged.deletion_file);
        // an update keeps its record, less the file of the dropped column
        let update = Operation::Update(Default::default());
        let u = rebased_record(&update, &current, &staged, &[0]);
        assert_eq!(u.files, vec![file("a", vec![0])]);
    }

    #[test]
    fn a_merge_keeps_every_fragment_and_numbers_staged_ones_as_new() {
        let m = manifest(7);
        let merge = |fragments: Vec<DataFragment>| {
            let op = Operation::Merge(lancet_proto::table::transaction::Merge {
                fragments,
                ..Default::default()
            });
            plan(on(&m, &[]), &op).unwrap()
        };
        let base = [frag(0, 3), frag(7, 2)];
        // a staged fragment at id 0 (fragment 0 exists) is new, numbered after 7
        let mut p = merge(vec![frag(0, 3), frag(7, 2), frag(0, 5)]);
        p.apply_merge(&base).unwrap();
        assert_eq!(p.updated, vec![frag(0, 3), frag(7, 2)]);
        assert_eq!(p.created, vec![frag(8, 5)]);
        // a fragment left out, a changed row count, an existing one after a new one
        let refused = |listing: Vec<DataFragment>| {
            let e = merge(listing).apply_merge(&base).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput);
            e.to_string()
        };
        assert!(refused(vec![frag(7, 2)]).contains("leaves out fragments [0]"));
        assert!(refused(vec![frag(0, 4), frag(7, 2)]).contains("MergeKeepsFragments"));
        assert!(refused(vec![frag(0, 3), frag(0, 5), frag(7, 2)]).contains("after a new"));
        assert!(refused(vec![frag(0, 3), frag(7, 2), frag(9, 1), frag(9, 1)]).contains("twice"));
    }

    #[test]
    fn a_base_id_is_never_taken_twice_and_other_paths_are_named() {
        let mut m = manifest(7);
        m.base_paths.push(BasePath {
            id: 1,
            ..Default::default()
        });
        let op = Operation::UpdateBases(UpdateBases {
            new_bases: vec![BasePath {
                id: 1,
                ..Default::default()
            }],
        });
        assert!(plan(on(&m, &[]), &op)
            .unwrap_err()
            .to_string()
            .contains("base id 1"));
        let restore = Operation::Restore(Default::default());
        let e = plan(on(&m, &[]), &restore).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Unsupported);
        assert!(e.to_string().contains("Dataset::restore"));
    }

    #[test]
    fn moved_rows_join_the_row_id_indexes_that_covered_their_sources() {
        let typed =
            |kind: &str, name: &str, field: i32, version: i32, covered: &[u32]| IndexMetadata {
                name: name.into(),
                fields: vec![field],
                index_version: Some(version),
                fragment_bitmap: encode_roaring32(&covered.iter().copied().collect()),
                index_details: Some(lancet_proto::prost_types::Any {
                    type_url: format!("/lance.table.{kind}IndexDetails"),
                    value: Vec::new(),
                }),
                ..Default::default()
            };
        let entry = |name: &str, field: i32, version: i32, covered: &[u32]| {
            typed("BTree", name, field, version, covered)
        };
        let mut indices = vec![
            entry("by_id", 0, 0, &[1, 2, 3]),
            entry("by_x", 1, 0, &[1, 2, 3]),
            entry("addresses", 0, 1, &[1, 2, 3]),
            entry("partial", 0, 0, &[2, 3]),
            // a row-id index whatever its version (Lance's results_are_row_addrs)
            typed("LabelList", "labels", 0, 1, &[1, 2, 3]),
            typed("ZoneMap", "zones", 0, 0, &[1, 2, 3]),
        ];
        let update = Update {
            removed_fragment_ids: vec![1],
            updated_fragments: vec![frag(2, 10)],
            fields_for_preserving_frag_bitmap: vec![1],
            ..Default::default()
        };
        cover_moved_rows(&mut indices, &update, &[7]).unwrap();
        let covered: Vec<Vec<u32>> = indices
            .iter()
            .map(|i| {
                lancet_proto::roaring_wire::decode_roaring32(&i.fragment_bitmap)
                    .unwrap()
                    .iter()
                    .collect()
            })
            .collect();
        // only the row-id index on an unassigned column that covered every source grows
        assert_eq!(
            covered,
            [
                vec![1, 2, 3, 7],
                vec![1, 2, 3],
                vec![1, 2, 3],
                vec![2, 3],
                vec![1, 2, 3, 7],
                vec![1, 2, 3]
            ]
        );
        // a bitmap that does not decode is the operation's error
        let mut bad = vec![IndexMetadata {
            fragment_bitmap: vec![1, 2, 3],
            ..entry("bad", 0, 0, &[])
        }];
        assert!(cover_moved_rows(&mut bad, &update, &[7]).is_err());
    }

    #[test]
    fn alterations_name_columns_as_they_were() {
        let field = |id: i32, name: &str| Field {
            id,
            parent_id: -1,
            name: name.into(),
            ..Default::default()
        };
        let fields = vec![field(0, "a"), field(1, "b")];
        let alter = |path: &str, rename: &str| ColumnAlteration {
            path: path.into(),
            rename: Some(rename.into()),
            ..Default::default()
        };
        // a swap: each path names the column it named before the call
        let (out, _) = alter_fields(&fields, &[alter("a", "b"), alter("b", "a")]).unwrap();
        assert_eq!(out, vec![field(0, "b"), field(1, "a")]);
        // a rename onto a name another column keeps
        let e = alter_fields(&fields, &[alter("a", "b")]).unwrap_err();
        assert!(e.to_string().contains("Duplicate field name"), "{e}");
    }
}
