//! A change planned on one version: the manifest, index list and storage actions it makes
//! there, the data files it adds and the reserved fragment ids its new fragments take. The
//! commit loop plans a change again on every version it is prepared on.

use std::collections::HashMap;

use lancet_proto::table::transaction::{Operation, UpdateMode};
use lancet_proto::table::DataFragment;
use lancet_tree::Action;
use lancet_txn::build::Change;
use lancet_txn::{DataFileFacts, TxnError};
use roaring::RoaringBitmap;
use tracing::Instrument;

use crate::error::{Error, Result};
use crate::history;
use crate::indexes;
use crate::rowids;
use crate::snapshot::Snapshot;
use crate::verify;

/// An operation applied to one version, ready for the commit loop.
pub(crate) struct Built {
    pub manifest: lancet_proto::table::Manifest,
    pub indices: Vec<lancet_proto::table::IndexMetadata>,
    pub actions: Vec<(u64, Action)>,
    /// The data files the operation adds, as stored.
    pub data_files: Vec<DataFileFacts>,
    /// Reserved ids its new fragments take (see [`Dataset::reserved_ids`]).
    pub reserved: Vec<u64>,
    /// The manifest holds the change's own fragments or tree (a restore, a conversion).
    pub replaces_content: bool,
}

/// Fragment `id` of this version, or the operation's typed error naming it.
pub(crate) async fn require_fragment(
    snap: &Snapshot,
    id: u64,
    operation: &'static str,
) -> Result<DataFragment> {
    snap.fragment(id)
        .await?
        .ok_or_else(|| not_in(snap, id, operation))
}

