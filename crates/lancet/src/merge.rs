//! Upserts keyed on columns: [`Dataset::merge_insert`].
//!
//! Composition only. lancet-txn's [`merge`](lancet_txn::merge) decides what the merge does
//! (matches, the ambiguity and `Fail` rules, insert order, the inserted keys it records);
//! this module reads the target's keys — through a BTree on a single key column for the
//! fragments it covers, by reading the column elsewhere — writes the updated and inserted rows
//! as new fragments and deletes the rows they replace, as one Update (`RewriteRows`), as
//! Lance 14.0.2 commits a merge_insert. With stable row ids an updated row keeps its `_rowid`
//! and its created-at version.
//!
//! A merge that inserted keys records them; a concurrent merge inserting one of them (or an
//! append) makes the later one redo its merge on the newer version, where the key matches
//! (retried up to [`MergeInsert::conflict_retries`] times, then a retryable conflict).

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::Schema;
use futures::{Stream, StreamExt, TryStreamExt};
use lancet_btree::Query;
use lancet_file::Rows;
use lancet_filter::Filter;
use lancet_proto::table::DataFragment;
use lancet_proto::RowAddress;
use lancet_rowid::RowIdSequence;
use lancet_txn::merge::{inserted_keys, Matching, MergeRules, SourceKeys, WhenMatched};
use lancet_txn::operation::rows_rewritten;
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::committed::{Committed, MergeStats};
use crate::error::{Error, Result};
use crate::index_answer;
use crate::indexes;
use crate::operations;
use crate::rowids;
use crate::rows;
use crate::search;
use crate::snapshot::Snapshot;
use crate::write;

/// A merge_insert being described; [`MergeInsert::execute`] runs it. By default a match
/// does nothing, an unmatched source row is dropped and every target row is kept, as Lance's
/// builder starts.
#[derive(Debug, Clone)]
pub struct MergeInsert<'a> {
    ds: &'a Snapshot,
    on: Vec<String>,
    when_matched: WhenMatched,
    insert_not_matched: bool,
    by_source: BySource,
    /// The condition of `WhenMatched::UpdateIf`.
    condition: Option<Filter>,
    use_index: bool,
    retries: u32,
}

/// A merge's rules as flat options, as a command line or a binding takes them
/// ([`MergeInsert::with_options`]), so every front end accepts and refuses the same
/// combinations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeOptions {
    /// What a matched target row does: `update` (or `update_all`), `delete`, `nothing` (or
    /// `do_nothing`, and the default when empty), `fail`.
    pub when_matched: String,
    /// With `when_matched` `update` only: a filter over `source.COL` and `target.COL` that
    /// must be TRUE for the pair to be updated.
    pub condition: Option<String>,
    /// A source row matching no target row is inserted.
    pub insert_not_matched: bool,
    /// A target row no source row matches is deleted.
    pub delete_not_matched_by_source: bool,
    /// With `delete_not_matched_by_source` only: which of those target rows are deleted.
    pub by_source_filter: Option<String>,
}

#[derive(Debug, Clone)]
enum BySource {
    Keep,
    Delete,
    DeleteIf(Filter),
}

/// The `when_matched` values [`MergeOptions`] takes.
const MATCHED: [&str; 6] = [
    "update",
    "update_all",
    "delete",
    "nothing",
    "do_nothing",
    "fail",
];

/// Fragments whose key columns are read ahead of the probe.
const READS_AHEAD: usize = 3;

/// A merge_insert keyed on the columns `on` (Lance's `merge_insert(on)`).
pub(crate) fn merge_insert<'a, S: AsRef<str>>(snap: &'a Snapshot, on: &[S]) -> MergeInsert<'a> {
    MergeInsert {
        ds: snap,
        on: on.iter().map(|s| s.as_ref().to_string()).collect(),
        when_matched: WhenMatched::DoNothing,
        insert_not_matched: false,
        by_source: BySource::Keep,
        condition: None,
        use_index: true,
        retries: 10,
    }
}

