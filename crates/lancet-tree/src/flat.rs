//! Storage actions on a flat manifest, with the fragment tree's semantics: a flat version
//! and a tree version given the same actions end with the same fragments (the same checks on
//! each action, the same records), so a commit path treats both layouts alike.

use std::collections::BTreeMap;

use lancet_proto::table::Manifest;

use crate::error::{Result, TreeError};
use crate::mutation::{Action, Mutation};
use crate::records::{Deltas, Violation};
use crate::writer::FragmentChange;

/// Applies `actions` to `manifest`'s fragment list (kept in id order; `max_fragment_id`
/// raised past a new fragment's id), returning each touched fragment before and after, in id
/// order. An action the tree would refuse is `InvalidInput` naming it.
pub fn apply_flat(
    manifest: &mut Manifest,
    actions: &[(u64, Action)],
) -> Result<Vec<FragmentChange>> {
    let mut changes: BTreeMap<u64, FragmentChange> = Default::default();
    for (i, (id, action)) in actions.iter().enumerate() {
        let pos = manifest.fragments.binary_search_by_key(id, |f| f.id);
        let prior = pos.ok().and_then(|p| manifest.fragments.get(p)).cloned();
        let mut m = Mutation {
            sequence: 1,
            target: *id,
            action: action.clone(),
            deltas: Deltas::default(),
        };
        let bad = |v: Violation| {
            TreeError::InvalidInput(format!("action {i} ({}): {}", action.name(), v.detail))
        };
        m.deltas = m.deltas_on(prior.as_ref()).map_err(bad)?;
        let after = m.apply(prior.clone()).map_err(bad)?;
        changes
            .entry(*id)
            .or_insert_with(|| FragmentChange {
                id: *id,
                before: prior,
                after: None,
            })
            .after = after.clone();
        match (pos, after) {
            (Ok(p), Some(f)) => {
                if let Some(slot) = manifest.fragments.get_mut(p) {
                    *slot = f;
                }
            }
            (Ok(p), None) => {
                manifest.fragments.remove(p);
            }
            (Err(p), Some(f)) => {
                let id32 = u32::try_from(f.id).ok();
                manifest.max_fragment_id = manifest.max_fragment_id.max(id32);
                manifest.fragments.insert(p, f);
            }
            (Err(_), None) => {}
        }
    }
    Ok(changes.into_values().collect())
}
