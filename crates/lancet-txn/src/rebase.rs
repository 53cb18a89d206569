//! Rebasing a commit that lost the race for its version: the caller's intent rebuilt on the
//! latest version, and how long and how often to retry.
//!
//! The conflict table ([`crate::compatibility`]) says whether a rebase is allowed; this module
//! says what the rebased commit holds:
//! - the latest manifest, with the caller's feature flags added, its `next_row_id` when
//!   higher, and its edits to the schema, config, table metadata and base paths replayed
//!   ([`rebase_manifest`]);
//! - the latest index list with the caller's index changes applied ([`IndexIntent`]);
//! - the same storage actions, with the ids of fragments the commit creates moved past the
//!   latest `max_fragment_id` when another writer took them ([`remap_new_ids`]).

use std::time::Duration;

use lancet_proto::table::transaction::Operation;
use lancet_proto::table::{IndexMetadata, Manifest, Uuid};

/// Why a commit cannot be rebased over the versions published since it was prepared: the
/// version that decides it, Lance's reason, and whether redoing the work on the latest
/// version may succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub version: u64,
    pub reason: String,
    pub retryable: bool,
    pub cause: ConflictCause,
}

/// What a commit conflicted with, as a caller decides by it (whether to prepare the work
/// again, and on what); `reason` says the rest in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConflictCause {
    /// Another writer's version took the number first (a put-if-absent lost).
    LostRace,
    /// A version published since cannot be judged (it records no transaction), or Lance's
    /// conflict table refuses a rebase over it ([`crate::compatibility`]).
    Incompatible,
    /// The operation is never rebased (a restore, a conversion: [`never_rebased`]).
    NotRebased,
    /// The destination fragment ids a rewrite's Fragment Reuse Index entry records were taken
    /// by another writer: the rewrite is prepared again on the latest version.
    IdsTaken,
    /// Both the caller and a version since changed the schema ([`rebase_manifest`]).
    SchemaChanged,
    /// The commit lost races for longer than [`COMMIT_TIMEOUT`] ([`may_retry`]).
    OutOfRetries,
}

/// Judges `mine` against every version published since it was prepared, in order, by Lance's
/// conflict table ([`crate::compatibility`]): `Ok` when each allows a rebase. A version that
/// records no transaction cannot be judged and is a conflict, as in Lance. `ids_taken`: see
/// [`crate::compatibility`].
pub fn judge_since(
    mine: &Operation,
    since: &[(u64, Option<lancet_proto::StoredTransaction>)],
    ids_taken: bool,
) -> Result<(), Conflict> {
    let name = lancet_proto::transaction::operation_name(mine);
    for (version, txn) in since {
        let Some(theirs) = txn else {
            return Err(Conflict {
                version: *version,
                reason: format!(
                    "{name} cannot be judged against version {version}, which records no transaction"
                ),
                retryable: false,
                cause: ConflictCause::Incompatible,
            });
        };
        let (why, retryable) = match crate::compatibility(mine, theirs, ids_taken) {
            crate::Compatibility::Rebase => continue,
            crate::Compatibility::Retryable(why) => (why, true),
            crate::Compatibility::Incompatible(why) => (why, false),
        };
        return Err(Conflict {
            version: *version,
            reason: format!(
                "{name} against {} at version {version}: {why}",
                theirs.operation_name()
            ),
            retryable,
            cause: ConflictCause::Incompatible,
        });
    }
    Ok(())
}

/// [`judge_since`] for a change (a `Change`'s `operation` and the index
/// entries it carries `beside` it), with the rules that depend on what it carries: a Rewrite
/// that remaps indexes in its own commit (no Fragment Reuse Index entry beside it) also meets
/// [`crate::remapping_rewrite_rule`].
pub fn judge_change_since(
    operation: &Operation,
    beside: &IndexIntent,
    since: &[(u64, Option<lancet_proto::StoredTransaction>)],
    ids_taken: bool,
) -> Result<(), Conflict> {
    let defers_remap = beside.added.iter().any(|i| i.name == crate::FRI_INDEX_NAME);
    let name = lancet_proto::transaction::operation_name(operation);
    // version by version, so the first version that decides is the one reported
    for entry in since {
        if let (false, (version, Some(theirs))) = (defers_remap, entry) {
            if let Some(crate::Compatibility::Retryable(why)) =
                crate::remapping_rewrite_rule(operation, theirs)
            {
                return Err(Conflict {
                    version: *version,
                    reason: format!(
                        "{name} against {} at version {version}: {why}",
                        theirs.operation_name()
                    ),
                    retryable: true,
                    cause: ConflictCause::Incompatible,
                });
            }
        }
        judge_since(operation, std::slice::from_ref(entry), ids_taken)?;
    }
    Ok(())
}

