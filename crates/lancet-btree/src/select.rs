//! Page selection: which pages a query must look at, and which of them match whole.

use std::collections::BTreeMap;
use std::ops::Bound;

use arrow_arith::boolean::and_kleene;
use arrow_array::{Array, ArrayRef, BooleanArray, Scalar};
use arrow_ord::cmp;
use arrow_ord::sort::sort;

use crate::error::Result;
use crate::lookup::{PageLookup, NULLS_FIRST};
use crate::query::{canonical_zero, prefix_upper_bound, Query};

/// How a selected page is evaluated. Which bounds can be skipped is read off the lookup's
/// `min` and `max`, the same statistics that chose the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageMatch {
    /// Compare every row.
    Some,
    /// Every row satisfies the upper bound (the page's `max` does): compare with the lower.
    Lower,
    /// Every row satisfies the lower bound (the page's `min` does): compare with the upper.
    Upper,
    /// Every non-NULL row is TRUE (the page lies inside both bounds).
    All,
}

impl PageMatch {
    /// Evaluation that is exact for both of two selections of one page.
    fn combine(self, other: Self) -> Self {
        if self == other {
            self
        } else {
            PageMatch::Some
        }
    }
}

/// Lookup rows to read, with how to evaluate each.
pub type Selection = BTreeMap<usize, PageMatch>;

/// `IN` over `sorted` (ascending, no NULL, not a float type): each page that may hold one of
/// the values, with the part of `sorted` within the page's `[min, max]`, and each page
/// holding NULLs (their rows answer NULL) — two binary searches a page, whatever the list's
/// length.
pub(crate) fn select_in(
    lookup: &PageLookup,
    sorted: &ArrayRef,
) -> Result<Vec<(usize, std::ops::Range<usize>)>> {
    let k = sorted.len();
    let min = lookup.comparator(false, sorted)?;
    let max = lookup.comparator(true, sorted)?;
    let with_nulls = lookup.pages_with_nulls();
    let mut out = Vec::new();
    for i in 0..lookup.num_pages() {
        let (lo, hi) = if lookup.maxs.is_null(i) {
            (0, 0)
        } else {
            // the first value at or above the page's min; the first above its max
            let lo = crate::partition_point(k, |j| min(i, j).is_gt());
            let hi = crate::partition_point(k, |j| max(i, j).is_ge());
            (lo, hi.max(lo))
        };
        if hi > lo || i < with_nulls {
            out.push((i, lo..hi));
        }
    }
    Ok(out)
}

/// A range with canonical float zero bounds.
pub(crate) struct Bounds {
    pub lo: Bound<ArrayRef>,
    pub hi: Bound<ArrayRef>,
}

impl Bounds {
    pub fn new(lo: Bound<ArrayRef>, hi: Bound<ArrayRef>) -> Self {
        Self {
            lo: canonical_zero(lo, true),
            hi: canonical_zero(hi, false),
        }
    }
}

/// Adds the pages that may hold rows in `bounds`: from the first page whose `max` reaches
/// `lo` to the last whose `min` is within `hi`; all-NULL pages never hold a match.
fn select_range(lookup: &PageLookup, b: &Bounds, out: &mut Selection) -> Result<()> {
    let n = lookup.num_pages();
    let first_non_null = lookup.all_null_pages();
    let start = match &b.lo {
        Bound::Unbounded => first_non_null,
        Bound::Included(v) | Bound::Excluded(v) => {
            let cmp = lookup.comparator(true, v)?;
            let strict = matches!(b.lo, Bound::Excluded(_));
            first_non_null
                + crate::partition_point(n - first_non_null, |k| {
                    let i = first_non_null + k;
                    if strict {
                        cmp(i, 0).is_le()
                    } else {
                        cmp(i, 0).is_lt()
                    }
                })
        }
    };
    let end = match &b.hi {
        Bound::Unbounded => n,
        Bound::Included(v) | Bound::Excluded(v) => {
            let cmp = lookup.comparator(false, v)?;
            let strict = matches!(b.hi, Bound::Excluded(_));
            crate::partition_point(n, |i| {
                if strict {
                    cmp(i, 0).is_lt()
                } else {
                    cmp(i, 0).is_le()
                }
            })
        }
    };
    let lo_cmp = match &b.lo {
        Bound::Included(v) | Bound::Excluded(v) => Some(lookup.comparator(false, v)?),
        Bound::Unbounded => None,
    };
    let hi_cmp = match &b.hi {
        Bound::Included(v) | Bound::Excluded(v) => Some(lookup.comparator(true, v)?),
        Bound::Unbounded => None,
    };
    for i in start.max(first_non_null)..end {
        let inside_lo = !lookup.mins.is_null(i)
            && lo_cmp.as_ref().is_none_or(|c| match b.lo {
                Bound::Excluded(_) => c(i, 0).is_gt(),
                _ => c(i, 0).is_ge(),
            });
        let inside_hi = !lookup.maxs.is_null(i)
            && hi_cmp.as_ref().is_none_or(|c| match b.hi {
                Bound::Excluded(_) => c(i, 0).is_lt(),
                _ => c(i, 0).is_le(),
            });
        let m = match (inside_lo, inside_hi) {
            (true, true) => PageMatch::All,
            (true, false) => PageMatch::Upper,
            (false, true) => PageMatch::Lower,
            (false, false) => PageMatch::Some,
        };
        out.entry(i).and_modify(|e| *e = e.combine(m)).or_insert(m);
    }
    Ok(())
}

