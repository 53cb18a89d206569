//! What a commit applies to each version it is prepared on ([`Intent`]), and the commit
//! prepared there ([`Prepared`]): a change planned by lancet-txn on that version, or the
//! caller's storage actions applied to its fragments (by lancet-tree's writer on a tree, to
//! the fragment list on a flat version), with the operation to record and the data files
//! the commit adds, read from storage to be judged.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use lancet_proto::prost::Message;
use lancet_proto::table::transaction::Operation;
use lancet_proto::table::{DataFragment, IndexMetadata, Manifest, Transaction};
use lancet_tree::{Action, FragmentChange, TreeWriterConfig};
use lancet_txn::build::{Change, Content};
use lancet_txn::finish;
use lancet_txn::operation::{data_operation, index_operation};
use lancet_txn::protocol;
use lancet_txn::rebase::{ids_fixed, rebase_manifest, ConflictCause, IndexIntent};

use crate::committed::Committed;
use crate::plan;
use lancet_read::error::Result;
use lancet_read::snapshot::Snapshot;
use lancet_read::verify;

/// `intent` prepared on this version: a change planned here (lancet-txn's plan, then its
/// storage actions), or the caller's storage actions applied; the tree writer's objects or
/// the flat list either way.
pub(crate) async fn prepare(snap: &Snapshot, intent: &Intent) -> Result<Prepared> {
    let (mut manifest, indices, actions, data_files, reserved, config) = match intent {
        Intent::Change { change, judged } => {
            let built = Box::pin(plan::build(snap, change)).await?;
            if built.replaces_content {
                // a restore or a conversion brings its own fragment list or tree
                let mut manifest = built.manifest;
                let changes = judged.clone().unwrap_or_else(|| Arc::from(Vec::new()));
                if matches!(change.content, Some(Content::Flat)) {
                    manifest.fragments = changes.iter().filter_map(|c| c.after.clone()).collect();
                }
                return Ok(Prepared {
                    manifest,
                    indices: built.indices,
                    operation: change.operation.clone(),
                    changes,
                    data_files: None,
                    reserved: built.reserved,
                    objects: 0,
                    bytes: 0,
                    tree_objects: Vec::new(),
                });
            }
            (
                built.manifest,
                built.indices,
                built.actions,
                Some(built.data_files),
                built.reserved,
                TreeWriterConfig::default(),
            )
        }
        Intent::Actions {
            manifest,
            indices,
            actions,
            config,
            ..
        } => (
            manifest.clone(),
            indices.clone(),
            actions.clone(),
            None,
            Vec::new(),
            config.clone(),
        ),
    };
    let applied = apply(snap, &mut manifest, &actions, &config).await?;
    let changes: Arc<[FragmentChange]> = applied.changes.into();
    protocol::enable_for_changes(&mut manifest, &changes);
    // The data files the commit adds, as stored: a change's were read when it was planned;
    // raw storage actions' are read here.
    let data_files = match data_files {
        Some(d) => d,
        None => verify::data_file_facts(snap, &added_files(&changes)).await?,
    };
    let operation = match intent {
        Intent::Change { change, .. } => change.operation.clone(),
        Intent::Actions { .. } if !changes.is_empty() => {
            data_operation(&changes, &manifest.fields, snap.version())
        }
        Intent::Actions { .. } => index_operation(snap.indices(), &indices)
            .unwrap_or(Operation::UpdateConfig(Default::default())),
    };
    Ok(Prepared {
        manifest,
        indices,
        operation,
        changes,
        data_files: Some(data_files),
        reserved,
        objects: applied.objects,
        bytes: applied.bytes,
        tree_objects: applied.tree_objects,
    })
}

/// `actions` applied to this version into `manifest` (lancet-tree's rule for either layout;
/// a flat manifest that leaves `max_fragment_id` unset read as Lance 14 reads it first).
async fn apply(
    snap: &Snapshot,
    manifest: &mut Manifest,
    actions: &[(u64, Action)],
    config: &TreeWriterConfig,
) -> Result<lancet_tree::Applied> {
    if snap.tree().is_none() {
        protocol::known_max_fragment_id(manifest);
    }
    // boxed: the tree writer's future is deep, and every commit path awaits this one
    let (store, tree) = (snap.store(), snap.tree());
    Ok(Box::pin(lancet_tree::apply_actions(
        store, tree, manifest, actions, config,
    ))
    .await?)
}

/// What a commit applies to each version it is prepared on.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one per commit, held by the commit loop
pub(crate) enum Intent {
    /// A change described once by lancet-txn (a Lance operation with what it carries
    /// beside it), planned again on every version an attempt is prepared on. `judged`: a
    /// conversion's fragments, each as it was and as the new layout records it (counts
    /// resolved), so that the invariants judge every fragment.
    Change {
        change: Box<Change>,
        judged: Option<Arc<[FragmentChange]>>,
    },
    /// Storage actions in the fragment tree's vocabulary ([`Dataset::commit_with_actions`]),
    /// with the caller's manifest and index list: on a rebase the caller's manifest and
    /// index changes are carried onto the latest version and new fragment ids moved.
    Actions {
        /// The manifest as the caller gave it, and its index changes.
        caller: Manifest,
        index_intent: IndexIntent,
        /// Both as the next attempt prepares them.
        manifest: Manifest,
        indices: Vec<IndexMetadata>,
        actions: Vec<(u64, Action)>,
        config: TreeWriterConfig,
    },
}

