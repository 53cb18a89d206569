//! One page of `page_data.lance` and exact evaluation of a query on it.

use std::ops::Bound;
use std::sync::Arc;

use arrow_arith::boolean::and_kleene;
use arrow_array::{Array, ArrayRef, BooleanArray, Datum, Scalar, UInt64Array};
use arrow_ord::cmp;
use arrow_ord::ord::make_comparator;
use arrow_ord::sort::sort;

use crate::error::Result;
use crate::idset::SortedRuns;
use crate::lookup::{PageLookup, NULLS_FIRST};
use crate::query::Query;
use crate::result::NullableIdSet;
use crate::select::{prefix_bounds, Bounds, PageMatch};

/// A decoded page: sorted values and their row ids (or addresses).
///
/// The page also keeps its positions in ascending id order, computed once when it is decoded:
/// walking a page in that order yields the ids a query selects already sorted, so a search's
/// result is a merge of one sorted run per page instead of a sort of every id it returns.
#[derive(Debug, Clone)]
pub struct Page {
    values: ArrayRef,
    ids: Arc<UInt64Array>,
    /// Positions `0..len` ordered by id.
    by_id: Vec<u32>,
}

impl Page {
    /// A page of `values` (sorted, for index pages) and the ids of their rows, position by
    /// position. The caller guarantees equal lengths below `u32::MAX` (the reader checks page
    /// sizes before building one); ids beyond the values are ignored.
    pub fn new(values: ArrayRef, ids: Arc<UInt64Array>) -> Self {
        let n = values.len().min(ids.len()).min(u32::MAX as usize);
        let raw = ids.values();
        let mut by_id: Vec<u32> = (0..n as u32).collect();
        if !raw.get(..n).is_some_and(|r| r.is_sorted()) {
            by_id.sort_unstable_by_key(|&p| raw.get(p as usize).copied().unwrap_or(u64::MAX));
        }
        Self { values, ids, by_id }
    }

    /// The page's values, in index order.
    pub fn values(&self) -> &ArrayRef {
        &self.values
    }

    /// The row ids (or addresses) of the values, position by position.
    pub fn ids(&self) -> &UInt64Array {
        &self.ids
    }

    /// Bytes the page keeps in memory (its cache weight).
    pub fn size_bytes(&self) -> usize {
        self.values.get_array_memory_size()
            + self.ids.get_array_memory_size()
            + self.by_id.capacity() * std::mem::size_of::<u32>()
    }

    /// Appends, in id order, the ids of the positions `keep` accepts; one sorted run.
    fn push_run(&self, out: &mut SortedRuns, keep: impl Fn(usize) -> bool) {
        let ids = self.ids.values();
        out.push_run(self.by_id.iter().filter_map(|&p| {
            let p = p as usize;
            if keep(p) {
                ids.get(p).copied()
            } else {
                None
            }
        }));
    }

    /// Ids where `mask` is TRUE (a NULL mask slot is not TRUE).
    fn push_where(&self, mask: &BooleanArray, out: &mut SortedRuns) {
        let selected = match mask.nulls() {
            Some(n) => mask.values() & n.inner(),
            None => mask.values().clone(),
        };
        self.push_run(out, |p| p < selected.len() && selected.value(p));
    }

    /// Ids whose value is NULL (`nulls == true`) or not.
    fn push_by_nullness(&self, nulls: bool, out: &mut SortedRuns) {
        match self.values.logical_nulls() {
            None if nulls => {}
            None => self.push_run(out, |_| true),
            Some(n) => self.push_run(out, |p| p < n.len() && n.is_null(p) == nulls),
        }
    }

    /// TRUE where the value lies within the bounds `m` says must be compared; `None` when
    /// none must (every non-NULL row matches).
    fn range_mask(&self, b: &Bounds, m: PageMatch) -> Result<Option<BooleanArray>> {
        let (check_lo, check_hi) = match m {
            PageMatch::Some => (true, true),
            PageMatch::Lower => (true, false),
            PageMatch::Upper => (false, true),
            PageMatch::All => (false, false),
        };
        let mut mask: Option<BooleanArray> = None;
        let mut apply = |m: BooleanArray| -> Result<()> {
            mask = Some(match mask.take() {
                None => m,
                Some(prev) => and_kleene(&prev, &m)?,
            });
            Ok(())
        };
        match &b.lo {
            Bound::Included(v) if check_lo => apply(cmp::gt_eq(&self.values, &scalar(v))?)?,
            Bound::Excluded(v) if check_lo => apply(cmp::gt(&self.values, &scalar(v))?)?,
            _ => {}
        }
        match &b.hi {
            Bound::Included(v) if check_hi => apply(cmp::lt_eq(&self.values, &scalar(v))?)?,
            Bound::Excluded(v) if check_hi => apply(cmp::lt(&self.values, &scalar(v))?)?,
            _ => {}
        }
        Ok(mask)
    }

    fn eval_range(&self, b: &Bounds, m: PageMatch, out: &mut IdLists) -> Result<()> {
        self.push_by_nullness(true, &mut out.nulls);
        match self.range_mask(b, m)? {
            Some(mask) => self.push_where(&mask, &mut out.trues),
            // a whole-page match, or unbounded on both sides: every non-NULL row
            None => self.push_by_nullness(false, &mut out.trues),
        }
        Ok(())
    }

