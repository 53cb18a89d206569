//! Resolving fragments by id: the routing path only, every mutation on it applied.

use super::*;

impl TreeReader {
    /// The fragment with `id`, resolved through every mutation on its routing path.
    pub async fn fragment(&self, id: u64) -> Result<Option<DataFragment>> {
        let span = tracing::debug_span!("tree_resolve", id);
        self.resolve(id).instrument(span).await
    }

    /// The fragments with `ids` (in the order given; `None` for an absent id).
    pub async fn fragments_by_id(&self, ids: &[u64]) -> Result<Vec<Option<DataFragment>>> {
        self.resolve_many(ids, false).await
    }

    /// The prior records a commit's actions need: [`TreeReader::fragments_by_id`], except
    /// that, when the tree's leaves do not fit the node cache, a leaf not already in the
    /// cache is read for the one record
    /// ([`crate::objects::point_read_leaf`]: the routing path checked as always, the leaf's ids
    /// and that record checked, the leaf not cached) instead of decoded whole. At millions of
    /// fragments most of a commit's leaves are cold, and a whole decode costs ten times more.
    ///
    /// An id above `max_fragment_id` has no prior (no record or mutation may name it, rule
    /// `MaxFragmentId`), so a new fragment's id is answered without reading the right-edge
    /// leaf: an append reads no leaf at all.
    pub(crate) async fn priors(&self, ids: &[u64]) -> Result<Vec<Option<DataFragment>>> {
        let max = self.inner.max_fragment_id.map(u64::from);
        let allocated: Vec<u64> = ids
            .iter()
            .copied()
            .filter(|id| max.is_some_and(|m| *id <= m))
            .collect();
        let mut resolved = self.resolve_many(&allocated, true).await?.into_iter();
        Ok(ids
            .iter()
            .map(|id| match max {
                Some(m) if *id <= m => resolved.next().flatten(),
                _ => None,
            })
            .collect())
    }

    /// Resolves `ids` in order, [`WALK_PREFETCH`] at a time; `point` as in [`TreeReader::priors`].
    async fn resolve_many(&self, ids: &[u64], point: bool) -> Result<Vec<Option<DataFragment>>> {
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
            pending.push_back(self.resolve_mode(id, point));
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
    pub(super) fn apply_all(
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
}
