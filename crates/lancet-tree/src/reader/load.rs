//! Loading the object a reference names, through the node cache, and handing the writer
//! checked interiors and leaves.

use super::*;

impl TreeReader {
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

    pub(super) fn name(&self, child: &ChildRef) -> Arc<str> {
        Arc::from(self.inner.fetcher.display_path(&child.location))
    }

    /// Whether every leaf of the tree, estimated as `leaf`'s stored size per record times
    /// the tree's fragments, fits the node cache: then a whole decode is kept and pays for
    /// itself on the next commit; otherwise it would be evicted before it is used again.
    pub(super) fn leaves_fit_cache(&self, leaf: &ChildRef) -> bool {
        let records = leaf.summary.fragments.max(1);
        let estimate = u128::from(leaf.object_size) * u128::from(self.inner.totals.fragments)
            / u128::from(records);
        estimate <= u128::from(self.inner.cache.capacity_bytes())
    }

    /// Keeps the bytes of an external root a commit wrote at `location`, for the version it
    /// makes (see [`NodeCache::root`]).
    pub(crate) async fn keep_root(&self, location: &ObjectLocation, bytes: bytes::Bytes) {
        self.inner
            .cache
            .keep_root(super::open::root_key(location), bytes)
            .await;
    }

    pub(super) fn key(child: &ChildRef) -> ObjectKey {
        ObjectKey {
            uri: child.location.base.uri.clone(),
            base_id: child.location.base.base_id,
            path: child.location.path.clone(),
            size: child.object_size,
        }
    }

    /// Fetches and decodes the object `child` names, through the cache.
    pub(super) async fn load(&self, child: &ChildRef) -> Result<Arc<TreeObject>> {
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
}
