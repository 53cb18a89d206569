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

use arrow_array::{ArrayRef, RecordBatch};

use futures::{Stream, TryStreamExt};
use lancet_filter::Filter;
use lancet_txn::merge::{inserted_keys, MergeRules, SourceKeys, WhenMatched};
use lancet_txn::operation::rows_rewritten;
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::committed::{Committed, MergeStats};
use crate::operations;
use crate::redo;
use crate::write;
use lancet_read::error::{Error, Result};
use lancet_read::merge_target::{
    complete_rows, condition_holds, index_lookup, moved_row_ids, probe_target, require_known_rows,
    source_schema, take,
};
use lancet_read::rows;
use lancet_read::search;
use lancet_read::snapshot::Snapshot;

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
        retries: redo::CONFLICT_RETRIES,
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
        let batches = batches.as_slice();
        let this = &self;
        redo::redo_on_conflict(self.ds, self.retries, "merge_insert", |base| async move {
            // conformed to each attempt's version (a column added since is missing from it)
            let source = this.conform(&base, batches)?;
            this.attempt(&base, &source).await
        })
        .await
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
        // a source of some of the table's columns updates those (see `complete_rows`)
        let schema = source_schema(&table, batches.first());
        let conformed = (batches.iter())
            .map(|b| lancet_file::conform_by_name(b, &schema).map_err(invalid))
            .collect::<Result<Vec<_>>>()?;
        arrow_select::concat::concat_batches(&schema, &conformed)
            .map_err(|e| invalid(e.to_string()))
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
            false => match self.use_index {
                true => index_lookup(base, &self.on, &key_columns).await?,
                false => None,
            },
        };
        probe_target(base, &fragments, &projection, lookup, &mut matching).await?;
        let mut matched = matching.finish();
        if let (WhenMatched::UpdateIf, Some(condition)) = (self.when_matched, &self.condition) {
            let holds = condition_holds(base, source, &matched.candidates, condition).await?;
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
            let rows = complete_rows(base, take(source, order)?, &matched.updates).await?;
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
}
