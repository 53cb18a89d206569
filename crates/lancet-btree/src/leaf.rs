//! One filter leaf, answered as Lance's BTree answers it: the queries a leaf is, with its
//! literals typed by the column and SQL NULL semantics (a comparison with NULL is NULL on every
//! row; BETWEEN with a NULL end is two comparisons), folded where a conjunction bounds one
//! column twice ([`intersect_ranges`]); and the same leaf evaluated on a column's values where
//! no index covers them ([`evaluate_leaf`]), so an indexed and a scanned fragment answer alike.

use std::ops::Bound;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, Scalar, StringArray, UInt64Array};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::DataType;
use lancet_filter::{is_string, strict, typed, Leaf, Lit, Op, Typing};
use roaring::RoaringTreemap;

use crate::error::{BTreeError, Result};
use crate::query::Query;
use lancet_filter::NullableIdSet;

fn invalid(reason: impl Into<String>) -> BTreeError {
    BTreeError::InvalidInput(reason.into())
}

/// `leaf` on one column's values (`column` names it in errors), row `i` answering as id
/// `base + i`: LIKE patterns matched, every other leaf as its BTree queries evaluated on the
/// values (cast to the type they compare in), combined with AND.
pub fn evaluate_leaf(
    column: &str,
    leaf: &Leaf,
    typing: Typing,
    values: ArrayRef,
    base: u64,
) -> Result<NullableIdSet> {
    if let Leaf::Like {
        pattern,
        case_insensitive,
    } = leaf
    {
        let t = values.data_type().clone();
        if !is_string(&t) {
            return Err(invalid(format!(
                "LIKE needs a string column; {column} is {t}"
            )));
        }
        let p = cast_with_options(
            &(Arc::new(StringArray::from(vec![pattern.as_str()])) as ArrayRef),
            &t,
            &CastOptions::default(),
        )
        .map_err(BTreeError::from)?;
        let p = Scalar::new(p);
        let mask = if *case_insensitive {
            arrow_string::like::ilike(&values, &p)
        } else {
            arrow_string::like::like(&values, &p)
        }
        .map_err(|e| invalid(format!("LIKE {pattern:?}: {e}")))?;
        let n = values.len() as u64;
        let ids = UInt64Array::from_iter_values(base..base.saturating_add(n));
        return Ok(mask_to_set(&mask, ids.values()));
    }
    let plan = leaf_queries(column, leaf, typing, values.data_type())?;
    let values = match &plan.compare_as {
        None => values,
        Some(t) => cast_with_options(&values, t, &strict())
            .map_err(|e| invalid(format!("column {column} cannot be compared as {t}: {e}")))?,
    };
    let mut result: Option<NullableIdSet> = None;
    for q in plan.queries {
        let part = crate::unindexed::evaluate(&values, &q, base)?;
        result = Some(match result {
            None => part,
            Some(prev) => prev.and(&part),
        });
    }
    Ok(result.unwrap_or_default())
}

/// The conjunction of `leaves` on one column's values (row `i` answering as id `base + i`),
/// each evaluated as [`evaluate_leaf`] does.
pub fn evaluate_leaves(
    column: &str,
    leaves: &[&Leaf],
    typing: Typing,
    values: ArrayRef,
    base: u64,
) -> Result<NullableIdSet> {
    let mut out: Option<NullableIdSet> = None;
    for leaf in leaves {
        let r = evaluate_leaf(column, leaf, typing, values.clone(), base)?;
        out = Some(match out {
            None => r,
            Some(prev) => prev.and(&r),
        });
    }
    Ok(out.unwrap_or_default())
}

/// Whether a BTree may answer the conjunction of `leaves` at all (no `LIKE` pattern, which
/// no range expresses): when not, its pages need not be read.
pub fn index_may_answer(leaves: &[&Leaf]) -> bool {
    !leaves.iter().any(|l| matches!(l, Leaf::Like { .. }))
}

