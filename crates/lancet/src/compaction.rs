//! Compaction, planned, executed anywhere, committed once: [`Dataset::plan_compaction`](crate::Dataset::plan_compaction),
//! [`Dataset::execute_compaction`](crate::Dataset::execute_compaction), [`Dataset::commit_compaction`](crate::Dataset::commit_compaction) and [`Optimizer::compact`](crate::Optimizer::compact).
//!
//! Composition only. lancet-txn plans the tasks as Lance 14 does; a task (which serializes)
//! reads its fragments' live rows at the version it was planned on and writes them as new
//! fragments, on stable-row-id tables with the rows' ids and version sequences (lancet-rowid's
//! `rechunk_fragments`). One commit takes every task's result as one Rewrite: either the
//! moves are recorded in the Fragment Reuse Index (`defer_index_remap`; as pylance writes it:
//! a legacy history while the table's is not tagged, the indexes' entries left as they are)
//! or every BTree segment that covers a
//! rewritten fragment is written again with the rows' new addresses (lancet-btree's `merge`
//! through lancet-reuse's `CompactionRemap`). Other index types covering a rewritten
//! fragment are refused unless the remap is deferred: lancet cannot rewrite them.
//!
//! Unlike Lance 14, which first commits a ReserveFragments version for the new ids, the
//! Rewrite takes its ids when it is prepared; a concurrent writer that takes them makes the
//! commit prepare again on the latest version.

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use lancet_paths::ObjectUuid;
use lancet_proto::table::{DataFragment, IndexMetadata};
use lancet_reuse::{CompactionRemap, Transition};
pub use lancet_txn::compaction::CompactionOptions;
use lancet_txn::compaction::{plan_compaction, FragmentCounts, GroupIds, IndexRemap};
use lancet_txn::compaction_task::planned_version;
pub use lancet_txn::compaction_task::{CompactionResult, CompactionTask};
use lancet_txn::rebase::IndexIntent;
use roaring::RoaringBitmap;
use tokio_util::task::AbortOnDropHandle;

use crate::committed::Committed;
use crate::operations;
use crate::rewrite;
use crate::rewrite::{RewriteGroup, RewriteMapping};
use crate::write;
use lancet_read::error::{Error, Result};
use lancet_read::indexes;
use lancet_read::rowids;
use lancet_read::snapshot::Snapshot;
use lancet_read::take;

/// The tasks Lance 14's planner makes of this version for `options` (none when nothing
/// needs compacting).
pub(crate) async fn plan_tasks(
    snap: &Snapshot,
    options: &CompactionOptions,
) -> Result<Vec<CompactionTask>> {
    // a fragment of unknown row count is planned by the rows its file holds
    let fragments = snap.with_known_rows(snap.fragments().await?).await?;
    let mut counts = Vec::with_capacity(fragments.len());
    for f in fragments.iter() {
        counts.push(FragmentCounts {
            id: f.id,
            physical_rows: f.physical_rows,
            deleted_rows: rowids::deleted_rows(snap, f).await?,
            overlays: f.overlays.len(),
        });
    }
    let groups = plan_compaction(&counts, snap.indices(), options, snap.has_stable_row_ids())?;
    Ok(groups
        .into_iter()
        .map(|fragments| CompactionTask {
            read_version: snap.version(),
            fragments,
            options: *options,
        })
        .collect())
}

