//! Publishing versions: one commit path for flat and tree tables, flat → tree conversion and
//! back.
//!
//! Protocol (single writer): every new object (tree nodes and leaves, index files, row maps)
//! is written first; the manifest of version N+1 is written last with put-if-absent, which is
//! the visibility boundary. Losing that race is [`Error::CommitConflict`] and nothing is
//! overwritten; the objects written before it are unreachable and left for cleanup.
//!
//! The commit loop ([`commit_rebasing`]): prepare the intent on a version
//! ([`crate::prepare`]), publish it judged ([`crate::publish`]), and on losing the race judge
//! the versions published since against lancet-txn's conflict table and prepare again on the
//! latest, within the retry budget ([`Race`]).

use lancet_paths::transaction::operation_name;
use lancet_paths::{ObjectUuid, PathsError, StoredTransaction};
use lancet_proto::table::transaction::Operation;
use lancet_proto::table::{IndexMetadata, Manifest, Transaction};
use lancet_tree::{Action, FragmentChange, TreeWriterConfig};
use lancet_txn::build::Change;
use lancet_txn::operation::new_transaction;
use lancet_txn::rebase::{
    backoff_delay, judge_change_since, judge_since, may_retry, never_rebased, remap_new_ids,
    ConflictCause, IndexIntent,
};
use tracing::Instrument;

use crate::committed::Committed;
use crate::prepare::{prepare, Intent, Summary};
use crate::publish::{publish, Publication};
use lancet_read::error::{Error, Result};
use lancet_read::history;
use lancet_read::snapshot::Snapshot;

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
        let mut txn = new_transaction(snap.version(), prepared.operation.clone());
        txn.transaction_properties = intent.properties();
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
        let change = match &intent {
            Intent::Change { change, .. } => Some(change.as_ref()),
            Intent::Actions { .. } => None,
        };
        let latest = match race
            .lost(&base, lost, &operation, change, &txn, ids_taken)
            .await?
        {
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
    /// transactions published since `base` are read and judged against `operation` (with
    /// what its `change` carries beside it, when the commit is one), within the retry budget.
    async fn lost(
        &self,
        base: &Snapshot,
        lost: u64,
        operation: &Operation,
        change: Option<&Change>,
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
        let judged = match change {
            Some(change) => {
                judge_change_since(&change.operation, &change.indices, &since, ids_taken)
            }
            None => judge_since(operation, &since, ids_taken),
        };
        if let Err(c) = judged {
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