impl Intent {
    /// What the transaction records beside the operation (a change's properties).
    pub(crate) fn properties(&self) -> BTreeMap<String, String> {
        match self {
            Intent::Change { change, .. } => change.properties.clone(),
            Intent::Actions { .. } => BTreeMap::new(),
        }
    }

    /// A layout conversion: its fragments are judged whole whatever the base's layout.
    pub(crate) fn converts(&self) -> bool {
        matches!(
            self,
            Intent::Change {
                judged: Some(_),
                ..
            }
        )
    }
}

impl Intent {
    /// This intent carried from `snap` onto `latest` after losing a race: a change is
    /// planned again there (its new ids with it, so `new_ids` is forgotten); storage actions
    /// keep the caller's manifest changes and index changes over the latest version's,
    /// with the ids of new fragments moved by `remap` (another writer took them). The
    /// reason and cause when it cannot be carried.
    pub(crate) fn onto(
        &mut self,
        snap: &Snapshot,
        latest: &Snapshot,
        remap: &[(u64, u64)],
        new_ids: &mut Option<Vec<u64>>,
    ) -> std::result::Result<(), (String, ConflictCause)> {
        match self {
            Intent::Change { change, .. } => {
                if !remap.is_empty() && ids_fixed(&change.operation) {
                    return Err((
                        "another writer took the destination fragment ids its Fragment Reuse \
                         Index entry or remapped indexes record"
                            .into(),
                        ConflictCause::IdsTaken,
                    ));
                }
                *new_ids = None;
            }
            Intent::Actions {
                index_intent,
                caller,
                manifest,
                indices,
                actions,
                ..
            } => {
                // looked up by id: a rebased append of N fragments moves N ids
                let remap: HashMap<u64, u64> = remap.iter().copied().collect();
                *actions = std::mem::take(actions)
                    .into_iter()
                    .map(|(id, action)| remap_action(id, action, &remap))
                    .collect();
                for id in new_ids.iter_mut().flatten() {
                    if let Some(n) = remap.get(id) {
                        *id = *n;
                    }
                }
                *manifest = rebase_manifest(snap.manifest(), latest.manifest(), caller)
                    .map_err(|reason| (reason, ConflictCause::SchemaChanged))?;
                *indices = index_intent.apply(latest.indices());
            }
        }
        Ok(())
    }
}

/// What a prepared commit wrote and changed, for its [`Committed`].
pub(crate) struct Summary {
    objects: u64,
    bytes: u64,
    tree_objects: Vec<(String, u64)>,
    removed: usize,
    added: usize,
}

impl Summary {
    pub(crate) fn of(prepared: &Prepared) -> Self {
        let (mut removed, mut added) = (0, 0);
        for c in prepared.changes.iter() {
            match (&c.before, &c.after) {
                (Some(_), None) => removed += 1,
                (None, Some(_)) => added += 1,
                _ => {}
            }
        }
        Summary {
            objects: prepared.objects,
            bytes: prepared.bytes,
            tree_objects: prepared.tree_objects.clone(),
            removed,
            added,
        }
    }

    /// The commit that published `dataset` recording `txn`, at attempt `attempt`: the
    /// manifest and, unless the table inlines transactions only (flag 32), the transaction
    /// file count among the objects written.
    pub(crate) fn committed(
        &self,
        dataset: Snapshot,
        txn: &Transaction,
        attempt: u32,
    ) -> Committed {
        let file = protocol::writes_transaction_file(dataset.manifest());
        Committed {
            versions: 1,
            tree_objects: self.tree_objects.clone(),
            objects_written: self.objects + 1 + u64::from(file),
            bytes_written: self.bytes
                + dataset.manifest_file().entry.size
                + if file { txn.encoded_len() as u64 } else { 0 },
            attempts: attempt,
            rows: 0,
            fragments_removed: self.removed,
            fragments_added: self.added,
            merged: None,
            dataset: dataset.into(),
        }
    }
}

/// A commit prepared on one version.
pub(crate) struct Prepared {
    pub(crate) manifest: Manifest,
    pub(crate) indices: Vec<IndexMetadata>,
    pub(crate) operation: Operation,
    /// Shared: a conversion's list (one per fragment of the table) is not copied per attempt.
    pub(crate) changes: Arc<[FragmentChange]>,
    /// The data files the commit adds, as stored.
    pub(crate) data_files: Option<Vec<lancet_txn::DataFileFacts>>,
    /// Reserved fragment ids an operation's new fragments take.
    pub(crate) reserved: Vec<u64>,
    pub(crate) objects: u64,
    pub(crate) bytes: u64,
    pub(crate) tree_objects: Vec<(String, u64)>,
}

impl Prepared {
    /// The ids of the fragments the commit adds.
    pub(crate) fn new_ids(&self) -> Vec<u64> {
        self.changes
            .iter()
            .filter(|c| c.before.is_none() && c.after.is_some())
            .map(|c| c.id)
            .collect()
    }
}

/// The changed fragments reduced to the data files they did not hold before (fragments that
/// gain none left out): what a commit adds to storage.
fn added_files(changes: &[FragmentChange]) -> Vec<DataFragment> {
    changes
        .iter()
        .filter_map(|c| finish::files_added(c.before.as_ref(), c.after.as_ref()?))
        .collect()
}

fn remap_action(id: u64, action: Action, remap: &HashMap<u64, u64>) -> (u64, Action) {
    let Some(&new) = remap.get(&id) else {
        return (id, action);
    };
    let action = match action {
        Action::Upsert(mut f) => {
            f.id = new;
            Action::Upsert(f)
        }
        other => other,
    };
    (new, action)
}