/// Executes `task` on this table (any handle; the task's version is read): its fragments'
/// live rows, in order, written as new fragments of balanced sizes near the target
/// (lancet-txn's `output_rows`).
pub(crate) async fn execute_compaction(
    snap: &Snapshot,
    task: &CompactionTask,
) -> Result<CompactionResult> {
    let at = match snap.version() == task.read_version {
        true => snap.clone(),
        false => snap.checkout(task.read_version).await?,
    };
    let mut sources = Vec::with_capacity(task.fragments.len());
    for id in &task.fragments {
        let f = at
            .fragment(*id)
            .await?
            .ok_or_else(|| Error::InvalidArgument {
                what: format!("compaction task of version {}", task.read_version),
                reason: format!("fragment {id} is not in that version"),
            })?;
        // every row of a fragment of unknown count is read, not none
        let f = at.with_known_row_count(f).await?;
        let deleted = rowids::deletion_vector(&at, &f).await?;
        sources.push((f, deleted));
    }
    let live: u64 = sources
        .iter()
        .map(|(f, d)| {
            f.physical_rows
                .saturating_sub(d.as_ref().map_or(0, |d| d.len()))
        })
        .sum();
    let rows: Vec<BoxStream<'static, Result<arrow_array::RecordBatch>>> = sources
        .iter()
        .map(|(f, d)| take::live_rows(&at, f.clone(), d.clone()))
        .collect::<Result<_>>()?;
    // balanced outputs of about the target each, as pylance 14.0.2's compaction plans them
    let options = lancet_file::FragmentOptions {
        max_rows_per_group: task.options.max_rows_per_group,
        max_rows_per_file: u64::MAX,
        planned_rows: lancet_txn::compaction::output_rows(
            live,
            task.options.target_rows_per_fragment,
        ),
        // the tasks already use every core: one file at a time each keeps memory to a batch
        // per task
        files_at_once: 1,
        ..Default::default()
    };
    let mut new_fragments =
        write::write_fragments_with(&at, futures::stream::iter(rows).flatten(), options).await?;
    if at.has_stable_row_ids() {
        let borrowed: Vec<(&DataFragment, Option<&RoaringBitmap>)> =
            sources.iter().map(|(f, d)| (f, d.as_ref())).collect();
        lancet_rowid::assign::rechunk_fragments(
            &borrowed,
            &mut new_fragments,
            &at.manifest_path(),
        )?;
    }
    Ok(CompactionResult {
        task: task.clone(),
        new_fragments,
    })
}

/// Commits the `results` of tasks planned on one version in one Rewrite (see the module
/// docs), judged against every version published since they were planned.
pub(crate) async fn commit_compaction(
    snap: &Snapshot,
    results: &[CompactionResult],
) -> Result<Committed> {
    let (Some(read_version), Some(first)) = (planned_version(results)?, results.first()) else {
        return Ok(Committed::nothing(snap.clone()));
    };
    let options = first.task.options;
    let base = snap.checkout(read_version).await?;
    let groups: Vec<RewriteGroup<'_>> = results
        .iter()
        .map(|r| {
            Ok(RewriteGroup {
                sources: r.task.source_ids()?,
                destinations: r.new_fragments.clone(),
                mapping: RewriteMapping::OrderedCompaction,
            })
        })
        .collect::<Result<_>>()?;
    let all_sources: Vec<u32> = groups.iter().flat_map(|g| g.sources.clone()).collect();
    let ids: Vec<GroupIds> = groups
        .iter()
        .map(|g| GroupIds {
            sources: g.sources.clone(),
            destinations: Vec::new(),
        })
        .collect();
    // a deferred compaction nothing indexes records no moves, as pylance writes it
    let records_moves = options.defer_index_remap
        && lancet_txn::compaction::defer_records_moves(
            &ids,
            base.indices(),
            base.has_stable_row_ids(),
        )?;
    let committed = match records_moves {
        true => {
            lancet_txn::compaction::check_options(&options, base.has_stable_row_ids())?;
            let groups = &groups;
            rewrite::rewrite_retrying(&base, &all_sources, |b| async move {
                rewrite::commit_rewrite_groups(&b, groups, crate::rewrite::Format::AsTheTable).await
            })
            .await?
        }
        false => {
            let groups = &groups;
            rewrite::rewrite_retrying(&base, &all_sources, |b| async move {
                commit_remapped(&b, groups).await
            })
            .await?
        }
    };
    Ok(Committed {
        fragments_removed: all_sources.len(),
        fragments_added: groups.iter().map(|g| g.destinations.len()).sum(),
        ..committed
    })
}

