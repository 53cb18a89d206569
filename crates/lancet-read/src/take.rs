//! Rows by id or address: `take` of stable row ids (addresses on a table without them), the
//! rows at addresses, and a fragment's live rows.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{RecordBatch, UInt64Array};
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use lancet_file::scan_plan::{live_chunks, Chunk};
use lancet_file::Rows;
use lancet_proto::table::DataFragment;
use lancet_proto::RowAddress;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::paths;
use crate::row_columns::RowColumn;
use crate::rowids;
use crate::scan;
use crate::snapshot::Snapshot;

/// Which rows a take reads.
#[derive(Debug, Clone, Copy)]
pub enum RowsAt<'a> {
    /// Row addresses (`fragment id << 32 | offset`).
    Addresses(&'a [u64]),
    /// Positions among the version's live rows, counted in scan order.
    Positions(&'a [u64]),
}

/// Fragments a take reads at once.
const TAKE_CONCURRENCY: usize = 8;

/// The live rows of `fragment` (`deleted` its deleted offsets) with every column, in
/// offset order, in batches of at most 64K rows.
pub fn live_rows(
    snap: &Snapshot,
    fragment: DataFragment,
    deleted: Option<RoaringBitmap>,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    let projection = Arc::new(paths::projection(snap, None)?);
    let schema = projection.schema(&[]);
    let chunks = live_chunks(fragment.physical_rows, deleted.as_ref());
    let ds = snap.clone();
    let stream = futures::stream::iter(chunks).then(move |rows| {
        let chunk = Chunk {
            fragment: fragment.clone(),
            rows,
        };
        let (ds, projection, schema) = (ds.clone(), projection.clone(), schema.clone());
        async move { scan::read_chunk(&ds, &chunk, &projection, schema, &[], None).await }
    });
    Ok(stream.boxed())
}

/// `columns` as the table's columns and the row columns among them (`_rowid`,
/// `_row_created_at_version`, ...: names no table column has), each in the order asked.
fn split_row_columns(
    snap: &Snapshot,
    columns: Option<&[String]>,
) -> (Option<Vec<String>>, Vec<RowColumn>) {
    let Some(columns) = columns else {
        return (None, Vec::new());
    };
    let fields = &snap.manifest().fields;
    let (mut table, mut row) = (Vec::new(), Vec::new());
    for name in columns {
        match RowColumn::named(name).filter(|_| paths::resolve(fields, name).is_none()) {
            Some(c) => row.push(c),
            None => table.push(name.clone()),
        }
    }
    (Some(table), row)
}

/// The live rows at `addresses`, in the order asked; an address that is not a live row
/// is an error naming it. `columns` may name row columns, placed where asked.
pub async fn take_addresses(
    snap: &Snapshot,
    addresses: &[u64],
    columns: Option<&[String]>,
) -> Result<RecordBatch> {
    let (table_columns, row_columns) = split_row_columns(snap, columns);
    let projection = paths::projection(snap, table_columns.as_deref())?;
    let schema = projection.schema(&row_columns);
    let (row_columns, schema_ref) = (&row_columns, &schema);
    let mut by_fragment: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for a in addresses {
        let (f, o) = RowAddress::split(*a);
        by_fragment.entry(f).or_default().push(o);
    }
    // each fragment's rows checked and read, several fragments at once
    let projection = &projection;
    let reads = by_fragment.into_iter().map(|(id, offsets)| {
        read_fragment_rows(snap, projection, schema_ref, row_columns, id, offsets)
    });
    let read: Vec<(u32, Vec<u32>, RecordBatch)> = futures::stream::iter(reads)
        .buffered(snap.fanout(TAKE_CONCURRENCY))
        .try_collect()
        .await?;
    let mut parts = Vec::with_capacity(read.len());
    // where each fragment's rows start in the concatenation
    let mut starts: BTreeMap<u32, (u64, Vec<u32>)> = BTreeMap::new();
    let mut at = 0u64;
    for (id, offsets, batch) in read {
        let n = offsets.len() as u64;
        parts.push(batch);
        starts.insert(id, (at, offsets));
        at += n;
    }
    let all = arrow_select::concat::concat_batches(&schema, &parts)
        .map_err(|e| Error::Internal(format!("concatenating taken rows: {e}")))?;
    let order: UInt64Array = addresses
        .iter()
        .map(|a| {
            let (f, o) = RowAddress::split(*a);
            let (start, offsets) = starts.get(&f)?;
            offsets.binary_search(&o).ok().map(|i| start + i as u64)
        })
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| Error::Internal("a taken row was not read".into()))?
        .into();
    let taken = arrow_select::take::take_record_batch(&all, &order)
        .map_err(|e| Error::Internal(format!("ordering taken rows: {e}")))?;
    in_order_asked(taken, columns)
}