/// How long a commit keeps rebasing over compatible commits before giving up on a busy
/// table. Lance stops after 20 attempts; with eight writers committing back to back a
/// writer can lose more than 20 races in a row although every change is compatible, so
/// lancet bounds the time instead (and the attempts, far above what the time allows).
pub const COMMIT_TIMEOUT: Duration = Duration::from_secs(60);
/// See [`COMMIT_TIMEOUT`].
pub const MAX_ATTEMPTS: u32 = 10_000;
/// Losses in a row after which a commit retries with the shortest backoff (see
/// [`backoff_delay`]).
const STARVING: u32 = 6;

/// The wait before attempt `attempt + 1`, given `random` (a uniformly random byte): a random
/// number of slots, the slot count doubling from 4 to 32 (Lance's slot backoff, with a lower
/// ceiling: a loser that waits long only loses again). A slot is 5 ms, or a quarter of what
/// the lost attempt took when that is longer (up to 50 ms): on a store where a commit takes
/// 100 ms (S3), writers spread over its latency instead of colliding again within it.
///
/// After six losses in a row the count falls back to 4: winners start their next commit at
/// once, so a loser that keeps sleeping up to 32 slots (1.6 s on a slow store) keeps arriving
/// after them. On a saturated S3 server (moto at ~10 commits/s) writers lost 60 races in a row
/// and timed out before this.
pub fn backoff_delay(attempt: u32, lost_attempt: Duration, random: u8) -> Duration {
    let slots = if attempt >= STARVING {
        4
    } else {
        4u64 << attempt.min(3)
    };
    let slot = u64::from(random) % slots;
    let slot_ms = (lost_attempt.as_millis() / 4).clamp(5, 50) as u64;
    Duration::from_millis(slot * slot_ms)
}

/// What a commit recording `operation` is when it is never rebased: a `Restore`
/// republishes one version's content whole, and a layout conversion (a `Rewrite` with no
/// groups, [`crate::operation::conversion_operation`]) rebuilds one version's fragments in
/// the other layout. Both are derived from the version they were prepared on, so a commit
/// that lands first makes them start again from the latest version (a retryable conflict).
/// `None`: the commit is rebased when the conflict table allows it.
pub fn never_rebased(operation: &Operation) -> Option<&'static str> {
    match operation {
        Operation::Restore(_) => Some("a restore"),
        Operation::Rewrite(r)
            if r.groups.is_empty() && r.old_fragments.is_empty() && r.new_fragments.is_empty() =>
        {
            Some("a layout conversion")
        }
        _ => None,
    }
}

/// Whether the ids of the fragments `operation` creates are recorded beside it, so that a
/// rebase may not move them: a `Rewrite`'s destinations are named by its Fragment Reuse Index
/// transition and by the segments it remapped. When another writer took them the rewrite is
/// prepared again from the latest version ([`ConflictCause::IdsTaken`]); any other
/// operation's new fragments move past the latest `max_fragment_id` ([`remap_new_ids`]).
pub fn ids_fixed(operation: &Operation) -> bool {
    matches!(operation, Operation::Rewrite(_))
}

/// Whether to try again after `attempt` attempts over `elapsed`.
pub fn may_retry(attempt: u32, elapsed: Duration) -> bool {
    attempt < MAX_ATTEMPTS && elapsed < COMMIT_TIMEOUT
}

/// `(old, new)` ids for fragments a commit creates (`new_ids`, in order) that the latest
/// version has taken (at or below its `max_fragment_id`): all of them moved, in order, past
/// it, so they stay consecutive. Empty when none was taken.
pub fn remap_new_ids(new_ids: &[u64], latest_max_fragment_id: Option<u32>) -> Vec<(u64, u64)> {
    let Some(max) = latest_max_fragment_id.map(u64::from) else {
        return Vec::new();
    };
    if new_ids.iter().all(|id| *id > max) {
        return Vec::new();
    }
    new_ids
        .iter()
        .zip(max + 1..)
        .map(|(&old, new)| (old, new))
        .collect()
}

