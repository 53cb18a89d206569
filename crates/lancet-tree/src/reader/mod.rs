//! The tree reader: open one version's tree, resolve fragments by id, walk every fragment in
//! id order, verify everything reachable.
//!
//! Opening ([`TreeReader::open`]) checks the manifest-level rules, fetches the external root
//! if there is one (the only object read), checks the root's children and buffer and
//! `mutations_since_root`, and derives the version totals. Nothing else is read.
//!
//! Resolving one id ([`TreeReader::fragment`]) descends the routing path only: each object is
//! fetched with the size its reference records, decoded (or taken from the cache) and checked
//! against its parent before anything in it is used. The mutations for the id are collected
//! from `mutations_since_root`, the root buffer and every interior buffer on the path, sorted
//! by sequence, checked against the leaf's watermark and applied to the leaf's record (or to
//! nothing), each step checking its stored deltas. Sequence uniqueness is checked across every
//! buffer decoded for the operation. At most `height + 1` objects are read (plus the root).
//!
//! Walking ([`TreeReader::walk`]) loads every interior a level at a time (each level's fetched
//! at once), hands each leaf the mutations its ancestors buffer for its range, and streams the
//! leaves' merged records in id order, 32 leaves fetched ahead. Every object is checked as on the routing path, every
//! mutation is applied to a known prior (so every delta is checked), sequences are unique
//! across the whole tree, and the records streamed must add up to the derived totals
//! (decision 18). [`TreeReader::verify`] is a walk that keeps only the statistics.
//!
//! Modules: `open` (the manifest side and the root), `resolve` (one id down its routing
//! path), `walk` (every object, every record), `load` (objects through the cache), `checks`
//! (each decoded object through the named checks of `crate::invariants`, which the writer
//! also runs, memoized per lineage, and sequence uniqueness across one operation).

#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use lancet_paths::flags::{DATA_OVERLAY_FILES, STABLE_ROW_IDS};
use lancet_paths::{BaseTable, ObjectLocation, ResolvedBase, TreeObjectKind};
use lancet_proto::table::{DataFragment, FragmentTreeRoot, Manifest};
use prost::Message;
use tracing::Instrument;

use crate::error::{Result, Rule, TreeError};
use crate::mutation::Mutation;
use crate::objects::{
    decode_buffer, decode_leaf_on_pool, decode_node, fetch_error, point_read_leaf, CheckContext,
    DecodedLeaf, DecodedNode, LeafBounds, NodeCache, ObjectFetcher, ObjectKey, SequenceSpan,
    TreeObject,
};
use crate::records::{Totals, Violation, WideTotals};
use crate::routing::{route, ChildRef, KeyRange};
use crate::sequences::SequenceSet as HashSet;
use crate::snapshot::{check_manifest, check_next_sequences, RootSource};

/// Leaves fetched ahead of the one being streamed during a walk: on an object store, leaves
/// cost round trips in rounds of this many.
const WALK_PREFETCH: usize = 32;
/// Interiors of one level fetched at once during a walk.
const LEVEL_FETCHES: usize = 64;

/// A mutation and the object that holds it (for error messages).
#[derive(Debug, Clone)]
struct Sourced {
    object: Arc<str>,
    mutation: Mutation,
}

/// Where the version's root lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootInfo {
    /// In the manifest.
    Inline,
    /// `_bt/root/{uuid}.root` of the current dataset, with its size in bytes.
    External { path: String, size: u64 },
}

/// One open tree version.
#[derive(Debug, Clone)]
pub struct TreeReader {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root_object: Arc<str>,
    root_info: RootInfo,
    /// The external root's location, `None` for an inline root.
    root_location: Option<ObjectLocation>,
    bases: BaseTable,
    max_fragment_id: Option<u32>,
    reader_flags: u64,
    fetcher: Arc<dyn ObjectFetcher>,
    cache: Arc<dyn NodeCache>,
    children: Arc<[ChildRef]>,
    root_next: u64,
    tree_next: u64,
    /// `mutations_since_root` and the root buffer, checked.
    top: Vec<Sourced>,
    top_sequences: HashSet,
    /// Span of the root buffer's and `mutations_since_root`'s sequences.
    top_span: Option<SequenceSpan>,
    /// `base_paths`, encoded: part of a node's check context.
    base_paths: Arc<[u8]>,
    root_buffer_len: usize,
    totals: Totals,
}

