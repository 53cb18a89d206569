//! One page of `page_data.lance` and exact evaluation of a query on it.

use std::ops::Bound;
use std::sync::Arc;

use arrow_arith::boolean::and_kleene;
use arrow_array::{Array, ArrayRef, BooleanArray, Datum, Scalar, UInt64Array};
use arrow_ord::cmp;
use arrow_ord::ord::make_comparator;
use arrow_ord::sort::sort;
use roaring::RoaringTreemap;

use crate::error::Result;
use crate::lookup::{PageLookup, NULLS_FIRST};
use crate::query::Query;
use crate::result::NullableIdSet;
use crate::select::{prefix_bounds, Bounds, PageMatch};

/// A decoded page: sorted values and their row ids (or addresses).
#[derive(Debug, Clone)]
pub struct Page {
    pub values: ArrayRef,
    pub ids: Arc<UInt64Array>,
}

impl Page {
    /// Bytes the page keeps in memory (its cache weight).
    pub fn size_bytes(&self) -> usize {
        self.values.get_array_memory_size() + self.ids.get_array_memory_size()
    }

    fn push_where(&self, mask: &BooleanArray, out: &mut Vec<u64>) {
        for (i, id) in self.ids.values().iter().enumerate() {
            if mask.is_valid(i) && mask.value(i) {
                out.push(*id);
            }
        }
    }

    /// Ids whose value is NULL (`nulls == true`) or not.
    fn push_by_nullness(&self, nulls: bool, out: &mut Vec<u64>) {
        if self.values.null_count() == 0 {
            if !nulls {
                out.extend_from_slice(self.ids.values());
            }
            return;
        }
        for (i, id) in self.ids.values().iter().enumerate() {
            if self.values.is_null(i) == nulls {
                out.push(*id);
            }
        }
    }

    fn range_mask(&self, b: &Bounds) -> Result<Option<BooleanArray>> {
        let mut mask: Option<BooleanArray> = None;
        let mut apply = |m: BooleanArray| -> Result<()> {
            mask = Some(match mask.take() {
                None => m,
                Some(prev) => and_kleene(&prev, &m)?,
            });
            Ok(())
        };
        match &b.lo {
            Bound::Included(v) => apply(cmp::gt_eq(&self.values, &scalar(v))?)?,
            Bound::Excluded(v) => apply(cmp::gt(&self.values, &scalar(v))?)?,
            Bound::Unbounded => {}
        }
        match &b.hi {
            Bound::Included(v) => apply(cmp::lt_eq(&self.values, &scalar(v))?)?,
            Bound::Excluded(v) => apply(cmp::lt(&self.values, &scalar(v))?)?,
            Bound::Unbounded => {}
        }
        Ok(mask)
    }

    fn eval_range(&self, b: &Bounds, m: PageMatch, out: &mut IdLists) -> Result<()> {
        self.push_by_nullness(true, &mut out.nulls);
        match (m, self.range_mask(b)?) {
            (PageMatch::Some, Some(mask)) => self.push_where(&mask, &mut out.trues),
            // a whole-page match, or unbounded on both sides: every non-NULL row
            _ => self.push_by_nullness(false, &mut out.trues),
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
                out.nulls.extend_from_slice(self.ids.values());
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
        for (i, id) in self.ids.values().iter().enumerate() {
            let matched = !self.values.is_null(i) && {
                let pos = crate::partition_point(k, |j| cmp(i, j).is_gt());
                pos < k && cmp(i, pos).is_eq()
            };
            if matched {
                out.trues.push(*id);
            } else if list_has_null || self.values.is_null(i) {
                out.nulls.push(*id);
            }
        }
        Ok(())
    }
}

/// TRUE and NULL ids gathered from pages, turned into treemaps once per search.
#[derive(Debug, Default)]
pub struct IdLists {
    pub trues: Vec<u64>,
    pub nulls: Vec<u64>,
}

impl IdLists {
    pub fn into_set(self) -> NullableIdSet {
        NullableIdSet::new(sorted_set(self.trues), sorted_set(self.nulls))
    }
}

/// A treemap from ids in any order: sorting first and appending is several times faster than
/// inserting ids one by one (ids of a page are in value order, not id order).
fn sorted_set(mut ids: Vec<u64>) -> RoaringTreemap {
    radix_sort(&mut ids);
    ids.dedup();
    RoaringTreemap::from_sorted_iter(ids).unwrap_or_default()
}

/// LSD radix sort on 12-bit digits, running only the passes the ids' spread needs (ids of a
/// few fragments' pages usually differ in their low 24–36 bits: 2–3 passes). Comparison sort
/// for short inputs.
fn radix_sort(ids: &mut Vec<u64>) {
    const BITS: u32 = 12;
    const BUCKETS: usize = 1 << BITS;
    if ids.len() < 512 {
        ids.sort_unstable();
        return;
    }
    let (Some(&min), Some(&max)) = (ids.iter().min(), ids.iter().max()) else {
        return;
    };
    let spread_bits = 64 - (max - min).leading_zeros();
    let passes = spread_bits.div_ceil(BITS);
    let mut scratch = vec![0u64; ids.len()];
    let mut src = std::mem::take(ids);
    let mut counts = vec![0usize; BUCKETS + 1];
    for pass in 0..passes {
        let shift = pass * BITS;
        counts.iter_mut().for_each(|c| *c = 0);
        for v in &src {
            counts[(((v - min) >> shift) as usize & (BUCKETS - 1)) + 1] += 1;
        }
        for i in 0..BUCKETS {
            counts[i + 1] += counts[i];
        }
        for v in &src {
            let b = ((v - min) >> shift) as usize & (BUCKETS - 1);
            scratch[counts[b]] = *v;
            counts[b] += 1;
        }
        std::mem::swap(&mut src, &mut scratch);
    }
    *ids = src;
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

#[cfg(test)]
mod tests {
    use super::radix_sort;

    #[test]
    fn radix_sort_sorts() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for n in [0usize, 1, 255, 256, 5000] {
            for spread in [1u64 << 8, 1 << 20, 1 << 40, u64::MAX] {
                let mut v: Vec<u64> = (0..n)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        (state % spread).wrapping_add(1 << 33)
                    })
                    .collect();
                let mut want = v.clone();
                want.sort_unstable();
                radix_sort(&mut v);
                assert_eq!(v, want, "n {n} spread {spread}");
            }
        }
    }
}
