//! Versions that publish content of their own: a restore (an older version's fragments and
//! indexes as the next version, Lance's Restore) and the layout conversions (flat to fragment
//! tree and back), each through the commit loop.

use lancet_proto::table::DataFragment;
use lancet_tree::{FragmentChange, TreeWriter, TreeWriterConfig};
use lancet_txn::build::{Change, Content};
use lancet_txn::operation::{conversion_operation, restore_operation};

use crate::commit;
use crate::committed::Committed;
use crate::prepare;
use lancet_read::error::Result;
use lancet_read::rowids;
use lancet_read::snapshot::Snapshot;

/// Publishes a layout conversion to `content`, a conversion's transaction, no rebase;
/// `records` are this version's fragments as the new layout records them, in the same
/// order (every one judged by the invariants).
async fn publish_conversion(
    snap: &Snapshot,
    content: Content,
    before: &[DataFragment],
    records: Vec<DataFragment>,
) -> Result<Committed> {
    // `records` move into the changes: at 10M fragments each copy of the list is GBs
    let judged = before
        .iter()
        .zip(records)
        .map(|(b, a)| FragmentChange {
            id: a.id,
            before: Some(b.clone()),
            after: Some(a),
        })
        .collect();
    let change = Change::new(conversion_operation()).with_content(content);
    commit::commit_rebasing(
        snap,
        prepare::Intent::Change {
            change: Box::new(change),
            judged: Some(judged),
        },
    )
    .await
    .map(|c| Committed {
        // a conversion moves no fragment: it records every one again
        fragments_removed: 0,
        fragments_added: 0,
        ..c
    })
}

/// Publishes the version after the latest with version `version`'s content (fragments or
/// tree, schema, indices), as Lance's Restore: `max_fragment_id` and `next_row_id` are not
/// lowered, so ids handed out since stay dead, and sticky feature flags stay set. The
/// version records `Restore { version }`; it is never rebased (a concurrent commit makes
/// it a retryable conflict). The way back from a bad version.
pub(crate) async fn restore(snap: &Snapshot, version: u64) -> Result<Committed> {
    let latest = snap.open_sibling(None).await?;
    let old = latest.checkout(version).await?;
    let change = Change::new(restore_operation(version)).with_content(Content::Restored {
        manifest: Box::new(old.manifest().clone()),
        indices: old.indices().to_vec(),
    });
    commit::commit_rebasing(
        &latest,
        prepare::Intent::Change {
            change: Box::new(change),
            judged: None,
        },
    )
    .await
}

/// Publishes version N+1 of this flat table with its fragments moved into a fragment
/// tree: `Manifest.fragments` empty, flag 4096 in both words, every other field carried
/// over. Counts a flat manifest leaves unknown (`physical_rows` or `num_deleted_rows` 0)
/// are read from the data and deletion files. `progress` is told how many fragments are
/// ready, as counts are resolved.
pub(crate) async fn convert_to_tree(
    snap: &Snapshot,
    config: &TreeWriterConfig,
    progress: impl Fn(usize, usize),
) -> Result<Committed> {
    if snap.tree().is_some() {
        return Err(commit::invalid(
            snap,
            "the version already keeps its fragments in a tree",
        ));
    }
    // the manifest's own list: a shared copy of millions of fragments is not made
    let fragments = snap.manifest().fragments.as_slice();
    let mut records = Vec::with_capacity(fragments.len());
    for (i, f) in fragments.iter().enumerate() {
        records.push(known_counts(snap, f).await?);
        if i % 4096 == 4095 {
            progress(i + 1, fragments.len());
        }
    }
    progress(fragments.len(), fragments.len());
    let writer = TreeWriter::new(snap.store().clone(), config.clone());
    let commit = writer.bulk_load(&records).await?;
    let content = Content::Tree {
        metadata: commit.metadata,
        max_fragment_id: commit.max_fragment_id,
    };
    publish_conversion(snap, content, fragments, records).await
}

/// Publishes version N+1 of this tree table as a flat manifest listing every fragment
/// (what Lance 14 reads).
pub(crate) async fn flatten(snap: &Snapshot) -> Result<Committed> {
    if snap.tree().is_none() {
        return Err(commit::invalid(snap, "the version is flat already"));
    }
    let fragments = snap.fragments().await?;
    publish_conversion(snap, Content::Flat, &fragments, fragments.to_vec()).await
}

/// `fragment` with `physical_rows` and `num_deleted_rows` known: read from its first data
/// file and its deletion file where the flat manifest stores 0 ("unknown" to Lance 14).
async fn known_counts(snap: &Snapshot, fragment: &DataFragment) -> Result<DataFragment> {
    let mut f = snap.with_known_row_count(fragment.clone()).await?;
    if f.deletion_file.is_some_and(|d| d.num_deleted_rows == 0) {
        let deleted = rowids::deleted_rows(snap, &f).await?;
        if let Some(d) = &mut f.deletion_file {
            d.num_deleted_rows = deleted;
        }
        if deleted == 0 {
            return Err(commit::invalid(
                snap,
                &format!(
                    "fragment {} has a deletion file that deletes nothing; a tree cannot record it",
                    f.id
                ),
            ));
        }
    }
    Ok(f)
}
