//! The tree writer: storage actions become mutations, and mutations move down a Bε tree of
//! immutable objects until leaves are rewritten with them.
//!
//! One commit ([`TreeWriter::commit`]) takes the open version (a [`TreeReader`]) and a batch
//! of `(fragment id, Action)`:
//!
//! 1. **Actions → mutations.** Each action is checked against the record it changes (read
//!    through the reader, with earlier actions of the batch applied), gets the next sequence
//!    and its exact deltas. A bad action (a file added to an absent fragment, a replacement
//!    with no matching slot, …) fails the commit before anything is written. Two replacements
//!    that chain through a renamed path stay two mutations.
//! 2. **Placement.** With an external root the mutations join `mutations_since_root` while it
//!    holds at most [`TreeWriterConfig::since_root_max_bytes`]; the commit then writes only the
//!    manifest. Otherwise they go into the root buffer and a new root is written (inline while
//!    its encoding is at most [`TreeWriterConfig::inline_root_max_bytes`]).
//! 3. **Flush.** A buffer over its budget in bytes (`root_buffer_max_bytes`,
//!    `node_buffer_max_bytes`) sends its largest child partitions down until it is at half its
//!    budget: into the child's buffer for an interior, or into a **materialized** leaf
//!    (records rewritten with its mutations applied, watermark = the highest sequence
//!    applied). Mutations only ever move down, whole partitions at a time, so every mutation
//!    buffered above a leaf is newer than its watermark, as the spec requires.
//! 4. **Shape.** A leaf over `leaf_max_records` splits; an empty leaf is dropped (never
//!    written); an interior over `fanout_max` splits, one left with a single child merges
//!    with a sibling; the root grows a level when it has more than `fanout_max` children and
//!    loses one when it has a single interior child. A dropped first child hands its lower
//!    bound to the next sibling (rewriting the left spine of an interior).
//!
//! Unchanged subtrees are reused by reference with their `base_id`; every object written
//! belongs to the current dataset, so a rewritten object from another dataset names the
//! objects it keeps with that dataset's `base_id`. Objects are written before the caller
//! publishes the manifest; a failed commit leaves only unreachable objects.
//!
//! **Uploads.** A commit encodes its objects as it goes and uploads them together, up to
//! [`UPLOAD_CONCURRENCY`] at a time, when it ends (or when [`UPLOAD_BATCH`] wait, which bounds
//! a bulk load's memory): on S3 a flush writing ten objects one after the other held the
//! commit's window open for ten round trips, which is where concurrent writers lose races.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use lancet_file::{FileVersion, WriteOptions};
use lancet_paths::tree_paths::{tree_object_path, TreeObjectKind};
use lancet_paths::{BaseTable, DatasetStore, ObjectLocation, ObjectUuid, ResolvedBase};
use lancet_proto::table::fragment_tree::Root;
use lancet_proto::table::fragment_tree_metadata::Layout;
use lancet_proto::table::{
    DataFragment, FragmentTree, FragmentTreeChild, FragmentTreeMetadata, FragmentTreeNode,
    FragmentTreeRoot,
};
use prost::Message;

use crate::error::{Result, Rule, TreeError};
use crate::invariants::{self, Bounds};
use crate::leaf::{encode_records, leaf_schema};
use crate::mutation::{Action, Mutation};
use crate::reader::TreeReader;
use crate::records::{record_counts, Deltas, Totals, WideTotals};
use crate::routing::{route, ChildRef, KeyRange, KEY_END};

/// The writer's policy. Budgets are in encoded bytes, not mutation counts: an upsert carries a
/// whole record (~100 bytes), a deletion file ~40, a removal ~10, and what a commit pays is
/// bytes. Defaults were chosen with `lancet bench commit --workload …` (docs/performance.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeWriterConfig {
    /// Records per leaf before it splits.
    pub leaf_max_records: usize,
    /// Children per interior (and the root) before it splits (grows a level).
    pub fanout_max: usize,
    /// Bytes of mutations an external root's manifest carries (`mutations_since_root`) before
    /// a new root takes them in. Every commit rewrites them.
    pub since_root_max_bytes: usize,
    /// Bytes of mutations the root buffers before flushing.
    pub root_buffer_max_bytes: usize,
    /// Bytes of mutations an interior buffers before flushing.
    pub node_buffer_max_bytes: usize,
    /// Largest encoded root kept inline in the manifest. An inline root is rewritten by every
    /// commit, buffer included, so it costs what `mutations_since_root` costs.
    pub inline_root_max_bytes: usize,
    /// Lance file version of new leaves.
    pub leaf_version: FileVersion,
}

impl Default for TreeWriterConfig {
    fn default() -> Self {
        Self {
            leaf_max_records: 2048,
            fanout_max: 64,
            since_root_max_bytes: 3 << 10,
            root_buffer_max_bytes: 24 << 10,
            node_buffer_max_bytes: 128 << 10,
            inline_root_max_bytes: 2 << 10,
            leaf_version: FileVersion::V2_1,
        }
    }
}

impl TreeWriterConfig {
    /// Tiny budgets: deep trees, flushes, splits and merges on every few commits (tests).
    pub fn tiny() -> Self {
        Self {
            leaf_max_records: 3,
            fanout_max: 3,
            since_root_max_bytes: 100,
            root_buffer_max_bytes: 150,
            node_buffer_max_bytes: 150,
            inline_root_max_bytes: 300,
            leaf_version: FileVersion::V2_1,
        }
    }
}

/// Bytes `buffer` takes encoded (what the budgets count).
fn buffer_bytes(buffer: &[Mutation]) -> usize {
    buffer.iter().map(Mutation::encoded_len).sum()
}

