//! Exact answers to a [`Filter`]: `Dataset::search`.
//!
//! Each predicate is answered on one column. When a BTree covers the column, its segments
//! answer the fragments they cover (through the Fragment Reuse Index when rewrites moved
//! rows since), and every other fragment's column is read and evaluated directly; a column
//! with no BTree (none, or only a Bitmap, ZoneMap, Inverted or vector index), or a `LIKE`
//! pattern no range expresses, is scanned in every fragment. Predicates combine in Kleene
//! logic over row addresses: `NOT` complements within the version's physical rows, and
//! entries of rows no longer in the version are dropped. Deleted rows are removed last, and
//! on stable-row-id tables addresses become row ids.
//!
//! Literals are typed by the column (see [`lancet_filter::typed`]): the index's value type, or the
//! type of the column as read.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures::StreamExt;
use lancet_btree::{evaluate_leaves, index_may_answer, index_queries, NullableIdSet};
use lancet_proto::table::DataFragment;
use lancet_proto::RowAddress;
use roaring::{RoaringBitmap, RoaringTreemap};
use tokio_util::task::AbortOnDropHandle;
use tracing::Instrument;

use crate::error::Error;
use crate::error::Result;
use crate::index_answer;
use crate::indexes;
use crate::paths;
use crate::row_columns::RowColumn;
use crate::rowids;
use crate::snapshot::Snapshot;
use lancet_filter::{Answerer, Answering, Expr, Filter, Leaf, Typing};

/// Fragments whose column a search reads and evaluates at once.
const SCAN_CONCURRENCY: usize = 4;

/// What `Dataset::search` found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchResult {
    /// Rows where the filter is TRUE: row ids (equal to row addresses unless the table has
    /// stable row ids).
    pub row_ids: RoaringTreemap,
    /// Rows where the filter is NULL (neither TRUE nor FALSE).
    pub null_row_ids: RoaringTreemap,
    /// Index pages read for this search (pages other searches read from the same cached
    /// index at the same time are counted too).
    pub pages_read: u64,
    /// Fragments whose column was read directly, summed over the filter's predicates.
    pub scanned_fragments: u64,
    /// The indexes that answered, by name, and the fragments each answered for (the rest
    /// were read directly). Empty when no index answered; unlike `pages_read`, the same
    /// whether or not the pages were cached.
    pub indexed: BTreeMap<String, RoaringBitmap>,
}

/// What answering a filter read: index pages, fragments read directly, and which indexes
/// answered for which fragments ([`SearchResult`]'s counts, for scans).
#[derive(Debug, Default)]
pub struct SearchStats {
    pub pages_read: u64,
    pub scanned_fragments: u64,
    pub indexed: BTreeMap<String, RoaringBitmap>,
}

/// How `Storage::search_with` answers.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Leave deleted rows out (the default); `false` answers over every physical row.
    pub apply_deletions: bool,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            apply_deletions: true,
        }
    }
}

/// What a search does with deleted rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeletedRows {
    /// Left out of the answer (every read path).
    Left,
    /// Answered like live rows (`SearchOptions::apply_deletions` false).
    Kept,
    /// Answered from their stored values, with `_rowid` and `_rowaddr` NULL, never through
    /// an index (one built after a delete holds no entry for the row): a scan of deleted rows.
    Shown,
}

/// The rows of this version where `filter` is TRUE, and where it is NULL.
pub async fn search(snap: &Snapshot, filter: &Filter) -> Result<SearchResult> {
    search_with(snap, filter, &SearchOptions::default()).await
}

/// `Dataset::search` with options.
pub async fn search_with(
    snap: &Snapshot,
    filter: &Filter,
    options: &SearchOptions,
) -> Result<SearchResult> {
    let span = tracing::debug_span!("search", uri = %snap.uri(), filter = filter.text());
    search_inner(snap, filter, options).instrument(span).await
}

async fn search_inner(
    snap: &Snapshot,
    filter: &Filter,
    options: &SearchOptions,
) -> Result<SearchResult> {
    let deleted = match options.apply_deletions {
        true => DeletedRows::Left,
        false => DeletedRows::Kept,
    };
    let (search, result) = answer(snap, filter, deleted).await?;
    let to_row_ids = |addrs: RoaringTreemap| -> RoaringTreemap {
        match &search.row_ids {
            Some(index) => addrs.iter().filter_map(|a| index.row_id_at(a)).collect(),
            None => addrs,
        }
    };
    let stats = search.stats();
    Ok(SearchResult {
        row_ids: to_row_ids(result.true_ids),
        null_row_ids: to_row_ids(result.null_ids),
        pages_read: stats.pages_read,
        scanned_fragments: stats.scanned_fragments,
        indexed: stats.indexed,
    })
}