/// Lance's distributed compaction: the tasks planned on this version, each executed
/// anywhere, every result committed once.
pub(crate) fn compaction(snap: &Snapshot) -> Compaction<'_> {
    Compaction { ds: snap }
}

/// Plans, executes every task here, and commits: `compact_files` in one call.
///
/// `CompactionOptions::default()` is pylance's `compact_files()` with no argument:
/// fragments below 1,048,576 rows are merged with their neighbours into fragments near
/// that size, and a fragment with more than 10% of its rows deleted is rewritten without
/// them; every BTree covering a rewritten fragment is rewritten in the same commit
/// (`defer_index_remap: true` records the moves in the Fragment Reuse Index instead).
/// A table with nothing to compact publishes nothing ([`Committed::versions`] 0).
pub(crate) async fn compact(snap: &Snapshot, options: &CompactionOptions) -> Result<Committed> {
    let tasks = plan_tasks(snap, options).await?;
    // the tasks run side by side, one per core, as pylance runs them; results keep the
    // tasks' order
    // a failed task drops the others, which then stop: nothing writes on after the error
    let spawn = |task: CompactionTask, snap: Snapshot| async move {
        AbortOnDropHandle::new(tokio::spawn(async move {
            execute_compaction(&snap, &task).await
        }))
        .await
        .map_err(|e| Error::Internal(format!("a compaction task failed: {e}")))?
    };
    let running = tasks.into_iter().map(|task| spawn(task, snap.clone()));
    let results: Vec<CompactionResult> = futures::stream::iter(running)
        .buffered(std::thread::available_parallelism().map_or(1, |n| n.get()))
        .try_collect()
        .await?;
    commit_compaction(snap, &results).await
}