impl MergeInsert<'_> {
    /// A matched target row is replaced by the source row.
    pub fn when_matched_update_all(mut self) -> Self {
        self.when_matched = WhenMatched::UpdateAll;
        self
    }

    /// A matched target row is replaced by the source row where `condition` is TRUE on the
    /// pair: a filter over `source.COL` and `target.COL` (Lance's `when_matched_update_all`
    /// with a condition, e.g. `source.updated_at > target.updated_at`).
    pub fn when_matched_update_if(mut self, condition: Filter) -> Self {
        self.when_matched = WhenMatched::UpdateIf;
        self.condition = Some(condition);
        self
    }

    /// A matched target row is deleted.
    pub fn when_matched_delete(mut self) -> Self {
        self.when_matched = WhenMatched::Delete;
        self
    }

    /// A match refuses the merge (insert-only merges that must not touch existing rows).
    pub fn when_matched_fail(mut self) -> Self {
        self.when_matched = WhenMatched::Fail;
        self
    }

    /// A source row matching no target row is inserted.
    pub fn when_not_matched_insert_all(mut self) -> Self {
        self.insert_not_matched = true;
        self
    }

    /// A target row no source row matches is deleted — when `filter` is TRUE on it, if given.
    pub fn when_not_matched_by_source_delete(mut self, filter: Option<Filter>) -> Self {
        self.by_source = match filter {
            None => BySource::Delete,
            Some(f) => BySource::DeleteIf(f),
        };
        self
    }

    /// The rules of `options`, checked: an unknown `when_matched`, a condition without
    /// `update`, or a by-source filter without `delete_not_matched_by_source` is
    /// `InvalidInput`, as is a filter that does not parse.
    pub fn with_options(self, options: &MergeOptions) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidArgument {
            what: "merge_insert options".into(),
            reason,
        };
        let condition = options
            .condition
            .as_deref()
            .map(Filter::parse)
            .transpose()?;
        let by_source = options
            .by_source_filter
            .as_deref()
            .map(Filter::parse)
            .transpose()?;
        let mut merge = match (options.when_matched.as_str(), condition) {
            ("update" | "update_all", Some(c)) => self.when_matched_update_if(c),
            ("update" | "update_all", None) => self.when_matched_update_all(),
            (other, Some(_)) if MATCHED.contains(&other) => {
                return Err(invalid(format!(
                    "a condition needs when_matched update, not {other:?}"
                )))
            }
            ("delete", None) => self.when_matched_delete(),
            ("" | "nothing" | "do_nothing", None) => self,
            ("fail", None) => self.when_matched_fail(),
            (other, _) => {
                return Err(invalid(format!(
                    "when_matched {other:?} is none of {MATCHED:?}"
                )))
            }
        };
        if options.insert_not_matched {
            merge = merge.when_not_matched_insert_all();
        }
        match (options.delete_not_matched_by_source, by_source) {
            (true, filter) => merge = merge.when_not_matched_by_source_delete(filter),
            (false, Some(_)) => {
                return Err(invalid(
                    "a by-source filter needs delete_not_matched_by_source".into(),
                ))
            }
            (false, None) => {}
        }
        Ok(merge)
    }

    /// Whether a BTree on the key column answers the lookup (default true).
    pub fn use_index(mut self, use_index: bool) -> Self {
        self.use_index = use_index;
        self
    }

    /// How many times the merge is redone on a newer version after a retryable conflict
    /// (default 10, as Lance's `conflict_retries`).
    pub fn conflict_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Runs the merge with `source` (batches with every column of the table, by name, in
    /// the table's types) and commits it. [`Committed::merged`] says what it did with the
    /// rows.
    pub async fn execute<S>(self, source: S) -> Result<Committed>
    where
        S: Stream<Item = Result<RecordBatch>> + Send,
    {
        let batches: Vec<RecordBatch> = source.try_collect().await?;
        let mut base = self.ds.clone();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let began = std::time::Instant::now();
            // conformed to each attempt's version (a column added since is missing from it)
            let source = self.conform(&base, &batches)?;
            match self.attempt(&base, &source).await {
                Err(Error::CommitConflict {
                    retryable: true,
                    ref reason,
                    ..
                }) if attempt <= self.retries => {
                    tracing::info!(attempt, %reason, "merge_insert redone on a newer version");
                    // spread over the lost attempt's length, as the commit loop waits
                    let random = lancet_paths::ObjectUuid::new_v4().as_bytes()[0];
                    let lost = began.elapsed();
                    tokio::time::sleep(lancet_txn::rebase::backoff_delay(attempt, lost, random))
                        .await;
                    base = base.open_sibling(None).await?;
                }
                done => return done,
            }
        }
    }

    /// The source as one batch in the table's schema (columns reordered by name).
    fn conform(&self, base: &Snapshot, batches: &[RecordBatch]) -> Result<RecordBatch> {
        let table = rows::schema(base)?;
        let invalid = |reason: String| Error::InvalidArgument {
            what: "merge_insert source".into(),
            reason,
        };
        if self.on.is_empty() {
            return Err(invalid("no key column is named (`on`)".into()));
        }
        for key in &self.on {
            if table.field_with_name(key).is_err() {
                return Err(invalid(format!(
                    "key column {key:?} does not exist in the table's schema"
                )));
            }
        }
        let mut conformed = Vec::with_capacity(batches.len());
        for b in batches {
            let given = b.schema();
            let mut columns: Vec<ArrayRef> = Vec::with_capacity(table.fields().len());
            let mut fields = Vec::with_capacity(table.fields().len());
            for f in table.fields() {
                let (i, g) = given.column_with_name(f.name()).ok_or_else(|| {
                    invalid(format!(
                        "the source has no column {:?}; it must carry every column of the table",
                        f.name()
                    ))
                })?;
                fields.push(g.clone());
                columns.extend(b.columns().get(i).cloned());
            }
            if given.fields().len() != table.fields().len() {
                return Err(invalid(format!(
                    "the source has {} columns; the table has {}",
                    given.fields().len(),
                    table.fields().len()
                )));
            }
            let ordered = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
                .map_err(|e| invalid(e.to_string()))?;
            conformed.push(lancet_file::conform(&ordered, &table).map_err(invalid)?);
        }
        arrow_select::concat::concat_batches(&table, &conformed).map_err(|e| invalid(e.to_string()))
    }

    /// The merge on `base` and its commit.
    async fn attempt(&self, base: &Snapshot, source: &RecordBatch) -> Result<Committed> {
        let key_columns = self.key_columns(source)?;
        let keys = SourceKeys::new(&self.on, &key_columns)?;
        let rules = MergeRules {
            when_matched: self.when_matched,
            insert_not_matched: self.insert_not_matched,
            collect_unmatched_target: !matches!(self.by_source, BySource::Keep),
        };
        let mut matching = keys.matching(rules);
        let fragments = base.fragments().await?;
        require_known_rows(base, &fragments, "merge_insert")?;
        let projection = rows::projection(base, Some(&self.on))?;
        // a BTree on the one key column answers the fragments it covers, unless every
        // target row must be seen (rows no source row matches are deleted)
        let lookup = match rules.collect_unmatched_target {
            true => None,
            false => self.index_lookup(base, &key_columns).await?,
        };
        probe_target(base, &fragments, &projection, lookup, &mut matching).await?;
        let mut matched = matching.finish();
        if let (WhenMatched::UpdateIf, Some(condition)) = (self.when_matched, &self.condition) {
            let holds = self
                .condition_holds(base, source, &matched.candidates, condition)
                .await?;
            matched = matched.settle(&holds, &self.on, &key_columns)?;
        }

        let (mut deletes, deleted_rows) = self.deletes(base, &matched).await?;
        deletes.extend(matched.updates.iter().map(|(a, _)| *a));

        // updated rows in target order, then inserted rows in source order
        let order: Vec<u32> = matched
            .updates
            .iter()
            .map(|(_, s)| *s)
            .chain(matched.inserts.iter().copied())
            .collect();
        let mut new_fragments = if order.is_empty() {
            Vec::new()
        } else {
            let rows = take(source, order)?;
            write::write_fragments(base, futures::stream::iter([Ok(rows)])).await?
        };
        if base.has_stable_row_ids() && !new_fragments.is_empty() {
            let moved = moved_row_ids(base, &fragments, &matched.updates)?;
            lancet_rowid::assign::keep_moved_ids(&mut new_fragments, moved);
        }
        let offsets: Vec<(u64, RoaringBitmap)> = deletes
            .bitmaps()
            .map(|(f, o)| (u64::from(f), o.clone()))
            .collect();
        let delete = operations::delete_operation(base, &offsets, "").await?;
        let inserted_rows = if matched.inserts.is_empty() {
            None
        } else {
            let field_ids: Vec<i32> = projection.iter().map(|c| c.id()).collect();
            let rows = matched.inserts.iter().map(|s| *s as usize);
            Some(inserted_keys(&field_ids, &key_columns, rows)?)
        };
        // every field: a merge rewrites whole rows
        let every_field = base.manifest().fields.iter();
        let every_field = every_field
            .filter_map(|f| u32::try_from(f.id).ok())
            .collect();
        let update = rows_rewritten(delete, new_fragments, every_field, inserted_rows);
        let inserted = matched.inserts.len() as u64;
        let updated = matched.updates.len() as u64;
        let mut committed = operations::commit(base, update)
            .await?
            .with_rows(inserted + updated + deleted_rows);
        committed.merged = Some(MergeStats {
            inserted_rows: inserted,
            updated_rows: updated,
            deleted_rows,
        });
        Ok(committed)
    }

    /// The target rows the merge deletes (matched rows it deletes, and the rows no source
    /// row matched when asked to delete them), and how many.
    async fn deletes(
        &self,
        base: &Snapshot,
        matched: &lancet_txn::merge::Matched,
    ) -> Result<(RoaringTreemap, u64)> {
        let mut deletes: RoaringTreemap = matched.deletes.iter().copied().collect();
        let mut deleted_rows = matched.deletes.len() as u64;
        match &self.by_source {
            BySource::Keep => {}
            BySource::Delete => {
                deleted_rows += matched.unmatched_target.len() as u64;
                deletes.extend(matched.unmatched_target.iter().copied());
            }
            BySource::DeleteIf(filter) => {
                let mut eligible = RoaringTreemap::new();
                for (f, o) in search::search_addresses(base, filter).await? {
                    eligible |= RoaringTreemap::from_bitmaps([(f, o)]);
                }
                for a in &matched.unmatched_target {
                    if eligible.contains(*a) {
                        deletes.insert(*a);
                        deleted_rows += 1;
                    }
                }
            }
        }
        Ok((deletes, deleted_rows))
    }

    /// Whether `condition` is TRUE on each matched (target row, source row) pair: its
    /// `source.COL` columns taken from the source, its `target.COL` columns read from the
    /// target rows (once each).
    async fn condition_holds(
        &self,
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

    fn key_columns(&self, source: &RecordBatch) -> Result<Vec<ArrayRef>> {
        self.on
            .iter()
            .map(|k| {
                source
                    .column_by_name(k)
                    .cloned()
                    .ok_or_else(|| Error::Internal(format!("conformed source lacks {k:?}")))
            })
            .collect()
    }

    /// Through a BTree on the single key column: the fragments it answers and, among
    /// them, the live rows whose key is one of the source's. `None` when no BTree covers
    /// the column (or its values are of another type).
    async fn index_lookup(
        &self,
        base: &Snapshot,
        key_columns: &[ArrayRef],
    ) -> Result<Option<(RoaringBitmap, RoaringTreemap)>> {
        let ([name], [values]) = (self.on.as_slice(), key_columns) else {
            return Ok(None);
        };
        if !self.use_index {
            return Ok(None);
        }
        let Some(field) = base
            .manifest()
            .fields
            .iter()
            .find(|f| &f.name == name && f.parent_id == -1)
        else {
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
}

/// Probes `matching` with the key columns of the target's live rows: through the index
/// `lookup` (the fragments it answers and the candidate rows on them) where there is one,
/// and by reading the key columns of every other fragment.
async fn probe_target(
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
pub(crate) fn require_known_rows(
    base: &Snapshot,
    fragments: &[DataFragment],
    what: &str,
) -> Result<()> {
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

fn take(batch: &RecordBatch, rows: Vec<u32>) -> Result<RecordBatch> {
    arrow_select::take::take_record_batch(batch, &UInt32Array::from(rows))
        .map_err(|e| Error::Internal(format!("taking merged rows: {e}")))
}

fn find(fragments: &[DataFragment], id: u64) -> Option<&DataFragment> {
    fragments
        .binary_search_by_key(&id, |f| f.id)
        .ok()
        .and_then(|i| fragments.get(i))
}

/// The row ids of the updated target rows, in the order they are written.
fn moved_row_ids(
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