    /// Evaluates `query` on this page exactly.
    pub fn evaluate(
        &self,
        lookup: &PageLookup,
        query: &Query,
        m: PageMatch,
    ) -> Result<NullableIdSet> {
        let mut out = IdLists::default();
        self.evaluate_into(lookup.value_type(), query, m, &mut out)?;
        Ok(out.into_set())
    }

    /// Evaluates `query` on values that are not part of an index (a fragment's column read
    /// directly, for fragments an index does not cover). The values need not be sorted.
    pub fn evaluate_unindexed(&self, query: &Query) -> Result<NullableIdSet> {
        let mut out = IdLists::default();
        self.evaluate_into(
            &self.values.data_type().clone(),
            query,
            PageMatch::Some,
            &mut out,
        )?;
        Ok(out.into_set())
    }

    /// Appends this page's TRUE and NULL ids to `out` (each row of a segment lives on exactly
    /// one page, so the lists of all pages never overlap).
    pub fn evaluate_into(
        &self,
        value_type: &arrow_schema::DataType,
        query: &Query,
        m: PageMatch,
        out: &mut IdLists,
    ) -> Result<()> {
        match query {
            Query::IsNull => {
                self.push_by_nullness(true, &mut out.trues);
                Ok(())
            }
            Query::Equals(v) if v.is_null(0) => {
                self.push_run(&mut out.nulls, |_| true);
                Ok(())
            }
            Query::Equals(v) => self.eval_range(
                &Bounds::new(Bound::Included(v.clone()), Bound::Included(v.clone())),
                m,
                out,
            ),
            Query::Range(lo, hi) => self.eval_range(&Bounds::new(lo.clone(), hi.clone()), m, out),
            Query::LikePrefix(p) => {
                let (lo, hi) = prefix_bounds(value_type, p)?;
                self.eval_range(&Bounds::new(lo, hi), m, out)
            }
            Query::IsIn(values) => self.eval_in(values, out),
        }
    }

    /// `IN`: the list is sorted once; each row is one binary search in it. Float zeros are
    /// compared as equal, as SQL does. With a NULL in the list, every row that matches no
    /// value is NULL.
    fn eval_in(&self, values: &ArrayRef, out: &mut IdLists) -> Result<()> {
        let list_has_null = values.null_count() > 0;
        let sorted = sort(values.as_ref(), Some(NULLS_FIRST))?;
        let non_null = sorted.slice(sorted.null_count(), sorted.len() - sorted.null_count());
        let with_zeros = add_other_zero(&non_null)?;
        let cmp = make_comparator(self.values.as_ref(), with_zeros.as_ref(), NULLS_FIRST)?;
        let k = with_zeros.len();
        let matched: Vec<bool> = (0..self.values.len())
            .map(|i| {
                !self.values.is_null(i) && {
                    let pos = crate::partition_point(k, |j| cmp(i, j).is_gt());
                    pos < k && cmp(i, pos).is_eq()
                }
            })
            .collect();
        let is_true = |p: usize| matched.get(p).copied().unwrap_or(false);
        self.push_run(&mut out.trues, is_true);
        self.push_run(&mut out.nulls, |p| {
            !is_true(p) && (list_has_null || self.values.is_null(p))
        });
        Ok(())
    }
}

/// TRUE and NULL ids gathered from the pages of one search, turned into treemaps once.
#[derive(Debug, Default)]
pub struct IdLists {
    trues: SortedRuns,
    nulls: SortedRuns,
}

impl IdLists {
    /// Room for `trues` TRUE ids, so gathering pages does not reallocate.
    pub fn with_capacity(trues: usize) -> Self {
        Self {
            trues: SortedRuns::with_capacity(trues),
            nulls: SortedRuns::default(),
        }
    }

    pub fn into_set(self) -> NullableIdSet {
        NullableIdSet::new(self.trues.into_treemap(), self.nulls.into_treemap())
    }
}

fn scalar(v: &ArrayRef) -> impl Datum {
    Scalar::new(v.clone())
}

/// For float lists holding ±0.0, adds the other zero so total-order equality matches SQL's.
fn add_other_zero(sorted: &ArrayRef) -> Result<ArrayRef> {
    use arrow_array::{Float32Array, Float64Array};
    if let Some(a) = sorted.as_any().downcast_ref::<Float64Array>() {
        if a.values().contains(&0.0) {
            let mut v: Vec<f64> = a.values().to_vec();
            v.extend([-0.0, 0.0]);
            v.sort_by(|x, y| x.total_cmp(y));
            v.dedup_by(|x, y| x.to_bits() == y.to_bits());
            return Ok(Arc::new(Float64Array::from(v)));
        }
    }
    if let Some(a) = sorted.as_any().downcast_ref::<Float32Array>() {
        if a.values().contains(&0.0) {
            let mut v: Vec<f32> = a.values().to_vec();
            v.extend([-0.0, 0.0]);
            v.sort_by(|x, y| x.total_cmp(y));
            v.dedup_by(|x, y| x.to_bits() == y.to_bits());
            return Ok(Arc::new(Float32Array::from(v)));
        }
    }
    Ok(sorted.clone())
}
