//! Test support (feature `testing`): writes valid trees of any shape for tests in this crate,
//! the facade and the CLI.
//!
//! [`TreeBuilder`] takes the records its leaves hold and a list of actions in sequence order.
//! It cuts the records into leaves of `leaf_records`, groups them `fanout` to an interior for
//! `interior_levels` levels, and places each action as a mutation (with the exact deltas the
//! actions have on the records before them) in `mutations_since_root` (the last
//! `since_root` actions, external roots only), the root buffer, or an interior buffer on its
//! routing path: older mutations deeper, with band edges chosen by a seeded generator. Leaf watermarks are below every mutation routed
//! to the leaf. Objects from `foreign_depth` down can be written into another dataset and
//! reached through a `base_id`.
//!
//! Everything it writes passes the reader's checks; corrupting one field of its output is how
//! the corruption catalogue breaks one rule at a time.

use std::collections::BTreeMap;

use lancet_file::{FileStore, FileVersion, WriteOptions};
use lancet_paths::tree_paths::{tree_object_path, TreeObjectKind};
use lancet_paths::{DatasetStore, ObjectUuid};
use lancet_proto::table::fragment_tree::Root;
use lancet_proto::table::fragment_tree_metadata::Layout;
use lancet_proto::table::{
    DataFile, DataFragment, DeletionFile, FragmentTree, FragmentTreeChild, FragmentTreeMetadata,
    FragmentTreeMutation, FragmentTreeNode, FragmentTreeRoot,
};
use prost::Message;

use crate::error::{Result, TreeError};
use crate::leaf::{encode_records, leaf_schema};
use crate::mutation::{Action, Mutation};
use crate::records::{record_counts, Deltas, Totals};

/// A small seeded generator (xorshift64*), so the builder needs no RNG dependency.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// Another dataset that holds the objects from `depth` down (1: the root's children).
#[derive(Debug, Clone)]
pub struct Foreign {
    pub store: DatasetStore,
    /// The `BasePath.id` the current manifest names it by (`is_dataset_root = true`).
    pub base_id: u32,
    pub depth: u32,
}

/// What to build.
#[derive(Debug, Clone)]
pub struct TreeBuilder {
    /// Records held by leaves, in strictly increasing id order.
    pub records: Vec<DataFragment>,
    /// Actions applied after the leaves, in sequence order: `(fragment id, action)`.
    pub actions: Vec<(u64, Action)>,
    pub leaf_records: usize,
    pub fanout: usize,
    pub interior_levels: u32,
    pub external_root: bool,
    /// How many of the last actions go to `mutations_since_root` (external roots only).
    pub since_root: usize,
    pub first_sequence: u64,
    pub seed: u64,
    pub foreign: Option<Foreign>,
    pub leaf_version: FileVersion,
}

impl Default for TreeBuilder {
    fn default() -> Self {
        Self {
            records: Vec::new(),
            actions: Vec::new(),
            leaf_records: 4,
            fanout: 3,
            interior_levels: 0,
            external_root: false,
            since_root: 0,
            first_sequence: 5,
            seed: 1,
            foreign: None,
            leaf_version: FileVersion::V2_1,
        }
    }
}

/// What [`TreeBuilder::build`] wrote.
#[derive(Debug, Clone)]
pub struct BuiltTree {
    pub metadata: FragmentTreeMetadata,
    /// The highest fragment id stored or targeted (`None` when there is none).
    pub max_id: Option<u64>,
    /// Every object written, relative to its dataset root, with the dataset (`None`: current).
    pub objects: Vec<(Option<u32>, String)>,
}

/// One object under construction: its reference fields and where its mutations go.
#[derive(Debug, Clone)]
struct Draft {
    min_key: u64,
    totals: Totals,
    children: Vec<Draft>,
    records: Vec<DataFragment>,
    buffer: Vec<Mutation>,
    height: u32,
}

fn bad(msg: impl Into<String>) -> TreeError {
    TreeError::InvalidInput(msg.into())
}

