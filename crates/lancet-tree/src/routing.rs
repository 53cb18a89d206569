//! Child lists: the routing rules a root's or interior's children obey, checked against the
//! range the parent assigns, and routing a fragment id to one child.
//!
//! Rules (spec "Routing", "Object references"; decisions 1, 2, 3, 10):
//! - a child path obeys the `_bt/` rules and names a `.node` (height > 0) or `.lance`
//!   (height 0) object; a `.root` is never a child;
//! - a set `base_id` names a dataset-root `BasePath`; an absent one inherits the containing
//!   object's dataset; resolved locations (base URI + path) are unique within the list;
//! - `object_size` is nonzero; interior children have watermark 0 and `num_children ≥ 2`;
//!   leaf children have `num_children` 0; every child has `visible_rows ≤ total_rows`;
//! - all children have one height (one less than the parent's for an interior), at most
//!   [`MAX_HEIGHT`]: with ≥ 2 children per interior and all leaves at one depth, a subtree of
//!   height h holds ≥ 2^h leaves of ≥ 1 record each, and ids fit in u32, so a higher tree is
//!   corrupt. Heights strictly decrease along a descent, which therefore ends after at most
//!   `MAX_HEIGHT + 1` objects even when references form a cycle;
//! - `min_key`s strictly increase, the first equals the parent's lower bound, all lie below the
//!   parent's upper bound (and so ≤ 2^32 − 1). Child `i` covers `[min_key_i, min_key_{i+1})`,
//!   the last child up to the parent's upper bound.
//!
//! Cost: O(children) per check; routing is a binary search.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::collections::HashSet;

use lancet_paths::{
    validate_tree_path, BaseRequirement, BaseTable, ObjectLocation, ResolvedBase, TreeObjectKind,
};
use lancet_proto::table::FragmentTreeChild;

use crate::error::Rule;
use crate::records::{Checked, Totals, Violation};

/// Exclusive end of the fragment-id space: ids fit in u32.
pub const KEY_END: u64 = 1 << 32;
/// The highest a valid tree can be (see the module doc).
pub const MAX_HEIGHT: u32 = 32;

/// A half-open range of fragment ids, `lo..hi`, with `hi ≤ 2^32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRange {
    pub lo: u64,
    pub hi: u64,
}

impl KeyRange {
    /// The whole id space: the root's range.
    pub const ALL: Self = Self { lo: 0, hi: KEY_END };

    pub fn contains(&self, id: u64) -> bool {
        self.lo <= id && id < self.hi
    }
}

/// One checked child reference.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildRef {
    /// Where the object lives: its resolved dataset and its `_bt/` path.
    pub location: ObjectLocation,
    pub kind: TreeObjectKind,
    /// The inherited range: `min_key` to the next sibling's `min_key` (or the parent's end).
    pub range: KeyRange,
    pub height: u32,
    pub num_children: u32,
    pub object_size: u64,
    pub watermark: u64,
    pub summary: Totals,
}