/// What the reader needs from the manifest besides the tree: where errors point, the dataset
/// itself, its base paths.
#[derive(Debug, Clone)]
pub struct OpenContext {
    /// The manifest's path, named in errors about `Manifest.fragment_tree`.
    pub manifest_object: String,
    /// The dataset the manifest belongs to: where the external root and every child with no
    /// `base_id` live.
    pub current: ResolvedBase,
    pub fetcher: Arc<dyn ObjectFetcher>,
    pub cache: Arc<dyn NodeCache>,
}

/// Counts of one walk (what `lancet tree show` prints).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeStats {
    pub root: Option<RootInfo>,
    /// Edges from the root to the leaves (0: the root has no children).
    pub height: u32,
    pub interiors: u64,
    pub leaves: u64,
    pub mutations_since_root: u64,
    pub root_buffer: u64,
    /// Buffered mutations per interior level, top first (level 1 is the root's children).
    pub interior_buffers: Vec<u64>,
    pub root_bytes: u64,
    pub interior_bytes: u64,
    pub leaf_bytes: u64,
    /// Leaf watermarks: how many are 0, and the smallest and largest.
    pub zero_watermarks: u64,
    pub min_watermark: Option<u64>,
    pub max_watermark: Option<u64>,
    pub next_action_sequence: u64,
    pub root_next_action_sequence: u64,
    pub totals: Totals,
    /// Objects of other datasets reached through `base_id`.
    pub foreign_objects: u64,
    /// Every interior and leaf the walk reached, level by level, left to right.
    pub nodes: Vec<NodeShape>,
}

/// One interior or leaf of a walked tree: where it sits and how full it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeShape {
    /// Edges from the root (1: a child of the root).
    pub level: u32,
    pub leaf: bool,
    /// The object's stored size.
    pub bytes: u64,
    /// Children of an interior; the fragments a leaf stores (its summary: mutations still
    /// buffered above it are not applied).
    pub entries: u64,
    /// Mutations an interior buffers, and their encoded bytes (0 for a leaf).
    pub buffered: u64,
    pub buffer_bytes: u64,
}

mod checks;
mod load;
mod open;
mod resolve;
mod walk;

use crate::invariants::check_buffer;
pub(crate) use checks::Uniqueness;
pub use walk::Walk;

impl TreeReader {
    /// The root's checked children (for the writer).
    pub(crate) fn root_children(&self) -> Arc<[ChildRef]> {
        self.inner.children.clone()
    }

    /// The root buffer and `mutations_since_root`, checked (for the writer).
    pub(crate) fn root_buffers(&self) -> (Vec<Mutation>, Vec<Mutation>) {
        let (buffer, since) = self.inner.top.split_at(self.inner.root_buffer_len);
        let plain = |s: &[Sourced]| s.iter().map(|s| s.mutation.clone()).collect();
        (plain(buffer), plain(since))
    }

    /// `(root.next_action_sequence, FragmentTree.next_action_sequence)`.
    pub(crate) fn next_sequences(&self) -> (u64, u64) {
        (self.inner.root_next, self.inner.tree_next)
    }

    /// The datasets this version's `base_id`s resolve to (for the writer's checks).
    pub(crate) fn bases(&self) -> &BaseTable {
        &self.inner.bases
    }

    pub(crate) fn max_fragment_id(&self) -> Option<u32> {
        self.inner.max_fragment_id
    }

    /// Fragment count, physical rows and visible rows of the version, derived from the root
    /// (no object below the root is read).
    pub fn totals(&self) -> Totals {
        self.inner.totals
    }

    pub fn root_info(&self) -> &RootInfo {
        &self.inner.root_info
    }

    /// Height of the tree: edges from the root to its leaves (0 when the root has no children).
    pub fn height(&self) -> u32 {
        self.inner.children.first().map_or(0, |c| c.height + 1)
    }
}
