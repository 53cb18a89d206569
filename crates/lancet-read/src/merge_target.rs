//! merge_insert's side of the target table: which target rows a source key matches
//! (through the one index answerer where a BTree covers the single key column, by reading
//! the key columns elsewhere), whether a `when_matched_update_if` condition holds on each
//! matched pair, and the ids of the rows an upsert moves.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::{Schema, SchemaRef};
use futures::StreamExt;
use lancet_btree::Query;
use lancet_file::Rows;
use lancet_filter::Filter;
use lancet_proto::table::DataFragment;
use lancet_proto::RowAddress;
use lancet_rowid::RowIdSequence;
use lancet_txn::merge::Matching;
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{Error, Result};
use crate::index_answer;
use crate::indexes;
use crate::rowids;
use crate::rows;
use crate::snapshot::Snapshot;

/// Fragments whose key columns are read ahead of the probe.
const READS_AHEAD: usize = 3;

/// Whether `condition` is TRUE on each matched (target row, source row) pair: its
/// `source.COL` columns taken from the source, its `target.COL` columns read from the
/// target rows (once each).
pub async fn condition_holds(
    base: &Snapshot,
    source: &RecordBatch,
    pairs: &[(u64, u32)],
    condition: &Filter,
) -> Result<Vec<bool>> {
    let invalid = |reason: String| Error::InvalidArgument {
        what: format!("merge_insert condition {:?}", condition.text()),
        reason,
    };
    let mut wanted_source = Vec::new();
    let mut wanted_target = Vec::new();
    for c in condition.columns() {
        match c.split_once('.') {
            Some(("source", name)) => wanted_source.push(name.to_string()),
            Some(("target", name)) => wanted_target.push(name.to_string()),
            _ => {
                return Err(invalid(format!(
                    "column {c:?} is neither source.COL nor target.COL"
                )))
            }
        }
    }
    wanted_source.sort();
    wanted_source.dedup();
    wanted_target.sort();
    wanted_target.dedup();
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    let order: Vec<u32> = pairs.iter().map(|(_, s)| *s).collect();
    let from_source = take(source, order)?;
    for name in &wanted_source {
        let (i, f) = from_source
            .schema()
            .column_with_name(name)
            .map(|(i, f)| (i, f.clone()))
            .ok_or_else(|| invalid(format!("the table has no column {name:?}")))?;
        fields.push(f.with_name(format!("source.{name}")));
        columns.extend(from_source.columns().get(i).cloned());
    }
    if !wanted_target.is_empty() {
        let projection =
            rows::projection(base, Some(&wanted_target)).map_err(|e| invalid(e.to_string()))?;
        // each target row read once, lined up with the pairs
        let addresses: Vec<u64> = pairs.iter().map(|(a, _)| *a).collect();
        let lined = crate::take::take_addresses(base, &addresses, Some(&wanted_target)).await?;
        for (c, column) in projection.iter().zip(lined.columns()) {
            fields.push(
                c.field
                    .as_ref()
                    .clone()
                    .with_name(format!("target.{}", c.field.name())),
            );
            columns.push(column.clone());
        }
    }
    let batch = RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(pairs.len())),
    )
    .map_err(|e| invalid(e.to_string()))?;
    let truth = lancet_btree::evaluate_filter(condition, &batch)
        .await
        .map_err(|e| invalid(e.to_string()))?;
    Ok((0..pairs.len() as u64)
        .map(|i| truth.true_ids.contains(i))
        .collect())
}

/// Through a BTree on the single key column: the fragments it answers and, among
/// them, the live rows whose key is one of the source's. `None` when no BTree covers
/// the column (or its values are of another type).
pub async fn index_lookup(
    base: &Snapshot,
    on: &[String],
    key_columns: &[ArrayRef],
) -> Result<Option<(RoaringBitmap, RoaringTreemap)>> {
    let ([name], [values]) = (on, key_columns) else {
        return Ok(None);
    };
    let Some(field) = lancet_txn::fields::top_level(&base.manifest().fields, name) else {
        return Ok(None);
    };
    let Some(index) = indexes::btree_on_field(base, field.id) else {
        return Ok(None);
    };
    let segments = indexes::btree_segments(base, &index).await?;
    if segments
        .iter()
        .any(|s| s.index.lookup().value_type() != values.data_type())
    {
        return Ok(None);
    }
    let fragments = base.fragments().await?;
    let present: RoaringBitmap = fragments
        .iter()
        .filter_map(|f| u32::try_from(f.id).ok())
        .collect();
    let answer =
        index_answer::answer(base, &segments, &[Query::IsIn(values.clone())], &present).await?;
    // entries past a fragment's rows or of deleted rows are not answers
    let mut candidates = RoaringTreemap::new();
    for (id, offsets) in answer.rows.true_ids.bitmaps() {
        let Some(f) = find(&fragments, u64::from(id)) else {
            continue;
        };
        let mut offsets = offsets.clone();
        offsets.remove_range(u32::try_from(f.physical_rows).unwrap_or(u32::MAX)..);
        if let Some(d) = rowids::cached_deletion_vector(base, f).await? {
            offsets -= d.as_ref();
        }
        candidates |= RoaringTreemap::from_bitmaps([(id, offsets)]);
    }
    Ok(Some((answer.covered, candidates)))
}

