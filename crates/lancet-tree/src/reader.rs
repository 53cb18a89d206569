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
//! Walking ([`TreeReader::walk`]) loads every interior depth first, hands each leaf the
//! mutations its ancestors buffer for its range, and streams the leaves' merged records in id
//! order, a few leaves fetched ahead. Every object is checked as on the routing path, every
//! mutation is applied to a known prior (so every delta is checked), sequences are unique
//! across the whole tree, and the records streamed must add up to the derived totals
//! (decision 18). [`TreeReader::verify`] is a walk that keeps only the statistics.
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
use crate::routing::{check_children, route, ChildRef, KeyRange};
use crate::sequences::SequenceSet as HashSet;
use crate::snapshot::{check_manifest, check_next_sequences, RootSource};

/// Leaves fetched ahead of the one being streamed during a walk.
const WALK_PREFETCH: usize = 4;

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
    /// A hash of `base_paths`, part of a node's check context.
    bases_fingerprint: u64,
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
}

impl TreeReader {
    /// Opens the tree of `manifest`: manifest rules, the external root (if any), the root's
    /// children and buffers, `mutations_since_root`, derived totals.
    pub async fn open(manifest: &Manifest, ctx: OpenContext) -> Result<Self> {
        let span = tracing::debug_span!("tree_open", manifest = %ctx.manifest_object);
        Self::open_inner(manifest, ctx).instrument(span).await
    }

    async fn open_inner(manifest: &Manifest, ctx: OpenContext) -> Result<Self> {
        let mobj = ctx.manifest_object.as_str();
        let (tree, source) = check_manifest(manifest).map_err(|v| v.at(mobj))?;
        let bases = BaseTable::new(&manifest.base_paths)
            .map_err(|e| TreeError::corrupt(mobj, Rule::ChildBaseId, e.to_string()))?;
        let mut root_location = None;
        let (root, root_object, root_info): (FragmentTreeRoot, Arc<str>, RootInfo) = match source {
            RootSource::Inline(root) => (
                root.clone(),
                Arc::from(format!("{mobj} (inline root)")),
                RootInfo::Inline,
            ),
            RootSource::External { path } => {
                let location = ObjectLocation {
                    base: ctx.current.clone(),
                    path: path.clone(),
                };
                let object = ctx.fetcher.display_path(&location);
                let bytes = ctx
                    .fetcher
                    .fetch(&location, None)
                    .await
                    .map_err(|e| fetch_error(&object, e))?;
                let root = FragmentTreeRoot::decode(bytes.as_ref()).map_err(|e| {
                    TreeError::corrupt(
                        &object,
                        Rule::ObjectDecode,
                        format!("FragmentTreeRoot protobuf does not decode: {e}"),
                    )
                })?;
                crate::objects::modelled_mutations(&bytes, 2).map_err(|v| v.at(&object))?;
                let size = bytes.len() as u64;
                root_location = Some(location);
                (root, Arc::from(object), RootInfo::External { path, size })
            }
        };
        check_next_sequences(tree, &root).map_err(|v| v.at(&root_object))?;
        let root_next = root.next_action_sequence;
        let tree_next = tree.next_action_sequence;
        let max_fragment_id = manifest.max_fragment_id;

        let children = check_children(
            &root.children,
            KeyRange::ALL,
            None,
            &bases,
            &ctx.current,
            root_next,
        )
        .map_err(|v| v.at(&root_object))?;

        let mut seen = HashSet::default();
        let mut top = Vec::new();
        let mut sum = WideTotals::default();
        for c in &children {
            sum.add_totals(c.summary);
        }
        let (root_buffer, deltas) =
            decode_buffer(&root.buffer, None).map_err(|v| v.at(&root_object))?;
        sum.add_deltas_wide(deltas);
        check_buffer(
            &root_object,
            &root_buffer,
            KeyRange::ALL,
            (1, root_next),
            Rule::SequenceAboveRoot,
            max_fragment_id,
            &mut seen,
            &HashSet::default(),
        )?;
        let root_buffer_len = root_buffer.len();
        top.extend(root_buffer.into_iter().map(|mutation| Sourced {
            object: root_object.clone(),
            mutation,
        }));
        let since_object: Arc<str> = Arc::from(format!("{mobj} (mutations_since_root)"));
        let (since, deltas) =
            decode_buffer(&tree.mutations_since_root, None).map_err(|v| v.at(&since_object))?;
        sum.add_deltas_wide(deltas);
        check_buffer(
            &since_object,
            &since,
            KeyRange::ALL,
            (root_next, tree_next),
            Rule::SinceRootSequence,
            max_fragment_id,
            &mut seen,
            &HashSet::default(),
        )?;
        top.extend(since.into_iter().map(|mutation| Sourced {
            object: since_object.clone(),
            mutation,
        }));
        let totals = sum
            .to_totals()
            .map_err(|d| TreeError::corrupt(&*root_object, Rule::DerivedTotals, d))?;
        let top_span =
            SequenceSpan::of(&top.iter().map(|s| s.mutation.clone()).collect::<Vec<_>>());
        Ok(Self {
            inner: Arc::new(Inner {
                root_object,
                root_info,
                root_location,
                bases,
                max_fragment_id,
                reader_flags: manifest.reader_feature_flags,
                fetcher: ctx.fetcher,
                cache: ctx.cache,
                children: children.into(),
                root_next,
                tree_next,
                top,
                top_span,
                top_sequences: seen,
                bases_fingerprint: {
                    use std::hash::{BuildHasher, Hasher};
                    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                    for b in &manifest.base_paths {
                        h.write(&b.encode_to_vec());
                    }
                    h.finish()
                },
                root_buffer_len,
                totals,
            }),
        })
    }

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