/// Checks a child list against its parent's range and, for an interior, the height its
/// children must have. `watermark_limit` is the root's `next_action_sequence`: every leaf
/// watermark lies below it.
pub(crate) fn check_children(
    children: &[FragmentTreeChild],
    range: KeyRange,
    expected_height: Option<u32>,
    bases: &BaseTable,
    inherited: &ResolvedBase,
    watermark_limit: u64,
) -> Checked<Vec<ChildRef>> {
    let mut out: Vec<ChildRef> = Vec::with_capacity(children.len());
    let mut seen = HashSet::with_capacity(children.len());
    let height = match (children.first(), expected_height) {
        (_, Some(h)) => h,
        (Some(first), None) => first.height,
        (None, None) => return Ok(out),
    };
    if height > MAX_HEIGHT {
        return Err(Violation::new(
            Rule::ChildHeight,
            format!("height {height} exceeds {MAX_HEIGHT}, more than 2^32 fragment ids allow"),
        ));
    }
    for (i, c) in children.iter().enumerate() {
        let at = |detail: String| format!("child {i} ({:?}): {detail}", c.path);
        if c.height != height {
            return Err(Violation::new(
                Rule::ChildHeight,
                at(format!("height {}, its siblings' is {height}", c.height)),
            ));
        }
        let kind = validate_tree_path(&c.path)
            .map_err(|e| Violation::new(Rule::ChildPath, at(e.to_string())))?;
        match (kind, c.height) {
            (TreeObjectKind::Root, _) => {
                return Err(Violation::new(
                    Rule::ChildPath,
                    at("a .root object cannot be a child".into()),
                ))
            }
            (TreeObjectKind::Leaf, 0) | (TreeObjectKind::Node, 1..) => {}
            (TreeObjectKind::Leaf, h) => {
                return Err(Violation::new(
                    Rule::ChildKind,
                    at(format!("a .lance leaf referenced at height {h}")),
                ))
            }
            (TreeObjectKind::Node, _) => {
                return Err(Violation::new(
                    Rule::ChildKind,
                    at("a .node interior referenced at height 0".into()),
                ))
            }
        }
        let base = bases
            .resolve(c.base_id, inherited, BaseRequirement::DatasetRoot)
            .map_err(|e| Violation::new(Rule::ChildBaseId, at(e.to_string())))?;
        let location = ObjectLocation {
            base,
            path: c.path.clone(),
        };
        if !seen.insert((location.base.uri.clone(), location.path.clone())) {
            return Err(Violation::new(
                Rule::DuplicateChild,
                at(format!("{} is referenced twice", location.display_uri())),
            ));
        }
        if c.object_size == 0 {
            return Err(Violation::new(
                Rule::ObjectSize,
                at("object_size is 0".into()),
            ));
        }
        match kind {
            TreeObjectKind::Node => {
                if c.materialized_through_action_sequence != 0 {
                    return Err(Violation::new(
                        Rule::InteriorWatermark,
                        at(format!(
                            "an interior child has watermark {}",
                            c.materialized_through_action_sequence
                        )),
                    ));
                }
                if c.num_children < 2 {
                    return Err(Violation::new(
                        Rule::ChildCount,
                        at(format!("an interior with num_children {}", c.num_children)),
                    ));
                }
            }
            _ => {
                if c.num_children != 0 {
                    return Err(Violation::new(
                        Rule::ChildCount,
                        at(format!("a leaf with num_children {}", c.num_children)),
                    ));
                }
                if c.materialized_through_action_sequence >= watermark_limit {
                    return Err(Violation::new(
                        Rule::SequenceAboveRoot,
                        at(format!(
                            "watermark {} is not below the root's next_action_sequence {watermark_limit}",
                            c.materialized_through_action_sequence
                        )),
                    ));
                }
            }
        }
        if c.visible_rows > c.total_rows {
            return Err(Violation::new(
                Rule::NodeSummary,
                at(format!(
                    "visible_rows {} exceeds total_rows {}",
                    c.visible_rows, c.total_rows
                )),
            ));
        }
        // Ranges: first at the parent's lower bound, strictly increasing, inside the parent.
        if i == 0 && c.min_key != range.lo {
            return Err(Violation::new(
                Rule::MinKeyRange,
                at(format!(
                    "the first child starts at {}, the parent range at {}",
                    c.min_key, range.lo
                )),
            ));
        }
        if let Some(prev) = out.last_mut() {
            if c.min_key <= prev.range.lo {
                return Err(Violation::new(
                    Rule::MinKeyOrder,
                    at(format!(
                        "min_key {} does not exceed the previous child's {}",
                        c.min_key, prev.range.lo
                    )),
                ));
            }
            prev.range.hi = c.min_key;
        }
        if c.min_key >= range.hi {
            return Err(Violation::new(
                Rule::MinKeyRange,
                at(format!(
                    "min_key {} lies outside the parent range {}..{}",
                    c.min_key, range.lo, range.hi
                )),
            ));
        }
        out.push(ChildRef {
            location,
            kind,
            range: KeyRange {
                lo: c.min_key,
                hi: range.hi,
            },
            height: c.height,
            num_children: c.num_children,
            object_size: c.object_size,
            watermark: c.materialized_through_action_sequence,
            summary: Totals {
                fragments: c.num_keys,
                total_rows: c.total_rows,
                visible_rows: c.visible_rows,
            },
        });
    }
    Ok(out)
}