/// Probes `matching` with the key columns of the target's live rows: through the index
/// `lookup` (the fragments it answers and the candidate rows on them) where there is one,
/// and by reading the key columns of every other fragment.
pub async fn probe_target(
    base: &Snapshot,
    fragments: &[DataFragment],
    projection: &[lancet_file::Column],
    lookup: Option<(RoaringBitmap, RoaringTreemap)>,
    matching: &mut Matching<'_>,
) -> Result<()> {
    let covered = match lookup {
        Some((covered, candidates)) => {
            for (id, offsets) in candidates.bitmaps() {
                let Some(f) = find(fragments, u64::from(id)) else {
                    continue;
                };
                let offsets: Vec<u64> = offsets.iter().map(u64::from).collect();
                let batch = rows::read_rows(base, f, projection, Rows::At(&offsets)).await?;
                let addresses: Vec<u64> = offsets
                    .iter()
                    .map(|o| RowAddress::first_of(id) | o)
                    .collect();
                matching.probe(batch.columns(), &addresses)?;
            }
            covered
        }
        None => RoaringBitmap::new(),
    };
    // the key columns of the other fragments, read a few at a time on the runtime's
    // workers while this task probes them in fragment order
    let scanned: Vec<DataFragment> = fragments
        .iter()
        .filter(|f| {
            u32::try_from(f.id).is_ok_and(|id| !covered.contains(id)) && f.physical_rows > 0
        })
        .cloned()
        .collect();
    let mut reads = futures::stream::iter(scanned)
        .map(|f| {
            let (base, projection) = (base.clone(), projection.to_vec());
            tokio::spawn(async move {
                let batch = rows::read_rows(&base, &f, &projection, Rows::All).await?;
                let deleted = rowids::cached_deletion_vector(&base, &f).await?;
                Ok::<_, Error>((f, batch, deleted))
            })
        })
        .buffered(READS_AHEAD);
    while let Some(read) = reads.next().await {
        let (f, batch, deleted) =
            read.map_err(|e| Error::Internal(format!("a key read failed: {e}")))??;
        let id = u32::try_from(f.id).unwrap_or(u32::MAX);
        let first = RowAddress::first_of(id);
        let (columns, addresses) = match deleted {
            None => {
                let addresses: Vec<u64> = (0..f.physical_rows).map(|o| first | o).collect();
                (batch.columns().to_vec(), addresses)
            }
            Some(deleted) => {
                let live: Vec<u32> = (0..u32::try_from(f.physical_rows).unwrap_or(u32::MAX))
                    .filter(|o| !deleted.contains(*o))
                    .collect();
                let addresses: Vec<u64> = live.iter().map(|o| first | u64::from(*o)).collect();
                (take(&batch, live)?.columns().to_vec(), addresses)
            }
        };
        matching.probe(&columns, &addresses)?;
    }
    Ok(())
}

/// Refuses fragments whose row count is unknown (0 in a legacy manifest, which Lance 14
/// reads as unknown): a key lookup or a rewrite that skipped them would miss their rows.
pub fn require_known_rows(base: &Snapshot, fragments: &[DataFragment], what: &str) -> Result<()> {
    match fragments
        .iter()
        .find(|f| f.physical_rows == 0 && !f.files.is_empty())
    {
        Some(f) => Err(Error::Unsupported {
            uri: base.uri().to_string(),
            version: base.version(),
            rule: format!(
                "{what}: fragment {} records no row count (a legacy manifest); compact it first",
                f.id
            ),
        }),
        None => Ok(()),
    }
}