/// The queries a BTree whose values are of type `value_type` answers the conjunction of
/// `leaves` on `column` with, folded ([`intersect_ranges`]); `None` when a leaf compares in
/// another type than the index's (an index answers comparisons in its own value type only)
/// or is a `LIKE` no range expresses: the column is then read.
pub fn index_queries(
    column: &str,
    leaves: &[&Leaf],
    typing: Typing,
    value_type: &DataType,
) -> Result<Option<Vec<Query>>> {
    if !index_may_answer(leaves) {
        return Ok(None);
    }
    // every leaf is planned (a literal its column cannot take is the filter's error)
    let mut queries = Some(Vec::new());
    for leaf in leaves {
        let plan = leaf_queries(column, leaf, typing, value_type)?;
        match (&mut queries, plan.compare_as) {
            (Some(q), None) => q.extend(plan.queries),
            _ => queries = None,
        }
    }
    Ok(queries.map(intersect_ranges))
}

/// The BTree queries of one leaf on a column of type `t`, to be combined with AND
/// (BETWEEN with a NULL end is `x >= a AND x <= b`), and the type they compare in; the
/// literals typed by the column ([`lancet_filter::typed`]).
pub fn leaf_queries(
    column: &str,
    leaf: &Leaf,
    typing: Typing,
    t: &DataType,
) -> Result<LeafQueries> {
    let lits: Vec<&Lit> = match leaf {
        Leaf::Cmp(_, l) => vec![l],
        Leaf::Between(a, b) => vec![a, b],
        Leaf::In(list) => list.iter().collect(),
        Leaf::IsNull | Leaf::Prefix(_) | Leaf::Like { .. } => Vec::new(),
    };
    let (compare_as, values) =
        typed(&lits, typing, t).map_err(|e| invalid(format!("column {column} ({t}): {e}")))?;
    let qt = compare_as.as_ref().unwrap_or(t);
    let mut values = values.into_iter();
    let mut next = || {
        values
            .next()
            .ok_or_else(|| BTreeError::InvalidInput("a literal was not typed".into()))
    };
    let q = match leaf {
        Leaf::Cmp(op, _) => {
            let s = next()?;
            if s.is_null(0) {
                // a comparison with NULL is NULL on every row
                Query::Equals(s)
            } else {
                match op {
                    Op::Eq => Query::Equals(s),
                    Op::Lt => Query::Range(Bound::Unbounded, Bound::Excluded(s)),
                    Op::LtEq => Query::Range(Bound::Unbounded, Bound::Included(s)),
                    Op::Gt => Query::Range(Bound::Excluded(s), Bound::Unbounded),
                    Op::GtEq => Query::Range(Bound::Included(s), Bound::Unbounded),
                }
            }
        }
        Leaf::Between(..) => {
            let (a, b) = (next()?, next()?);
            if a.is_null(0) || b.is_null(0) {
                let nulls_or = |s: ArrayRef, bound: fn(ArrayRef) -> Query| {
                    if s.is_null(0) {
                        Query::Equals(s)
                    } else {
                        bound(s)
                    }
                };
                let queries = vec![
                    nulls_or(a, |s| Query::Range(Bound::Included(s), Bound::Unbounded)),
                    nulls_or(b, |s| Query::Range(Bound::Unbounded, Bound::Included(s))),
                ];
                return Ok(LeafQueries {
                    compare_as,
                    queries,
                });
            }
            Query::Range(Bound::Included(a), Bound::Included(b))
        }
        Leaf::In(list) => {
            let arrays = (0..list.len())
                .map(|_| next())
                .collect::<Result<Vec<_>>>()?;
            let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
            Query::IsIn(arrow_select::concat::concat(&refs).map_err(BTreeError::from)?)
        }
        Leaf::IsNull => Query::IsNull,
        Leaf::Prefix(p) if is_string(qt) => Query::LikePrefix(p.clone()),
        Leaf::Prefix(_) | Leaf::Like { .. } => {
            return Err(invalid(format!(
                "LIKE needs a string column; {column} is {t}"
            )))
        }
    };
    Ok(LeafQueries {
        compare_as,
        queries: vec![q],
    })
}