impl TreeBuilder {
    /// Writes the tree's objects into `store` (and the foreign dataset) and returns the
    /// manifest's `FragmentTreeMetadata`.
    pub async fn build(&self, store: &DatasetStore) -> Result<BuiltTree> {
        let mut rng = Rng::new(self.seed);
        // Mutations with exact deltas, from a model of the records.
        let mut model: BTreeMap<u64, DataFragment> =
            self.records.iter().map(|f| (f.id, f.clone())).collect();
        let mut mutations = Vec::with_capacity(self.actions.len());
        let mut max_id = self.records.last().map(|f| f.id);
        for (i, (target, action)) in self.actions.iter().enumerate() {
            let mut m = Mutation {
                sequence: self.first_sequence + i as u64,
                target: *target,
                action: action.clone(),
                deltas: Deltas::default(),
            };
            let prior = model.get(target).cloned();
            m.deltas = m
                .deltas_on(prior.as_ref())
                .map_err(|v| bad(format!("action {i}: {}", v.detail)))?;
            match m.apply(prior).map_err(|v| bad(v.detail))? {
                Some(f) => model.insert(*target, f),
                None => model.remove(target),
            };
            max_id = max_id.max(Some(*target));
            mutations.push(m);
        }
        let since_count = if self.external_root {
            self.since_root.min(mutations.len())
        } else {
            0
        };
        let since = mutations.split_off(mutations.len() - since_count);
        let root_next = mutations
            .last()
            .map_or(self.first_sequence, |m| m.sequence + 1)
            .max(1);
        let tree_next = since.last().map_or(root_next, |m| m.sequence + 1);

        // Leaves, then interior levels.
        let mut level: Vec<Draft> = self
            .records
            .chunks(self.leaf_records.max(1))
            .map(|chunk| {
                let mut totals = Totals::default();
                for f in chunk {
                    let (t, v) = record_counts(f).unwrap_or((0, 0));
                    totals.fragments += 1;
                    totals.total_rows += t;
                    totals.visible_rows += v;
                }
                Draft {
                    min_key: chunk.first().map_or(0, |f| f.id),
                    totals,
                    children: Vec::new(),
                    records: chunk.to_vec(),
                    buffer: Vec::new(),
                    height: 0,
                }
            })
            .collect();
        if let Some(first) = level.first_mut() {
            first.min_key = 0;
        }
        for h in 1..=self.interior_levels {
            if level.len() < 2 {
                return Err(bad(format!(
                    "{} objects at height {} cannot form another interior level",
                    level.len(),
                    h - 1
                )));
            }
            let mut groups: Vec<Vec<Draft>> = Vec::new();
            for d in level {
                match groups.last_mut() {
                    Some(g) if g.len() < self.fanout.max(2) => g.push(d),
                    _ => groups.push(vec![d]),
                }
            }
            if groups.last().is_some_and(|g| g.len() < 2) && groups.len() > 1 {
                let last = groups.pop().unwrap_or_default();
                if let Some(g) = groups.last_mut() {
                    g.extend(last);
                }
            }
            level = groups
                .into_iter()
                .map(|children| {
                    let mut totals = Totals::default();
                    for c in &children {
                        totals.fragments += c.totals.fragments;
                        totals.total_rows += c.totals.total_rows;
                        totals.visible_rows += c.totals.visible_rows;
                    }
                    Draft {
                        min_key: children.first().map_or(0, |c| c.min_key),
                        totals,
                        children,
                        records: Vec::new(),
                        buffer: Vec::new(),
                        height: h,
                    }
                })
                .collect();
        }

        // Place buffered mutations: root buffer, or an interior on the routing path.
        // Older mutations sit deeper, as flushing leaves them: random cut points split the
        // sequence into bands, the first band deepest. (Any other placement can give an
        // interior a summary no record state has, which the reader rejects.)
        let mut root_buffer = Vec::new();
        let levels = u64::from(self.interior_levels);
        let mut cuts: Vec<u64> = (0..levels)
            .map(|_| rng.below(mutations.len() as u64 + 1))
            .collect();
        cuts.sort_unstable();
        for (i, m) in mutations.into_iter().enumerate() {
            let passed = cuts.iter().filter(|&&c| c <= i as u64).count() as u64;
            place(&mut level, &mut root_buffer, m, levels - passed);
        }
        // Watermarks below every mutation routed to each leaf.
        let mut writer = Writer {
            store,
            foreign: self.foreign.as_ref(),
            version: self.leaf_version,
            written: Vec::new(),
            rng,
            first_sequence: self.first_sequence,
        };
        let mut children = Vec::with_capacity(level.len());
        for d in &level {
            children.push(Box::pin(writer.write(d, 1, u64::MAX)).await?);
        }
        let root = FragmentTreeRoot {
            children,
            buffer: root_buffer.iter().map(Mutation::encode).collect(),
            next_action_sequence: root_next,
        };
        let tree_root = if self.external_root {
            let uuid = ObjectUuid::new_v4();
            let path = tree_object_path(TreeObjectKind::Root, &uuid);
            store
                .put(&store.path(&path), root.encode_to_vec().into())
                .await
                .map_err(|e| bad(e.to_string()))?;
            writer.written.push((None, path));
            Root::RootUuid(uuid.as_bytes().to_vec())
        } else {
            Root::InlineRoot(root)
        };
        Ok(BuiltTree {
            metadata: FragmentTreeMetadata {
                layout: Some(Layout::Tree(FragmentTree {
                    root: Some(tree_root),
                    mutations_since_root: since.iter().map(Mutation::encode).collect(),
                    next_action_sequence: tree_next,
                })),
            },
            max_id,
            objects: writer.written,
        })
    }
}