/// What a commit produced: the manifest's new tree and id high-water mark, and the objects
/// written (relative to the dataset root) with their sizes.
#[derive(Debug, Clone)]
pub struct TreeCommit {
    pub metadata: FragmentTreeMetadata,
    pub max_fragment_id: Option<u32>,
    pub written: Vec<(String, u64)>,
    /// The mutations this commit added, in sequence order.
    pub mutations: Vec<Mutation>,
    /// Each fragment the actions touched, before and after, in id order.
    pub changes: Vec<FragmentChange>,
}

/// One fragment a commit touched (the type the invariants judge a commit by).
pub use lancet_proto::FragmentChange;

impl TreeCommit {
    /// Bytes of every object written (the manifest not included).
    pub fn object_bytes(&self) -> u64 {
        self.written.iter().map(|(_, s)| s).sum()
    }
}

/// The fragment tree of a table with no fragments yet: an inline root with nothing in it,
/// both next sequences 1.
pub fn empty_tree() -> FragmentTreeMetadata {
    FragmentTreeMetadata {
        layout: Some(Layout::Tree(FragmentTree {
            root: Some(Root::InlineRoot(FragmentTreeRoot {
                next_action_sequence: 1,
                ..Default::default()
            })),
            mutations_since_root: Vec::new(),
            next_action_sequence: 1,
        })),
    }
}

/// The ids `n` new fragments take after `max_fragment_id`: `max+1..=max+n`, or `0..n` when no
/// id was ever allocated. 2^32 − 1 is the last id.
pub fn allocate_ids(max_fragment_id: Option<u32>, n: u64) -> Result<std::ops::Range<u64>> {
    let start = max_fragment_id.map_or(0, |m| u64::from(m) + 1);
    let end = start
        .checked_add(n)
        .filter(|&e| e <= KEY_END)
        .ok_or_else(|| {
            TreeError::InvalidInput(format!(
                "allocating {n} fragment ids after {max_fragment_id:?} exhausts the id space"
            ))
        })?;
    Ok(start..end)
}

/// A tree writer over the current dataset's store.
#[derive(Debug, Clone)]
pub struct TreeWriter {
    store: DatasetStore,
    config: TreeWriterConfig,
}

/// A child list under construction: checked references, some replaced.
type Children = Vec<ChildRef>;

/// Objects a commit holds encoded before uploading them together.
pub const UPLOAD_BATCH: usize = 64;
/// Uploads a commit has in flight at once.
pub const UPLOAD_CONCURRENCY: usize = 16;

struct Commit<'a> {
    /// The version being changed (`None` for a bulk load, which reads nothing).
    reader: Option<&'a TreeReader>,
    writer: &'a TreeWriter,
    written: Vec<(String, u64)>,
    /// Encoded objects not uploaded yet (see the module docs, *Uploads*).
    pending: Vec<(String, bytes::Bytes)>,
    current: ResolvedBase,
    /// Interiors written by this commit, by path: read back from here, not through the
    /// reader (whose checks hold the old version's sequence bounds).
    fresh_nodes: HashMap<String, (Children, Vec<Mutation>)>,
    /// The version this commit produces, which every object it writes is checked against
    /// ([`crate::invariants`]) before it joins the commit.
    bases: BaseTable,
    root_next: u64,
    max_fragment_id: Option<u32>,
}

impl TreeWriter {
    pub fn new(store: DatasetStore, config: TreeWriterConfig) -> Self {
        Self { store, config }
    }

    pub fn config(&self) -> &TreeWriterConfig {
        &self.config
    }

    /// Applies `actions` on top of `reader`'s version (see the module doc). Returns the new
    /// tree for the manifest; nothing is published.
    pub async fn commit(
        &self,
        reader: &TreeReader,
        actions: &[(u64, Action)],
    ) -> Result<TreeCommit> {
        use tracing::Instrument;
        let span = tracing::debug_span!("tree_commit", actions = actions.len());
        self.commit_inner(reader, actions).instrument(span).await
    }