    pub(crate) fn max_fragment_id(&self) -> Option<u32> {
        self.inner.max_fragment_id
    }

    /// Loads an interior and checks it against its reference: its decoded form and its
    /// checked children (for the writer).
    pub(crate) async fn load_node(
        &self,
        child: &ChildRef,
    ) -> Result<(Arc<TreeObject>, Arc<[ChildRef]>)> {
        let object = self.load(child).await?;
        let name = self.name(child);
        let children = match object.as_ref() {
            TreeObject::Node(node) => {
                self.check_node(child, &name, node, &mut Uniqueness::path())?
            }
            TreeObject::Leaf(_) => {
                return Err(TreeError::corrupt(
                    &*name,
                    Rule::ChildKind,
                    "a .node reference decoded as a leaf",
                ))
            }
        };
        Ok((object, children))
    }

    /// Loads a leaf and checks it against its reference; its records (for the writer).
    pub(crate) async fn load_leaf(&self, child: &ChildRef) -> Result<Vec<DataFragment>> {
        let object = self.load(child).await?;
        let name = self.name(child);
        match object.as_ref() {
            TreeObject::Leaf(leaf) => {
                self.check_leaf(child, &name, leaf)?;
                Ok(leaf.records.clone())
            }
            TreeObject::Node(_) => Err(TreeError::corrupt(
                &*name,
                Rule::ChildKind,
                "a .lance reference decoded as an interior",
            )),
        }
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

    /// The fragment with `id`, resolved through every mutation on its routing path.
    pub async fn fragment(&self, id: u64) -> Result<Option<DataFragment>> {
        let span = tracing::debug_span!("tree_resolve", id);
        self.resolve(id).instrument(span).await
    }

    /// The fragments with `ids` (in the order given; `None` for an absent id).
    pub async fn fragments_by_id(&self, ids: &[u64]) -> Result<Vec<Option<DataFragment>>> {
        // A plain loop over a window of futures rather than `stream::iter(..).map(..)
        // .buffered(..)`: the closure form makes callers' futures fail to be `Send` (rustc's
        // higher-ranked lifetime limitation), and a commit must be spawnable.
        let mut out = Vec::with_capacity(ids.len());
        let mut pending = futures::stream::FuturesOrdered::new();
        for &id in ids {
            if pending.len() >= WALK_PREFETCH {
                if let Some(r) = pending.next().await {
                    out.push(r?);
                }
            }
            pending.push_back(self.resolve(id));
        }
        while let Some(r) = pending.next().await {
            out.push(r?);
        }
        Ok(out)
    }

    /// The prior records a commit's actions need: [`TreeReader::fragments_by_id`], except
    /// that, when the tree's leaves do not fit the node cache, a leaf not already in the
    /// cache is read for the one record
    /// ([`crate::objects::point_read_leaf`]: the routing path checked as always, the leaf's ids
    /// and that record checked, the leaf not cached) instead of decoded whole. At millions of
    /// fragments most of a commit's leaves are cold, and a whole decode costs ten times more.
    pub(crate) async fn priors(&self, ids: &[u64]) -> Result<Vec<Option<DataFragment>>> {
        let mut out = Vec::with_capacity(ids.len());
        let mut pending = futures::stream::FuturesOrdered::new();
        for &id in ids {
            if pending.len() >= WALK_PREFETCH {
                if let Some(r) = pending.next().await {
                    out.push(r?);
                }
            }
            pending.push_back(self.resolve_mode(id, true));
        }
        while let Some(r) = pending.next().await {
            out.push(r?);
        }
        Ok(out)
    }

    async fn resolve(&self, id: u64) -> Result<Option<DataFragment>> {
        self.resolve_mode(id, false).await
    }

    /// Resolves `id`; with `point`, an uncached leaf is point-read (see [`TreeReader::priors`]).
    async fn resolve_mode(&self, id: u64, point: bool) -> Result<Option<DataFragment>> {
        let inner = &self.inner;
        let mut collected: Vec<Sourced> = inner
            .top
            .iter()
            .filter(|s| s.mutation.target == id)
            .cloned()
            .collect();
        let mut unique = Uniqueness::path();
        let mut children = inner.children.clone();
        let mut leaf: Option<(ChildRef, Arc<TreeObject>)> = None;
        let mut point_read: Option<(ChildRef, Option<DataFragment>)> = None;
        while let Some(child) = route(&children, id).and_then(|i| children.get(i)).cloned() {
            if point && child.kind == TreeObjectKind::Leaf && !self.leaves_fit_cache(&child) {
                let cached = inner.cache.peek(&Self::key(&child)).await;
                if cached.is_none() {
                    let name = inner.fetcher.display_path(&child.location);
                    let bytes = inner
                        .fetcher
                        .fetch(&child.location, Some(child.object_size))
                        .await
                        .map_err(|e| fetch_error(&name, e))?;
                    let bounds = LeafBounds {
                        range: child.range,
                        max_fragment_id: inner.max_fragment_id,
                        records: child.summary.fragments,
                    };
                    let key = Self::key(&child);
                    let kept = inner.cache.outline(&key).await;
                    let fresh = kept.is_none();
                    let (record, outline) =
                        point_read_leaf(name, bytes, child.location.base.base_id, id, bounds, kept)
                            .await?;
                    if fresh {
                        inner.cache.keep_outline(key, outline).await;
                    }
                    point_read = Some((child, record));
                    break;
                }
            }
            let object = self.load(&child).await?;
            match object.as_ref() {
                TreeObject::Node(node) => {
                    let name = self.name(&child);
                    children = self.check_node(&child, &name, node, &mut unique)?;
                    collected.extend(node.buffer.iter().filter(|m| m.target == id).map(|m| {
                        Sourced {
                            object: name.clone(),
                            mutation: m.clone(),
                        }
                    }));
                }
                TreeObject::Leaf(l) => {
                    self.check_leaf(&child, &self.name(&child), l)?;
                    leaf = Some((child, object.clone()));
                    break;
                }
            }
        }
        let (prior, watermark, origin) = match (&leaf, point_read) {
            (_, Some((child, record))) => (record, child.watermark, self.name(&child)),
            (Some((child, object)), None) => match object.as_ref() {
                TreeObject::Leaf(l) => (l.get(id).cloned(), child.watermark, self.name(child)),
                TreeObject::Node(_) => (None, 0, inner.root_object.clone()),
            },
            (None, None) => (None, 0, inner.root_object.clone()),
        };
        collected.sort_by_key(|s| s.mutation.sequence);
        self.apply_all(prior, &collected, watermark, origin)
    }

    /// Applies `mutations` (sorted by sequence) to `prior`, checking the watermark, every step
    /// and the flag rules on the result.
    fn apply_all(
        &self,
        prior: Option<DataFragment>,
        mutations: &[Sourced],
        watermark: u64,
        origin: Arc<str>,
    ) -> Result<Option<DataFragment>> {
        let mut record = prior;
        let mut origin = origin;
        for s in mutations {
            if s.mutation.sequence <= watermark {
                return Err(TreeError::corrupt(
                    &*s.object,
                    Rule::MutationBelowWatermark,
                    format!(
                        "mutation {} on fragment {} is at or below its leaf's watermark {watermark}",
                        s.mutation.sequence, s.mutation.target
                    ),
                ));
            }
            record = s.mutation.apply(record).map_err(|v| v.at(&s.object))?;
            origin = s.object.clone();
        }
        if let Some(f) = &record {
            self.check_flags(f).map_err(|v| v.at(&origin))?;
        }
        Ok(record)
    }

    /// Decision 11: overlays need flag 64; flag 2 needs a row-id sequence.
    fn check_flags(&self, f: &DataFragment) -> std::result::Result<(), Violation> {
        let flags = self.inner.reader_flags;
        if !f.overlays.is_empty() && flags & DATA_OVERLAY_FILES == 0 {
            return Err(Violation::new(
                Rule::OverlayFlag,
                format!("fragment {} has overlays but flag 64 is not set", f.id),
            ));
        }
        if flags & STABLE_ROW_IDS != 0 && f.row_id_sequence.is_none() {
            return Err(Violation::new(
                Rule::RowIdSequence,
                format!(
                    "stable row ids are enabled but fragment {} has no row id sequence",
                    f.id
                ),
            ));
        }
        Ok(())
    }

    fn name(&self, child: &ChildRef) -> Arc<str> {
        Arc::from(self.inner.fetcher.display_path(&child.location))
    }

    /// Whether every leaf of the tree, estimated as `leaf`'s stored size per record times
    /// the tree's fragments, fits the node cache: then a whole decode is kept and pays for
    /// itself on the next commit; otherwise it would be evicted before it is used again.
    fn leaves_fit_cache(&self, leaf: &ChildRef) -> bool {
        let records = leaf.summary.fragments.max(1);
        let estimate = u128::from(leaf.object_size) * u128::from(self.inner.totals.fragments)
            / u128::from(records);
        estimate <= u128::from(self.inner.cache.capacity_bytes())
    }

    fn key(child: &ChildRef) -> ObjectKey {
        ObjectKey {
            uri: child.location.base.uri.clone(),
            base_id: child.location.base.base_id,
            path: child.location.path.clone(),
            size: child.object_size,
        }
    }

    /// Fetches and decodes the object `child` names, through the cache.
    async fn load(&self, child: &ChildRef) -> Result<Arc<TreeObject>> {
        let inner = &self.inner;
        let key = Self::key(child);
        let load = async move {
            let name = inner.fetcher.display_path(&child.location);
            let span =
                tracing::debug_span!("tree_object", object = %name, bytes = child.object_size);
            async {
                let bytes = inner
                    .fetcher
                    .fetch(&child.location, Some(child.object_size))
                    .await
                    .map_err(|e| fetch_error(&name, e))?;
                let base = child.location.base.base_id;
                Ok(Arc::new(match child.kind {
                    TreeObjectKind::Leaf => {
                        TreeObject::Leaf(decode_leaf_on_pool(name, bytes, base).await?)
                    }
                    _ => TreeObject::Node(decode_node(&name, &bytes, base)?),
                }))
            }
            .instrument(span)
            .await
        };
        inner.cache.get_or_load(key, Box::pin(load)).await
    }

    /// Checks a decoded interior against its reference; returns its checked children.
    fn check_node(
        &self,
        child: &ChildRef,
        name: &Arc<str>,
        node: &DecodedNode,
        unique: &mut Uniqueness,
    ) -> Result<Arc<[ChildRef]>> {
        let inner = &self.inner;
        let context = CheckContext {
            reference: child.clone(),
            bases: inner.bases_fingerprint,
            root_next: inner.root_next,
            max_fragment_id: inner.max_fragment_id,
        };
        let memo = node
            .checked
            .lock()
            .ok()
            .and_then(|m| m.as_ref().filter(|b| b.0 == context).map(|b| b.1.clone()));
        let children = match memo {
            Some(children) => children,
            None => {
                let children = self.check_node_context(child, name, node)?;
                if let Ok(mut m) = node.checked.lock() {
                    *m = Some(Box::new((context, children.clone())));
                }
                children
            }
        };
        self.check_unique(name, node, unique)?;
        Ok(children)
    }

    /// Sequence uniqueness of a node's buffer within the operation (see [`Uniqueness`]).
    fn check_unique(&self, name: &str, node: &DecodedNode, unique: &mut Uniqueness) -> Result<()> {
        let inner = &self.inner;
        let dup = |seq: u64| {
            TreeError::corrupt(
                name,
                Rule::SequenceDuplicate,
                format!("mutation sequence {seq} appears twice"),
            )
        };
        if node.buffer.is_empty() {
            return Ok(());
        }
        let span = node.sequences;
        let clear_of_top = inner.top_span.is_none_or(|t| !t.overlaps(&span));
        match unique {
            Uniqueness::Path { spans, seen } => {
                if !span.repeats
                    && clear_of_top
                    && seen.is_empty()
                    && spans.iter().all(|(s, _)| !s.overlaps(&span))
                {
                    spans.push((span, node.buffer.iter().map(|m| m.sequence).collect()));
                    return Ok(());
                }
                // spans meet: check sequence by sequence
                for (_, seqs) in spans.drain(..) {
                    seen.extend(seqs);
                }
                for m in &node.buffer {
                    if inner.top_sequences.contains(&m.sequence) || !seen.insert(m.sequence) {
                        return Err(dup(m.sequence));
                    }
                }
            }
            Uniqueness::Whole(seen) => {
                for m in &node.buffer {
                    if inner.top_sequences.contains(&m.sequence) || !seen.insert(m.sequence) {
                        return Err(dup(m.sequence));
                    }
                }
            }
        }
        Ok(())
    }

    /// The checks of a node that depend on its reference and the version's bounds.
    fn check_node_context(
        &self,
        child: &ChildRef,
        name: &Arc<str>,
        node: &DecodedNode,
    ) -> Result<Arc<[ChildRef]>> {
        let inner = &self.inner;
        let corrupt = |rule, detail: String| TreeError::corrupt(&**name, rule, detail);
        if node.children.len() != child.num_children as usize {
            return Err(corrupt(
                Rule::ChildCount,
                format!(
                    "num_children is {}, the node has {} children",
                    child.num_children,
                    node.children.len()
                ),
            ));
        }
        let children = check_children(
            &node.children,
            child.range,
            child.height.checked_sub(1),
            &inner.bases,
            &child.location.base,
            inner.root_next,
        )
        .map_err(|v| v.at(name))?;
        check_buffer(
            name,
            &node.buffer,
            child.range,
            (1, inner.root_next),
            Rule::SequenceAboveRoot,
            inner.max_fragment_id,
            &mut HashSet::default(),
            &HashSet::default(),
        )?;
        let mut sum = WideTotals::default();
        for c in children.iter() {
            sum.add_totals(c.summary);
        }
        sum.add_deltas_wide(node.buffer_deltas);
        let mut expected = WideTotals::default();
        expected.add_totals(child.summary);
        if sum != expected {
            return Err(corrupt(
                Rule::NodeSummary,
                format!(
                    "the reference says {:?}, children plus buffer deltas give {sum:?}",
                    child.summary
                ),
            ));
        }
        Ok(children.into())
    }

    /// Checks a decoded leaf against its reference.
    fn check_leaf(&self, child: &ChildRef, name: &str, leaf: &DecodedLeaf) -> Result<()> {
        let corrupt = |rule, detail: String| TreeError::corrupt(name, rule, detail);
        if leaf.totals != child.summary {
            return Err(corrupt(
                Rule::LeafSummary,
                format!(
                    "the reference says {:?}, the records give {:?}",
                    child.summary, leaf.totals
                ),
            ));
        }
        let (Some(first), Some(last)) = (leaf.first_id(), leaf.last_id()) else {
            return Err(corrupt(Rule::LeafEmpty, "a leaf holds no records".into()));
        };
        if !child.range.contains(first) || !child.range.contains(last) {
            return Err(corrupt(
                Rule::LeafIdRange,
                format!(
                    "ids {first}..={last} leave the inherited range {}..{}",
                    child.range.lo, child.range.hi
                ),
            ));
        }
        check_max_id(self.inner.max_fragment_id, last).map_err(|v| v.at(name))
    }

    /// Walks the whole tree: every interior is loaded and checked now; the returned walk
    /// streams the leaves.
    pub async fn walk(&self) -> Result<Walk> {
        let span = tracing::debug_span!("tree_walk");
        self.plan().instrument(span).await
    }

    async fn plan(&self) -> Result<Walk> {
        let inner = &self.inner;
        let mut stats = TreeStats {
            root: Some(inner.root_info.clone()),
            height: self.height(),
            mutations_since_root: (inner.top.len() - inner.root_buffer_len) as u64,
            root_buffer: inner.root_buffer_len as u64,
            root_bytes: match &inner.root_info {
                RootInfo::External { size, .. } => *size,
                RootInfo::Inline => 0,
            },
            next_action_sequence: inner.tree_next,
            root_next_action_sequence: inner.root_next,
            totals: inner.totals,
            ..Default::default()
        };
        let mut unique = Uniqueness::Whole(HashSet::default());
        let mut tasks: Vec<LeafTask> = Vec::new();
        let mut objects: Vec<ObjectLocation> = Vec::new();
        objects.extend(inner.root_location.iter().cloned());
        if inner.children.is_empty() {
            tasks.push(LeafTask {
                child: None,
                pending: inner.top.clone(),
            });
        }
        // Depth-first, left to right: a stack of (child, pending mutations for its range, level).
        let mut stack: Vec<(ChildRef, Vec<Sourced>, usize)> =
            partition(&inner.children, inner.top.clone())
                .into_iter()
                .map(|(c, p)| (c, p, 1))
                .rev()
                .collect();
        while let Some((child, mut pending, level)) = stack.pop() {
            objects.push(child.location.clone());
            if child.location.base.base_id.is_some() {
                stats.foreign_objects += 1;
            }
            if child.kind == TreeObjectKind::Leaf {
                stats.leaves += 1;
                stats.leaf_bytes += child.object_size;
                if child.watermark == 0 {
                    stats.zero_watermarks += 1;
                }
                stats.min_watermark = Some(
                    stats
                        .min_watermark
                        .map_or(child.watermark, |m| m.min(child.watermark)),
                );
                stats.max_watermark = Some(
                    stats
                        .max_watermark
                        .map_or(child.watermark, |m| m.max(child.watermark)),
                );
                tasks.push(LeafTask {
                    child: Some(child),
                    pending,
                });
                continue;
            }
            let object = self.load(&child).await?;
            let TreeObject::Node(node) = object.as_ref() else {
                return Err(TreeError::corrupt(
                    &*self.name(&child),
                    Rule::ChildKind,
                    "a .node reference decoded as a leaf",
                ));
            };
            let name = self.name(&child);
            let children = self.check_node(&child, &name, node, &mut unique)?;
            stats.interiors += 1;
            stats.interior_bytes += child.object_size;
            if stats.interior_buffers.len() < level {
                stats.interior_buffers.resize(level, 0);
            }
            if let Some(b) = stats.interior_buffers.get_mut(level - 1) {
                *b += node.buffer.len() as u64;
            }
            pending.extend(node.buffer.iter().map(|m| Sourced {
                object: name.clone(),
                mutation: m.clone(),
            }));
            for (c, p) in partition(&children, pending).into_iter().rev() {
                stack.push((c, p, level + 1));
            }
        }
        Ok(Walk {
            reader: self.clone(),
            tasks,
            stats,
            objects,
        })
    }

    /// Every fragment in id order, collected (a [`TreeReader::walk`] streamed to the end).
    pub async fn all_fragments(&self) -> Result<Vec<DataFragment>> {
        self.walk().await?.into_stream().try_collect().await
    }

    /// Reads every object reachable from the version and checks every rule; returns the
    /// walk's statistics. Data and deletion files are never opened.
    pub async fn verify(&self) -> Result<TreeStats> {
        let walk = self.walk().await?;
        let stats = walk.stats.clone();
        let mut fragments = walk.into_stream();
        while fragments.try_next().await?.is_some() {}
        Ok(stats)
    }

    /// The records of one leaf (or of the root's buffers when it has no children) with its
    /// pending mutations merged, in id order.
    async fn merge_leaf(self, task: LeafTask) -> Result<(Vec<DataFragment>, WideTotals)> {
        let (records, watermark, origin): (Vec<DataFragment>, u64, Arc<str>) = match &task.child {
            None => (Vec::new(), 0, self.inner.root_object.clone()),
            Some(child) => {
                let object = self.load(child).await?;
                let name = self.name(child);
                let TreeObject::Leaf(leaf) = object.as_ref() else {
                    return Err(TreeError::corrupt(
                        &*name,
                        Rule::ChildKind,
                        "a .lance reference decoded as an interior",
                    ));
                };
                self.check_leaf(child, &name, leaf)?;
                let watermark = child.watermark;
                // Records move out when no cache shares the object; otherwise they are copied.
                let records = match Arc::try_unwrap(object) {
                    Ok(TreeObject::Leaf(leaf)) => leaf.records,
                    Ok(TreeObject::Node(_)) => Vec::new(),
                    Err(shared) => match shared.as_ref() {
                        TreeObject::Leaf(leaf) => leaf.records.clone(),
                        TreeObject::Node(_) => Vec::new(),
                    },
                };
                (records, watermark, name)
            }
        };
        let mut pending = task.pending;
        pending.sort_by_key(|s| (s.mutation.target, s.mutation.sequence));
        let mut out = Vec::with_capacity(records.len() + pending.len());
        let mut sum = WideTotals::default();
        let mut push = |f: DataFragment, out: &mut Vec<DataFragment>| {
            sum.add_record(&f);
            out.push(f);
        };
        let mut records = records.into_iter().peekable();
        let mut pending = pending.as_slice();
        loop {
            let next_record = records.peek().map(|f| f.id);
            let next_mutation = pending.first().map(|s| s.mutation.target);
            let id = match (next_record, next_mutation) {
                (None, None) => break,
                (Some(r), None) => r,
                (None, Some(m)) => m,
                (Some(r), Some(m)) => r.min(m),
            };
            let prior = if next_record == Some(id) {
                records.next()
            } else {
                None
            };
            let n = pending.partition_point(|s| s.mutation.target == id);
            let (here, rest) = pending.split_at(n);
            pending = rest;
            if here.is_empty() {
                if let Some(f) = prior {
                    self.check_flags(&f).map_err(|v| v.at(&origin))?;
                    push(f, &mut out);
                }
                continue;
            }
            if let Some(f) = self.apply_all(prior, here, watermark, origin.clone())? {
                push(f, &mut out);
            }
        }
        Ok((out, sum))
    }
}

/// How one operation checks that sequences are unique across the buffers it decodes.
pub(crate) enum Uniqueness {
    /// One routing path: buffers whose sequence spans do not meet (deeper buffers are older,
    /// so on a tree the writer keeps they never do) need no per-sequence check; once spans
    /// meet, every sequence is checked.
    Path {
        spans: Vec<(SequenceSpan, Vec<u64>)>,
        seen: HashSet,
    },
    /// The whole tree: every sequence of every buffer.
    Whole(HashSet),
}

impl Uniqueness {
    pub(crate) fn path() -> Self {
        Self::Path {
            spans: Vec::new(),
            seen: HashSet::default(),
        }
    }
}

/// Splits `pending` among `children` by routing each target. Every target lies in the
/// parent's range (checked with its buffer), so each lands in exactly one child.
fn partition(children: &[ChildRef], pending: Vec<Sourced>) -> Vec<(ChildRef, Vec<Sourced>)> {
    let mut out: Vec<(ChildRef, Vec<Sourced>)> =
        children.iter().map(|c| (c.clone(), Vec::new())).collect();
    for s in pending {
        if let Some(slot) = route(children, s.mutation.target).and_then(|i| out.get_mut(i)) {
            slot.1.push(s);
        }
    }
    out
}

#[derive(Debug)]
struct LeafTask {
    /// `None`: the root has no children; records come from its buffers alone.
    child: Option<ChildRef>,
    pending: Vec<Sourced>,
}

/// A walk whose interiors are loaded and checked: streams the leaves.
#[derive(Debug)]
pub struct Walk {
    reader: TreeReader,
    tasks: Vec<LeafTask>,
    stats: TreeStats,
    objects: Vec<ObjectLocation>,
}

impl Walk {
    /// Statistics of the tree (interiors counted now, leaves from their references).
    pub fn stats(&self) -> &TreeStats {
        &self.stats
    }

