//! SQL three-valued results: the rows where a predicate is TRUE and the rows where it is NULL.
//! Everything else is FALSE. The two sets are kept disjoint.

use lancet_proto::RowAddress;
use roaring::RoaringTreemap;

/// Every physical row address of `fragments` (id, physical rows): the domain a NOT
/// complements in. A fragment id beyond 32 bits has no address and adds none.
pub fn address_universe(fragments: impl IntoIterator<Item = (u64, u64)>) -> RoaringTreemap {
    let mut out = RoaringTreemap::new();
    for (id, rows) in fragments {
        if let Ok(id) = u32::try_from(id) {
            let base = RowAddress::first_of(id);
            out.insert_range(base..base.saturating_add(rows));
        }
    }
    out
}

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

    /// Rows `truth` answers, row `i` being address `base + i`: TRUE and NULL kept, FALSE
    /// dropped.
    pub fn from_truth(base: u64, truth: impl IntoIterator<Item = Option<bool>>) -> Self {
        let mut true_ids = RoaringTreemap::new();
        let mut null_ids = RoaringTreemap::new();
        for (offset, v) in (0u64..).zip(truth) {
            match v {
                Some(true) => true_ids.insert(base | offset),
                Some(false) => false,
                None => null_ids.insert(base | offset),
            };
        }
        Self { true_ids, null_ids }
    }

    /// No row is TRUE or NULL.
    pub fn is_empty(&self) -> bool {
        self.true_ids.is_empty() && self.null_ids.is_empty()
    }

    /// Results over disjoint row sets joined, without copying either when one is empty (the
    /// usual case of an index and a scan: one of them answers everything).
    pub fn join_disjoint(self, other: Self) -> Self {
        if other.is_empty() {
            self
        } else if self.is_empty() {
            other
        } else {
            self.or(&other)
        }
    }

    /// Drops the rows of fragments a version does not have, and the rows past a fragment's
    /// physical rows (`rows_of`: a fragment id's physical rows, `None` when the version does
    /// not list it), fragment by fragment (the addresses' high words are fragment ids): in
    /// place, nothing the size of the table built; usually nothing is dropped or copied.
    pub fn keep_within(&mut self, rows_of: impl Fn(u32) -> Option<u64>) {
        for ids in [&mut self.true_ids, &mut self.null_ids] {
            let mut drop: Vec<std::ops::RangeInclusive<u64>> = Vec::new();
            for (id, offsets) in ids.bitmaps() {
                let all = RowAddress::fragment_range(id);
                match rows_of(id) {
                    None => drop.push(all),
                    Some(rows) if offsets.max().is_some_and(|m| u64::from(m) >= rows) => {
                        drop.push(all.start().saturating_add(rows)..=*all.end())
                    }
                    Some(_) => {}
                }
            }
            for range in drop {
                ids.remove_range(range);
            }
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

    #[test]
    fn row_sets_of_a_version() {
        let at = |f, o| RowAddress::new(f, o).as_u64();
        let u = address_universe([(1, 2), (3, 1), (u64::from(u32::MAX) + 1, 5)]);
        assert_eq!(u.iter().collect::<Vec<_>>(), [at(1, 0), at(1, 1), at(3, 0)]);
        let t = NullableIdSet::from_truth(at(3, 0), [Some(true), Some(false), None]);
        assert_eq!(t, set(&[at(3, 0)], &[at(3, 2)]));
        // fragment 3 has one row in the version, fragment 2 is not listed
        let mut within = set(&[at(3, 0), at(2, 0)], &[at(3, 2)]);
        within.keep_within(|id| (id == 3).then_some(1));
        assert_eq!(within, set(&[at(3, 0)], &[]));
        assert!(NullableIdSet::default().is_empty());
        let joined = set(&[1], &[]).join_disjoint(set(&[], &[2]));
        assert_eq!(joined, set(&[1], &[2]));
        assert_eq!(
            NullableIdSet::default().join_disjoint(set(&[4], &[])),
            set(&[4], &[])
        );
    }
}