    async fn commit_inner(
        &self,
        reader: &TreeReader,
        actions: &[(u64, Action)],
    ) -> Result<TreeCommit> {
        let (root_next, tree_next) = reader.next_sequences();
        let (mutations, changes) = self.mutations(reader, actions, tree_next).await?;
        let mut max_id = reader.max_fragment_id();
        for m in &mutations {
            let id = u32::try_from(m.target).map_err(|_| {
                TreeError::InvalidInput(format!("fragment id {} does not fit in u32", m.target))
            })?;
            if matches!(m.action, Action::Upsert(_)) {
                max_id = max_id.max(Some(id));
            } else if max_id.is_none_or(|max| id > max) {
                return Err(TreeError::InvalidInput(format!(
                    "fragment {id} was never allocated (max_fragment_id {max_id:?})"
                )));
            }
        }
        let next = tree_next + mutations.len() as u64;
        let mut commit = Commit {
            reader: Some(reader),
            writer: self,
            written: Vec::new(),
            pending: Vec::new(),
            current: ResolvedBase::current_dataset(self.store.uri()),
            fresh_nodes: HashMap::new(),
            bases: reader.bases().clone(),
            root_next: next,
            max_fragment_id: max_id,
        };
        let (root_buffer, mut since) = reader.root_buffers();
        let mut external_root: Option<(String, bytes::Bytes)> = None;
        let external = matches!(reader.root_info(), crate::reader::RootInfo::External { .. });
        since.extend(mutations.iter().cloned());
        let tree = if external && buffer_bytes(&since) <= self.config.since_root_max_bytes {
            // Only the manifest changes: the root is reused.
            let FragmentTreeMetadata {
                layout: Some(Layout::Tree(mut tree)),
            } = reader_metadata(reader)?
            else {
                return Err(TreeError::InvalidInput("no tree layout".into()));
            };
            let _ = root_next;
            tree.mutations_since_root = since.iter().map(Mutation::encode).collect();
            tree.next_action_sequence = next;
            tree
        } else {
            let mut buffer = root_buffer;
            buffer.extend(since);
            let children: Children = reader.root_children().to_vec();
            let (children, buffer) = commit.flush_root(children, buffer).await?;
            let root = FragmentTreeRoot {
                children: children.iter().map(child_proto).collect(),
                buffer: buffer.iter().map(Mutation::encode).collect(),
                next_action_sequence: next,
            };
            commit.check_root(&root.children, &buffer)?;
            let bytes = root.encode_to_vec();
            let root = if bytes.len() <= self.config.inline_root_max_bytes {
                Root::InlineRoot(root)
            } else {
                let uuid = ObjectUuid::new_v4();
                let path = tree_object_path(TreeObjectKind::Root, &uuid);
                let bytes = bytes::Bytes::from(bytes);
                commit.put(&path, bytes.clone()).await?;
                external_root = Some((path, bytes));
                Root::RootUuid(uuid.as_bytes().to_vec())
            };
            FragmentTree {
                root: Some(root),
                mutations_since_root: Vec::new(),
                next_action_sequence: next,
            }
        };
        commit.upload().await?;
        // the version this commit makes is opened next (to be judged, then used): its root
        // is known, not read back
        if let Some((path, bytes)) = external_root {
            let location = ObjectLocation {
                base: ResolvedBase::current_dataset(self.store.uri()),
                path,
            };
            reader.keep_root(&location, bytes).await;
        }
        Ok(TreeCommit {
            metadata: FragmentTreeMetadata {
                layout: Some(Layout::Tree(tree)),
            },
            max_fragment_id: max_id,
            written: commit.written,
            mutations,
            changes,
        })
    }

    /// Writes a new tree holding `records` (strictly increasing ids, every count known):
    /// leaves of `leaf_max_records`, interiors of `fanout_max`, a root inline when it fits
    /// `inline_root_max_bytes`. Nothing is buffered; every watermark is 0 and both next
    /// sequences are 1. This is how a flat table becomes a tree.
    pub async fn bulk_load(&self, records: &[DataFragment]) -> Result<TreeCommit> {
        for (i, f) in records.iter().enumerate() {
            crate::records::check_record(f)
                .map_err(|v| TreeError::InvalidInput(format!("fragment {}: {}", f.id, v.detail)))?;
            if f.id > u64::from(u32::MAX) {
                return Err(TreeError::InvalidInput(format!(
                    "fragment id {} does not fit in u32",
                    f.id
                )));
            }
            if i > 0 && records.get(i - 1).is_some_and(|p| p.id >= f.id) {
                return Err(TreeError::InvalidInput(
                    "fragment ids must strictly increase".into(),
                ));
            }
        }
        // A reader is only needed for objects this commit did not write: none here.
        let mut commit = Commit {
            reader: None,
            writer: self,
            written: Vec::new(),
            pending: Vec::new(),
            current: ResolvedBase::current_dataset(self.store.uri()),
            fresh_nodes: HashMap::new(),
            bases: BaseTable::default(),
            root_next: 1,
            max_fragment_id: records.last().and_then(|f| u32::try_from(f.id).ok()),
        };
        let mut level = if records.is_empty() {
            Vec::new()
        } else {
            commit.write_leaves(KeyRange::ALL, records, 0).await?
        };
        let fanout = self.config.fanout_max.max(2);
        let mut height = 0;
        while level.len() > fanout {
            height += 1;
            level = commit
                .shape(KeyRange::ALL, height, level, Vec::new())
                .await?;
        }
        let root = FragmentTreeRoot {
            children: level.iter().map(child_proto).collect(),
            buffer: Vec::new(),
            next_action_sequence: 1,
        };
        commit.check_root(&root.children, &[])?;
        let bytes = root.encode_to_vec();
        let root = if bytes.len() <= self.config.inline_root_max_bytes {
            Root::InlineRoot(root)
        } else {
            let uuid = ObjectUuid::new_v4();
            commit
                .put(&tree_object_path(TreeObjectKind::Root, &uuid), bytes.into())
                .await?;
            Root::RootUuid(uuid.as_bytes().to_vec())
        };
        commit.upload().await?;
        Ok(TreeCommit {
            metadata: FragmentTreeMetadata {
                layout: Some(Layout::Tree(FragmentTree {
                    root: Some(root),
                    mutations_since_root: Vec::new(),
                    next_action_sequence: 1,
                })),
            },
            max_fragment_id: records.last().and_then(|f| u32::try_from(f.id).ok()),
            written: commit.written,
            mutations: Vec::new(),
            changes: Vec::new(),
        })
    }

