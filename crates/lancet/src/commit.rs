//! Publishing versions: one commit path for flat and tree tables, flat → tree conversion and
//! back.
//!
//! Protocol (single writer): every new object (tree nodes and leaves, index files, row maps)
//! is written first; the manifest of version N+1 is written last with put-if-absent, which is
//! the visibility boundary. Losing that race is [`Error::CommitConflict`] and nothing is
//! overwritten; the objects written before it are unreachable and left for cleanup.
//!
//! Storage actions (`(fragment id, Action)`) are applied with the fragment tree's semantics
//! either way: on a tree version by lancet-tree's writer (mutations, flushes,
//! materializations), on a flat version to the manifest's fragment list directly.

use std::collections::HashMap;
use std::sync::Arc;

use lancet_paths::transaction::operation_name;
use lancet_paths::{ObjectUuid, PathsError, StoredTransaction};
use lancet_proto::prost::Message;
use lancet_proto::table::transaction::Operation;
use lancet_proto::table::{DataFragment, IndexMetadata, Manifest, Transaction};
use lancet_tree::{Action, FragmentChange, TreeWriter, TreeWriterConfig};
use lancet_txn::build::{Change, Content};
use lancet_txn::finish;
use lancet_txn::operation::{data_operation, index_operation, new_transaction};
use lancet_txn::protocol;
use lancet_txn::rebase::{
    backoff_delay, ids_fixed, judge_since, may_retry, never_rebased, rebase_manifest,
    remap_new_ids, ConflictCause, IndexIntent,
};
use tracing::Instrument;

use crate::committed::Committed;
use crate::error::{Error, Result};
use crate::history;
use crate::plan;
use crate::publish::{publish, Publication};
use crate::snapshot::Snapshot;
use crate::verify;

/// Commits `manifest` as the next version (this version + 1) with put-if-absent, keeping
/// the fields lancet does not model from this version's manifest. On a tree version the
/// manifest's tree is kept as it is (the fragments do not change).
pub(crate) async fn commit_manifest(
    snap: &Snapshot,
    manifest: Manifest,
    indices: &[IndexMetadata],
) -> Result<Committed> {
    commit_with_actions(snap, manifest, indices, &[], &TreeWriterConfig::default()).await
}

/// Commits `actions` on the fragments, with `manifest` (this version's, with any other
/// change the caller makes) and `indices` as the rest of the next version. On a tree the
/// writer's `config` decides what objects are written.
///
/// The data files and deletion files the actions add must already be in storage: their
/// footers are read (rows and field ids) and judged with the rest of the candidate, so a
/// record naming a missing or mismatched file is refused before anything is published.
pub(crate) async fn commit_with_actions(
    snap: &Snapshot,
    manifest: Manifest,
    indices: &[IndexMetadata],
    actions: &[(u64, Action)],
    config: &TreeWriterConfig,
) -> Result<Committed> {
    let span = tracing::info_span!(
        "commit",
        uri = %snap.uri(),
        version = snap.version() + 1,
        actions = actions.len()
    );
    commit_inner(snap, manifest, indices, actions, config)
        .instrument(span)
        .await
}

async fn commit_inner(
    snap: &Snapshot,
    manifest: Manifest,
    indices: &[IndexMetadata],
    actions: &[(u64, Action)],
    config: &TreeWriterConfig,
) -> Result<Committed> {
    let intent = Intent::Actions {
        index_intent: IndexIntent::between(snap.indices(), indices),
        caller: manifest.clone(),
        manifest,
        indices: indices.to_vec(),
        actions: actions.to_vec(),
        config: config.clone(),
    };
    commit_rebasing(snap, intent).await
}

