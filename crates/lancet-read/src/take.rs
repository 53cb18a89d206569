//! Rows by id or address: `take` of stable row ids (addresses on a table without them), the
//! rows at addresses, and a fragment's live rows.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{RecordBatch, UInt64Array};
use futures::stream::{BoxStream, StreamExt};
use lancet_file::scan_plan::{live_chunks, Chunk};
use lancet_file::Rows;
use lancet_proto::table::DataFragment;
use lancet_proto::RowAddress;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::paths;
use crate::rowids;
use crate::scan;
use crate::snapshot::Snapshot;

/// The live rows of `fragment` (`deleted` its deleted offsets) with every column, in
/// offset order, in batches of at most 64K rows.
pub fn live_rows(
    snap: &Snapshot,
    fragment: DataFragment,
    deleted: Option<RoaringBitmap>,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    let projection = Arc::new(paths::projection(snap, None)?);
    let schema = projection.schema(false, false);
    let chunks = live_chunks(fragment.physical_rows, deleted.as_ref());
    let ds = snap.clone();
    let stream = futures::stream::iter(chunks).then(move |rows| {
        let chunk = Chunk {
            fragment: fragment.clone(),
            rows,
        };
        let (ds, projection, schema) = (ds.clone(), projection.clone(), schema.clone());
        async move { scan::read_chunk(&ds, &chunk, &projection, schema, false, false).await }
    });
    Ok(stream.boxed())
}

/// The live rows at `addresses`, in the order asked; an address that is not a live row
/// is an error naming it.
pub async fn take_addresses(
    snap: &Snapshot,
    addresses: &[u64],
    columns: Option<&[String]>,
) -> Result<RecordBatch> {
    let projection = paths::projection(snap, columns)?;
    let schema = projection.schema(false, false);
    let mut by_fragment: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for a in addresses {
        let (f, o) = RowAddress::split(*a);
        by_fragment.entry(f).or_default().push(o);
    }
    let mut parts = Vec::new();
    // where each fragment's rows start in the concatenation
    let mut starts: BTreeMap<u32, (u64, Vec<u32>)> = BTreeMap::new();
    let mut at = 0u64;
    for (id, mut offsets) in by_fragment {
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
        parts.push(
            projection
                .read_rows(snap, &fragment, Rows::At(&rows))
                .await?,
        );
        starts.insert(id, (at, offsets));
        at += rows.len() as u64;
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
    arrow_select::take::take_record_batch(&all, &order)
        .map_err(|e| Error::Internal(format!("ordering taken rows: {e}")))
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