    /// Checks each action against its prior record and gives it a sequence and its deltas.
    async fn mutations(
        &self,
        reader: &TreeReader,
        actions: &[(u64, Action)],
        first: u64,
    ) -> Result<(Vec<Mutation>, Vec<FragmentChange>)> {
        // The prior record of every distinct target, resolved concurrently (cold leaves
        // fetch and decode in parallel); later actions on a target see earlier ones' result.
        let mut ids: Vec<u64> = actions.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        let priors = reader.priors(&ids).await?;
        let before: Vec<(u64, Option<DataFragment>)> = ids.into_iter().zip(priors).collect();
        let mut state: HashMap<u64, Option<DataFragment>> = before.iter().cloned().collect();
        let mut out = Vec::with_capacity(actions.len());
        for (i, (id, action)) in actions.iter().enumerate() {
            let prior = state.get(id).cloned().flatten();
            if let Action::Upsert(f) = action {
                if f.id != *id {
                    return Err(TreeError::InvalidInput(format!(
                        "action {i}: upsert of fragment {} names fragment {id}",
                        f.id
                    )));
                }
            }
            let mut m = Mutation {
                sequence: first + i as u64,
                target: *id,
                action: action.clone(),
                deltas: Deltas::default(),
            };
            let invalid = |v: crate::records::Violation| {
                TreeError::InvalidInput(format!("action {i} ({}): {}", action.name(), v.detail))
            };
            m.deltas = m.deltas_on(prior.as_ref()).map_err(invalid)?;
            let after = m.apply(prior).map_err(invalid)?;
            state.insert(*id, after);
            out.push(m);
        }
        let changes = before
            .into_iter()
            .map(|(id, before)| FragmentChange {
                id,
                before,
                after: state.remove(&id).flatten(),
            })
            .collect();
        Ok((out, changes))
    }
}

/// The manifest-side tree the reader was opened from, rebuilt from what it checked.
fn reader_metadata(reader: &TreeReader) -> Result<FragmentTreeMetadata> {
    let (root_next, tree_next) = reader.next_sequences();
    let (buffer, since) = reader.root_buffers();
    let root = match reader.root_info() {
        crate::reader::RootInfo::External { path, .. } => {
            let uuid = path
                .rsplit('/')
                .next()
                .and_then(|n| n.strip_suffix(".root"))
                .and_then(|u| ObjectUuid::parse(u).ok())
                .ok_or_else(|| TreeError::InvalidInput(format!("root path {path}")))?;
            Root::RootUuid(uuid.as_bytes().to_vec())
        }
        crate::reader::RootInfo::Inline => Root::InlineRoot(FragmentTreeRoot {
            children: reader.root_children().iter().map(child_proto).collect(),
            buffer: buffer.iter().map(Mutation::encode).collect(),
            next_action_sequence: root_next,
        }),
    };
    Ok(FragmentTreeMetadata {
        layout: Some(Layout::Tree(FragmentTree {
            root: Some(root),
            mutations_since_root: since.iter().map(Mutation::encode).collect(),
            next_action_sequence: tree_next,
        })),
    })
}

/// A checked reference as stored: its base id kept, so a reused subtree keeps its dataset.
fn child_proto(c: &ChildRef) -> FragmentTreeChild {
    FragmentTreeChild {
        path: c.location.path.clone(),
        base_id: c.location.base.base_id,
        min_key: c.range.lo,
        num_keys: c.summary.fragments,
        height: c.height,
        num_children: c.num_children,
        total_rows: c.summary.total_rows,
        object_size: c.object_size,
        materialized_through_action_sequence: c.watermark,
        visible_rows: c.summary.visible_rows,
    }
}

fn sum_deltas(buffer: &[Mutation]) -> WideTotals {
    let mut w = WideTotals::default();
    for m in buffer {
        w.add_deltas(m.deltas);
    }
    w
}

fn summary_of(children: &[ChildRef], buffer: &[Mutation]) -> Result<Totals> {
    let mut w = sum_deltas(buffer);
    for c in children {
        w.add_totals(c.summary);
    }
    w.to_totals()
        .map_err(|d| TreeError::InvalidInput(format!("a subtree summary is impossible: {d}")))
}

/// Splits `buffer` by the child each mutation routes to.
fn partition(children: &[ChildRef], buffer: Vec<Mutation>) -> BTreeMap<usize, Vec<Mutation>> {
    let mut parts: BTreeMap<usize, Vec<Mutation>> = BTreeMap::new();
    for m in buffer {
        let i = route(children, m.target).unwrap_or(0);
        parts.entry(i).or_default().push(m);
    }
    parts
}

/// Drops the children that hold no fragment once their share of `buffer` applies (their
/// summary plus the share's deltas counts zero fragments), together with that share. Counts are
/// exact, so zero means every record and every pending upsert of the range is removed.
///
/// Nothing else would reclaim such a range: keys only grow, so no later mutation routes into a
/// range whose fragments were all removed (compacted away, say), and its leaves and the
/// removals buffered above them would stay for every reader to walk, forever. The caller
/// restores the bounds ([`Commit::fix_bounds`]).
fn drop_empty(children: Children, buffer: Vec<Mutation>) -> (Children, Vec<Mutation>) {
    if children.is_empty() {
        return (children, buffer);
    }
    let mut net: Vec<i128> = children
        .iter()
        .map(|c| i128::from(c.summary.fragments))
        .collect();
    let routes: Vec<usize> = buffer
        .iter()
        .map(|m| route(&children, m.target).unwrap_or(0))
        .collect();
    for (m, &i) in buffer.iter().zip(&routes) {
        if let Some(n) = net.get_mut(i) {
            *n += i128::from(m.deltas.fragments);
        }
    }
    if !net.contains(&0) {
        return (children, buffer);
    }
    let buffer = buffer
        .into_iter()
        .zip(routes)
        .filter(|(_, i)| net.get(*i) != Some(&0))
        .map(|(m, _)| m)
        .collect();
    let children = children
        .into_iter()
        .zip(net)
        .filter(|(_, n)| *n != 0)
        .map(|(c, _)| c)
        .collect();
    (children, buffer)
}

