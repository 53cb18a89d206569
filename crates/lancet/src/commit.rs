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

use std::sync::Arc;

use lancet_paths::transaction::operation_name;
use lancet_paths::{ObjectUuid, PathsError, StoredTransaction};
use lancet_proto::prost::Message;
use lancet_proto::table::transaction::Operation;
use lancet_proto::table::{DataFragment, IndexMetadata, Manifest, Transaction};
use lancet_tree::{Action, FragmentChange, TreeWriter, TreeWriterConfig};
use lancet_txn::operation::{
    conversion_operation, data_operation, index_operation, new_transaction, restore_operation,
    restored_manifest, rewrite_operation,
};
use lancet_txn::protocol;
use lancet_txn::rebase::{
    backoff_delay, judge_since, may_retry, never_rebased, rebase_manifest, remap_new_ids,
    ConflictCause, IndexIntent,
};
use tracing::Instrument;

use crate::error::{Error, Result};
use crate::publish::{publish, Publication};
use crate::Dataset;

/// A published version and what publishing it wrote.
#[derive(Debug, Clone)]
pub struct Committed {
    pub dataset: Dataset,
    /// Objects written: tree objects and the manifest.
    pub objects_written: u64,
    /// Their bytes.
    pub bytes_written: u64,
    /// The tree objects among them (relative path, bytes); the rest are the manifest and the
    /// transaction file.
    pub tree_objects: Vec<(String, u64)>,
    /// Attempts the commit made: 1, plus one per race lost and rebased over.
    pub attempts: u32,
}

impl Dataset {
    /// Commits `manifest` as the next version (this version + 1) with put-if-absent, keeping
    /// the fields lancet does not model from this version's manifest. On a tree version the
    /// manifest's tree is kept as it is (the fragments do not change).
    pub async fn commit_manifest(
        &self,
        manifest: Manifest,
        indices: &[IndexMetadata],
    ) -> Result<Self> {
        self.commit_with_actions(manifest, indices, &[], &TreeWriterConfig::default())
            .await
    }

    /// Commits `actions` on the fragments, with `manifest` (this version's, with any other
    /// change the caller makes) and `indices` as the rest of the next version. On a tree the
    /// writer's `config` decides what objects are written.
    ///
    /// The data files and deletion files the actions add must already be in storage: their
    /// footers are read (rows and field ids) and judged with the rest of the candidate, so a
    /// record naming a missing or mismatched file is refused before anything is published.
    pub async fn commit_with_actions(
        &self,
        manifest: Manifest,
        indices: &[IndexMetadata],
        actions: &[(u64, Action)],
        config: &TreeWriterConfig,
    ) -> Result<Self> {
        let span = tracing::info_span!(
            "commit",
            uri = %self.uri(),
            version = self.version() + 1,
            actions = actions.len()
        );
        self.commit_measured(manifest, indices, actions, config)
            .instrument(span)
            .await
            .map(|c| c.dataset)
    }

    /// [`Dataset::commit_with_actions`], also reporting the objects and bytes it wrote.
    pub async fn commit_measured(
        &self,
        manifest: Manifest,
        indices: &[IndexMetadata],
        actions: &[(u64, Action)],
        config: &TreeWriterConfig,
    ) -> Result<Committed> {
        self.commit_inner(manifest, indices, actions, config).await
    }

    async fn commit_inner(
        &self,
        manifest: Manifest,
        indices: &[IndexMetadata],
        actions: &[(u64, Action)],
        config: &TreeWriterConfig,
    ) -> Result<Committed> {
        self.commit_rebasing(manifest, indices, actions, config, Kind::Derived)
            .await
    }