/// The caller's manifest intent on the latest version: `caller` is the manifest the commit
/// prepared on `base`; the result is `latest`'s with the caller's feature flags added, its
/// `next_row_id` and `max_allocated_field_id` when higher, and every other edit the caller
/// made to `base` replayed: the schema and schema metadata (refused when `latest` changed them
/// too, otherwise), config and table metadata key by key (set or removed), base paths added.
/// A storage-action commit changes the manifest this way (a new column beside its
/// `add_data_file` actions), so a rebase that kept only the flags would publish its files
/// without their column. The error is the reason the edits cannot be replayed.
pub fn rebase_manifest(
    base: &Manifest,
    latest: &Manifest,
    caller: &Manifest,
) -> Result<Manifest, String> {
    let mut m = latest.clone();
    m.reader_feature_flags |= caller.reader_feature_flags;
    m.writer_feature_flags |= caller.writer_feature_flags;
    m.next_row_id = m.next_row_id.max(caller.next_row_id);
    m.max_allocated_field_id = m.max_allocated_field_id.max(caller.max_allocated_field_id);
    if caller.fields != base.fields || caller.schema_metadata != base.schema_metadata {
        if latest.fields != base.fields || latest.schema_metadata != base.schema_metadata {
            return Err(
                "the schema changed since the commit was prepared, and the commit changes it too"
                    .into(),
            );
        }
        m.fields = caller.fields.clone();
        m.schema_metadata = caller.schema_metadata.clone();
    }
    replay_map(&base.config, &caller.config, &mut m.config);
    replay_map(
        &base.table_metadata,
        &caller.table_metadata,
        &mut m.table_metadata,
    );
    for b in caller
        .base_paths
        .iter()
        .filter(|b| !base.base_paths.contains(b))
    {
        match m.base_paths.iter().find(|x| x.id == b.id) {
            Some(x) if x == b => {}
            Some(_) => return Err(format!("base id {} was taken since", b.id)),
            None => m.base_paths.push(b.clone()),
        }
    }
    Ok(m)
}

/// The keys `caller` set or removed relative to `base`, applied to `out`.
fn replay_map<V: Clone + PartialEq>(
    base: &std::collections::BTreeMap<String, V>,
    caller: &std::collections::BTreeMap<String, V>,
    out: &mut std::collections::BTreeMap<String, V>,
) {
    for (k, v) in caller {
        if base.get(k) != Some(v) {
            out.insert(k.clone(), v.clone());
        }
    }
    for k in base.keys().filter(|k| !caller.contains_key(*k)) {
        out.remove(k);
    }
}

/// A commit's change to the index list: the entries it adds and the ones it removes, judged
/// once against the version it was prepared on, and the entries that each replace one entry
/// of that version (a compaction's remapped segments).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexIntent {
    pub added: Vec<IndexMetadata>,
    pub removed: Vec<IndexMetadata>,
    /// `(uuid of the entry replaced, its replacement)`. On a newer version that no longer
    /// holds the replaced entry (another writer dropped the index, or replaced it with a new
    /// build), the replacement is left out: it was made from data that index no longer
    /// stands for, and bringing it back would answer with stale values. Lance 14.0.2 skips
    /// remapped indexes whose uuid is gone the same way (`handle_rewrite_indices`).
    pub replacing: Vec<(Option<Uuid>, IndexMetadata)>,
}

impl IndexIntent {
    /// The change from `base` to `wanted` (entries compared whole).
    pub fn between(base: &[IndexMetadata], wanted: &[IndexMetadata]) -> Self {
        Self {
            added: wanted
                .iter()
                .filter(|i| !base.contains(i))
                .cloned()
                .collect(),
            removed: base
                .iter()
                .filter(|i| !wanted.contains(i))
                .cloned()
                .collect(),
            replacing: Vec::new(),
        }
    }

    /// Each entry of `base` replaced by the entry at the same position of `remapped` (a
    /// rewrite's remapped index list, one entry per entry of `base`); entries left as they
    /// are change nothing.
    pub fn remapping(base: &[IndexMetadata], remapped: &[IndexMetadata]) -> Self {
        Self {
            replacing: base
                .iter()
                .zip(remapped)
                .filter(|(old, new)| old != new)
                .map(|(old, new)| (old.uuid.clone(), new.clone()))
                .collect(),
            ..Self::default()
        }
    }

