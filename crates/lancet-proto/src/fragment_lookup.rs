//! Finding a fragment of a flat list by id. A version's fragments are listed in strictly
//! increasing id order (FORMAT-FACTS §3; lancet-txn's `FragmentIdsIncrease` refuses any other
//! candidate), so a lookup is a binary search. On a list out of order (a hostile manifest)
//! the answer may be `None` for a listed id, never a panic.

use crate::table::DataFragment;

/// Where fragment `id` is in `fragments`.
pub fn fragment_position(fragments: &[DataFragment], id: u64) -> Option<usize> {
    fragments.binary_search_by_key(&id, |f| f.id).ok()
}

/// Fragment `id` of `fragments`.
pub fn fragment_by_id(fragments: &[DataFragment], id: u64) -> Option<&DataFragment> {
    fragment_position(fragments, id).and_then(|i| fragments.get(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_id_is_found_and_an_unlisted_one_is_not() {
        let fragments: Vec<DataFragment> = [1u64, 4, 9]
            .into_iter()
            .map(|id| DataFragment {
                id,
                ..Default::default()
            })
            .collect();
        assert_eq!(fragment_position(&fragments, 4), Some(1));
        assert_eq!(fragment_by_id(&fragments, 9).map(|f| f.id), Some(9));
        assert_eq!(fragment_by_id(&fragments, 5), None);
        assert_eq!(fragment_by_id(&[], 0), None);
    }
}