/// Pages with NULL rows must be read by every comparison so that its NULL results are known.
fn add_null_pages(lookup: &PageLookup, out: &mut Selection) {
    for i in 0..lookup.pages_with_nulls() {
        out.entry(i).or_insert(PageMatch::Some);
    }
}

fn all_pages(lookup: &PageLookup, out: &mut Selection) {
    for i in 0..lookup.num_pages() {
        out.entry(i).or_insert(PageMatch::Some);
    }
}

/// The pages `query` must read.
pub fn select(lookup: &PageLookup, query: &Query) -> Result<Selection> {
    let mut out = Selection::new();
    match query {
        Query::IsNull => {
            let all_null = lookup.all_null_pages();
            for i in 0..lookup.pages_with_nulls() {
                let m = if i < all_null {
                    PageMatch::All
                } else {
                    PageMatch::Some
                };
                out.insert(i, m);
            }
        }
        Query::Equals(v) if v.is_null(0) => all_pages(lookup, &mut out),
        Query::Equals(v) => {
            let b = Bounds::new(Bound::Included(v.clone()), Bound::Included(v.clone()));
            select_range(lookup, &b, &mut out)?;
            add_null_pages(lookup, &mut out);
        }
        Query::Range(lo, hi) => {
            let b = Bounds::new(lo.clone(), hi.clone());
            select_range(lookup, &b, &mut out)?;
            add_null_pages(lookup, &mut out);
        }
        Query::LikePrefix(prefix) => {
            let (lo, hi) = prefix_bounds(lookup.value_type(), prefix)?;
            select_range(lookup, &Bounds::new(lo, hi), &mut out)?;
            add_null_pages(lookup, &mut out);
        }
        Query::IsIn(values) => {
            if values.null_count() > 0 {
                // x IN (.., NULL) is NULL on every row that matches no value.
                all_pages(lookup, &mut out);
            } else {
                let sorted = sort(values.as_ref(), Some(NULLS_FIRST))?;
                for k in 0..sorted.len() {
                    let v = sorted.slice(k, 1);
                    let b = Bounds::new(Bound::Included(v.clone()), Bound::Included(v));
                    select_range(lookup, &b, &mut out)?;
                }
                // a page matches whole only when every row equals one value; Some is exact
                for m in out.values_mut() {
                    *m = PageMatch::Some;
                }
                add_null_pages(lookup, &mut out);
            }
        }
    }
    Ok(out)
}

/// `[prefix, next(prefix))` as bounds of the index's string type.
pub(crate) fn prefix_bounds(
    value_type: &arrow_schema::DataType,
    prefix: &str,
) -> Result<(Bound<ArrayRef>, Bound<ArrayRef>)> {
    let scalar = |s: &str| -> Result<ArrayRef> {
        let arr: ArrayRef = std::sync::Arc::new(arrow_array::StringArray::from(vec![s]));
        Ok(arrow_cast::cast(&arr, value_type)?)
    };
    let lo = Bound::Included(scalar(prefix)?);
    let hi = match prefix_upper_bound(prefix) {
        Some(next) => Bound::Excluded(scalar(&next)?),
        None => Bound::Unbounded,
    };
    Ok((lo, hi))
}

/// TRUE where a value of `values` lies within the bounds `m` says must be compared (NULL
/// where the value is NULL); `None` when none must (every non-NULL row matches).
pub(crate) fn range_mask(
    values: &ArrayRef,
    b: &Bounds,
    m: PageMatch,
) -> Result<Option<BooleanArray>> {
    let (check_lo, check_hi) = match m {
        PageMatch::Some => (true, true),
        PageMatch::Lower => (true, false),
        PageMatch::Upper => (false, true),
        PageMatch::All => (false, false),
    };
    let scalar = |v: &ArrayRef| Scalar::new(v.clone());
    let mut mask: Option<BooleanArray> = None;
    let mut apply = |m: BooleanArray| -> Result<()> {
        mask = Some(match mask.take() {
            None => m,
            Some(prev) => and_kleene(&prev, &m)?,
        });
        Ok(())
    };
    match &b.lo {
        Bound::Included(v) if check_lo => apply(cmp::gt_eq(values, &scalar(v))?)?,
        Bound::Excluded(v) if check_lo => apply(cmp::gt(values, &scalar(v))?)?,
        _ => {}
    }
    match &b.hi {
        Bound::Included(v) if check_hi => apply(cmp::lt_eq(values, &scalar(v))?)?,
        Bound::Excluded(v) if check_hi => apply(cmp::lt(values, &scalar(v))?)?,
        _ => {}
    }
    Ok(mask)
}