/// `change` planned on this version: storage actions, with row ids and version
/// sequences for what it creates, and the facts of the data files it adds.
pub(crate) async fn build(snap: &Snapshot, change: &Change) -> Result<Built> {
    let base = lancet_txn::Version {
        manifest: snap.manifest(),
        indices: snap.indices(),
    };
    let operation = &change.operation;
    let mut plan = lancet_txn::build::plan_change(base, change)?;
    if plan.replaces_content {
        return Ok(Built {
            manifest: plan.manifest,
            indices: plan.indices,
            actions: Vec::new(),
            data_files: Vec::new(),
            reserved: Vec::new(),
            replaces_content: true,
        });
    }
    let name = lancet_paths::transaction::operation_name(operation);
    // a new fragment given an id the version has would replace it; one at or below
    // max_fragment_id may take an id a ReserveFragments reserved
    let max = snap.manifest().max_fragment_id.map(u64::from);
    let mut explicit = Vec::new();
    for f in &plan.created {
        if max.is_some_and(|m| f.id <= m) {
            if snap.fragment(f.id).await?.is_some() {
                return Err(Error::Txn(TxnError::Operation {
                    operation: name,
                    reason: format!(
                        "new fragment {} is in version {} already; give it id 0 to have it numbered",
                        f.id,
                        snap.version()
                    ),
                }));
            }
            explicit.push(f.id);
        }
    }
    let reserved = match explicit.is_empty() {
        true => Vec::new(),
        false => reserved_ids(snap, &explicit).await?,
    };
    // a merge lists every fragment, a projection edits any: read them once rather than
    // one by one
    let all = match plan.remove_all || plan.merge_listing.is_some() || plan.project.is_some() {
        true => Some(snap.fragments().await?),
        false => None,
    };
    if let Some(all) = &all {
        plan.apply_merge(all)?;
        plan.apply_project(all)?;
    }
    // (the updated records by id: a replacement of N fragments looks each up once)
    let mut updated: HashMap<u64, usize> = plan
        .updated
        .iter()
        .enumerate()
        .map(|(i, f)| (f.id, i))
        .collect();
    for (id, file) in std::mem::take(&mut plan.replacements) {
        let replaced = match updated.get(&id).and_then(|i| plan.updated.get(*i)) {
            Some(current) => lancet_txn::build::replace_data_file(current, &file)?,
            None => {
                let current = require_fragment(snap, id, name).await?;
                lancet_txn::build::replace_data_file(&current, &file)?
            }
        };
        match updated.get(&id).and_then(|i| plan.updated.get_mut(*i)) {
            Some(slot) => *slot = replaced,
            None => {
                updated.insert(id, plan.updated.len());
                plan.updated.push(replaced);
            }
        }
    }
    let mut before = HashMap::new();
    let touched = plan
        .updated
        .iter()
        .map(|f| f.id)
        .chain(plan.removed.iter().copied());
    for id in touched {
        let record = match &all {
            Some(all) => all
                .binary_search_by_key(&id, |f| f.id)
                .ok()
                .and_then(|i| all.get(i).cloned()),
            None => snap.fragment(id).await?,
        };
        let record = record.ok_or_else(|| not_in(snap, id, name))?;
        before.insert(id, record);
    }
    // a Delete or Update prepared on an older version is applied to the current records
    if matches!(operation, Operation::Delete(_) | Operation::Update(_)) {
        let schema: Vec<i32> = plan.manifest.fields.iter().map(|f| f.id).collect();
        for f in &mut plan.updated {
            if let Some(current) = before.get(&f.id) {
                *f = lancet_txn::build::rebased_record(operation, current, f, &schema);
            }
        }
    }
    // a rewrite's destinations carry the rows' ids and versions as the rewrite wrote them
    if snap.has_stable_row_ids() && !matches!(operation, Operation::Rewrite(_)) {
        if let Operation::Update(u) = operation {
            // fragments of moved rows only (each row keeps its id) join the indexes
            let mut pure = Vec::new();
            for f in &plan.created {
                let moved = rowids::row_id_sequence(snap, f)?.map(|s| s.len());
                if moved == Some(f.physical_rows) && u.update_mode == UpdateMode::RewriteRows as i32
                {
                    pure.push(u32::try_from(f.id).unwrap_or(u32::MAX));
                }
            }
            lancet_txn::build::cover_moved_rows(&mut plan.indices, u, &pure)?;
        }
        // rows an update moved keep their ids and their creation version
        let moved = plan.created.iter().any(|f| f.row_id_sequence.is_some());
        let fresh_from = plan.manifest.next_row_id;
        plan.manifest.next_row_id =
            lancet_rowid::assign::assign_row_ids(fresh_from, &mut plan.created)?;
        let created_at = match moved {
            true => created_at_of(snap, before.values())?,
            false => HashMap::new(),
        };
        let version = snap.version() + 1;
        for f in &mut plan.created {
            lancet_rowid::assign::stamp_versions(f, version, fresh_from, |id| {
                created_at.get(&id).copied()
            })?;
        }
        // rows whose data files a merge or replacement rewrote are updated now
        if matches!(
            operation,
            Operation::Merge(_) | Operation::DataReplacement(_)
        ) {
            for f in &mut plan.updated {
                if before
                    .get(&f.id)
                    .is_some_and(|b| lancet_txn::build::files_rewritten(b, f))
                {
                    lancet_rowid::assign::restamp_updated(f, version);
                }
            }
        }
    }
    let mut added: Vec<DataFragment> = plan.created.clone();
    for f in &plan.updated {
        let mut new_files = f.clone();
        let old = before.get(&f.id).map(|b| b.files.as_slice()).unwrap_or(&[]);
        new_files.files.retain(|file| !old.contains(file));
        if !new_files.files.is_empty() {
            added.push(new_files);
        }
    }
    let span = tracing::debug_span!("data_file_facts", files = added.len());
    let data_files = verify::data_file_facts(snap, &added)
        .instrument(span)
        .await?;
    let mut actions: Vec<(u64, Action)> = Vec::new();
    if let (Some(all), true) = (&all, plan.remove_all) {
        actions.extend(all.iter().map(|f| (f.id, Action::Remove)));
    }
    actions.extend(plan.removed.iter().map(|id| (*id, Action::Remove)));
    // a record listed as it is (a merge lists every fragment) changes nothing; one that
    // only gains data files (a backfill) or a deletion file (a delete) is those, not the
    // whole record (what a tree buffers)
    for f in plan.updated {
        match before.get(&f.id) {
            Some(b) => actions.extend(
                lancet_tree::actions_between(b, &f)
                    .into_iter()
                    .map(|a| (f.id, a)),
            ),
            None => actions.push((f.id, Action::Upsert(Box::new(f)))),
        }
    }
    for f in plan.created {
        actions.push((f.id, Action::Upsert(Box::new(f))));
    }
    Ok(Built {
        manifest: plan.manifest,
        indices: plan.indices,
        actions,
        data_files,
        reserved,
        replaces_content: false,
    })
}

