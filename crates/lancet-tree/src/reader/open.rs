//! Opening a version's tree: the manifest rules, the external root, the root's children and
//! buffers, `mutations_since_root`, the derived totals.

use super::*;
use crate::invariants::{self, Bounds};

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
                let key = root_key(&location);
                let bytes = match ctx.cache.root(&key).await {
                    Some(kept) => kept,
                    None => {
                        let bytes = ctx
                            .fetcher
                            .fetch(&location, None)
                            .await
                            .map_err(|e| fetch_error(&object, e))?;
                        ctx.cache.keep_root(key, bytes.clone()).await;
                        bytes
                    }
                };
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

        let (root_buffer, deltas) =
            decode_buffer(&root.buffer, None).map_err(|v| v.at(&root_object))?;
        let mut seen = HashSet::default();
        let children = invariants::check_root(
            &root_object,
            &root.children,
            &root_buffer,
            &ctx.current,
            &Bounds {
                bases: &bases,
                root_next,
                max_fragment_id,
            },
            &mut seen,
        )?;
        let mut top = Vec::new();
        let mut sum = WideTotals::default();
        for c in &children {
            sum.add_totals(c.summary);
        }
        sum.add_deltas_wide(deltas);
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
                base_paths: manifest
                    .base_paths
                    .iter()
                    .flat_map(|b| b.encode_to_vec())
                    .collect(),
                root_buffer_len,
                totals,
            }),
        })
    }
}

/// The node-cache key of an external root at `location` (size 0: opened before it is known).
pub(crate) fn root_key(location: &ObjectLocation) -> ObjectKey {
    ObjectKey {
        uri: location.base.uri.clone(),
        base_id: location.base.base_id,
        path: location.path.clone(),
        size: 0,
    }
}