fn route_draft(level: &mut [Draft], id: u64) -> Option<&mut Draft> {
    let i = level.partition_point(|d| d.min_key <= id).checked_sub(1)?;
    level.get_mut(i)
}

/// Puts `m` in the buffer `depth` levels down its routing path (0: the root buffer), or as
/// deep as interiors go.
fn place(level: &mut [Draft], root_buffer: &mut Vec<Mutation>, m: Mutation, depth: u64) {
    if depth == 0 {
        root_buffer.push(m);
        return;
    }
    let Some(d) = route_draft(level, m.target) else {
        root_buffer.push(m);
        return;
    };
    if d.height == 0 {
        root_buffer.push(m);
        return;
    }
    add_deltas(&mut d.totals, m.deltas);
    if depth == 1 || d.children.first().is_none_or(|c| c.height == 0) {
        d.buffer.push(m);
        return;
    }
    // Deeper: the delta is counted at every interior it passes, since each summary includes
    // its own buffer and its descendants.
    place_below(&mut d.children, m, depth - 1);
}

fn place_below(level: &mut [Draft], m: Mutation, depth: u64) {
    let Some(d) = route_draft(level, m.target) else {
        return;
    };
    add_deltas(&mut d.totals, m.deltas);
    if depth == 1 || d.children.first().is_none_or(|c| c.height == 0) {
        d.buffer.push(m);
        return;
    }
    place_below(&mut d.children, m, depth - 1);
}

fn add_deltas(t: &mut Totals, d: Deltas) {
    t.fragments = t.fragments.wrapping_add_signed(d.fragments);
    t.total_rows = t.total_rows.wrapping_add_signed(d.total_rows);
    t.visible_rows = t.visible_rows.wrapping_add_signed(d.visible_rows);
}

struct Writer<'a> {
    store: &'a DatasetStore,
    foreign: Option<&'a Foreign>,
    version: FileVersion,
    written: Vec<(Option<u32>, String)>,
    rng: Rng,
    first_sequence: u64,
}