    /// Every tree object the version reaches, with the dataset each resolves to: the external
    /// root (if any), then every interior and leaf, depth-first. Cleanup keeps these.
    pub fn objects(&self) -> &[ObjectLocation] {
        &self.objects
    }

    /// Every fragment in id order. After the last one, the records must add up to the
    /// derived version totals, or the stream ends with a [`Rule::DerivedTotals`] error.
    pub fn into_stream(self) -> BoxStream<'static, Result<DataFragment>> {
        let reader = self.reader;
        let expected = reader.inner.totals;
        let object: Arc<str> = reader.inner.root_object.clone();
        let sum = Arc::new(Mutex::new(WideTotals::default()));
        let acc = sum.clone();
        let body = stream::iter(self.tasks)
            .map(move |task| reader.clone().merge_leaf(task))
            .buffered(WALK_PREFETCH)
            .map_ok(move |(records, leaf_sum)| {
                if let Ok(mut s) = acc.lock() {
                    s.add_deltas_wide(leaf_sum);
                }
                stream::iter(records.into_iter().map(Ok))
            })
            .try_flatten();
        let tail = stream::once(async move {
            let got = sum.lock().map(|s| *s).unwrap_or_default();
            let mut want = WideTotals::default();
            want.add_totals(expected);
            if got != want {
                return Some(Err(TreeError::corrupt(
                    &*object,
                    Rule::DerivedTotals,
                    format!("derived totals {expected:?}, the resolved fragments give {got:?}"),
                )));
            }
            None
        })
        .filter_map(futures::future::ready);
        body.chain(tail).boxed()
    }
}