/// The live rows where `filter` is TRUE, by fragment and offset.
pub async fn search_addresses(snap: &Snapshot, filter: &Filter) -> Result<crate::rows::Matched> {
    let fragments = snap.fragments().await?;
    Ok(
        search_addresses_in(snap, filter, fragments, DeletedRows::Left)
            .await?
            .0,
    )
}

/// The rows of `fragments` (some of this version's) where `filter` is TRUE, by fragment
/// and offset (deleted rows as `deleted` says); with what answering it read.
pub async fn search_addresses_in(
    snap: &Snapshot,
    filter: &Filter,
    fragments: Arc<[DataFragment]>,
    deleted: DeletedRows,
) -> Result<(crate::rows::Matched, SearchStats)> {
    let (search, result) = answer_over(snap, filter, deleted, fragments).await?;
    let matched = result
        .true_ids
        .bitmaps()
        .map(|(f, rows)| (f, rows.clone()))
        .collect();
    Ok((matched, search.stats()))
}

/// `filter` answered over this version's row addresses.
async fn answer<'a>(
    snap: &'a Snapshot,
    filter: &'a Filter,
    deleted: DeletedRows,
) -> Result<(Search<'a>, NullableIdSet)> {
    answer_over(snap, filter, deleted, snap.fragments().await?).await
}

/// `filter` answered over the row addresses of `fragments` (some of this version's).
async fn answer_over<'a>(
    snap: &'a Snapshot,
    filter: &'a Filter,
    deleted: DeletedRows,
    fragments: Arc<[DataFragment]>,
) -> Result<(Search<'a>, NullableIdSet)> {
    let expr = filter.expr().clone().push_not();
    let fragments = snap.with_known_rows(fragments).await?;
    let row_ids = if snap.has_stable_row_ids() {
        Some(rowids::row_id_index(snap).await?)
    } else {
        None
    };
    let search = Search {
        ds: snap,
        filter,
        fragments,
        universe: OnceLock::new(),
        row_ids,
        pages: AtomicU64::new(0),
        scanned: AtomicU64::new(0),
        indexed: Mutex::new(BTreeMap::new()),
        fragment_ids: OnceLock::new(),
        deleted,
    };
    let mut result = lancet_filter::answer(&search, &expr).await?;
    if deleted == DeletedRows::Left {
        result = search.without_deleted(result).await?;
    }
    Ok((search, result))
}

struct Search<'a> {
    ds: &'a Snapshot,
    filter: &'a Filter,
    /// The version's fragments, in id order.
    fragments: Arc<[DataFragment]>,
    /// Every physical row address of the version: the domain NOT complements in (built
    /// when a NOT, IS or constant needs it).
    universe: OnceLock<RoaringTreemap>,
    row_ids: Option<Arc<lancet_rowid::RowIdIndex>>,
    pages: AtomicU64,
    scanned: AtomicU64,
    /// The indexes that answered and the fragments each answered for.
    indexed: Mutex<BTreeMap<String, RoaringBitmap>>,
    /// The ids of `fragments` (built when an index answers).
    fragment_ids: OnceLock<RoaringBitmap>,
    deleted: DeletedRows,
}

impl Answerer for Search<'_> {
    type Error = Error;

    fn universe(&self) -> &RoaringTreemap {
        self.universe.get_or_init(|| {
            lancet_filter::address_universe(self.fragments.iter().map(|f| (f.id, f.physical_rows)))
        })
    }

    fn leaves<'a>(
        &'a self,
        column: &'a str,
        leaves: &'a [&'a Leaf],
        typing: Typing,
    ) -> Answering<'a, Error> {
        Box::pin(self.answer_leaves(column, leaves, typing))
    }

    fn compare<'a>(&'a self, e: &'a Expr) -> Answering<'a, Error> {
        Box::pin(self.answer_compare(e))
    }
}