/// The live rows of fragment `id` at `offsets` (sorted and deduplicated here): `projection`'s
/// columns, then `row_columns`, in `schema`; an offset that is not a live row is an error
/// naming its address.
async fn read_fragment_rows(
    snap: &Snapshot,
    projection: &paths::Projection,
    schema: &arrow_schema::SchemaRef,
    row_columns: &[RowColumn],
    id: u32,
    mut offsets: Vec<u32>,
) -> Result<(u32, Vec<u32>, RecordBatch)> {
    offsets.sort_unstable();
    offsets.dedup();
    let not_live = |o: u32| Error::InvalidArgument {
        what: format!("row address {}", RowAddress::first_of(id) | u64::from(o)),
        reason: format!("not a live row of version {}", snap.version()),
    };
    let fragment = snap
        .fragment(u64::from(id))
        .await?
        .ok_or_else(|| not_live(offsets.first().copied().unwrap_or(0)))?;
    if let Some(o) = offsets
        .iter()
        .find(|o| u64::from(**o) >= fragment.physical_rows)
    {
        return Err(not_live(*o));
    }
    if let Some(d) = rowids::cached_deletion_vector(snap, &fragment).await? {
        if let Some(o) = offsets.iter().find(|o| d.contains(**o)) {
            return Err(not_live(*o));
        }
    }
    let rows: Vec<u64> = offsets.iter().map(|o| u64::from(*o)).collect();
    let batch = Box::pin(projection.read_rows(snap, &fragment, Rows::At(&rows))).await?;
    let batch = scan::with_row_columns(
        snap,
        batch,
        &fragment,
        &rows,
        schema.clone(),
        row_columns,
        None,
    )?;
    Ok((id, offsets, batch))
}

/// `batch` (table columns, then row columns) with its columns in the order `columns` asks.
fn in_order_asked(batch: RecordBatch, columns: Option<&[String]>) -> Result<RecordBatch> {
    let Some(columns) = columns else {
        return Ok(batch);
    };
    let schema = batch.schema();
    let order: Option<Vec<usize>> = columns.iter().map(|c| schema.index_of(c).ok()).collect();
    match order {
        Some(order) if order.len() == batch.num_columns() => batch
            .project(&order)
            .map_err(|e| Error::Internal(format!("placing taken columns: {e}"))),
        // a field inside a struct column: the read's own order
        _ => Ok(batch),
    }
}

/// The rows with stable row ids (row addresses on a table without stable row ids)
/// `row_ids`, in the order asked; an id that is not live is an error naming it.
pub async fn take(
    snap: &Snapshot,
    row_ids: &[u64],
    columns: Option<&[String]>,
) -> Result<RecordBatch> {
    if !snap.has_stable_row_ids() {
        return take_addresses(snap, row_ids, columns).await;
    }
    let found = rowids::lookup_row_ids(snap, row_ids).await?;
    let mut addresses = Vec::with_capacity(row_ids.len());
    for (id, address) in row_ids.iter().zip(found) {
        addresses.push(address.ok_or_else(|| Error::InvalidArgument {
            what: format!("row id {id}"),
            reason: format!("no live row of version {} has it", snap.version()),
        })?);
    }
    take_addresses(snap, &addresses, columns).await
}