/// Those of `ids` (each at or below `max_fragment_id`, none in this version) that a
/// ReserveFragments reserved and nothing used since: the version that raised
/// `max_fragment_id` over the id recorded a ReserveFragments, no version since held the
/// id, and no index entry of this version names it. Looked for at most
/// [`RESERVATION_LOOKBACK`] versions back; an id not found so is left out (and the
/// invariants refuse a fragment that takes it).
pub(crate) async fn reserved_ids(snap: &Snapshot, ids: &[u64]) -> Result<Vec<u64>> {
    let mut named = RoaringBitmap::new();
    for m in snap.indices() {
        named |= indexes::index_fragments(snap, m)?.unwrap_or_default();
    }
    let mut out = Vec::new();
    'ids: for &id in ids {
        if u32::try_from(id).is_ok_and(|i| named.contains(i)) {
            continue;
        }
        let mut newer = snap.clone();
        for _ in 0..RESERVATION_LOOKBACK {
            let v = newer.version();
            if v <= 1 {
                continue 'ids;
            }
            let older = match snap.checkout(v - 1).await {
                Ok(d) => d,
                // a cleaned-up version: the reservation cannot be established
                Err(_) => continue 'ids,
            };
            let below = older
                .manifest()
                .max_fragment_id
                .is_none_or(|m| u64::from(m) < id);
            if below {
                let reserved = history::transaction(&newer).await?.is_some_and(|t| {
                    matches!(
                        t.transaction.operation,
                        Some(Operation::ReserveFragments(_))
                    )
                });
                if reserved {
                    out.push(id);
                }
                continue 'ids;
            }
            if older.fragment(id).await?.is_some() {
                continue 'ids;
            }
            newer = older;
        }
    }
    Ok(out)
}

/// The version each row of `fragments` was created at, by row id (rows an update moves
/// keep it). Rows of a fragment without a created-at sequence count as created at 1
/// (written before Lance tracked versions).
fn created_at_of<'a>(
    snap: &Snapshot,
    fragments: impl Iterator<Item = &'a DataFragment>,
) -> Result<HashMap<u64, u64>> {
    let mut out = HashMap::new();
    for f in fragments {
        let Some(ids) = rowids::row_id_sequence(snap, f)? else {
            continue;
        };
        let (created, _) = rowids::version_sequences(snap, f)?;
        for (offset, id) in ids.iter().enumerate() {
            let at = created
                .as_ref()
                .and_then(|c| c.version_at(offset as u64))
                .unwrap_or(1);
            out.insert(id, at);
        }
    }
    Ok(out)
}

/// The operation's error for a fragment `ds` does not have.
fn not_in(ds: &Snapshot, id: u64, operation: &'static str) -> Error {
    Error::Txn(TxnError::Operation {
        operation,
        reason: format!("fragment {id} is not in version {}", ds.version()),
    })
}

/// How many versions back [`Dataset::reserved_ids`] looks for the ReserveFragments that
/// reserved an id.
const RESERVATION_LOOKBACK: usize = 256;
