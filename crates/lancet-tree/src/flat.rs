//! Storage actions on a flat manifest, with the fragment tree's semantics: a flat version
//! and a tree version given the same actions end with the same fragments (the same checks on
//! each action, the same records), so a commit path treats both layouts alike.

use std::collections::BTreeMap;

use lancet_proto::table::{DataFragment, Manifest};

use crate::error::{Result, TreeError};
use crate::mutation::{Action, Mutation};
use crate::records::{check_data_file, Deltas, Violation};
use crate::writer::FragmentChange;

/// Applies `actions` to `manifest`'s fragment list (kept in id order; `max_fragment_id`
/// raised past a new fragment's id), returning each touched fragment before and after, in id
/// order. An action the tree would refuse is `InvalidInput` naming it.
///
/// Linear in the list and the actions: the touched fragments are settled first (a binary
/// search each, as the list is in id order), then the list is rebuilt in one merge, so
/// removing or inserting many fragments (a truncate, a large append) costs no shifting of
/// the list per action.
pub fn apply_flat(
    manifest: &mut Manifest,
    actions: &[(u64, Action)],
) -> Result<Vec<FragmentChange>> {
    /// A touched fragment: as the list held it, and as the actions so far leave it.
    struct Touched {
        before: Option<DataFragment>,
        now: Option<DataFragment>,
    }
    let mut touched: BTreeMap<u64, Touched> = BTreeMap::new();
    let mut max_fragment_id = manifest.max_fragment_id;
    for (i, (id, action)) in actions.iter().enumerate() {
        let entry = touched.entry(*id).or_insert_with(|| {
            let before = manifest
                .fragments
                .binary_search_by_key(id, |f| f.id)
                .ok()
                .and_then(|p| manifest.fragments.get(p))
                .cloned();
            Touched {
                now: before.clone(),
                before,
            }
        });
        let mut m = Mutation {
            sequence: 1,
            target: *id,
            action: action.clone(),
            deltas: Deltas::default(),
        };
        let bad = |v: Violation| {
            TreeError::InvalidInput(format!("action {i} ({}): {}", action.name(), v.detail))
        };
        let after = match entry.now.as_ref().is_some_and(unknown_count) {
            // a legacy record (row count unknown) is never in a tree, which counts rows:
            // the action's record rules apply, not its counts
            true => {
                let after = m.transform(entry.now.take()).map_err(bad)?;
                for file in after.iter().flat_map(|f| &f.files) {
                    check_data_file(file).map_err(bad)?;
                }
                after
            }
            false => {
                m.deltas = m.deltas_on(entry.now.as_ref()).map_err(bad)?;
                m.apply(entry.now.take()).map_err(bad)?
            }
        };
        if let Some(f) = &after {
            // a fragment the list does not hold at this point is inserted
            if entry.now.is_none() {
                max_fragment_id = max_fragment_id.max(u32::try_from(f.id).ok());
            }
        }
        entry.now = after;
    }
    // one merge of the list (in id order) with the touched fragments' final records
    let old = std::mem::take(&mut manifest.fragments);
    let mut list = Vec::with_capacity(old.len() + touched.len());
    let mut pending = touched.iter().peekable();
    for f in old {
        while let Some((_, t)) = pending.next_if(|(id, _)| **id < f.id) {
            list.extend(t.now.clone());
        }
        match pending.next_if(|(id, _)| **id == f.id) {
            Some((_, t)) => list.extend(t.now.clone()),
            None => list.push(f),
        }
    }
    list.extend(pending.filter_map(|(_, t)| t.now.clone()));
    manifest.fragments = list;
    manifest.max_fragment_id = max_fragment_id;
    Ok(touched
        .into_iter()
        .map(|(id, t)| FragmentChange {
            id,
            before: t.before,
            after: t.now,
        })
        .collect())
}

/// A record whose row count a legacy flat manifest leaves unknown (`physical_rows` 0 with
/// data files to count).
fn unknown_count(f: &DataFragment) -> bool {
    f.physical_rows == 0 && !f.files.is_empty()
}
