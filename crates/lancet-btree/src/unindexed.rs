//! Queries evaluated on a column's values read directly (fragments no index covers), row `i`
//! answering as id `base + i`: a comparison kernel's mask turned into ids by its set bits,
//! with no per-row page bookkeeping. `IN` lists go through [`Page`], which sorts the list once.

use std::ops::Bound;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, UInt64Array};
use arrow_buffer::BooleanBuffer;
use roaring::RoaringTreemap;

use crate::error::Result;
use crate::page::Page;
use crate::query::Query;
use crate::select::{prefix_bounds, range_mask, Bounds, PageMatch};
use lancet_filter::NullableIdSet;

/// `query` on `values`, row `i` answering as id `base + i`: the rows where it is TRUE and
/// where it is NULL.
pub fn evaluate(values: &ArrayRef, query: &Query, base: u64) -> Result<NullableIdSet> {
    let n = values.len();
    let valid = values.logical_nulls().map(|v| v.into_inner());
    let none = || RoaringTreemap::new();
    let all = || ids_where(&BooleanBuffer::new_set(n), base);
    let null_rows = || match &valid {
        Some(v) => ids_where(&!v, base),
        None => none(),
    };
    let non_null_rows = || match &valid {
        Some(v) => ids_where(v, base),
        None => all(),
    };
    let bounds = match query {
        Query::IsNull => return Ok(NullableIdSet::new(null_rows(), none())),
        Query::Equals(v) if v.is_null(0) => return Ok(NullableIdSet::new(none(), all())),
        Query::Equals(v) => Bounds::new(Bound::Included(v.clone()), Bound::Included(v.clone())),
        Query::Range(lo, hi) => Bounds::new(lo.clone(), hi.clone()),
        Query::LikePrefix(p) => {
            let (lo, hi) = prefix_bounds(values.data_type(), p)?;
            Bounds::new(lo, hi)
        }
        Query::IsIn(_) => {
            let ids = Arc::new(UInt64Array::from_iter_values(
                (0..n as u64).map(|i| base.saturating_add(i)),
            ));
            return Page::new(values.clone(), ids).evaluate_unindexed(query);
        }
    };
    let trues = match range_mask(values, &bounds, PageMatch::Some)? {
        Some(mask) => {
            let selected = match mask.nulls() {
                Some(v) => mask.values() & v.inner(),
                None => mask.values().clone(),
            };
            ids_where(&selected, base)
        }
        None => non_null_rows(),
    };
    Ok(NullableIdSet::new(trues, null_rows()))
}

/// `base + i` for every set bit `i`.
fn ids_where(bits: &BooleanBuffer, base: u64) -> RoaringTreemap {
    let mut out = RoaringTreemap::new();
    // set bits come in ascending order, so the ids do: append cannot refuse them
    let _ = out.append(bits.set_indices().map(|i| base.saturating_add(i as u64)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, StringArray};

    /// The mask path answers as the page path, on every query kind, NULLs included.
    #[test]
    fn masks_answer_as_pages() {
        let values: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(3.0),
            None,
            Some(-0.0),
            Some(7.5),
            Some(1.0),
            None,
        ]));
        let one = |v: f64| -> ArrayRef { Arc::new(Float64Array::from(vec![v])) };
        let null: ArrayRef = Arc::new(Float64Array::from(vec![None::<f64>]));
        let queries = [
            Query::IsNull,
            Query::Equals(one(0.0)),
            Query::Equals(null),
            Query::Range(Bound::Excluded(one(1.0)), Bound::Unbounded),
            Query::Range(Bound::Included(one(0.0)), Bound::Included(one(3.0))),
            Query::Range(Bound::Unbounded, Bound::Unbounded),
            Query::IsIn(Arc::new(Float64Array::from(vec![Some(7.5), None]))),
        ];
        let base = 5u64 << 32;
        let ids = Arc::new(UInt64Array::from_iter_values(base..base + 6));
        let page = Page::new(values.clone(), ids);
        for q in &queries {
            assert_eq!(
                evaluate(&values, q, base).unwrap(),
                page.evaluate_unindexed(q).unwrap(),
                "{q:?}"
            );
        }
        let words: ArrayRef = Arc::new(StringArray::from(vec![Some("apple"), None, Some("apt")]));
        let ids = Arc::new(UInt64Array::from_iter_values(0..3));
        let q = Query::LikePrefix("ap".into());
        assert_eq!(
            evaluate(&words, &q, 0).unwrap(),
            Page::new(words.clone(), ids)
                .evaluate_unindexed(&q)
                .unwrap()
        );
    }
}