/// The commit loop: prepare `intent` on `base` (first this version), publish N+1 with
/// put-if-absent; on losing, read the transactions of every version published since
/// `base`, and when each is compatible with this commit ([`compatibility`]) prepare
/// again on the latest version and retry, after a jittered backoff, for at most
/// [`lancet_txn::rebase::COMMIT_TIMEOUT`]. A change is planned again on the latest
/// version (lancet-txn's [`lancet_txn::build::plan_change`]); storage actions keep the
/// caller's intent: the latest manifest with the caller's feature flags and `next_row_id`
/// (when higher), the latest index list with the caller's index changes applied, and the
/// same actions with the ids of new fragments moved past the latest `max_fragment_id`
/// when another writer took them.
///
/// [`compatibility`]: lancet_txn::compatibility
pub(crate) async fn commit_rebasing(snap: &Snapshot, intent: Intent) -> Result<Committed> {
    let mut intent = intent;
    let mut base = snap.clone();
    let mut new_ids: Option<Vec<u64>> = None;
    let mut race = Race {
        snap,
        attempt: 0,
        started: std::time::Instant::now(),
        attempt_started: std::time::Instant::now(),
    };
    loop {
        race.attempt += 1;
        race.attempt_started = std::time::Instant::now();
        let prepared = prepare(&base, &intent)
            .instrument(tracing::debug_span!("prepare", attempt = race.attempt))
            .await?;
        new_ids.get_or_insert_with(|| prepared.new_ids());
        let txn = new_transaction(snap.version(), prepared.operation.clone());
        let summary = Summary::of(&prepared);
        let operation = prepared.operation.clone();
        let changes = (base.tree().is_some() || intent.converts()).then_some(&prepared.changes[..]);
        let published = publish_sized(
            &base,
            prepared.manifest,
            &prepared.indices,
            Some(&txn),
            changes,
            prepared.data_files.as_deref(),
            &prepared.reserved,
        )
        .instrument(tracing::debug_span!("publish", attempt = race.attempt))
        .await;
        let lost = match published {
            Ok((dataset, _)) => return Ok(summary.committed(dataset, &txn, race.attempt)),
            Err(Error::CommitConflict { version, .. }) => version,
            Err(e) => return Err(e),
        };
        // a change takes its row ids when planned again: none is reused
        let ids_taken = base.has_stable_row_ids() && matches!(intent, Intent::Actions { .. });
        let latest = match race.lost(&base, lost, &operation, &txn, ids_taken).await? {
            Lost::Ours(dataset) => return Ok(summary.committed(dataset, &txn, race.attempt)),
            Lost::Retry(latest) => latest,
        };
        // Rebuild the caller's intent on the latest version.
        let remap = remap_new_ids(
            new_ids.as_deref().unwrap_or(&[]),
            latest.manifest().max_fragment_id,
        );
        intent
            .onto(snap, &latest, &remap, &mut new_ids)
            .map_err(|(reason, cause)| {
                race.conflict(
                    lost,
                    format!("{}: {reason}", operation_name(&operation)),
                    cause,
                )
            })?;
        tracing::info!(
            uri = %snap.uri(),
            lost,
            onto = latest.version(),
            attempt = race.attempt,
            "commit rebased"
        );
        base = latest;
    }
}

/// The commit loop's attempts so far.
struct Race<'a> {
    /// The version the commit was asked of.
    snap: &'a Snapshot,
    attempt: u32,
    started: std::time::Instant,
    attempt_started: std::time::Instant,
}

/// What losing the race for version `lost` comes to.
enum Lost {
    /// The version is ours after all (a put reported lost although it landed).
    Ours(Snapshot),
    /// Every version since the base is compatible: try again on the latest.
    Retry(Snapshot),
}