/// The schema a merge source is read in: the table's (`table`), or, when the source (its
/// first batch) carries only some of the table's columns and no other, those columns in the
/// table's order (Lance 14.0.2's partial-schema merge: [`complete_rows`] fills the rest).
pub fn source_schema(table: &SchemaRef, first: Option<&RecordBatch>) -> SchemaRef {
    let Some(given) = first.map(|b| b.schema()) else {
        return table.clone();
    };
    let fields: Vec<_> = (table.fields().iter())
        .filter(|f| given.field_with_name(f.name()).is_ok())
        .cloned()
        .collect();
    let foreign = (given.fields().iter()).any(|f| table.field_with_name(f.name()).is_err());
    if foreign || fields.is_empty() || fields.len() == table.fields().len() {
        return table.clone(); // conformed against the whole table, which names what is wrong
    }
    Arc::new(Schema::new_with_metadata(fields, table.metadata().clone()))
}

/// The rows a merge writes, whole: `rows` (source rows, the first `updates.len()` of them
/// updating the target rows at `updates`' addresses, the rest inserted) with the table's
/// columns the source leaves out filled, as Lance 14.0.2's partial-schema merge fills them:
/// an updated row keeps its target row's value, an inserted row is NULL there (a column that
/// cannot be NULL is the caller's error, naming it). Rows of every column come back as given.
pub async fn complete_rows(
    base: &Snapshot,
    rows: RecordBatch,
    updates: &[(u64, u32)],
) -> Result<RecordBatch> {
    let table = rows::schema(base)?;
    if rows.num_columns() == table.fields().len() {
        return Ok(rows);
    }
    let given = rows.schema();
    let missing: Vec<String> = (table.fields().iter())
        .filter(|f| given.field_with_name(f.name()).is_err())
        .map(|f| f.name().clone())
        .collect();
    let addresses: Vec<u64> = updates.iter().map(|(a, _)| *a).collect();
    let kept = crate::take::take_addresses(base, &addresses, Some(&missing)).await?;
    let inserted = rows.num_rows().saturating_sub(updates.len());
    let invalid = |reason: String| Error::InvalidArgument {
        what: "merge_insert source".into(),
        reason,
    };
    let mut columns = Vec::with_capacity(table.fields().len());
    for field in table.fields() {
        if let Some(column) = rows.column_by_name(field.name()) {
            columns.push(column.clone());
            continue;
        }
        if inserted > 0 && !field.is_nullable() {
            return Err(invalid(format!(
                "it has no column {:?}, which inserted rows cannot leave NULL",
                field.name()
            )));
        }
        let old = (kept.column_by_name(field.name()))
            .ok_or_else(|| Error::Internal(format!("column {:?} was not read", field.name())))?;
        let nulls = arrow_array::new_null_array(field.data_type(), inserted);
        columns.push(
            arrow_select::concat::concat(&[old.as_ref(), nulls.as_ref()])
                .map_err(|e| Error::Internal(format!("filling merged rows: {e}")))?,
        );
    }
    RecordBatch::try_new(table, columns).map_err(|e| invalid(e.to_string()))
}

pub fn take(batch: &RecordBatch, rows: Vec<u32>) -> Result<RecordBatch> {
    arrow_select::take::take_record_batch(batch, &UInt32Array::from(rows))
        .map_err(|e| Error::Internal(format!("taking merged rows: {e}")))
}

pub fn find(fragments: &[DataFragment], id: u64) -> Option<&DataFragment> {
    lancet_proto::fragment_by_id(fragments, id)
}

/// The row ids of the updated target rows, in the order they are written.
pub fn moved_row_ids(
    base: &Snapshot,
    fragments: &[DataFragment],
    updates: &[(u64, u32)],
) -> Result<Vec<u64>> {
    let mut ids = Vec::with_capacity(updates.len());
    let mut current: Option<(u32, Option<RowIdSequence>)> = None;
    for (address, _) in updates {
        let (fragment, offset) = RowAddress::split(*address);
        if current.as_ref().map(|(f, _)| *f) != Some(fragment) {
            let sequence = match find(fragments, u64::from(fragment)) {
                Some(f) => rowids::row_id_sequence(base, f)?,
                None => None,
            };
            current = Some((fragment, sequence));
        }
        let id = current
            .as_ref()
            .and_then(|(_, s)| s.as_ref())
            .and_then(|s| s.get(u64::from(offset)))
            .ok_or_else(|| {
                Error::Internal(format!(
                    "no row id for the row at {address} a merge updates"
                ))
            })?;
        ids.push(id);
    }
    Ok(ids)
}