impl Search<'_> {
    /// The ids of the fragments searched, once.
    fn fragment_ids(&self) -> &RoaringBitmap {
        self.fragment_ids.get_or_init(|| {
            self.fragments
                .iter()
                .filter_map(|f| u32::try_from(f.id).ok())
                .collect()
        })
    }

    /// What answering read, once it is done (the indexes' fragments are handed over).
    fn stats(&self) -> SearchStats {
        SearchStats {
            pages_read: self.pages.load(Ordering::Relaxed),
            scanned_fragments: self.scanned.load(Ordering::Relaxed),
            indexed: std::mem::take(
                &mut *self
                    .indexed
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()),
            ),
        }
    }

    /// The physical row count of fragment `id` in this version, if it has that fragment.
    fn rows_of(&self, id: u32) -> Option<u64> {
        lancet_proto::fragment_by_id(&self.fragments, u64::from(id)).map(|f| f.physical_rows)
    }

    /// `set` without the rows this version does not have (an index's entries for rows
    /// since removed, a data file longer than its record).
    fn restrict(&self, mut set: NullableIdSet) -> NullableIdSet {
        set.keep_within(|id| self.rows_of(id));
        set
    }

    /// `result` without deleted rows: the deletion vectors of the fragments it names only,
    /// each read once per session (deletion files are immutable).
    async fn without_deleted(&self, result: NullableIdSet) -> Result<NullableIdSet> {
        let NullableIdSet {
            mut true_ids,
            mut null_ids,
        } = result;
        let touched: Vec<u32> = true_ids
            .bitmaps()
            .map(|(id, _)| id)
            .chain(null_ids.bitmaps().map(|(id, _)| id))
            .collect::<std::collections::BTreeSet<u32>>()
            .into_iter()
            .collect();
        let mut deleted = RoaringTreemap::new();
        for id in touched {
            let Some(f) = lancet_proto::fragment_by_id(&self.fragments, u64::from(id)) else {
                continue;
            };
            if let Some(d) = Box::pin(rowids::cached_deletion_vector(self.ds, f)).await? {
                deleted |= RoaringTreemap::from_bitmaps([(id, (*d).clone())]);
            }
        }
        true_ids -= &deleted;
        null_ids -= &deleted;
        Ok(NullableIdSet::new(true_ids, null_ids))
    }

    fn invalid(&self, reason: impl Into<String>) -> Error {
        Error::InvalidFilter {
            filter: self.filter.text().to_string(),
            reason: reason.into(),
        }
    }

    /// A leaf the filter's column cannot answer is the filter's error.
    fn leaf_error(&self, e: lancet_btree::BTreeError) -> Error {
        match e {
            lancet_btree::BTreeError::InvalidInput(reason) => self.invalid(reason),
            e => e.into(),
        }
    }

    /// The conjunction of `leaves`, all on `column`: through its BTree where one covers
    /// fragments and the leaves compare in its value type, by reading the column elsewhere.
    async fn answer_leaves(
        &self,
        column: &str,
        leaves: &[&Leaf],
        typing: Typing,
    ) -> Result<NullableIdSet> {
        let fields = &self.ds.manifest().fields;
        let Some(path) = paths::resolve(fields, column) else {
            return match RowColumn::named(column) {
                Some(row_column) => self.scan_row_column(row_column, leaves, typing).await,
                None => Err(self.invalid(format!("the table has no column {column:?}"))),
            };
        };
        let index = match index_may_answer(leaves) && self.deleted != DeletedRows::Shown {
            true => indexes::btree_on_field(self.ds, path.id),
            false => None,
        };
        let mut answered = NullableIdSet::default();
        let mut covered = RoaringBitmap::new();
        if let Some(name) = index {
            let segments = Box::pin(indexes::btree_segments(self.ds, &name)).await?;
            let queries = match segments.first() {
                Some(first) => {
                    let value_type = first.index.lookup().value_type();
                    index_queries(column, leaves, typing, value_type)
                        .map_err(|e| self.leaf_error(e))?
                }
                None => None,
            };
            if let Some(queries) = queries {
                let answer =
                    index_answer::answer(self.ds, &segments, &queries, self.fragment_ids()).await?;
                self.pages.fetch_add(answer.pages_read, Ordering::Relaxed);
                if !answer.covered.is_empty() {
                    *self
                        .indexed
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .entry(name.clone())
                        .or_default() |= &answer.covered;
                }
                // entries for rows no longer in this version are not answers
                answered = self.restrict(answer.rows);
                covered = answer.covered;
            }
        }
        let scanned = self.scan(path.id, column, leaves, typing, &covered).await?;
        // the index and the scan answer disjoint fragments
        Ok(answered.join_disjoint(scanned))
    }

    /// Evaluates the conjunction of `leaves` on the column of every fragment `covered` does
    /// not name (`field_id`: a column, or a field inside a struct column).
    async fn scan(
        &self,
        field_id: i32,
        column: &str,
        leaves: &[&Leaf],
        typing: Typing,
        covered: &RoaringBitmap,
    ) -> Result<NullableIdSet> {
        let todo: Vec<(u32, DataFragment)> = self
            .fragments
            .iter()
            .filter_map(|f| Some((u32::try_from(f.id).ok()?, f)))
            .filter(|(id, f)| !covered.contains(*id) && f.physical_rows > 0)
            .map(|(id, f)| (id, f.clone()))
            .collect();
        self.scanned.fetch_add(todo.len() as u64, Ordering::Relaxed);
        let leaves: Arc<[Leaf]> = leaves.iter().map(|l| (*l).clone()).collect();
        let column: Arc<str> = column.into();
        // each fragment read and evaluated in a task of its own: decoding and comparing
        // use every core, a few fragments at a time
        let parts = futures::stream::iter(todo)
            .map(|(id, f)| {
                let (snap, leaves, column) = (self.ds.clone(), leaves.clone(), column.clone());
                AbortOnDropHandle::new(tokio::spawn(async move {
                    let values = indexes::read_column(&snap, &f, field_id).await?;
                    let leaves: Vec<&Leaf> = leaves.iter().collect();
                    let base = RowAddress::first_of(id);
                    evaluate_leaves(&column, &leaves, typing, values, base).map_err(Error::from)
                }))
            })
            .buffered(SCAN_CONCURRENCY);
        futures::pin_mut!(parts);
        let mut out = NullableIdSet::default();
        while let Some(part) = parts.next().await {
            let part = part
                .map_err(|e| Error::Internal(format!("a fragment's filter task failed: {e}")))?
                .map_err(|e| match e {
                    Error::BTree(e) => self.leaf_error(e),
                    e => e,
                })?;
            out.union_disjoint(part);
        }
        // a fragment's rows past physical_rows (a data file longer than its record says)
        Ok(self.restrict(out))
    }

    /// Evaluates the conjunction of `leaves` on `_rowid` or `_rowaddr` in every fragment.
    async fn scan_row_column(
        &self,
        column: RowColumn,
        leaves: &[&Leaf],
        typing: Typing,
    ) -> Result<NullableIdSet> {
        let mut out = NullableIdSet::default();
        for f in self.fragments.iter() {
            let Ok(id) = u32::try_from(f.id) else {
                continue;
            };
            if f.physical_rows == 0 {
                continue;
            }
            // a fragment has at most 2^32 rows (an offset is 32 bits of an address)
            if f.physical_rows > 1 << 32 {
                return Err(Error::Corrupt {
                    at: self.ds.manifest_ref(),
                    rule: format!("fragment {} claims {} rows", f.id, f.physical_rows),
                });
            }
            let deleted = match self.deleted {
                DeletedRows::Shown => Box::pin(rowids::cached_deletion_vector(self.ds, f)).await?,
                _ => None,
            };
            // in batches: memory stays a batch whatever the fragment's size
            let step = lancet_file::scan_plan::SCAN_BATCH_ROWS;
            let source = column.of(self.ds, f)?;
            for start in (0..f.physical_rows).step_by(step as usize) {
                let offsets: Vec<u64> = (start..f.physical_rows.min(start + step)).collect();
                let values = source.at(&offsets, deleted.as_deref())?;
                let base = RowAddress::first_of(id) | start;
                let part = evaluate_leaves(column.name(), leaves, typing, Arc::new(values), base)
                    .map_err(|e| self.leaf_error(e))?;
                out.union_disjoint(part);
            }
        }
        Ok(out)
    }

    /// A comparison of computed values: the columns it reads, read in every fragment.
    async fn answer_compare(&self, e: &Expr) -> Result<NullableIdSet> {
        let Expr::Compare { left, op, right } = e else {
            return Err(Error::Internal(format!("{e:?} is not a comparison")));
        };
        let mut columns = Vec::new();
        e.columns(&mut columns);
        let columns: Vec<String> = columns.into_iter().map(str::to_string).collect();
        let projection =
            paths::projection(self.ds, Some(&columns)).map_err(|e| self.invalid(e.to_string()))?;
        let mut out = NullableIdSet::default();
        for f in self.fragments.iter() {
            let Ok(id) = u32::try_from(f.id) else {
                continue;
            };
            if f.physical_rows == 0 {
                continue;
            }
            self.scanned.fetch_add(1, Ordering::Relaxed);
            let batch = Box::pin(projection.read_rows(self.ds, f, lancet_file::Rows::All)).await?;
            let truth = lancet_filter::scalar::compare(left, *op, right, &batch)
                .map_err(|reason| self.invalid(reason))?;
            let base = RowAddress::first_of(id);
            out.union_disjoint(NullableIdSet::from_truth(base, truth.iter()));
        }
        Ok(self.restrict(out))
    }
}