/// A leaf's BTree queries and the type they compare in: `None` is the column's own type
/// (an index on it can answer), `Some(t)` a common type the column's values are cast to.
#[derive(Debug)]
pub struct LeafQueries {
    pub compare_as: Option<DataType>,
    pub queries: Vec<Query>,
}

/// Folds the range and equality queries of one conjunction into one range (the largest
/// lower bound, the smallest upper; on a tie the excluding one), keeping the rest. Bounds
/// at NULL, NaN or a float zero (where total order and SQL disagree on -0.0) are not folded.
pub fn intersect_ranges(queries: Vec<Query>) -> Vec<Query> {
    fn foldable(v: &ArrayRef) -> bool {
        use arrow_array::cast::AsArray;
        use arrow_array::types::{Float32Type, Float64Type};
        if v.len() != 1 || v.is_null(0) {
            return false;
        }
        match v.data_type() {
            DataType::Float64 => {
                let f = v.as_primitive::<Float64Type>().value(0);
                f != 0.0 && !f.is_nan()
            }
            DataType::Float32 => {
                let f = v.as_primitive::<Float32Type>().value(0);
                f != 0.0 && !f.is_nan()
            }
            DataType::Float16 => false,
            _ => true,
        }
    }
    fn bound_ok(b: &Bound<ArrayRef>) -> bool {
        match b {
            Bound::Included(v) | Bound::Excluded(v) => foldable(v),
            Bound::Unbounded => true,
        }
    }
    /// How `a` orders against `b` (`None`: not comparable).
    fn order(a: &ArrayRef, b: &ArrayRef) -> Option<std::cmp::Ordering> {
        let cmp =
            arrow_ord::ord::make_comparator(a.as_ref(), b.as_ref(), Default::default()).ok()?;
        Some(cmp(0, 0))
    }
    /// The tighter of two lower (`lower`) or upper bounds.
    fn tighter(a: Bound<ArrayRef>, b: Bound<ArrayRef>, lower: bool) -> Option<Bound<ArrayRef>> {
        use std::cmp::Ordering::*;
        let (av, bv) = match (&a, &b) {
            (Bound::Unbounded, _) => return Some(b),
            (_, Bound::Unbounded) => return Some(a),
            (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
                (x, y)
            }
        };
        Some(match (order(av, bv)?, lower) {
            (Greater, true) | (Less, false) => a,
            (Less, true) | (Greater, false) => b,
            (Equal, _) => match a {
                Bound::Excluded(_) => a,
                _ => b,
            },
        })
    }
    let foldable_count = queries
        .iter()
        .filter(|q| match q {
            Query::Range(lo, hi) => bound_ok(lo) && bound_ok(hi),
            Query::Equals(v) => foldable(v),
            _ => false,
        })
        .count();
    if foldable_count < 2 {
        return queries;
    }
    let (mut lo, mut hi) = (Bound::Unbounded, Bound::Unbounded);
    let mut rest = Vec::new();
    for q in queries {
        let (l, h) = match q {
            Query::Range(l, h) if bound_ok(&l) && bound_ok(&h) => (l, h),
            Query::Equals(v) if foldable(&v) => (Bound::Included(v.clone()), Bound::Included(v)),
            other => {
                rest.push(other);
                continue;
            }
        };
        match (
            tighter(lo.clone(), l.clone(), true),
            tighter(hi.clone(), h.clone(), false),
        ) {
            (Some(a), Some(b)) => (lo, hi) = (a, b),
            // not comparable: keep it as its own query
            _ => rest.push(Query::Range(l, h)),
        }
    }
    rest.insert(0, Query::Range(lo, hi));
    rest
}