impl Race<'_> {
    /// After losing the put of `lost` prepared on `base`: an operation that is never rebased
    /// fails (unless the version is ours); otherwise, after a jittered backoff, the
    /// transactions published since `base` are read and judged against `operation`, within
    /// the retry budget.
    async fn lost(
        &self,
        base: &Snapshot,
        lost: u64,
        operation: &Operation,
        txn: &Transaction,
        ids_taken: bool,
    ) -> Result<Lost> {
        let mine = operation_name(operation);
        if let Some(what) = never_rebased(operation) {
            if landed(base, lost, Some(txn)).await.is_some() {
                return Ok(Lost::Ours(base.checkout(lost).await?));
            }
            return Err(self.conflict(
                lost,
                format!("{mine} ({what}) is not rebased; start again from the latest version"),
                ConflictCause::NotRebased,
            ));
        }
        // Wait first, then read: the version this attempt prepares on is as fresh as
        // the read, so a wait between the two would only widen the window others win in.
        let random = ObjectUuid::new_v4().as_bytes()[0];
        let delay = backoff_delay(self.attempt, self.attempt_started.elapsed(), random);
        tokio::time::sleep(delay).await;
        let (latest, since) = history::transactions_through(base, lost).await?;
        if let Some(dataset) = ours(&latest, lost, &since, txn).await? {
            return Ok(Lost::Ours(dataset));
        }
        if let Err(c) = judge_since(operation, &since, ids_taken) {
            return Err(Error::CommitConflict {
                uri: self.snap.uri().to_string(),
                version: c.version,
                reason: c.reason,
                retryable: c.retryable,
                cause: c.cause,
            });
        }
        if !may_retry(self.attempt, self.started.elapsed()) {
            return Err(self.conflict(
                lost,
                format!(
                    "{mine} lost {} races in a row over {:.1} s",
                    self.attempt,
                    self.started.elapsed().as_secs_f64()
                ),
                ConflictCause::OutOfRetries,
            ));
        }
        Ok(Lost::Retry(latest))
    }

    /// A retryable conflict over version `lost`.
    fn conflict(&self, lost: u64, reason: String, cause: ConflictCause) -> Error {
        Error::CommitConflict {
            uri: self.snap.uri().to_string(),
            version: lost,
            reason,
            retryable: true,
            cause,
        }
    }
}

/// The size of version `version`'s manifest when it records `transaction` (see
/// [`lancet_paths::transaction::recorded_by`]).
async fn landed(snap: &Snapshot, version: u64, transaction: Option<&Transaction>) -> Option<u64> {
    let uuid = &transaction?.uuid;
    lancet_paths::transaction::recorded_by(snap.store(), version, snap.naming_scheme(), uuid).await
}