    /// The commit loop: prepare on `base` (first this version), publish N+1 with
    /// put-if-absent; on losing, read the transactions of every version published since
    /// `base`, and when each is compatible with this commit ([`compatibility`]) prepare
    /// again on the latest version and retry, after a jittered backoff, for at most
    /// [`lancet_txn::rebase::COMMIT_TIMEOUT`]. Rebasing keeps the caller's intent: the latest manifest with
    /// the caller's feature flags and `next_row_id` (when higher), the latest index list
    /// with the caller's index changes applied, and the same actions with the ids of new
    /// fragments moved past the latest `max_fragment_id` when another writer took them.
    pub(crate) async fn commit_rebasing(
        &self,
        manifest: Manifest,
        indices: &[IndexMetadata],
        actions: &[(u64, Action)],
        config: &TreeWriterConfig,
        kind: Kind,
    ) -> Result<Committed> {
        let intent = IndexIntent::between(self.indices(), indices);
        let caller = manifest.clone();
        let mut base = self.clone();
        let mut manifest = manifest;
        let mut indices = indices.to_vec();
        let mut actions = actions.to_vec();
        let mut new_ids: Option<Vec<u64>> = None;
        let mut attempt = 0u32;
        let started = std::time::Instant::now();
        loop {
            attempt += 1;
            let attempt_started = std::time::Instant::now();
            let prepared = base
                .prepare(manifest, &indices, &actions, config, &kind)
                .instrument(tracing::debug_span!("prepare", attempt))
                .await?;
            if new_ids.is_none() {
                new_ids = Some(
                    prepared
                        .changes
                        .iter()
                        .filter(|c| c.before.is_none() && c.after.is_some())
                        .map(|c| c.id)
                        .collect(),
                );
            }
            let txn = new_transaction(self.version(), prepared.operation.clone());
            let changes = (base.tree().is_some() || matches!(kind, Kind::Conversion(_)))
                .then_some(&prepared.changes[..]);
            let (objects, bytes) = (prepared.objects, prepared.bytes);
            let tree_objects = prepared.tree_objects.clone();
            let done = |dataset: Dataset| {
                // the transaction file, unless the table inlines transactions only (flag 32)
                let file = protocol::writes_transaction_file(dataset.manifest());
                Committed {
                    tree_objects: tree_objects.clone(),
                    objects_written: objects + 1 + u64::from(file),
                    bytes_written: bytes
                        + dataset.manifest_file().entry.size
                        + if file { txn.encoded_len() as u64 } else { 0 },
                    attempts: attempt,
                    dataset,
                }
            };
            let lost = match base
                .publish_sized(
                    prepared.manifest,
                    &prepared.indices,
                    Some(&txn),
                    changes,
                    prepared.data_files.as_deref(),
                    &prepared.reserved,
                )
                .instrument(tracing::debug_span!("publish", attempt))
                .await
            {
                Ok((dataset, _)) => return Ok(done(dataset)),
                Err(Error::CommitConflict { version, .. }) => version,
                Err(e) => return Err(e),
            };
            let conflict = |reason: String, cause: ConflictCause| Error::CommitConflict {
                uri: self.uri().to_string(),
                version: lost,
                reason,
                retryable: true,
                cause,
            };
            let mine = operation_name(&prepared.operation);
            if let Some(what) = never_rebased(&prepared.operation) {
                if base.landed(lost, Some(&txn)).await.is_some() {
                    return Ok(done(base.checkout(lost).await?));
                }
                return Err(conflict(
                    format!("{mine} ({what}) is not rebased; start again from the latest version"),
                    ConflictCause::NotRebased,
                ));
            }
            // Wait first, then read: the version this attempt prepares on is as fresh as
            // the read, so a wait between the two would only widen the window others win in.
            let random = ObjectUuid::new_v4().as_bytes()[0];
            tokio::time::sleep(backoff_delay(attempt, attempt_started.elapsed(), random)).await;
            let (latest, since) = base.transactions_through(lost).await?;
            if let Some(dataset) = ours(&latest, lost, &since, &txn).await? {
                return Ok(done(dataset));
            }
            // an operation takes its row ids when planned again: none is reused
            let ids_taken = base.has_stable_row_ids() && !matches!(kind, Kind::Operation(_));
            if let Err(c) = judge_since(&prepared.operation, &since, ids_taken) {
                return Err(Error::CommitConflict {
                    uri: self.uri().to_string(),
                    version: c.version,
                    reason: c.reason,
                    retryable: c.retryable,
                    cause: c.cause,
                });
            }
            if !may_retry(attempt, started.elapsed()) {
                return Err(conflict(
                    format!(
                        "{mine} lost {attempt} races in a row over {:.1} s",
                        started.elapsed().as_secs_f64()
                    ),
                    ConflictCause::OutOfRetries,
                ));
            }
            // Rebuild the caller's intent on the latest version.
            let remap = remap_new_ids(
                new_ids.as_deref().unwrap_or(&[]),
                latest.manifest().max_fragment_id,
            );
            if !remap.is_empty() && matches!(kind, Kind::Rewrite(_)) {
                return Err(conflict(
                    format!("{mine}: another writer took the destination fragment ids its Fragment Reuse Index entry records"),
                    ConflictCause::IdsTaken,
                ));
            }
            actions = actions
                .into_iter()
                .map(|(id, action)| remap_action(id, action, &remap))
                .collect();
            if let Some(ids) = &mut new_ids {
                for id in ids.iter_mut() {
                    if let Some(n) = remap.iter().find(|(old, _)| old == id).map(|(_, n)| *n) {
                        *id = n;
                    }
                }
            }
            manifest =
                rebase_manifest(self.manifest(), latest.manifest(), &caller).map_err(|reason| {
                    conflict(format!("{mine}: {reason}"), ConflictCause::SchemaChanged)
                })?;
            indices = intent.apply(latest.indices());
            tracing::info!(
                uri = %self.uri(),
                lost,
                onto = latest.version(),
                attempt,
                "commit rebased"
            );
            base = latest;
        }
    }

