//! One page of `page_data.lance` and exact evaluation of a query on it.

use std::ops::Bound;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, UInt64Array};
use arrow_ord::ord::make_comparator;
use arrow_ord::sort::sort;

use crate::error::Result;
use crate::idset::SortedRuns;
use crate::lookup::{PageLookup, NULLS_FIRST};
use crate::query::Query;
use crate::select::{prefix_bounds, Bounds, PageMatch};
use lancet_filter::NullableIdSet;

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
    /// The ids in that order (index pages only; empty otherwise): walking a page by id
    /// reads two sequential arrays instead of one random id per row, and a whole page is a
    /// copy.
    ids_by_id: Vec<u64>,
    /// The values are checked to be in index order (NULLs first, then ascending in total
    /// order): a range is then two binary searches instead of a comparison per row.
    sorted: bool,
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
        Self {
            values,
            ids,
            by_id,
            ids_by_id: Vec::new(),
            sorted: false,
        }
    }

    /// [`Page::new`] for a page of an index, whose values should be in index order: checked
    /// once here (one comparison per row), so later searches may binary search the page. A
    /// page out of order (a corrupt or foreign segment) is still answered exactly, row by
    /// row.
    pub fn new_index_page(values: ArrayRef, ids: Arc<UInt64Array>) -> Self {
        let mut page = Self::new(values, ids);
        let raw = page.ids.values();
        page.ids_by_id = page
            .by_id
            .iter()
            .filter_map(|&p| raw.get(p as usize).copied())
            .collect();
        if page.ids_by_id.len() != page.by_id.len() {
            page.ids_by_id.clear();
        }
        page.sorted = make_comparator(page.values.as_ref(), page.values.as_ref(), NULLS_FIRST)
            .is_ok_and(|cmp| (1..page.values.len()).all(|i| cmp(i - 1, i).is_le()));
        page
    }

    /// The positions `[a, b)` of the non-NULL values within `b` (a sorted page only); `None`
    /// when a bound cannot be compared with the values.
    fn sorted_range(&self, b: &Bounds) -> Option<std::ops::Range<usize>> {
        let n = self.values.len();
        let nulls = self.values.logical_null_count();
        let first = |bound: &Bound<ArrayRef>, lower: bool| -> Option<usize> {
            let (v, inclusive) = match bound {
                Bound::Unbounded => return Some(if lower { nulls } else { n }),
                Bound::Included(v) => (v, true),
                Bound::Excluded(v) => (v, false),
            };
            if v.len() != 1 || v.is_null(0) {
                return None;
            }
            let cmp = make_comparator(self.values.as_ref(), v.as_ref(), NULLS_FIRST).ok()?;
            // lower: first position not below the bound; upper: first position above it
            let before = |i: usize| {
                let o = cmp(nulls + i, 0);
                match (lower, inclusive) {
                    (true, true) => o.is_lt(),
                    (true, false) | (false, true) => o.is_le(),
                    (false, false) => o.is_lt(),
                }
            };
            Some(nulls + crate::partition_point(n - nulls, before))
        };
        let a = first(&b.lo, true)?;
        let z = first(&b.hi, false)?;
        Some(a..z.max(a))
    }

    /// Appends the ids of positions `range` as one run in id order: a few are sorted, many
    /// are picked from the id-ordered walk.
    fn push_positions(&self, out: &mut SortedRuns, range: std::ops::Range<usize>) {
        let ids = self.ids.values();
        if range.len() * 8 < self.by_id.len() {
            let mut picked: Vec<u64> = ids.get(range).unwrap_or_default().to_vec();
            picked.sort_unstable();
            out.push_run(picked);
        } else {
            self.push_run(out, |p| range.contains(&p));
        }
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
            + self.ids_by_id.capacity() * std::mem::size_of::<u64>()
    }

    /// Appends, in id order, the ids of the positions `keep` accepts; one sorted run.
    fn push_run(&self, out: &mut SortedRuns, keep: impl Fn(usize) -> bool) {
        if self.ids_by_id.len() == self.by_id.len() && !self.ids_by_id.is_empty() {
            out.push_run_where(
                self.by_id
                    .iter()
                    .zip(&self.ids_by_id)
                    .map(|(&p, &id)| (id, keep(p as usize))),
            );
            return;
        }
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
            None if self.ids_by_id.len() == self.by_id.len() && !self.ids_by_id.is_empty() => {
                out.push_run(self.ids_by_id.iter().copied())
            }
            None => self.push_run(out, |_| true),
            Some(n) => self.push_run(out, |p| p < n.len() && n.is_null(p) == nulls),
        }
    }

    fn range_mask(&self, b: &Bounds, m: PageMatch) -> Result<Option<BooleanArray>> {
        crate::select::range_mask(&self.values, b, m)
    }

    fn eval_range(&self, b: &Bounds, m: PageMatch, out: &mut IdLists) -> Result<()> {
        if self.sorted && m != PageMatch::All {
            if let Some(range) = self.sorted_range(b) {
                let nulls = self.values.logical_null_count();
                self.push_positions(&mut out.nulls, 0..nulls);
                self.push_positions(&mut out.trues, range);
                return Ok(());
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, Int64Array};
    use arrow_schema::DataType;

    fn ids(n: usize) -> Arc<UInt64Array> {
        // ids not in position order, as an index page holds them
        Arc::new(UInt64Array::from_iter_values(
            (0..n as u64).map(|i| (i * 7919) % 1000),
        ))
    }

    fn queries(vals: &[Option<i64>]) -> Vec<Query> {
        let s = |v: i64| -> ArrayRef { Arc::new(Int64Array::from(vec![v])) };
        let mut out = Vec::new();
        for v in vals.iter().flatten().chain([&-1000, &1000, &0]) {
            out.push(Query::Equals(s(*v)));
            out.push(Query::Range(Bound::Included(s(*v)), Bound::Unbounded));
            out.push(Query::Range(Bound::Unbounded, Bound::Excluded(s(*v))));
            out.push(Query::Range(
                Bound::Excluded(s(*v)),
                Bound::Included(s(v + 3)),
            ));
            out.push(Query::Range(
                Bound::Included(s(v + 3)),
                Bound::Included(s(*v)),
            ));
        }
        out
    }

    /// A page checked to be in index order answers by binary search exactly as row-by-row
    /// evaluation does; a page out of order (corrupt) falls back to row by row.
    #[test]
    fn sorted_pages_answer_as_unsorted_evaluation_does() {
        let mut sorted: Vec<Option<i64>> = (0..300)
            .map(|i| (i % 11 != 0).then_some((i * 37) % 90 - 45))
            .collect();
        sorted.sort();
        let mut shuffled = sorted.clone();
        shuffled.reverse();
        for vals in [sorted, shuffled] {
            let values: ArrayRef = Arc::new(Int64Array::from(vals.clone()));
            let index = Page::new_index_page(values.clone(), ids(vals.len()));
            let plain = Page::new(values, ids(vals.len()));
            assert_eq!(index.sorted, vals.is_sorted());
            for q in queries(&vals) {
                let mut a = IdLists::default();
                let mut b = IdLists::default();
                index
                    .evaluate_into(&DataType::Int64, &q, PageMatch::Some, &mut a)
                    .unwrap();
                plain
                    .evaluate_into(&DataType::Int64, &q, PageMatch::Some, &mut b)
                    .unwrap();
                assert_eq!(a.into_set(), b.into_set(), "{q:?}");
            }
        }
        // floats in total order (NaN last) with both zeros: bounds at zero keep SQL's
        // equality of -0.0 and 0.0 (the range is widened before the search)
        let vals = vec![
            None,
            Some(f64::NEG_INFINITY),
            Some(-1.5),
            Some(-0.0),
            Some(0.0),
            Some(2.0),
            Some(f64::INFINITY),
            Some(f64::NAN),
        ];
        let values: ArrayRef = Arc::new(Float64Array::from(vals.clone()));
        let index = Page::new_index_page(values.clone(), ids(vals.len()));
        assert!(index.sorted);
        let plain = Page::new(values, ids(vals.len()));
        let f = |v: f64| -> ArrayRef { Arc::new(Float64Array::from(vec![v])) };
        for q in [
            Query::Equals(f(0.0)),
            Query::Equals(f(-0.0)),
            Query::Equals(f(f64::NAN)),
            Query::Range(Bound::Excluded(f(0.0)), Bound::Unbounded),
            Query::Range(Bound::Unbounded, Bound::Excluded(f(0.0))),
            Query::Range(Bound::Included(f(-1.5)), Bound::Included(f(f64::INFINITY))),
        ] {
            let mut a = IdLists::default();
            let mut b = IdLists::default();
            index
                .evaluate_into(&DataType::Float64, &q, PageMatch::Some, &mut a)
                .unwrap();
            plain
                .evaluate_into(&DataType::Float64, &q, PageMatch::Some, &mut b)
                .unwrap();
            assert_eq!(a.into_set(), b.into_set(), "{q:?}");
        }
    }
}