/// The child whose range holds `id`: the rightmost with `min_key ≤ id`. `None` only when the
/// list is empty or `id` lies below the first child (outside the parent range).
pub fn route(children: &[ChildRef], id: u64) -> Option<usize> {
    children
        .partition_point(|c| c.range.lo <= id)
        .checked_sub(1)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use lancet_proto::table::BasePath;

    fn leaf(path: &str, min_key: u64) -> FragmentTreeChild {
        FragmentTreeChild {
            path: path.into(),
            min_key,
            num_keys: 1,
            object_size: 10,
            total_rows: 5,
            visible_rows: 5,
            ..Default::default()
        }
    }

    fn check(children: &[FragmentTreeChild]) -> Checked<Vec<ChildRef>> {
        let bases = BaseTable::new(&[
            BasePath {
                id: 1,
                is_dataset_root: true,
                path: "/src".into(),
                name: None,
            },
            BasePath {
                id: 2,
                is_dataset_root: false,
                path: "/dir".into(),
                name: None,
            },
        ])
        .unwrap();
        check_children(
            children,
            KeyRange::ALL,
            None,
            &bases,
            &ResolvedBase::current_dataset("/here"),
            100,
        )
    }

    fn rule(children: &[FragmentTreeChild]) -> Rule {
        check(children).unwrap_err().rule
    }

    #[test]
    fn ranges_and_routing() {
        let refs = check(&[
            leaf("_bt/leaf/a.lance", 0),
            leaf("_bt/leaf/b.lance", 10),
            leaf("_bt/leaf/c.lance", 20),
        ])
        .unwrap();
        assert_eq!(refs[0].range, KeyRange { lo: 0, hi: 10 });
        assert_eq!(
            refs[2].range,
            KeyRange {
                lo: 20,
                hi: KEY_END
            }
        );
        assert_eq!(route(&refs, 0), Some(0));
        assert_eq!(route(&refs, 9), Some(0));
        assert_eq!(route(&refs, 10), Some(1));
        assert_eq!(route(&refs, 1 << 31), Some(2));
    }

    #[test]
    fn every_child_rule() {
        let a = || leaf("_bt/leaf/a.lance", 0);
        let b = |k| leaf("_bt/leaf/b.lance", k);
        assert_eq!(rule(&[b(1)]), Rule::MinKeyRange);
        assert_eq!(rule(&[a(), b(0)]), Rule::MinKeyOrder);
        assert_eq!(rule(&[a(), b(KEY_END)]), Rule::MinKeyRange);
        assert_eq!(
            rule(&[a(), leaf("_bt/leaf/a.lance", 5)]),
            Rule::DuplicateChild
        );
        // the same path in another dataset is another object
        let mut other = leaf("_bt/leaf/a.lance", 5);
        other.base_id = Some(1);
        assert!(check(&[a(), other.clone()]).is_ok());
        other.base_id = Some(2);
        assert_eq!(rule(&[a(), other.clone()]), Rule::ChildBaseId);
        other.base_id = Some(9);
        assert_eq!(rule(&[a(), other]), Rule::ChildBaseId);
        assert_eq!(rule(&[leaf("data/a.lance", 0)]), Rule::ChildPath);
        assert_eq!(rule(&[leaf("_bt/root/a.root", 0)]), Rule::ChildPath);
        assert_eq!(rule(&[leaf("_bt/../a.lance", 0)]), Rule::ChildPath);
        assert_eq!(rule(&[leaf("_bt/node/a.node", 0)]), Rule::ChildKind);
        let mut high = a();
        high.height = 1;
        high.num_children = 2;
        assert_eq!(rule(&[high.clone()]), Rule::ChildKind);
        assert_eq!(
            rule(&[a(), {
                let mut x = b(3);
                x.height = 1;
                x
            }]),
            Rule::ChildHeight
        );
        let mut node = leaf("_bt/node/n.node", 0);
        node.height = 1;
        node.num_children = 1;
        assert_eq!(rule(&[node.clone()]), Rule::ChildCount);
        node.num_children = 2;
        node.materialized_through_action_sequence = 3;
        assert_eq!(rule(&[node.clone()]), Rule::InteriorWatermark);
        node.height = MAX_HEIGHT + 1;
        node.materialized_through_action_sequence = 0;
        assert_eq!(rule(&[node]), Rule::ChildHeight);
        let mut x = a();
        x.num_children = 1;
        assert_eq!(rule(&[x]), Rule::ChildCount);
        let mut x = a();
        x.object_size = 0;
        assert_eq!(rule(&[x]), Rule::ObjectSize);
        let mut x = a();
        x.materialized_through_action_sequence = 100;
        assert_eq!(rule(&[x]), Rule::SequenceAboveRoot);
        let mut x = a();
        x.visible_rows = 6;
        assert_eq!(rule(&[x]), Rule::NodeSummary);
    }
}
