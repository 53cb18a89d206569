//! Walking the whole tree: every interior loaded and checked, the leaves streamed in id order
//! with their pending mutations merged, the derived totals checked at the end.

use super::*;

impl TreeReader {
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
        // Level by level, left to right: each level's interiors are fetched at once (one
        // round trip per level on a slow store), then checked in order. Every leaf sits at the
        // same depth, so the leaves come out in id order.
        let mut level_children: Vec<(ChildRef, Vec<Sourced>)> =
            partition(&inner.children, inner.top.clone());
        let mut level = 1usize;
        while !level_children.is_empty() {
            let mut loaded = self.load_interiors(&level_children).await?.into_iter();
            let mut next = Vec::new();
            for (child, mut pending) in level_children {
                objects.push(child.location.clone());
                if child.location.base.base_id.is_some() {
                    stats.foreign_objects += 1;
                }
                if child.kind == TreeObjectKind::Leaf {
                    stats.leaf(&child, level);
                    tasks.push(LeafTask {
                        child: Some(child),
                        pending,
                    });
                    continue;
                }
                let object = loaded.next();
                let Some(TreeObject::Node(node)) = object.as_deref() else {
                    return Err(TreeError::corrupt(
                        &*self.name(&child),
                        Rule::ChildKind,
                        "a .node reference decoded as a leaf",
                    ));
                };
                let name = self.name(&child);
                let children = self.check_node(&child, &name, node, &mut unique)?;
                stats.interior(&child, level, node);
                pending.extend(node.buffer.iter().map(|m| Sourced {
                    object: name.clone(),
                    mutation: m.clone(),
                }));
                next.extend(partition(&children, pending));
            }
            level_children = next;
            level += 1;
        }
        Ok(Walk {
            reader: self.clone(),
            tasks,
            stats,
            objects,
        })
    }

    /// The interiors among `children`, fetched at once (up to [`LEVEL_FETCHES`]), in order.
    async fn load_interiors(
        &self,
        children: &[(ChildRef, Vec<Sourced>)],
    ) -> Result<Vec<Arc<TreeObject>>> {
        // owned references and reader: a stream of borrows is not provably `Send`
        let interiors: Vec<ChildRef> = (children.iter())
            .filter(|(c, _)| c.kind != TreeObjectKind::Leaf)
            .map(|(c, _)| c.clone())
            .collect();
        stream::iter(interiors)
            .map(|child| {
                let reader = self.clone();
                async move { reader.load(&child).await }
            })
            .buffered(LEVEL_FETCHES)
            .try_collect()
            .await
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

impl TreeStats {
    fn leaf(&mut self, child: &ChildRef, level: usize) {
        self.leaves += 1;
        self.leaf_bytes += child.object_size;
        if child.watermark == 0 {
            self.zero_watermarks += 1;
        }
        self.min_watermark = Some(
            self.min_watermark
                .map_or(child.watermark, |m| m.min(child.watermark)),
        );
        self.max_watermark = Some(
            self.max_watermark
                .map_or(child.watermark, |m| m.max(child.watermark)),
        );
        self.nodes.push(NodeShape {
            level: level as u32,
            leaf: true,
            bytes: child.object_size,
            entries: child.summary.fragments,
            ..NodeShape::default()
        });
    }

    fn interior(&mut self, child: &ChildRef, level: usize, node: &DecodedNode) {
        self.interiors += 1;
        self.interior_bytes += child.object_size;
        if self.interior_buffers.len() < level {
            self.interior_buffers.resize(level, 0);
        }
        if let Some(b) = self.interior_buffers.get_mut(level - 1) {
            *b += node.buffer.len() as u64;
        }
        self.nodes.push(NodeShape {
            level: level as u32,
            leaf: false,
            bytes: child.object_size,
            entries: node.children.len() as u64,
            buffered: node.buffer.len() as u64,
            buffer_bytes: node.buffer.iter().map(|m| m.encoded_len() as u64).sum(),
        });
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
    /// root (if any), then every interior and leaf, level by level. Cleanup keeps these.
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