/// `intent` prepared on this version: a change planned here (lancet-txn's plan, then its
/// storage actions), or the caller's storage actions applied; the tree writer's objects or
/// the flat list either way.
async fn prepare(snap: &Snapshot, intent: &Intent) -> Result<Prepared> {
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
    let changes = applied.changes;
    protocol::enable_for_changes(&mut manifest, &changes);
    // The data files the commit adds, as stored: a change's were read when it was planned;
    // raw storage actions' are read here.
    let data_files = match data_files {
        Some(d) => d,
        None => verify::data_file_facts(snap, &added_files(&changes)).await?,
    };
    let operation = match intent {
        Intent::Change { change, .. } => change.operation.clone(),
        Intent::Actions { .. } if !changes.is_empty() => data_operation(&changes),
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

/// Storage actions applied to a version.
struct Applied {
    changes: Arc<[FragmentChange]>,
    /// Objects the tree writer wrote, their bytes, and their paths and sizes.
    objects: u64,
    bytes: u64,
    tree_objects: Vec<(String, u64)>,
}

/// `actions` applied to this version's fragments into `manifest`: on a tree by lancet-tree's
/// writer (its objects written now, `manifest` given the new tree and no fragment list), on a
/// flat version to the manifest's fragment list.
async fn apply(
    snap: &Snapshot,
    manifest: &mut Manifest,
    actions: &[(u64, Action)],
    config: &TreeWriterConfig,
) -> Result<Applied> {
    let mut applied = Applied {
        changes: Arc::from(Vec::new()),
        objects: 0,
        bytes: 0,
        tree_objects: Vec::new(),
    };
    match snap.tree() {
        Some(reader) => {
            if !actions.is_empty() {
                let writer = TreeWriter::new(snap.store().clone(), config.clone());
                let commit = writer.commit(reader, actions).await?;
                applied.objects = commit.written.len() as u64;
                applied.bytes = commit.object_bytes();
                applied.tree_objects = commit.written;
                manifest.fragment_tree = Some(commit.metadata);
                manifest.max_fragment_id = manifest.max_fragment_id.max(commit.max_fragment_id);
                applied.changes = commit.changes.into();
            }
            manifest.fragments.clear();
        }
        None => {
            protocol::known_max_fragment_id(manifest);
            applied.changes = lancet_tree::apply_flat(manifest, actions)?.into();
        }
    }
    Ok(applied)
}

/// Publishes `manifest` as version N+1 (see [`crate::publish`]: judged by the invariants
/// first, then put-if-absent, its transaction first as Lance does), returning the new
/// version and the manifest's size. `changes`: the fragments a tree commit changed (a
/// flat commit's are the difference of the two lists). Losing is `CommitConflict` naming
/// the version.
async fn publish_sized(
    snap: &Snapshot,
    mut manifest: Manifest,
    indices: &[IndexMetadata],
    transaction: Option<&Transaction>,
    changes: Option<&[FragmentChange]>,
    data_files: Option<&[lancet_txn::DataFileFacts]>,
    reserved: &[u64],
) -> Result<(Snapshot, u64)> {
    manifest.version = snap.version() + 1;
    // The commit time: Lance's cleanup judges a version's age by it.
    manifest.timestamp = Some(snap.clock().timestamp());
    let published = publish(
        snap.store(),
        snap.caches(),
        Publication {
            manifest: &manifest,
            indices,
            unknown_fields: &snap.manifest_file().decoded.unknown_fields,
            scheme: snap.naming_scheme(),
            transaction,
            previous: Some(snap),
            changes,
            data_files,
            reserved,
        },
    )
    .await;
    let (dataset, size) = match published {
        Ok(done) => done,
        // The put may have landed although it reported failure (a lost response, or a
        // store retry that then found its own object): the version is ours when it
        // records our transaction, and is then never committed a second time.
        // Another writer's version, or ours when a store retry of our put found it: the
        // commit loop tells the two apart by the transaction it reads there anyway.
        Err(Error::Paths(PathsError::AlreadyExists { .. })) => {
            return Err(Error::CommitConflict {
                uri: snap.uri().to_string(),
                version: manifest.version,
                reason: "lost the put-if-absent race".into(),
                retryable: true,
                cause: ConflictCause::LostRace,
            })
        }
        Err(Error::Paths(e)) => match landed(snap, manifest.version, transaction).await {
            Some(size) => (snap.checkout(manifest.version).await?, size),
            None => return Err(e.into()),
        },
        Err(e) => return Err(e),
    };
    tracing::info!(version = manifest.version, bytes = size, "committed");
    Ok((dataset, size))
}

/// The version `lost` opened from `latest` when it records `txn` (same uuid): a put of ours
/// that was reported lost although it landed (a store retry that found its own object).
async fn ours(
    latest: &Snapshot,
    lost: u64,
    since: &[(u64, Option<StoredTransaction>)],
    txn: &Transaction,
) -> Result<Option<Snapshot>> {
    let recorded = since
        .iter()
        .find(|(v, _)| *v == lost)
        .and_then(|(_, t)| t.as_ref());
    match recorded {
        Some(t) if t.transaction.uuid == txn.uuid => Ok(Some(latest.checkout(lost).await?)),
        _ => Ok(None),
    }
}

pub(crate) fn invalid(ds: &Snapshot, rule: &str) -> Error {
    Error::Unsupported {
        uri: ds.uri().to_string(),
        version: ds.version(),
        rule: rule.to_string(),
    }
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
    /// A layout conversion: its fragments are judged whole whatever the base's layout.
    fn converts(&self) -> bool {
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
    fn onto(
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
struct Summary {
    objects: u64,
    bytes: u64,
    tree_objects: Vec<(String, u64)>,
    removed: usize,
    added: usize,
}

impl Summary {
    fn of(prepared: &Prepared) -> Self {
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
    fn committed(&self, dataset: Snapshot, txn: &Transaction, attempt: u32) -> Committed {
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
struct Prepared {
    manifest: Manifest,
    indices: Vec<IndexMetadata>,
    operation: Operation,
    /// Shared: a conversion's list (one per fragment of the table) is not copied per attempt.
    changes: Arc<[FragmentChange]>,
    /// The data files the commit adds, as stored.
    data_files: Option<Vec<lancet_txn::DataFileFacts>>,
    /// Reserved fragment ids an operation's new fragments take.
    reserved: Vec<u64>,
    objects: u64,
    bytes: u64,
    tree_objects: Vec<(String, u64)>,
}

impl Prepared {
    /// The ids of the fragments the commit adds.
    fn new_ids(&self) -> Vec<u64> {
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
