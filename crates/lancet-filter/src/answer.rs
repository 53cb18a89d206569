//! Answering a filter over row sets: the Kleene algebra of [`Expr`] on [`NullableIdSet`]s,
//! with the predicates answered by the caller ([`Answerer`]: through an index, or by reading
//! columns).
//!
//! An AND chain's comparisons on one column with one typing are handed to the caller
//! together, so `v >= a AND v < b` is one index range rather than two half-tables
//! intersected. `NOT`, `IS [NOT] TRUE|FALSE` and the constants complement within the
//! caller's universe (every row the filter is answered over).

use std::future::Future;
use std::pin::Pin;

use roaring::RoaringTreemap;

use crate::{Expr, Leaf, NullableIdSet, Truth, Typing};

/// A boxed, sendable future, as the evaluation recurses.
pub type Answering<'a, E> = Pin<Box<dyn Future<Output = Result<NullableIdSet, E>> + Send + 'a>>;

/// What answers a filter's predicates, over one set of rows.
pub trait Answerer: Sync {
    type Error: Send;

    /// Every row the filter is answered over.
    fn universe(&self) -> &RoaringTreemap;

    /// The conjunction of `leaves`, all on `column` with `typing`.
    fn leaves<'a>(
        &'a self,
        column: &'a str,
        leaves: &'a [&'a Leaf],
        typing: Typing,
    ) -> Answering<'a, Self::Error>;

    /// A comparison of computed values ([`Expr::Compare`]), answered by reading its columns.
    fn compare<'a>(&'a self, e: &'a Expr) -> Answering<'a, Self::Error>;
}

/// The rows where `e` is TRUE and where it is NULL.
pub fn answer<'a, A: Answerer>(a: &'a A, e: &'a Expr) -> Answering<'a, A::Error> {
    Box::pin(async move {
        Ok(match e {
            Expr::Leaf {
                column,
                leaf,
                typing,
            } => a.leaves(column, &[leaf], *typing).await?,
            Expr::Compare { .. } => a.compare(e).await?,
            Expr::Const(Some(true)) => {
                NullableIdSet::new(a.universe().clone(), RoaringTreemap::new())
            }
            Expr::Const(Some(false)) => NullableIdSet::default(),
            Expr::Const(None) => NullableIdSet::new(RoaringTreemap::new(), a.universe().clone()),
            Expr::Not(inner) => answer(a, inner).await?.not(a.universe()),
            Expr::And(..) => conjunction(a, e).await?,
            Expr::Or(x, y) => answer(a, x).await?.or(&answer(a, y).await?),
            Expr::Is(inner, truth) => {
                let r = answer(a, inner).await?;
                let u = a.universe();
                let ids = match truth {
                    Truth::True => r.true_ids,
                    Truth::NotTrue => u - &r.true_ids,
                    Truth::False => &(u - &r.true_ids) - &r.null_ids,
                    Truth::NotFalse => &r.true_ids | &r.null_ids,
                };
                NullableIdSet::new(ids, RoaringTreemap::new())
            }
        })
    })
}

/// An AND chain: comparisons on one column with one typing are answered together.
async fn conjunction<A: Answerer>(a: &A, e: &Expr) -> Result<NullableIdSet, A::Error> {
    let mut conjuncts = Vec::new();
    e.conjuncts(&mut conjuncts);
    let mut groups: Vec<(&str, Typing, Vec<&Leaf>)> = Vec::new();
    let mut others = Vec::new();
    for c in conjuncts {
        match c {
            Expr::Leaf {
                column,
                leaf: leaf @ (Leaf::Cmp(..) | Leaf::Between(..)),
                typing,
            } => match groups
                .iter_mut()
                .find(|(c, t, _)| *c == column.as_str() && t == typing)
            {
                Some((_, _, leaves)) => leaves.push(leaf),
                None => groups.push((column.as_str(), *typing, vec![leaf])),
            },
            other => others.push(other),
        }
    }
    let mut result: Option<NullableIdSet> = None;
    let mut and = |part: NullableIdSet| {
        result = Some(match result.take() {
            None => part,
            Some(prev) => prev.and(&part),
        });
    };
    for (column, typing, leaves) in &groups {
        and(a.leaves(column, leaves, *typing).await?);
    }
    for other in others {
        and(answer(a, other).await?);
    }
    Ok(result.unwrap_or_default())
}