    /// The size of version `version`'s manifest when it records `transaction` (see
    /// [`lancet_paths::transaction::recorded_by`]).
    async fn landed(&self, version: u64, transaction: Option<&Transaction>) -> Option<u64> {
        let uuid = &transaction?.uuid;
        lancet_paths::transaction::recorded_by(self.store(), version, self.naming_scheme(), uuid)
            .await
    }

    /// The versions after this one up to the latest, each with its transaction
    /// ([`lancet_paths::transaction::versions_since`]); and the latest version. Manifests read
    /// here seed the manifest cache, so opening the latest version reads nothing twice.
    pub(crate) async fn transactions_since(
        &self,
    ) -> Result<(Dataset, Vec<(u64, Option<StoredTransaction>)>)> {
        self.transactions_through(self.version()).await
    }

    /// [`Dataset::transactions_since`] when version `known` is known to exist (the version a
    /// commit lost): the hint is read while the manifests through `known` are, not before.
    pub(crate) async fn transactions_through(
        &self,
        known: u64,
    ) -> Result<(Dataset, Vec<(u64, Option<StoredTransaction>)>)> {
        let scheme = self.naming_scheme();
        let read =
            lancet_paths::transaction::versions_since(self.store(), scheme, self.version(), known)
                .await?;
        let mut out = Vec::with_capacity(read.len());
        let mut files = Vec::with_capacity(read.len());
        for (file, txn) in read {
            out.push((file.entry.version, txn));
            files.push(file);
        }
        for file in files {
            self.cache_manifest(file).await;
        }
        let latest = self.checkout(self.version() + out.len() as u64).await?;
        Ok((latest, out))
    }

    /// This version's transaction (what the commit that made it did), if it records one.
    pub async fn transaction(&self) -> Result<Option<StoredTransaction>> {
        Ok(lancet_paths::transaction::read_transaction(self.store(), self.manifest_file()).await?)
    }