impl Commit<'_> {
    /// Queues `bytes` for upload as `path` (relative to the dataset root).
    async fn put(&mut self, path: &str, bytes: bytes::Bytes) -> Result<()> {
        self.written.push((path.to_string(), bytes.len() as u64));
        self.pending.push((path.to_string(), bytes));
        if self.pending.len() >= UPLOAD_BATCH {
            self.upload().await?;
        }
        Ok(())
    }

    /// Uploads every queued object, [`UPLOAD_CONCURRENCY`] at a time.
    ///
    /// Every started put is awaited, also after one fails: a put dropped in flight may still
    /// land later (a local store writes on a blocking thread), and a failed commit must not
    /// leave writes behind that appear after it returned.
    async fn upload(&mut self) -> Result<()> {
        use futures::StreamExt;
        let store = &self.writer.store;
        let results: Vec<Result<()>> = futures::stream::iter(std::mem::take(&mut self.pending))
            .map(|(path, bytes)| async move {
                store
                    .put(&store.path(&path), bytes)
                    .await
                    .map_err(|e| io(&path, e))
            })
            .buffer_unordered(UPLOAD_CONCURRENCY)
            .collect()
            .await;
        results.into_iter().collect()
    }

    /// Uploads the queue first when it holds `child`, so that the reader can load it.
    async fn uploaded(&mut self, child: &ChildRef) -> Result<()> {
        if child.location.base.base_id.is_none()
            && self.pending.iter().any(|(p, _)| *p == child.location.path)
        {
            self.upload().await?;
        }
        Ok(())
    }

    /// An interior's checked children and buffer: from this commit's own writes, or read and
    /// checked through the reader.
    async fn node_parts(&self, child: &ChildRef) -> Result<(Children, Vec<Mutation>)> {
        if child.location.base.base_id.is_none() {
            if let Some((c, b)) = self.fresh_nodes.get(&child.location.path) {
                return Ok((c.clone(), b.clone()));
            }
        }
        let (object, children) = self.reader()?.load_node(child).await?;
        match object.as_ref() {
            crate::objects::TreeObject::Node(node) => Ok((children.to_vec(), node.buffer.clone())),
            crate::objects::TreeObject::Leaf(_) => {
                Err(TreeError::corrupt("writer", Rule::ChildKind, "not a node"))
            }
        }
    }

    fn reader(&self) -> Result<&TreeReader> {
        self.reader
            .ok_or_else(|| TreeError::InvalidInput("a bulk load reads no existing object".into()))
    }

    fn location(&self, path: String) -> ObjectLocation {
        ObjectLocation {
            base: self.current.clone(),
            path,
        }
    }

    /// Writes an interior and returns its reference for `range`.
    async fn write_node(
        &mut self,
        range: KeyRange,
        height: u32,
        children: &[ChildRef],
        buffer: &[Mutation],
    ) -> Result<ChildRef> {
        let node = FragmentTreeNode {
            children: children.iter().map(child_proto).collect(),
            buffer: buffer.iter().map(Mutation::encode).collect(),
        };
        let bytes = node.encode_to_vec();
        let path = tree_object_path(TreeObjectKind::Node, &ObjectUuid::new_v4());
        let reference = ChildRef {
            location: self.location(path.clone()),
            kind: TreeObjectKind::Node,
            range,
            height,
            num_children: children.len() as u32,
            object_size: bytes.len() as u64,
            watermark: 0,
            summary: summary_of(children, buffer)?,
        };
        invariants::check_node(
            &being_written(&path),
            &reference,
            &node.children,
            buffer,
            sum_deltas(buffer),
            &self.bounds(),
        )?;
        self.put(&path, bytes.into()).await?;
        self.fresh_nodes
            .insert(path, (children.to_vec(), buffer.to_vec()));
        Ok(reference)
    }

    fn bounds(&self) -> Bounds<'_> {
        Bounds {
            bases: &self.bases,
            root_next: self.root_next,
            max_fragment_id: self.max_fragment_id,
        }
    }

    /// The new root's children and buffer through the reader's root checks.
    fn check_root(&self, children: &[FragmentTreeChild], buffer: &[Mutation]) -> Result<()> {
        invariants::check_root(
            &being_written("the root"),
            children,
            buffer,
            &self.current,
            &self.bounds(),
            &mut crate::sequences::SequenceSet::default(),
        )
        .map(|_| ())
    }

    /// Writes leaves holding `records` (sorted, non-empty chunks of at most `leaf_max`) for
    /// `range`; the first starts at `range.lo`, each later one at its first id.
    async fn write_leaves(
        &mut self,
        range: KeyRange,
        records: &[DataFragment],
        watermark: u64,
    ) -> Result<Children> {
        let per = self.writer.config.leaf_max_records.max(1);
        // Every leaf is checked before any is encoded or queued: a refused write queues
        // nothing. A leaf's range ends where the next begins (set as the next is added).
        let mut out: Children = Vec::with_capacity(records.len().div_ceil(per));
        for (i, chunk) in records.chunks(per).enumerate() {
            let lo = if i == 0 {
                range.lo
            } else {
                chunk.first().map_or(range.lo, |f| f.id)
            };
            let mut totals = Totals::default();
            for f in chunk {
                let (t, v) = record_counts(f).map_err(|v| TreeError::InvalidInput(v.detail))?;
                totals.fragments += 1;
                totals.total_rows += t;
                totals.visible_rows += v;
            }
            let path = tree_object_path(TreeObjectKind::Leaf, &ObjectUuid::new_v4());
            let reference = ChildRef {
                location: self.location(path.clone()),
                kind: TreeObjectKind::Leaf,
                range: KeyRange { lo, hi: range.hi },
                height: 0,
                num_children: 0,
                object_size: 0,
                watermark,
                summary: totals,
            };
            let ids = chunk.first().zip(chunk.last()).map(|(a, b)| (a.id, b.id));
            invariants::check_leaf(
                &being_written(&path),
                &reference,
                totals,
                ids,
                self.max_fragment_id,
            )?;
            if watermark >= self.root_next {
                return Err(TreeError::corrupt(
                    being_written(&path),
                    Rule::SequenceAboveRoot,
                    format!(
                        "watermark {watermark} is not below the root's next {}",
                        self.root_next
                    ),
                ));
            }
            if let Some(prev) = out.last_mut() {
                prev.range.hi = lo;
            }
            out.push(reference);
        }
        for (leaf, chunk) in out.iter_mut().zip(records.chunks(per)) {
            let path = leaf.location.path.clone();
            let batch = encode_records(chunk).map_err(|v| TreeError::InvalidInput(v.detail))?;
            let (bytes, written) = lancet_file::encode_file(
                &self.writer.store.path(&path),
                &leaf_schema(),
                &[batch],
                &WriteOptions {
                    version: self.writer.config.leaf_version,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| TreeError::InvalidInput(format!("writing leaf {path}: {e}")))?;
            leaf.object_size = written.size_bytes;
            self.put(&path, bytes).await?;
        }
        Ok(out)
    }

    /// Materializes: `records` (a leaf's, or none) with `mutations` applied, as new leaves.
    async fn materialize(
        &mut self,
        range: KeyRange,
        records: Vec<DataFragment>,
        mut mutations: Vec<Mutation>,
        old_watermark: u64,
    ) -> Result<Children> {
        mutations.sort_by_key(|m| m.sequence);
        let watermark = mutations
            .last()
            .map_or(old_watermark, |m| m.sequence.max(old_watermark));
        let mut map: BTreeMap<u64, DataFragment> = records.into_iter().map(|f| (f.id, f)).collect();
        for m in &mutations {
            let prior = map.remove(&m.target);
            if let Some(f) = m
                .apply(prior)
                .map_err(|v| TreeError::corrupt("materialize", v.rule, v.detail))?
            {
                map.insert(m.target, f);
            }
        }
        let records: Vec<DataFragment> = map.into_values().collect();
        self.write_leaves(range, &records, watermark).await
    }

    /// Pushes `mutations` into `child` (all of them route into its range). Returns the
    /// references that replace it: none (it emptied), one, or several (it split).
    fn push_down<'b>(
        &'b mut self,
        child: ChildRef,
        mutations: Vec<Mutation>,
    ) -> futures::future::BoxFuture<'b, Result<Children>> {
        Box::pin(async move {
            if child.kind == TreeObjectKind::Leaf {
                self.uploaded(&child).await?;
                let records = self.reader()?.load_leaf(&child).await?;
                return self
                    .materialize(child.range, records, mutations, child.watermark)
                    .await;
            }
            let (children, mut buffer) = self.node_parts(&child).await?;
            buffer.extend(mutations);
            let (children, buffer) = drop_empty(children, buffer);
            let children = self.fix_bounds(children, child.range).await?;
            let budget = self.writer.config.node_buffer_max_bytes;
            let (children, buffer) = if buffer_bytes(&buffer) > budget {
                self.flush(children, buffer, budget, child.range).await?
            } else {
                (children, buffer)
            };
            self.shape(child.range, child.height, children, buffer)
                .await
        })
    }

    /// Sends the largest partitions of `buffer` (in bytes) down until at most `budget / 2`
    /// bytes remain.
    async fn flush(
        &mut self,
        children: Children,
        buffer: Vec<Mutation>,
        budget: usize,
        range: KeyRange,
    ) -> Result<(Children, Vec<Mutation>)> {
        if children.is_empty() {
            return Ok((children, buffer));
        }
        let mut parts = partition(&children, buffer);
        let mut order: Vec<(usize, usize)> =
            parts.iter().map(|(i, p)| (buffer_bytes(p), *i)).collect();
        order.sort_unstable_by(|a, b| b.cmp(a));
        let mut remaining: usize = order.iter().map(|(bytes, _)| bytes).sum();
        let mut chosen = Vec::new();
        for (len, i) in order {
            if remaining <= budget / 2 && !chosen.is_empty() {
                break;
            }
            remaining -= len;
            chosen.push(i);
        }
        chosen.sort_unstable();
        let mut replaced: BTreeMap<usize, Children> = BTreeMap::new();
        for i in chosen {
            let part = parts.remove(&i).unwrap_or_default();
            if let Some(c) = children.get(i).cloned() {
                replaced.insert(i, self.push_down(c, part).await?);
            }
        }
        let mut out: Children = Vec::new();
        for (i, c) in children.into_iter().enumerate() {
            match replaced.remove(&i) {
                Some(new) => out.extend(new),
                None => out.push(c),
            }
        }
        let buffer: Vec<Mutation> = parts.into_values().flatten().collect();
        let out = self.fix_bounds(out, range).await?;
        Ok((out, buffer))
    }

    /// Makes `children` cover `range` again after some were dropped: the first child starts at
    /// `range.lo` (an interior's left spine is rewritten to start there), and each range ends
    /// where the next begins.
    async fn fix_bounds(&mut self, mut children: Children, range: KeyRange) -> Result<Children> {
        let Some(first) = children.first().cloned() else {
            return Ok(children);
        };
        if first.range.lo != range.lo {
            let lowered = self.lower_start(first, range.lo).await?;
            if let Some(slot) = children.first_mut() {
                *slot = lowered;
            }
        }
        let starts: Vec<u64> = children.iter().skip(1).map(|c| c.range.lo).collect();
        for (c, hi) in children
            .iter_mut()
            .zip(starts.into_iter().chain([range.hi]))
        {
            c.range.hi = hi;
        }
        Ok(children)
    }

    /// `child` with its range starting at `lo` (below its current start).
    fn lower_start<'b>(
        &'b mut self,
        mut child: ChildRef,
        lo: u64,
    ) -> futures::future::BoxFuture<'b, Result<ChildRef>> {
        Box::pin(async move {
            if child.kind == TreeObjectKind::Leaf {
                child.range.lo = lo;
                return Ok(child);
            }
            let (mut children, buffer) = self.node_parts(&child).await?;
            if let Some(first) = children.first().cloned() {
                let lowered = self.lower_start(first, lo).await?;
                if let Some(slot) = children.first_mut() {
                    *slot = lowered;
                }
            }
            let range = KeyRange {
                lo,
                hi: child.range.hi,
            };
            self.write_node(range, child.height, &children, &buffer)
                .await
        })
    }

    /// Writes an interior of `height` for `range` holding `children` and `buffer`, split into
    /// several when it has more than `fanout_max` children. Returns the references (none when
    /// it has no children left; a node left with one child is returned as is for the parent to
    /// merge).
    async fn shape(
        &mut self,
        range: KeyRange,
        height: u32,
        children: Children,
        buffer: Vec<Mutation>,
    ) -> Result<Children> {
        if children.is_empty() {
            if !buffer.is_empty() {
                return Err(TreeError::InvalidInput(
                    "an interior lost every child but still buffers mutations".into(),
                ));
            }
            return Ok(Vec::new());
        }
        let children = self.merge_small(children, height.saturating_sub(1)).await?;
        let fanout = self.writer.config.fanout_max.max(2);
        if children.len() <= fanout {
            return Ok(vec![
                self.write_node(range, height, &children, &buffer).await?,
            ]);
        }
        // split into groups of at least two, at most `fanout`
        let groups = children.len().div_ceil(fanout);
        let per = children.len().div_ceil(groups);
        let mut out = Vec::with_capacity(groups);
        let mut parts = partition(&children, buffer);
        let mut start = 0;
        let n = children.len();
        while start < n {
            let mut end = (start + per).min(n);
            if n - end == 1 {
                end = n;
            }
            let group: Children = children
                .get(start..end)
                .map(<[ChildRef]>::to_vec)
                .unwrap_or_default();
            let mut gbuf = Vec::new();
            for i in start..end {
                gbuf.extend(parts.remove(&i).unwrap_or_default());
            }
            let lo = if start == 0 {
                range.lo
            } else {
                group.first().map_or(range.lo, |c| c.range.lo)
            };
            let hi = children.get(end).map_or(range.hi, |c| c.range.lo);
            out.push(
                self.write_node(KeyRange { lo, hi }, height, &group, &gbuf)
                    .await?,
            );
            start = end;
        }
        Ok(out)
    }

    /// Interiors among `children` (all of height `child_height`) with fewer than two children
    /// are merged with a neighbour.
    fn merge_small<'b>(
        &'b mut self,
        children: Children,
        child_height: u32,
    ) -> futures::future::BoxFuture<'b, Result<Children>> {
        Box::pin(self.merge_small_inner(children, child_height))
    }

    async fn merge_small_inner(
        &mut self,
        children: Children,
        child_height: u32,
    ) -> Result<Children> {
        if child_height == 0 || children.len() < 2 {
            return Ok(children);
        }
        let mut out: Children = Vec::with_capacity(children.len());
        let mut pending: Option<(Children, Vec<Mutation>, KeyRange)> = None;
        for c in children {
            let small = c.num_children < 2;
            if !small && pending.is_none() {
                out.push(c);
                continue;
            }
            let (grand, nbuf) = self.node_parts(&c).await?;
            match pending.take() {
                None => {
                    // merge with the previous sibling if there is one, else with the next
                    if let Some(prev) = out.pop() {
                        let (mut kids, mut buf) = self.node_parts(&prev).await?;
                        kids.extend(grand);
                        buf.extend(nbuf);
                        let range = KeyRange {
                            lo: prev.range.lo,
                            hi: c.range.hi,
                        };
                        let kids = self.fix_bounds(kids, range).await?;
                        out.extend(self.shape(range, child_height, kids, buf).await?);
                    } else {
                        pending = Some((grand, nbuf, c.range));
                    }
                }
                Some((mut kids, mut buf, range)) => {
                    kids.extend(grand);
                    buf.extend(nbuf);
                    let range = KeyRange {
                        lo: range.lo,
                        hi: c.range.hi,
                    };
                    let kids = self.fix_bounds(kids, range).await?;
                    out.extend(self.shape(range, child_height, kids, buf).await?);
                }
            }
        }
        if let Some((kids, buf, range)) = pending {
            // a lone small interior with no sibling: keep it as it is
            let kids = self.fix_bounds(kids, range).await?;
            out.push(self.write_node(range, child_height, &kids, &buf).await?);
        }
        Ok(out)
    }

    /// The root: flush its buffer over budget, then fix its shape (grow a level when it has
    /// more than `fanout_max` children, lose one when a single interior is left).
    async fn flush_root(
        &mut self,
        children: Children,
        buffer: Vec<Mutation>,
    ) -> Result<(Children, Vec<Mutation>)> {
        let cfg = self.writer.config.clone();
        let (children, buffer) = drop_empty(children, buffer);
        let children = self.fix_bounds(children, KeyRange::ALL).await?;
        let (mut children, mut buffer) = if children.is_empty() {
            if buffer_bytes(&buffer) > cfg.root_buffer_max_bytes {
                let leaves = self
                    .materialize(KeyRange::ALL, Vec::new(), buffer, 0)
                    .await?;
                (leaves, Vec::new())
            } else {
                (children, buffer)
            }
        } else if buffer_bytes(&buffer) > cfg.root_buffer_max_bytes {
            self.flush(children, buffer, cfg.root_buffer_max_bytes, KeyRange::ALL)
                .await?
        } else {
            (children, buffer)
        };
        let height = children.first().map_or(0, |c| c.height);
        children = self.merge_small(children, height).await?;
        // lose levels while a single interior is left
        while children.len() == 1 {
            let Some(only) = children.first().cloned() else {
                break;
            };
            if only.kind == TreeObjectKind::Leaf {
                break;
            }
            let (grand, nbuf) = self.node_parts(&only).await?;
            buffer.extend(nbuf);
            children = self.fix_bounds(grand, KeyRange::ALL).await?;
        }
        // grow levels while the root is too wide
        while children.len() > cfg.fanout_max.max(2) {
            let height = children.first().map_or(0, |c| c.height) + 1;
            children = self
                .shape(KeyRange::ALL, height, children, Vec::new())
                .await?;
        }
        if children.is_empty()
            && !buffer.is_empty()
            && buffer_bytes(&buffer) > cfg.root_buffer_max_bytes
        {
            // every leaf emptied: what is left materializes from nothing
            let leaves = self
                .materialize(KeyRange::ALL, Vec::new(), buffer, 0)
                .await?;
            return Ok((leaves, Vec::new()));
        }
        let children = self.fix_bounds(children, KeyRange::ALL).await?;
        Ok((children, buffer))
    }
}