/// TRUE ids where the mask is TRUE, NULL ids where it is NULL.
fn mask_to_set(mask: &BooleanArray, ids: &[u64]) -> NullableIdSet {
    let mut true_ids = RoaringTreemap::new();
    let mut null_ids = RoaringTreemap::new();
    for (i, id) in ids.iter().enumerate() {
        if mask.is_null(i) {
            null_ids.insert(*id);
        } else if mask.value(i) {
            true_ids.insert(*id);
        }
    }
    NullableIdSet::new(true_ids, null_ids)
}

/// `filter` over the rows of `batch`, row `i` answering as id `i`: each leaf as
/// [`evaluate_leaf`] answers it, comparisons of computed values on the batch's columns, with
/// SQL's three-valued logic. (A merge_insert condition over `source.*` and `target.*`
/// columns is answered so.)
pub async fn evaluate_filter(
    filter: &lancet_filter::Filter,
    batch: &arrow_array::RecordBatch,
) -> Result<NullableIdSet> {
    struct OnBatch<'b> {
        batch: &'b arrow_array::RecordBatch,
        universe: RoaringTreemap,
    }
    impl lancet_filter::Answerer for OnBatch<'_> {
        type Error = BTreeError;

        fn universe(&self) -> &RoaringTreemap {
            &self.universe
        }

        fn leaves<'a>(
            &'a self,
            column: &'a str,
            leaves: &'a [&'a Leaf],
            typing: Typing,
        ) -> lancet_filter::Answering<'a, BTreeError> {
            Box::pin(async move {
                let values = self
                    .batch
                    .column_by_name(column)
                    .cloned()
                    .ok_or_else(|| invalid(format!("no column {column:?}")))?;
                let mut out: Option<NullableIdSet> = None;
                for leaf in leaves {
                    let r = evaluate_leaf(column, leaf, typing, values.clone(), 0)?;
                    out = Some(match out {
                        None => r,
                        Some(prev) => prev.and(&r),
                    });
                }
                Ok(out.unwrap_or_default())
            })
        }

        fn compare<'a>(
            &'a self,
            e: &'a lancet_filter::Expr,
        ) -> lancet_filter::Answering<'a, BTreeError> {
            Box::pin(async move {
                let lancet_filter::Expr::Compare { left, op, right } = e else {
                    return Err(invalid(format!("{e:?} is not a comparison")));
                };
                let truth = lancet_filter::scalar::compare(left, *op, right, self.batch)
                    .map_err(invalid)?;
                let mut true_ids = RoaringTreemap::new();
                let mut null_ids = RoaringTreemap::new();
                for (i, v) in truth.iter().enumerate() {
                    match v {
                        Some(true) => true_ids.insert(i as u64),
                        Some(false) => false,
                        None => null_ids.insert(i as u64),
                    };
                }
                Ok(NullableIdSet::new(true_ids, null_ids))
            })
        }
    }
    let mut universe = RoaringTreemap::new();
    universe.insert_range(0..batch.num_rows() as u64);
    let on = OnBatch { batch, universe };
    let expr = filter.expr().clone().push_not();
    lancet_filter::answer(&on, &expr).await
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};

    fn ints(v: &[Option<i64>]) -> ArrayRef {
        Arc::new(Int64Array::from(v.to_vec()))
    }

    fn ids(s: &NullableIdSet) -> (Vec<u64>, Vec<u64>) {
        (s.true_ids.iter().collect(), s.null_ids.iter().collect())
    }

    #[test]
    fn comparisons_with_null_are_null_and_between_splits_at_a_null_end() {
        let t = DataType::Int64;
        let q = leaf_queries("a", &Leaf::Cmp(Op::Lt, Lit::Null), Typing::Column, &t).unwrap();
        assert!(matches!(&q.queries[..], [Query::Equals(v)] if v.is_null(0)));
        let b = Leaf::Between(Lit::Int(2), Lit::Null);
        let q = leaf_queries("a", &b, Typing::Column, &t).unwrap();
        assert_eq!(q.queries.len(), 2, "x >= 2 AND x <= NULL");
        let values = ints(&[Some(1), Some(3), None]);
        // 1 >= 2 is FALSE; 3 >= 2 AND NULL is NULL; NULL is NULL
        assert_eq!(
            ids(&evaluate_leaf("a", &b, Typing::Column, values, 10).unwrap()),
            (vec![], vec![11, 12])
        );
        let e = leaf_queries("a", &Leaf::Prefix("x".into()), Typing::Column, &t).unwrap_err();
        assert!(e.to_string().contains("LIKE needs a string column"), "{e}");
    }

    #[test]
    fn an_index_answers_leaves_in_its_own_value_type_only() {
        let gt = Leaf::Cmp(Op::Gt, Lit::Int(3));
        let lt = Leaf::Cmp(Op::Lt, Lit::Int(9));
        let like = Leaf::Like {
            pattern: "a%".into(),
            case_insensitive: false,
        };
        let folded = index_queries("v", &[&gt, &lt], Typing::Column, &DataType::Int64).unwrap();
        assert_eq!(folded.map(|q| q.len()), Some(1), "one range");
        let like = index_queries("v", &[&like], Typing::Column, &DataType::Utf8).unwrap();
        assert!(like.is_none());
        // a float literal typed by itself on an integer index compares as floats
        let float = Leaf::Cmp(Op::Gt, Lit::Float(2.5));
        let float = index_queries("v", &[&float], Typing::Common, &DataType::Int64).unwrap();
        assert!(float.is_none());
        // the conjunction evaluated on values, row i at base + i
        let values = ints(&[Some(2), Some(5), None]);
        let got = evaluate_leaves("v", &[&gt, &lt], Typing::Column, values, 100).unwrap();
        assert_eq!(got.true_ids.iter().collect::<Vec<_>>(), [101]);
        assert_eq!(got.null_ids.iter().collect::<Vec<_>>(), [102]);
    }

    #[test]
    fn a_conjunction_on_one_column_folds_into_one_range() {
        let v = |x: i64| ints(&[Some(x)]);
        let folded = intersect_ranges(vec![
            Query::Range(Bound::Included(v(1)), Bound::Unbounded),
            Query::Range(Bound::Excluded(v(3)), Bound::Excluded(v(9))),
            Query::IsNull,
        ]);
        assert_eq!(folded.len(), 2);
        match &folded[0] {
            Query::Range(Bound::Excluded(lo), Bound::Excluded(hi)) => {
                assert_eq!((lo.as_ref(), hi.as_ref()), (v(3).as_ref(), v(9).as_ref()))
            }
            other => panic!("{other:?}"),
        }
        // a NULL bound is never folded
        let kept = intersect_ranges(vec![Query::Equals(ints(&[None])), Query::IsNull]);
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn like_matches_patterns_with_nulls_unknown() {
        let values: ArrayRef = Arc::new(StringArray::from(vec![Some("abc"), None, Some("xbz")]));
        let like = Leaf::Like {
            pattern: "_b%".into(),
            case_insensitive: false,
        };
        assert_eq!(
            ids(&evaluate_leaf("s", &like, Typing::Column, values.clone(), 0).unwrap()),
            (vec![0, 2], vec![1])
        );
        let ilike = Leaf::Like {
            pattern: "A%".into(),
            case_insensitive: true,
        };
        assert_eq!(
            ids(&evaluate_leaf("s", &ilike, Typing::Column, values, 0).unwrap()),
            (vec![0], vec![1])
        );
        let e = evaluate_leaf("i", &like, Typing::Column, ints(&[Some(1)]), 0).unwrap_err();
        assert!(matches!(e, BTreeError::InvalidInput(_)));
    }
}