impl Writer<'_> {
    /// Writes `d` (at `depth` below the root) and returns its reference. `min_seq` is the
    /// lowest sequence buffered above it for its range, which bounds a leaf's watermark.
    async fn write(&mut self, d: &Draft, depth: u32, min_seq: u64) -> Result<FragmentTreeChild> {
        let foreign = self.foreign.filter(|f| depth >= f.depth);
        let store = foreign.map_or(self.store, |f| &f.store);
        let base_id = foreign.filter(|f| depth == f.depth).map(|f| f.base_id);
        let dataset = foreign.map(|f| f.base_id);
        let min_here = d
            .buffer
            .iter()
            .map(|m| m.sequence)
            .min()
            .unwrap_or(u64::MAX)
            .min(min_seq);
        let (path, size, watermark, num_children) = if d.height == 0 {
            let path = tree_object_path(TreeObjectKind::Leaf, &ObjectUuid::new_v4());
            let batch = encode_records(&d.records).map_err(|v| bad(v.detail))?;
            let fs = FileStore::new(store.object_store().clone(), &file_uri(store))
                .map_err(|e| bad(e.to_string()))?;
            let written = lancet_file::write_file(
                &fs,
                &store.path(&path),
                &leaf_schema(),
                &[batch],
                &WriteOptions {
                    version: self.version,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| bad(e.to_string()))?;
            // Any watermark below every routed mutation and below the first sequence.
            let limit = min_here.min(self.first_sequence);
            let watermark = self.rng.below(limit);
            (path, written.size_bytes, watermark, 0)
        } else {
            let mut children = Vec::with_capacity(d.children.len());
            for c in &d.children {
                children.push(Box::pin(self.write(c, depth + 1, min_here)).await?);
            }
            let node = FragmentTreeNode {
                children,
                buffer: d.buffer.iter().map(Mutation::encode).collect(),
            };
            let bytes = node.encode_to_vec();
            let path = tree_object_path(TreeObjectKind::Node, &ObjectUuid::new_v4());
            store
                .put(&store.path(&path), bytes.clone().into())
                .await
                .map_err(|e| bad(e.to_string()))?;
            (path, bytes.len() as u64, 0, d.children.len() as u32)
        };
        self.written.push((dataset, path.clone()));
        Ok(FragmentTreeChild {
            path,
            base_id,
            min_key: d.min_key,
            num_keys: d.totals.fragments,
            height: d.height,
            num_children,
            total_rows: d.totals.total_rows,
            object_size: size,
            materialized_through_action_sequence: watermark,
            visible_rows: d.totals.visible_rows,
        })
    }
}

/// The URI lance-file should see for `store` (local stores are rooted at `/`).
pub fn file_uri(store: &DatasetStore) -> String {
    if store.local_root().is_some() {
        "file:///".into()
    } else if store.uri().starts_with("memory://") {
        "memory:///".into()
    } else {
        store.uri().to_string()
    }
}

/// Encodes a mutation list (for corrupting tests).
pub fn encode_mutations(m: &[Mutation]) -> Vec<FragmentTreeMutation> {
    m.iter().map(Mutation::encode).collect()
}

/// A data file of 1–3 fields at `path`, random versions and size.
pub fn data_file(rng: &mut Rng, path: &str) -> DataFile {
    let n = 1 + rng.below(3) as i32;
    DataFile {
        path: path.to_string(),
        fields: (0..n).collect(),
        column_indices: (0..n).collect(),
        file_major_version: 2,
        file_minor_version: rng.below(3) as u32,
        file_size_bytes: rng.below(5000),
        base_id: None,
    }
}

/// A valid record for `id`: one or two data files, up to 1,000 rows, a deletion file one
/// time in four.
pub fn record(rng: &mut Rng, id: u64) -> DataFragment {
    let rows = 1 + rng.below(1000);
    DataFragment {
        id,
        files: (0..1 + rng.below(2))
            .map(|i| data_file(rng, &format!("{id}-{i}.lance")))
            .collect(),
        deletion_file: (rng.below(4) == 0).then(|| DeletionFile {
            num_deleted_rows: 1 + rng.below(rows),
            id: rng.next_u64(),
            read_version: 1,
            ..Default::default()
        }),
        physical_rows: rows,
        ..Default::default()
    }
}

/// A removal of `target` at `sequence` with zero deltas, for checks that read only targets
/// and sequences.
pub fn removal(sequence: u64, target: u64) -> Mutation {
    Mutation {
        sequence,
        target,
        action: Action::Remove,
        deltas: Default::default(),
    }
}