/// How an object this commit produces is named in a check's error.
fn being_written(path: &str) -> String {
    format!("{path} (being written)")
}

fn io(path: &str, e: lancet_paths::PathsError) -> TreeError {
    TreeError::Io {
        object: path.to_string(),
        source: Arc::new(e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::testing::{record, Rng};

    use crate::testing::removal as remove;

    /// A commit of a bulk load's shape (no reader) whose version has root next 10 and ids up
    /// to 100, writing into `dir`.
    fn commit<'a>(writer: &'a TreeWriter) -> Commit<'a> {
        Commit {
            reader: None,
            writer,
            written: Vec::new(),
            pending: Vec::new(),
            current: ResolvedBase::current_dataset(writer.store.uri()),
            fresh_nodes: HashMap::new(),
            bases: BaseTable::default(),
            root_next: 10,
            max_fragment_id: Some(100),
        }
    }

    /// Each object the writer produces passes the reader's checks before it joins the commit:
    /// one that breaks a rule is a typed `Corrupt` error naming it, and nothing is queued.
    #[tokio::test]
    async fn the_writer_checks_its_objects_before_they_join_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store = DatasetStore::create(dir.path().to_str().unwrap()).unwrap();
        let writer = TreeWriter::new(store, TreeWriterConfig::tiny());
        let mut rng = Rng::new(3);
        let records: Vec<DataFragment> = (0..6).map(|id| record(&mut rng, id)).collect();
        let mut c = commit(&writer);
        let leaves = c.write_leaves(KeyRange::ALL, &records, 0).await.unwrap();
        assert_eq!(leaves.len(), 2);
        let queued = c.written.len();
        let rule = |r: Result<ChildRef>| match r {
            Err(e) => {
                assert!(e.to_string().contains("being written"), "{e}");
                e.rule()
            }
            Ok(_) => panic!("the writer accepted a bad object"),
        };
        // a buffered mutation outside the node's range
        let range = KeyRange { lo: 0, hi: 6 };
        let bad = c.write_node(range, 1, &leaves, &[remove(3, 7)]).await;
        assert_eq!(rule(bad), Some(Rule::BufferRange));
        // a sequence at or above the version's root next
        let bad = c.write_node(range, 1, &leaves, &[remove(10, 2)]).await;
        assert_eq!(rule(bad), Some(Rule::SequenceAboveRoot));
        // an id above max_fragment_id
        c.max_fragment_id = Some(4);
        let bad = c.write_node(KeyRange::ALL, 1, &leaves, &[]).await;
        assert!(bad.is_ok(), "references alone name no id");
        let bad = c.write_leaves(KeyRange::ALL, &records, 0).await;
        assert_eq!(bad.unwrap_err().rule(), Some(Rule::MaxFragmentId));
        c.max_fragment_id = Some(100);
        // children that do not start at the node's range
        let bad = c
            .write_node(KeyRange { lo: 1, hi: 6 }, 1, &leaves, &[])
            .await;
        assert_eq!(rule(bad), Some(Rule::MinKeyRange));
        // a child of the wrong height
        let bad = c.write_node(KeyRange::ALL, 2, &leaves, &[]).await;
        assert_eq!(rule(bad), Some(Rule::ChildHeight));
        // a leaf watermark at the root's next
        let bad = c.write_leaves(KeyRange::ALL, &records, 10).await;
        assert_eq!(bad.unwrap_err().rule(), Some(Rule::SequenceAboveRoot));
        // only the good node was queued
        assert_eq!(c.written.len(), queued + 1);
    }
}