/// The Rewrite of `groups` on this version with every index segment covering a source
/// written again with the rows' new addresses.
async fn commit_remapped(snap: &Snapshot, groups: &[RewriteGroup<'_>]) -> Result<Committed> {
    // the sources' addresses are remapped by the rows their files hold
    let fragments = snap.with_known_rows(snap.fragments().await?).await?;
    let mut next_id = lancet_txn::build::next_fragment_id(snap.manifest());
    let mut transitions = Vec::with_capacity(groups.len());
    let mut recorded = Vec::with_capacity(groups.len());
    let mut ids = Vec::with_capacity(groups.len());
    let mut seen = std::collections::HashSet::new();
    let what = format!("version {}", snap.version());
    for group in groups {
        let sources = rowids::with_deletions(snap, &fragments, &group.sources, &what).await?;
        let numbered = lancet_reuse::rules::number_group(
            sources,
            group.destinations.clone(),
            &mut seen,
            &mut next_id,
        )?;
        ids.push(GroupIds {
            sources: group.sources.clone(),
            destinations: numbered.destinations.iter().map(|d| d.id).collect(),
        });
        transitions.push(Transition {
            dataset_version: None,
            mapping: lancet_reuse::rules::ordered_compaction(&numbered.sources, &numbered.deleted)?,
            sources: numbered.sources,
            destinations: numbered.destinations,
        });
        recorded.push(numbered.recorded);
    }
    let remap = CompactionRemap::new(&transitions)?;
    let mut indices = Vec::with_capacity(snap.indices().len());
    for index in snap.indices() {
        indices.push(remapped(snap, index, &remap, &ids).await?);
    }
    let operation = lancet_proto::table::transaction::Operation::Rewrite(
        lancet_proto::table::transaction::Rewrite {
            groups: recorded,
            ..Default::default()
        },
    );
    let change = lancet_txn::build::Change::new(operation)
        .with_indices(IndexIntent::remapping(snap.indices(), &indices));
    operations::commit_change(snap, change).await
}

/// `index` after the rewrite of `groups`: untouched when it covers no source; otherwise
/// its fragment bitmap recalculated group by group (lancet-txn's `rewritten_bitmap`), and a
/// BTree segment holding addresses written again with the rows' new addresses (row-id
/// segments keep their rows). On a stable-row-id table an address-domain index lancet
/// cannot rewrite (ZoneMap, BloomFilter) loses the rewritten fragments, as in Lance
/// 14.0.2; any other index lancet cannot rewrite is refused.
async fn remapped(
    snap: &Snapshot,
    index: &IndexMetadata,
    remap: &CompactionRemap,
    groups: &[GroupIds],
) -> Result<IndexMetadata> {
    let covered = indexes::index_fragments(snap, index)?;
    let remap_of = lancet_txn::compaction::remap_index(
        index,
        covered.as_ref(),
        groups,
        snap.has_stable_row_ids(),
        lancet_reuse::is_fri_entry(index),
    )?;
    let (mut out, bitmap) = match remap_of {
        IndexRemap::Keep(entry) => return Ok(entry),
        IndexRemap::Rewrite { entry, fragments } => (entry, fragments),
    };
    let kind = index
        .index_details
        .as_ref()
        .and_then(|d| lancet_proto::index_type_name(&d.type_url));
    let is_btree = kind.as_deref() == Some("BTree");
    if !is_btree {
        return Err(Error::Unsupported {
            uri: snap.uri().to_string(),
            version: snap.version(),
            rule: format!(
                "index {:?} covers fragments the compaction rewrites, and lancet rewrites only BTree indexes: compact with defer_index_remap",
                index.name
            ),
        });
    }
    let segment = indexes::btree_segments(snap, &index.name)
        .await?
        .iter()
        .find(|s| s.metadata.uuid == index.uuid)
        .cloned()
        .ok_or_else(|| Error::Internal(format!("index {:?} segment not opened", index.name)))?;
    let uuid = ObjectUuid::new_v4();
    let dir = snap.store().path(&lancet_paths::layout::index_dir(uuid));
    let options = lancet_btree::TrainOptions {
        page_rows: segment.index.lookup().page_rows(),
        ..Default::default()
    };
    let trained = lancet_btree::merge(
        snap.file_store(),
        &segment.index,
        |a| remap.remap(a),
        futures::stream::empty(),
        &dir,
        options,
    )
    .await?;
    let fresh = trained.entry(lancet_btree::EntryFields {
        uuid: uuid.to_proto(),
        name: &index.name,
        field_id: index.fields.first().copied().unwrap_or(-1),
        dataset_version: index.dataset_version,
        fragments: bitmap,
        stable_row_ids: snap.has_stable_row_ids(),
        created_at: u64::try_from(snap.clock().now_ms()).unwrap_or(0),
    });
    out.uuid = fresh.uuid;
    out.files = fresh.files;
    out.base_id = None;
    Ok(out)
}

/// Lance's distributed compaction through one handle ([`Optimizer::compaction`](crate::Optimizer::compaction)): [`Compaction::plan`]
/// on one version, [`Compaction::execute`] of each task in any process (tasks and results are
/// serializable), [`Compaction::commit`] of every result in one Rewrite.
#[derive(Debug, Clone, Copy)]
pub struct Compaction<'a> {
    ds: &'a Snapshot,
}

impl Compaction<'_> {
    /// The tasks Lance 14's planner makes of this version for `options` (none when nothing
    /// needs compacting).
    pub async fn plan(self, options: &CompactionOptions) -> Result<Vec<CompactionTask>> {
        plan_tasks(self.ds, options).await
    }

    /// Executes one task: its fragments' live rows written as new fragments, not committed.
    pub async fn execute(self, task: &CompactionTask) -> Result<CompactionResult> {
        execute_compaction(self.ds, task).await
    }

    /// Commits the results of tasks planned on one version in one Rewrite, judged against
    /// every version published since they were planned.
    pub async fn commit(self, results: &[CompactionResult]) -> Result<Committed> {
        commit_compaction(self.ds, results).await
    }
}