    /// `latest` with this change applied: removed entries (by uuid) dropped, replaced ones
    /// swapped for their replacements where `latest` still holds them, added ones appended
    /// once.
    pub fn apply(&self, latest: &[IndexMetadata]) -> Vec<IndexMetadata> {
        let held = |uuid: &Option<Uuid>| latest.iter().any(|i| &i.uuid == uuid);
        let replacements: Vec<&(Option<Uuid>, IndexMetadata)> =
            self.replacing.iter().filter(|(old, _)| held(old)).collect();
        latest
            .iter()
            .filter(|i| !self.removed.iter().any(|r| r.uuid == i.uuid) && !self.added.contains(i))
            .filter(|i| !replacements.iter().any(|(old, _)| old == &i.uuid))
            .cloned()
            .chain(replacements.iter().map(|(_, new)| new.clone()))
            .chain(self.added.iter().cloned())
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use lancet_proto::table::Uuid;

    fn entry(name: &str, uuid: u8, covers: &[u32]) -> IndexMetadata {
        IndexMetadata {
            name: name.into(),
            uuid: Some(Uuid {
                uuid: vec![uuid; 16],
            }),
            // none: the entry records no bitmap (it covers every fragment)
            fragment_bitmap: match covers {
                [] => Vec::new(),
                _ => {
                    lancet_proto::roaring_wire::encode_roaring32(&covers.iter().copied().collect())
                }
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_remapped_entry_replaces_its_index_only_while_the_index_is_there() {
        let (v, w) = (entry("v_idx", 1, &[0, 1, 2]), entry("w_idx", 2, &[3]));
        let v_remapped = entry("v_idx", 3, &[0, 9]);
        let intent =
            IndexIntent::remapping(&[v.clone(), w.clone()], &[v_remapped.clone(), w.clone()]);
        assert_eq!(
            intent.replacing.len(),
            1,
            "an entry left as it is changes nothing"
        );
        // on the version it was made on, and on one that still holds v_idx
        assert_eq!(
            intent.apply(&[v.clone(), w.clone()]),
            [w.clone(), v_remapped.clone()]
        );
        // another writer dropped v_idx: it does not come back
        assert_eq!(
            intent.apply(std::slice::from_ref(&w)),
            std::slice::from_ref(&w)
        );
        // another writer rebuilt v_idx: its build stays, the remap of the old one is left out
        let rebuilt = entry("v_idx", 4, &[0, 1, 2]);
        assert_eq!(intent.apply(&[w.clone(), rebuilt.clone()]), [w, rebuilt]);
    }

    #[test]
    fn a_rewrite_that_remaps_indexes_retries_over_an_index_built_on_its_sources() {
        use lancet_proto::table::transaction::rewrite::RewriteGroup;
        use lancet_proto::table::transaction::{CreateIndex, Rewrite};
        use lancet_proto::table::{DataFragment, Transaction};
        use lancet_proto::StoredTransaction;
        let rewrite = Operation::Rewrite(Rewrite {
            groups: vec![RewriteGroup {
                old_fragments: [1, 2]
                    .iter()
                    .map(|id| DataFragment {
                        id: *id,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        });
        let built = |covers: &[u32]| {
            let op = Operation::CreateIndex(CreateIndex {
                new_indices: vec![entry("v_idx", 7, covers)],
                ..Default::default()
            });
            Some(StoredTransaction {
                transaction: Transaction {
                    operation: Some(op),
                    ..Default::default()
                },
                unknown_operation: None,
            })
        };
        let remapping = IndexIntent::default();
        // an index over another fragment: rebased
        assert_eq!(
            judge_change_since(&rewrite, &remapping, &[(5, built(&[4]))], false),
            Ok(())
        );
        // over a source, or over every fragment: retried, naming the version
        for covers in [&[2u32][..], &[]] {
            let c = judge_change_since(
                &rewrite,
                &remapping,
                &[(5, built(&[4])), (6, built(covers))],
                false,
            )
            .unwrap_err();
            assert_eq!((c.version, c.retryable), (6, true), "{}", c.reason);
        }
        // a rewrite recording its moves in the Fragment Reuse Index keeps Lance's deferred
        // rule: an index over all of a group's sources is rebased
        let deferring = IndexIntent {
            added: vec![entry(crate::FRI_INDEX_NAME, 8, &[])],
            ..Default::default()
        };
        assert_eq!(
            judge_change_since(&rewrite, &deferring, &[(6, built(&[1, 2]))], false),
            Ok(())
        );
    }

    #[test]
    fn every_version_since_is_judged_in_order() {
        use lancet_proto::table::transaction::{Append, Delete, Overwrite};
        use lancet_proto::table::{DataFragment, Transaction};
        use lancet_proto::StoredTransaction;
        let stored = |op: Operation| {
            Some(StoredTransaction {
                transaction: Transaction {
                    operation: Some(op),
                    ..Default::default()
                },
                unknown_operation: None,
            })
        };
        let delete = |id: u64| {
            Operation::Delete(Delete {
                updated_fragments: vec![DataFragment {
                    id,
                    ..Default::default()
                }],
                ..Default::default()
            })
        };
        let mine = delete(3);
        let appended = (5, stored(Operation::Append(Append::default())));
        assert_eq!(
            judge_since(&mine, std::slice::from_ref(&appended), false),
            Ok(())
        );
        // the same fragment deleted by another writer: retryable, naming the version
        let c = judge_since(&mine, &[appended.clone(), (6, stored(delete(3)))], false).unwrap_err();
        assert_eq!((c.version, c.retryable), (6, true));
        assert!(
            c.reason.starts_with("Delete against Delete at version 6"),
            "{}",
            c.reason
        );
        let c = judge_since(
            &mine,
            &[(5, stored(Operation::Overwrite(Overwrite::default())))],
            false,
        )
        .unwrap_err();
        assert!(!c.retryable);
        let c = judge_since(&mine, &[(5, None)], false).unwrap_err();
        assert!(!c.retryable && c.reason.contains("records no transaction"));
    }

    #[test]
    fn new_ids_move_past_the_latest_max_only_when_taken() {
        assert!(remap_new_ids(&[5, 6], Some(4)).is_empty());
        assert!(remap_new_ids(&[5, 6], None).is_empty());
        assert_eq!(remap_new_ids(&[5, 6], Some(5)), vec![(5, 6), (6, 7)]);
    }

    #[test]
    fn backoff_widens_then_falls_back_when_starving() {
        let lost = Duration::from_millis(1);
        assert_eq!(backoff_delay(1, lost, 255), Duration::from_millis(7 * 5));
        assert_eq!(backoff_delay(3, lost, 255), Duration::from_millis(31 * 5));
        assert_eq!(backoff_delay(6, lost, 255), Duration::from_millis(3 * 5));
        // slots scale with a slow store, capped at 50 ms
        assert_eq!(
            backoff_delay(1, Duration::from_secs(1), 1),
            Duration::from_millis(50)
        );
        assert!(may_retry(1, Duration::ZERO) && !may_retry(1, COMMIT_TIMEOUT));
    }

    #[test]
    fn restores_and_conversions_are_never_rebased() {
        use crate::operation::{conversion_operation, restore_operation};
        assert_eq!(never_rebased(&restore_operation(3)), Some("a restore"));
        assert_eq!(
            never_rebased(&conversion_operation()),
            Some("a layout conversion")
        );
        let append = Operation::Append(Default::default());
        assert_eq!(never_rebased(&append), None);
        let rewrite = Operation::Rewrite(lancet_proto::table::transaction::Rewrite {
            groups: vec![Default::default()],
            ..Default::default()
        });
        assert_eq!(never_rebased(&rewrite), None);
    }

    #[test]
    fn the_index_intent_survives_a_rebase() {
        let entry = |n: u8| IndexMetadata {
            uuid: Some(Uuid { uuid: vec![n; 16] }),
            name: format!("i{n}"),
            ..Default::default()
        };
        let intent = IndexIntent::between(&[entry(1), entry(2)], &[entry(1), entry(3)]);
        assert_eq!(intent.added, vec![entry(3)]);
        assert_eq!(intent.removed, vec![entry(2)]);
        // another writer added entry 4 meanwhile
        assert_eq!(
            intent.apply(&[entry(1), entry(2), entry(4)]),
            vec![entry(1), entry(4), entry(3)]
        );
        let caller = Manifest {
            reader_feature_flags: 2,
            writer_feature_flags: 2,
            next_row_id: 10,
            ..Default::default()
        };
        let latest = Manifest {
            next_row_id: 20,
            reader_feature_flags: 1,
            writer_feature_flags: 1,
            ..Default::default()
        };
        let m = rebase_manifest(&Manifest::default(), &latest, &caller).unwrap();
        assert_eq!((m.reader_feature_flags, m.next_row_id), (3, 20));
        // a new column and a config key, replayed over a latest version that changed neither
        let field = |id: i32| lancet_proto::file::Field {
            id,
            ..Default::default()
        };
        let base = Manifest {
            fields: vec![field(0)],
            config: [("a".to_string(), "1".to_string())].into(),
            ..Default::default()
        };
        let mut caller = base.clone();
        caller.fields.push(field(1));
        caller.config.insert("b".into(), "2".into());
        caller.config.remove("a");
        let mut latest = base.clone();
        latest.config.insert("c".into(), "3".into());
        let m = rebase_manifest(&base, &latest, &caller).unwrap();
        assert_eq!(m.fields, caller.fields);
        let mut keys: Vec<&String> = m.config.keys().collect();
        keys.sort();
        assert_eq!(keys, ["b", "c"]);
        // both changed the schema: refused
        let mut other = base.clone();
        other.fields.push(field(2));
        assert!(rebase_manifest(&base, &other, &caller).is_err());
    }
}