    /// Applies `actions` to this version: the tree writer's objects, or the flat list.
    async fn prepare(
        &self,
        mut manifest: Manifest,
        indices: &[IndexMetadata],
        actions: &[(u64, Action)],
        config: &TreeWriterConfig,
        kind: &Kind,
    ) -> Result<Prepared> {
        let (mut objects, mut bytes) = (0, 0);
        let mut tree_objects = Vec::new();
        // an operation is planned on this version each attempt
        let built = match kind {
            Kind::Operation(op) => Some(Box::pin(self.build(op)).await?),
            _ => None,
        };
        let (indices, actions, data_files, reserved) = match built {
            Some(b) => {
                manifest = b.manifest;
                (b.indices, b.actions, Some(b.data_files), b.reserved)
            }
            None => (indices.to_vec(), actions.to_vec(), None, Vec::new()),
        };
        let actions = actions.as_slice();
        let changes: Arc<[FragmentChange]> = match (kind, self.tree()) {
            // a conversion or a restore brings its own fragment list or tree
            (Kind::Conversion(changes), _) => changes.clone(),
            (Kind::Restore(_), _) => Arc::from(Vec::new()),
            (_, Some(reader)) => {
                let mut changes = Arc::from(Vec::new());
                if !actions.is_empty() {
                    let writer = TreeWriter::new(self.store().clone(), config.clone());
                    let commit = writer.commit(reader, actions).await?;
                    objects += commit.written.len() as u64;
                    bytes += commit.object_bytes();
                    tree_objects = commit.written;
                    manifest.fragment_tree = Some(commit.metadata);
                    manifest.max_fragment_id = manifest.max_fragment_id.max(commit.max_fragment_id);
                    changes = commit.changes.into();
                }
                manifest.fragments.clear();
                changes
            }
            (_, None) => {
                protocol::known_max_fragment_id(&mut manifest);
                lancet_tree::apply_flat(&mut manifest, actions)?.into()
            }
        };
        if !matches!(kind, Kind::Conversion(_) | Kind::Restore(_)) {
            protocol::enable_for_changes(&mut manifest, &changes);
        }
        // The data files the commit adds, as stored: an operation's were read when it was
        // planned; a rewrite's (a compaction's outputs) and raw storage actions' are read
        // here. A conversion or restore adds none: their records name files earlier commits
        // were judged with.
        let data_files = match (data_files, kind) {
            (Some(d), _) => Some(d),
            (None, Kind::Rewrite(_) | Kind::Derived) => {
                Some(self.data_file_facts(&added_files(&changes)).await?)
            }
            (None, _) => None,
        };
        let operation = match kind {
            Kind::Conversion(_) => conversion_operation(),
            Kind::Restore(version) => restore_operation(*version),
            Kind::Rewrite(groups) => rewrite_operation(&changes, groups),
            Kind::Derived if !changes.is_empty() => data_operation(&changes),
            Kind::Derived => index_operation(self.indices(), &indices)
                .unwrap_or(Operation::UpdateConfig(Default::default())),
            Kind::Operation(op) => (**op).clone(),
        };
        Ok(Prepared {
            manifest,
            indices,
            operation,
            changes,
            data_files,
            reserved,
            objects,
            bytes,
            tree_objects,
        })
    }

    /// Publishes a layout conversion: `manifest` as version N+1 with put-if-absent, a
    /// conversion's transaction, no rebase; `records` are this version's fragments as the new
    /// layout records them, in the same order (every one judged by the invariants).
    async fn publish_conversion(
        &self,
        manifest: Manifest,
        indices: &[IndexMetadata],
        before: &[DataFragment],
        records: Vec<DataFragment>,
    ) -> Result<Self> {
        // `records` move into the changes: at 10M fragments each copy of the list is GBs
        let changes = before
            .iter()
            .zip(records)
            .map(|(b, a)| FragmentChange {
                id: a.id,
                before: Some(b.clone()),
                after: Some(a),
            })
            .collect();
        self.commit_rebasing(
            manifest,
            indices,
            &[],
            &TreeWriterConfig::default(),
            Kind::Conversion(changes),
        )
        .await
        .map(|c| c.dataset)
    }