/// The live rows `at` names, in the order asked.
pub async fn take_rows(
    snap: &Snapshot,
    at: RowsAt<'_>,
    columns: Option<&[String]>,
) -> Result<RecordBatch> {
    match at {
        RowsAt::Addresses(a) => take_addresses(snap, a, columns).await,
        RowsAt::Positions(p) => take_positions(snap, p, columns).await,
    }
}

/// The live rows at `positions` (0 to the version's live row count - 1, counted in the
/// order a scan returns rows: fragment by fragment, each in offset order), in the order
/// asked: Lance's `take`. A position past the last row is an error naming it. Only the
/// deletion vectors of fragments with deleted rows and a position in them are read.
pub async fn take_positions(
    snap: &Snapshot,
    positions: &[u64],
    columns: Option<&[String]>,
) -> Result<RecordBatch> {
    let fragments = snap.with_known_rows(snap.fragments().await?).await?;
    // where each fragment's live rows start among the version's
    let mut starts = Vec::with_capacity(fragments.len());
    let mut total = 0u64;
    for f in fragments.iter() {
        starts.push(total);
        let live = match lancet_proto::FragmentSummary::of(f).visible_rows() {
            Some(live) => live,
            None => {
                let deleted = rowids::cached_deletion_vector(snap, f).await?;
                f.physical_rows - deleted.map_or(0, |d| d.len()).min(f.physical_rows)
            }
        };
        total = total.checked_add(live).ok_or_else(|| Error::Corrupt {
            at: snap.manifest_ref(),
            rule: "the fragments' row counts overflow 64 bits".into(),
        })?;
    }
    let mut addresses = Vec::with_capacity(positions.len());
    let mut deletions: BTreeMap<usize, Option<Arc<RoaringBitmap>>> = BTreeMap::new();
    for &p in positions {
        if p >= total {
            return Err(Error::InvalidArgument {
                what: format!("position {p}"),
                reason: format!("out of range: version {} has {total} rows", snap.version()),
            });
        }
        // the last fragment starting at or before p (fragments with no live rows share
        // their start with the next, which is after them)
        let i = starts.partition_point(|s| *s <= p).saturating_sub(1);
        let (Some(f), Some(start)) = (fragments.get(i), starts.get(i)) else {
            return Err(Error::Internal(format!("position {p} is in no fragment")));
        };
        let deleted = match deletions.get(&i) {
            Some(d) => d.clone(),
            None => {
                let d = match f.deletion_file.is_some() {
                    true => rowids::cached_deletion_vector(snap, f).await?,
                    false => None,
                };
                deletions.insert(i, d.clone());
                d
            }
        };
        let offset = nth_live_offset(p - start, deleted.as_deref());
        let id = u32::try_from(f.id).map_err(|_| Error::Corrupt {
            at: snap.manifest_ref(),
            rule: format!("fragment id {} exceeds 32 bits", f.id),
        })?;
        addresses.push(RowAddress::first_of(id) | offset);
    }
    take_addresses(snap, &addresses, columns).await
}

/// The offset of the `n`th (from 0) offset not in `deleted`.
fn nth_live_offset(n: u64, deleted: Option<&RoaringBitmap>) -> u64 {
    let Some(deleted) = deleted else {
        return n;
    };
    // the smallest offset o with o + 1 - rank(o) > n: live rows up to o exceed n
    let (mut lo, mut hi) = (n, n + deleted.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let rank = u32::try_from(mid).map_or(deleted.len(), |m| deleted.rank(m));
        if mid + 1 - rank > n {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::nth_live_offset;
    use roaring::RoaringBitmap;

    #[test]
    fn the_nth_live_offset_skips_deleted_ones() {
        let deleted: RoaringBitmap = [0u32, 2, 3, 7].into_iter().collect();
        let live: Vec<u64> = (0..12u64)
            .filter(|o| !deleted.contains(*o as u32))
            .collect();
        for (n, want) in live.iter().enumerate() {
            assert_eq!(nth_live_offset(n as u64, Some(&deleted)), *want, "n = {n}");
        }
        assert_eq!(nth_live_offset(5, None), 5);
    }
}
