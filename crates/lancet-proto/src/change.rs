//! One fragment's state before and after a commit.

use crate::table::DataFragment;

/// A fragment a commit touches: its record before (`None`: created) and after (`None`:
/// removed). A commit's changes are the whole difference between two versions' fragments;
/// the invariants judge a tree commit by them alone, so they must be complete.
#[derive(Debug, Clone, PartialEq)]
pub struct FragmentChange {
    pub id: u64,
    pub before: Option<DataFragment>,
    pub after: Option<DataFragment>,
}

impl FragmentChange {
    /// `fragment`, created by this commit.
    pub fn created(fragment: &DataFragment) -> Self {
        FragmentChange {
            id: fragment.id,
            before: None,
            after: Some(fragment.clone()),
        }
    }

    /// A fragment this commit creates.
    pub fn is_created(&self) -> bool {
        self.before.is_none() && self.after.is_some()
    }

    /// A fragment this commit removes.
    pub fn is_removed(&self) -> bool {
        self.before.is_some() && self.after.is_none()
    }
}

/// The changes between two flat fragment lists, each in strictly increasing id order (the
/// caller checks the order): fragments present on one side only, and fragments whose records
/// differ. O(n + m).
pub fn diff_fragments(before: &[DataFragment], after: &[DataFragment]) -> Vec<FragmentChange> {
    let (mut b, mut a) = (before.iter().peekable(), after.iter().peekable());
    let mut out = Vec::new();
    loop {
        match (b.peek(), a.peek()) {
            (None, None) => return out,
            (Some(x), Some(y)) if x.id == y.id => {
                if x != y {
                    out.push(FragmentChange {
                        id: x.id,
                        before: Some((*x).clone()),
                        after: Some((*y).clone()),
                    });
                }
                b.next();
                a.next();
            }
            (Some(x), Some(y)) if y.id < x.id => {
                out.push(created(y));
                a.next();
            }
            (Some(x), _) => {
                out.push(FragmentChange {
                    id: x.id,
                    before: Some((*x).clone()),
                    after: None,
                });
                b.next();
            }
            (None, Some(y)) => {
                out.push(created(y));
                a.next();
            }
        }
    }
}

fn created(f: &DataFragment) -> FragmentChange {
    FragmentChange {
        id: f.id,
        before: None,
        after: Some(f.clone()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn f(id: u64, rows: u64) -> DataFragment {
        DataFragment {
            id,
            physical_rows: rows,
            ..Default::default()
        }
    }

    #[test]
    fn diff_names_created_removed_and_changed_fragments_only() {
        let before = [f(0, 1), f(1, 1), f(3, 1)];
        let after = [f(0, 1), f(1, 2), f(4, 1)];
        let d = diff_fragments(&before, &after);
        let ids: Vec<(u64, bool, bool)> = d
            .iter()
            .map(|c| (c.id, c.before.is_some(), c.after.is_some()))
            .collect();
        assert_eq!(
            ids,
            vec![(1, true, true), (3, true, false), (4, false, true)]
        );
        assert!(d[2].is_created() && d[1].is_removed());
    }
}