    /// Publishes `manifest` as version N+1 (see [`crate::publish`]: judged by the invariants
    /// first, then put-if-absent, its transaction first as Lance does), returning the new
    /// version and the manifest's size. `changes`: the fragments a tree commit changed (a
    /// flat commit's are the difference of the two lists). Losing is `CommitConflict` naming
    /// the version.
    async fn publish_sized(
        &self,
        mut manifest: Manifest,
        indices: &[IndexMetadata],
        transaction: Option<&Transaction>,
        changes: Option<&[FragmentChange]>,
        data_files: Option<&[lancet_txn::DataFileFacts]>,
        reserved: &[u64],
    ) -> Result<(Self, u64)> {
        manifest.version = self.version() + 1;
        // The commit time: Lance's cleanup judges a version's age by it.
        manifest.timestamp = Some(self.clock().timestamp());
        let published = publish(
            self.store(),
            self.caches(),
            Publication {
                manifest: &manifest,
                indices,
                unknown_fields: &self.manifest_file().decoded.unknown_fields,
                scheme: self.naming_scheme(),
                transaction,
                previous: Some(self),
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
                    uri: self.uri().to_string(),
                    version: manifest.version,
                    reason: "lost the put-if-absent race".into(),
                    retryable: true,
                    cause: ConflictCause::LostRace,
                })
            }
            Err(Error::Paths(e)) => match self.landed(manifest.version, transaction).await {
                Some(size) => (self.checkout(manifest.version).await?, size),
                None => return Err(e.into()),
            },
            Err(e) => return Err(e),
        };
        tracing::info!(version = manifest.version, bytes = size, "committed");
        Ok((dataset, size))
    }

    /// Publishes the version after the latest with version `version`'s content (fragments or
    /// tree, schema, indices), as Lance's Restore: `max_fragment_id` and `next_row_id` are not
    /// lowered, so ids handed out since stay dead, and sticky feature flags stay set. The
    /// version records `Restore { version }`; it is never rebased (a concurrent commit makes
    /// it a retryable conflict). The way back from a bad version.
    pub async fn restore(&self, version: u64) -> Result<Self> {
        self.restore_measured(version).await.map(|c| c.dataset)
    }

    /// [`Dataset::restore`], also reporting what it wrote.
    pub(crate) async fn restore_measured(&self, version: u64) -> Result<Committed> {
        let latest = Dataset::open_with(self.store().clone(), None, self.caches().clone())
            .await?
            .with_clock(self.clock().clone());
        let old = latest.checkout(version).await?;
        let manifest = restored_manifest(old.manifest(), latest.manifest());
        let indices = old.indices().to_vec();
        latest
            .commit_rebasing(
                manifest,
                &indices,
                &[],
                &TreeWriterConfig::default(),
                Kind::Restore(version),
            )
            .await
    }

    /// Publishes version N+1 of this flat table with its fragments moved into a fragment
    /// tree: `Manifest.fragments` empty, flag 4096 in both words, every other field carried
    /// over. Counts a flat manifest leaves unknown (`physical_rows` or `num_deleted_rows` 0)
    /// are read from the data and deletion files. `progress` is told how many fragments are
    /// ready, as counts are resolved.
    pub async fn convert_to_tree(
        &self,
        config: &TreeWriterConfig,
        progress: impl Fn(usize, usize),
    ) -> Result<Self> {
        if self.tree().is_some() {
            return Err(invalid(
                self,
                "the version already keeps its fragments in a tree",
            ));
        }
        // the manifest's own list: a shared copy of millions of fragments is not made
        let fragments = self.manifest().fragments.as_slice();
        let mut records = Vec::with_capacity(fragments.len());
        for (i, f) in fragments.iter().enumerate() {
            records.push(self.known_counts(f).await?);
            if i % 4096 == 4095 {
                progress(i + 1, fragments.len());
            }
        }
        progress(fragments.len(), fragments.len());
        let writer = TreeWriter::new(self.store().clone(), config.clone());
        let commit = writer.bulk_load(&records).await?;
        let mut manifest = self.manifest().clone();
        manifest.fragments.clear();
        manifest.fragment_tree = Some(commit.metadata);
        manifest.max_fragment_id = manifest.max_fragment_id.max(commit.max_fragment_id);
        protocol::enable(&mut manifest, protocol::Feature::FragmentTree);
        let indices = self.indices().to_vec();
        self.publish_conversion(manifest, &indices, fragments, records)
            .await
    }

    /// Publishes version N+1 of this tree table as a flat manifest listing every fragment
    /// (what Lance 14 reads).
    pub async fn flatten(&self) -> Result<Self> {
        if self.tree().is_none() {
            return Err(invalid(self, "the version is flat already"));
        }
        let fragments = self.fragments().await?;
        let mut manifest = self.manifest().clone();
        manifest.fragment_tree = None;
        manifest.fragments = fragments.to_vec();
        protocol::disable_tree(&mut manifest);
        let indices = self.indices().to_vec();
        self.publish_conversion(manifest, &indices, &fragments, fragments.to_vec())
            .await
    }

    /// `fragment` with `physical_rows` and `num_deleted_rows` known: read from its first data
    /// file and its deletion file where the flat manifest stores 0 ("unknown" to Lance 14).
    async fn known_counts(&self, fragment: &DataFragment) -> Result<DataFragment> {
        let mut f = fragment.clone();
        if f.physical_rows == 0 {
            let loc = self
                .data_file_locations(&f)?
                .into_iter()
                .next()
                .ok_or_else(|| {
                    invalid(
                        self,
                        &format!("fragment {} has no data file to count", f.id),
                    )
                })?;
            let store = self.store_for(&loc.base)?;
            let fs = Dataset::file_store_for(&store)?;
            let file = lancet_file::LanceFile::open(&fs, &store.path(&loc.path), None).await?;
            f.physical_rows = file.num_rows();
        }
        if f.deletion_file.is_some_and(|d| d.num_deleted_rows == 0) {
            let deleted = self.deletion_vector(&f).await?.map_or(0, |d| d.len());
            if let Some(d) = &mut f.deletion_file {
                d.num_deleted_rows = deleted;
            }
            if deleted == 0 {
                return Err(invalid(
                    self,
                    &format!(
                        "fragment {} has a deletion file that deletes nothing; a tree cannot record it",
                        f.id
                    ),
                ));
            }
        }
        Ok(f)
    }
}

