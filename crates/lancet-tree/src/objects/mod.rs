//! Tree objects: fetching them by resolved location, decoding them, and the cache seam.
//!
//! An object is fetched whole with one GET, its length checked against the `object_size` of
//! its reference (no HEAD request). A `.node` (and the external `.root`) is a raw protobuf; a
//! `.lance` leaf is a Lance file decoded from the fetched bytes by lance-file. The kind comes
//! from the path suffix (decision 1). What decoding checks needs nothing but the object itself
//! (leaf schema and records, mutation payloads), so a decoded object can be cached and shared;
//! checks that depend on the parent (ranges, summaries, watermarks) run on every visit.
//!
//! Modules: `fetch`, `decode`, `point_read`, `cache`.
//!
//! [`NodeCache`] is the seam a cache plugs into: concurrent misses of one key must load once.
//! [`NoCache`] loads every time; the `lancet` facade backs it with moka.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::future::BoxFuture;
use lancet_paths::{DatasetStore, ObjectLocation, PathsError};
use lancet_proto::table::{DataFragment, FragmentTreeChild, FragmentTreeNode};
use object_store::path::Path;
use prost::Message;

use crate::error::{Result, Rule, TreeError};
use crate::leaf::{decode_records, leaf_schema};
use crate::mutation::Mutation;
use crate::records::{record_counts, Checked, Totals, Violation, WideTotals};

mod cache;
mod decode;
mod fetch;
mod point_read;

pub use cache::{NoCache, NodeCache};
pub(crate) use decode::{decode_buffer, decode_leaf_on_pool, decode_node, modelled_mutations};
pub(crate) use fetch::fetch_error;
pub use fetch::{ObjectFetcher, StoreFetcher};
pub(crate) use point_read::{point_read_leaf, LeafBounds};

/// Cache key of a decoded object: where it lives (URI, path), under which base id its
/// records were resolved, and its size.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    pub uri: String,
    pub base_id: Option<u32>,
    pub path: String,
    pub size: u64,
}

/// A decoded interior: its raw child list (checked against its parent on every visit) and
/// its checked buffer.
#[derive(Debug)]
pub struct DecodedNode {
    pub children: Vec<FragmentTreeChild>,
    pub buffer: Vec<Mutation>,
    /// Sum of the buffer's deltas.
    pub(crate) buffer_deltas: WideTotals,
    pub size: u64,
    /// The buffer's sequences: lowest, highest, and whether any repeats.
    pub(crate) sequences: SequenceSpan,
    /// The last context this node was checked in, and the checked children it gave: a node
    /// read again under the same reference, base paths and bounds is not checked again.
    pub(crate) checked: std::sync::Mutex<Option<Box<CheckMemo>>>,
}

/// A context a node was checked in, and the checked children it gave.
pub(crate) type CheckMemo = (CheckContext, Arc<[crate::routing::ChildRef]>);

/// The span of a buffer's sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SequenceSpan {
    pub min: u64,
    pub max: u64,
    pub repeats: bool,
}

impl SequenceSpan {
    pub fn of(buffer: &[Mutation]) -> Option<Self> {
        let min = buffer.iter().map(|m| m.sequence).min()?;
        let max = buffer.iter().map(|m| m.sequence).max()?;
        let mut set = crate::sequences::SequenceSet::default();
        let repeats = !buffer.iter().all(|m| set.insert(m.sequence));
        Some(Self { min, max, repeats })
    }

    pub fn overlaps(&self, other: &Self) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

/// Everything a node's context-dependent checks depend on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CheckContext {
    pub reference: crate::routing::ChildRef,
    /// The version's `base_paths`, encoded.
    pub bases: Arc<[u8]>,
    pub root_next: u64,
    pub max_fragment_id: Option<u32>,
}

impl CheckContext {
    /// Whether a node that passed its checks in `self` passes them in `other`: the same
    /// reference and base paths, and bounds at least as wide. The bounds only ever widen
    /// the checks' acceptance (every sequence below `root_next`, every target at most
    /// `max_fragment_id`), so a node checked for an older version of the lineage needs no
    /// second check for a newer one.
    pub(crate) fn covers(&self, other: &CheckContext) -> bool {
        self.reference == other.reference
            && self.bases == other.bases
            && self.root_next <= other.root_next
            && self.max_fragment_id <= other.max_fragment_id
    }
}

/// A decoded leaf: its checked records in id order and what they add up to.
#[derive(Debug)]
pub struct DecodedLeaf {
    pub records: Vec<DataFragment>,
    pub totals: Totals,
    pub size: u64,
}

impl DecodedLeaf {
    pub fn first_id(&self) -> Option<u64> {
        self.records.first().map(|f| f.id)
    }

    pub fn last_id(&self) -> Option<u64> {
        self.records.last().map(|f| f.id)
    }

    /// The record with `id`, if the leaf holds one.
    pub fn get(&self, id: u64) -> Option<&DataFragment> {
        lancet_proto::fragment_by_id(&self.records, id)
    }
}

/// A decoded object, shared through the cache.
#[derive(Debug)]
pub enum TreeObject {
    Node(DecodedNode),
    Leaf(DecodedLeaf),
}

impl TreeObject {
    /// Bytes the object keeps resident, roughly: its stored size (what a cache should weigh).
    pub fn weight_bytes(&self) -> u64 {
        match self {
            Self::Node(n) => n.size,
            Self::Leaf(l) => l.size,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::routing::{ChildRef, KeyRange};
    use lancet_paths::{ResolvedBase, TreeObjectKind};

    fn context(path: &str, bases: &[u8], root_next: u64, max: Option<u32>) -> CheckContext {
        CheckContext {
            reference: ChildRef {
                location: ObjectLocation {
                    base: ResolvedBase::current_dataset("memory:///t"),
                    path: path.to_string(),
                },
                kind: TreeObjectKind::Node,
                range: KeyRange::ALL,
                height: 1,
                num_children: 2,
                object_size: 10,
                watermark: 0,
                summary: Totals::default(),
            },
            bases: Arc::from(bases),
            root_next,
            max_fragment_id: max,
        }
    }

    #[test]
    fn a_check_covers_wider_bounds_only() {
        let checked = context("_bt/node/a.node", b"", 10, Some(5));
        assert!(checked.covers(&context("_bt/node/a.node", b"", 10, Some(5))));
        assert!(checked.covers(&context("_bt/node/a.node", b"", 12, Some(9))));
        // an older version's narrower bounds must be checked again
        assert!(!checked.covers(&context("_bt/node/a.node", b"", 9, Some(5))));
        assert!(!checked.covers(&context("_bt/node/a.node", b"", 10, Some(4))));
        assert!(!checked.covers(&context("_bt/node/a.node", b"", 10, None)));
        // another reference or other base paths
        assert!(!checked.covers(&context("_bt/node/b.node", b"", 10, Some(5))));
        assert!(!checked.covers(&context("_bt/node/a.node", b"x", 10, Some(5))));
    }
}
