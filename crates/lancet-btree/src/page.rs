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

    fn ids_where(&self, mask: &BooleanArray) -> RoaringTreemap {
        sorted_set(
            self.ids
                .values()
                .iter()
                .enumerate()
                .filter(|(i, _)| mask.is_valid(*i) && mask.value(*i))
                .map(|(_, id)| *id)
                .collect(),
        )
    }

    fn null_ids(&self) -> RoaringTreemap {
        if self.values.null_count() == 0 {
            return RoaringTreemap::new();
        }
        sorted_set(
            (0..self.values.len())
                .filter(|&i| self.values.is_null(i))
                .filter_map(|i| self.ids.values().get(i).copied())
                .collect(),
        )
    }

    fn all_ids(&self) -> RoaringTreemap {
        sorted_set(self.ids.values().to_vec())
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

    fn eval_range(&self, b: &Bounds, m: PageMatch) -> Result<NullableIdSet> {
        let nulls = self.null_ids();
        if m == PageMatch::All {
            return Ok(NullableIdSet::new(self.all_ids() - &nulls, nulls));
        }
        let trues = match self.range_mask(b)? {
            Some(mask) => self.ids_where(&mask),
            // unbounded on both sides: every non-NULL row
            None => self.all_ids() - &nulls,
        };
        Ok(NullableIdSet::new(trues, nulls))
    }

    /// Evaluates `query` on this page exactly.
    pub fn evaluate(
        &self,
        lookup: &PageLookup,
        query: &Query,
        m: PageMatch,
    ) -> Result<NullableIdSet> {
        self.evaluate_as(lookup.value_type(), query, m)
    }

    /// Evaluates `query` on values that are not part of an index (a fragment's column read
    /// directly, for fragments an index does not cover). The values need not be sorted.
    pub fn evaluate_unindexed(&self, query: &Query) -> Result<NullableIdSet> {
        self.evaluate_as(&self.values.data_type().clone(), query, PageMatch::Some)
    }

    fn evaluate_as(
        &self,
        value_type: &arrow_schema::DataType,
        query: &Query,
        m: PageMatch,
    ) -> Result<NullableIdSet> {
        match query {
            Query::IsNull => Ok(NullableIdSet::new(self.null_ids(), RoaringTreemap::new())),
            Query::Equals(v) if v.is_null(0) => {
                Ok(NullableIdSet::new(RoaringTreemap::new(), self.all_ids()))
            }
            Query::Equals(v) => self.eval_range(
                &Bounds::new(Bound::Included(v.clone()), Bound::Included(v.clone())),
                m,
            ),
            Query::Range(lo, hi) => self.eval_range(&Bounds::new(lo.clone(), hi.clone()), m),
            Query::LikePrefix(p) => {
                let (lo, hi) = prefix_bounds(value_type, p)?;
                self.eval_range(&Bounds::new(lo, hi), m)
            }
            Query::IsIn(values) => self.eval_in(values),
        }
    }

    /// `IN`: the list is sorted once; each row is one binary search in it. Float zeros are
    /// compared as equal, as SQL does.
    fn eval_in(&self, values: &ArrayRef) -> Result<NullableIdSet> {
        let list_has_null = values.null_count() > 0;
        let sorted = sort(values.as_ref(), Some(NULLS_FIRST))?;
        let non_null = sorted.slice(sorted.null_count(), sorted.len() - sorted.null_count());
        let with_zeros = add_other_zero(&non_null)?;
        let cmp = make_comparator(self.values.as_ref(), with_zeros.as_ref(), NULLS_FIRST)?;
        let k = with_zeros.len();
        let nulls = self.null_ids();
        let mut matched = Vec::new();
        for (i, id) in self.ids.values().iter().enumerate() {
            if self.values.is_null(i) {
                continue;
            }
            let pos = crate::partition_point(k, |j| cmp(i, j).is_gt());
            if pos < k && cmp(i, pos).is_eq() {
                matched.push(*id);
            }
        }
        let trues = sorted_set(matched);
        let null_ids = if list_has_null {
            self.all_ids() - &trues
        } else {
            nulls
        };
        Ok(NullableIdSet::new(trues, null_ids))
    }
}

/// A treemap from ids in any order: sorting first and appending is several times faster than
/// inserting ids one by one (ids of a page are in value order, not id order).
fn sorted_set(mut ids: Vec<u64>) -> RoaringTreemap {
    radix_sort(&mut ids);
    ids.dedup();
    RoaringTreemap::from_sorted_iter(ids).unwrap_or_default()
}

/// LSD radix sort on bytes, running only the passes the ids' spread needs (row addresses of
/// a few fragments differ in 3–5 low bytes). Comparison sort for short inputs.
fn radix_sort(ids: &mut Vec<u64>) {
    if ids.len() < 256 {
        ids.sort_unstable();
        return;
    }
    let (Some(&min), Some(&max)) = (ids.iter().min(), ids.iter().max()) else {
        return;
    };
    let spread = max - min;
    let passes = (64 - spread.leading_zeros()).div_ceil(8) as usize;
    let mut scratch = vec![0u64; ids.len()];
    let mut src = std::mem::take(ids);
    for pass in 0..passes {
        let shift = pass * 8;
        let mut counts = [0usize; 257];
        for v in &src {
            counts[(((v - min) >> shift) & 0xff) as usize + 1] += 1;
        }
        for i in 0..256 {
            counts[i + 1] += counts[i];
        }
        for v in &src {
            let b = (((v - min) >> shift) & 0xff) as usize;
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
