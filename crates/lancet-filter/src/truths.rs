//! SQL three-valued results: the rows where a predicate is TRUE and the rows where it is NULL.
//! Everything else is FALSE. The two sets are kept disjoint.

use roaring::RoaringTreemap;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct NullableIdSet {
    /// Rows where the predicate is TRUE.
    pub true_ids: RoaringTreemap,
    /// Rows where the predicate is NULL (unknown).
    pub null_ids: RoaringTreemap,
}

impl NullableIdSet {
    pub fn new(true_ids: RoaringTreemap, null_ids: RoaringTreemap) -> Self {
        let null_ids = null_ids - &true_ids;
        Self { true_ids, null_ids }
    }

    /// Kleene AND: TRUE if both are TRUE; NULL if neither is FALSE and one is NULL.
    pub fn and(&self, other: &Self) -> Self {
        let true_ids = &self.true_ids & &other.true_ids;
        let null_ids = (&self.null_ids & &other.null_ids)
            | (&self.null_ids & &other.true_ids)
            | (&other.null_ids & &self.true_ids);
        Self { true_ids, null_ids }
    }

    /// Kleene OR: TRUE if either is TRUE; NULL if neither is TRUE and one is NULL.
    pub fn or(&self, other: &Self) -> Self {
        let true_ids = &self.true_ids | &other.true_ids;
        let null_ids = (&self.null_ids | &other.null_ids) - &true_ids;
        Self { true_ids, null_ids }
    }

    /// Kleene NOT within `universe` (every row the predicate was evaluated on): NULL stays NULL.
    pub fn not(&self, universe: &RoaringTreemap) -> Self {
        let true_ids = universe - &self.true_ids - &self.null_ids;
        Self {
            true_ids,
            null_ids: self.null_ids.clone(),
        }
    }

    /// Merges results over disjoint row sets (index segments).
    pub fn union_disjoint(&mut self, other: Self) {
        self.true_ids |= other.true_ids;
        self.null_ids |= other.null_ids;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(t: &[u64], n: &[u64]) -> NullableIdSet {
        NullableIdSet::new(t.iter().copied().collect(), n.iter().copied().collect())
    }

    #[test]
    fn kleene_truth_tables() {
        // rows: 0 = (T,T) 1 = (T,N) 2 = (T,F) 3 = (N,N) 4 = (N,F) 5 = (F,F)
        let a = set(&[0, 1, 2], &[3, 4]);
        let b = set(&[0], &[1, 3]);
        let and = a.and(&b);
        assert_eq!(and, set(&[0], &[1, 3]));
        let or = a.or(&b);
        assert_eq!(or, set(&[0, 1, 2], &[3, 4]));
        let u: RoaringTreemap = (0..6).collect();
        assert_eq!(a.not(&u), set(&[5], &[3, 4]));
        assert_eq!(a.not(&u).not(&u), a);
    }
}
