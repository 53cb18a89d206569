//! Counting rows as pylance's `count_rows` does.

use lancet_filter::Filter;

use crate::error::Result;
use crate::search::search;
use crate::snapshot::Snapshot;

/// The rows `filter` matches or, without one, every visible row: the counts the manifest or
/// the tree's totals record (no leaf or data file read); a legacy manifest that leaves some
/// unknown is counted row by row.
pub async fn count_rows(snap: &Snapshot, filter: Option<&Filter>) -> Result<u64> {
    match (filter, snap.num_rows()) {
        (None, Some(n)) => Ok(n),
        (Some(f), _) => Ok(search(snap, f).await?.row_ids.len()),
        (None, None) => Ok(search(snap, &Filter::parse("TRUE")?).await?.row_ids.len()),
    }
}