fn check_max_id(max: Option<u32>, id: u64) -> std::result::Result<(), Violation> {
    match max {
        Some(max) if id <= u64::from(max) => Ok(()),
        Some(max) => Err(Violation::new(
            Rule::MaxFragmentId,
            format!("fragment id {id} exceeds max_fragment_id {max}"),
        )),
        None => Err(Violation::new(
            Rule::MaxFragmentId,
            format!("fragment id {id} is stored or targeted but max_fragment_id is absent"),
        )),
    }
}

/// Checks one buffer in its node's context: targets inside `range` and at most
/// `max_fragment_id`, sequences in `seq_range` (half open; outside is `seq_rule`), unique
/// within this operation (`seen`, `also_seen`).
#[allow(clippy::too_many_arguments)]
fn check_buffer(
    object: &str,
    buffer: &[Mutation],
    range: KeyRange,
    seq_range: (u64, u64),
    seq_rule: Rule,
    max_fragment_id: Option<u32>,
    seen: &mut HashSet,
    also_seen: &HashSet,
) -> Result<()> {
    let corrupt = |rule, detail: String| TreeError::corrupt(object, rule, detail);
    for m in buffer {
        if !range.contains(m.target) {
            return Err(corrupt(
                Rule::BufferRange,
                format!(
                    "mutation {} targets fragment {}, outside the node range {}..{}",
                    m.sequence, m.target, range.lo, range.hi
                ),
            ));
        }
        check_max_id(max_fragment_id, m.target).map_err(|v| v.at(object))?;
        if m.sequence < seq_range.0 || m.sequence >= seq_range.1 {
            return Err(corrupt(
                seq_rule,
                format!(
                    "mutation sequence {} lies outside {}..{}",
                    m.sequence, seq_range.0, seq_range.1
                ),
            ));
        }
        if also_seen.contains(&m.sequence) || !seen.insert(m.sequence) {
            return Err(corrupt(
                Rule::SequenceDuplicate,
                format!("mutation sequence {} appears twice", m.sequence),
            ));
        }
    }
    Ok(())
}

impl WideTotals {
    pub(crate) fn add_deltas_wide(&mut self, other: WideTotals) {
        self.fragments += other.fragments;
        self.total_rows += other.total_rows;
        self.visible_rows += other.visible_rows;
    }

    /// Adds one resolved record (counts already checked when it was produced).
    pub(crate) fn add_record(&mut self, f: &DataFragment) {
        if let Ok((total, visible)) = crate::records::record_counts(f) {
            self.add_totals(Totals {
                fragments: 1,
                total_rows: total,
                visible_rows: visible,
            });
        }
    }
}