/// The version `lost` opened from `latest` when it records `txn` (same uuid): a put of ours
/// that was reported lost although it landed (a store retry that found its own object).
async fn ours(
    latest: &Dataset,
    lost: u64,
    since: &[(u64, Option<StoredTransaction>)],
    txn: &Transaction,
) -> Result<Option<Dataset>> {
    let recorded = since
        .iter()
        .find(|(v, _)| *v == lost)
        .and_then(|(_, t)| t.as_ref());
    match recorded {
        Some(t) if t.transaction.uuid == txn.uuid => Ok(Some(latest.checkout(lost).await?)),
        _ => Ok(None),
    }
}

fn invalid(ds: &Dataset, rule: &str) -> Error {
    Error::Unsupported {
        uri: ds.uri().to_string(),
        version: ds.version(),
        rule: rule.to_string(),
    }
}

/// How a commit's Lance operation is chosen, and whether it may be rebased.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// From what the actions changed, or the index list when no fragment changed.
    Derived,
    /// A rewrite: a group per rewrite group (sources removed, destinations added), recorded
    /// as Lance records a compaction's tasks.
    Rewrite(Arc<[lancet_txn::compaction::GroupIds]>),
    /// A flat ↔ tree conversion, never rebased: each fragment as it was and as the new
    /// layout records it (counts resolved), so that the invariants judge every fragment (a
    /// corrupt version is not carried into the other layout).
    Conversion(Arc<[FragmentChange]>),
    /// A restore of the version's content; never rebased.
    Restore(u64),
    /// A Lance operation, planned again on the version each attempt prepares on, and
    /// recorded as given.
    Operation(Box<Operation>),
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

/// The changed fragments reduced to the data files they did not hold before (fragments that
/// gain none left out): what a commit adds to storage.
fn added_files(changes: &[FragmentChange]) -> Vec<DataFragment> {
    changes
        .iter()
        .filter_map(|c| {
            let after = c.after.as_ref()?;
            let old = c.before.as_ref().map(|b| b.files.as_slice()).unwrap_or(&[]);
            let mut f = after.clone();
            f.files.retain(|d| !old.contains(d));
            (!f.files.is_empty()).then_some(f)
        })
        .collect()
}

fn remap_action(id: u64, action: Action, remap: &[(u64, u64)]) -> (u64, Action) {
    let Some(&(_, new)) = remap.iter().find(|(old, _)| *old == id) else {
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
