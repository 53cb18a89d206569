//! Each decoded object through the named checks of [`crate::invariants`] before anything in
//! it is used (each failure is a `Corrupt` error naming the object and the `Rule`): the
//! context-dependent node checks memoized per lineage, sequence uniqueness per operation.

use super::*;
use crate::invariants::{self, Bounds};

impl TreeReader {
    /// Decision 11: overlays need flag 64; flag 2 needs a row-id sequence.
    pub(super) fn check_flags(&self, f: &DataFragment) -> std::result::Result<(), Violation> {
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

    /// Checks a decoded interior against its reference; returns its checked children.
    pub(super) fn check_node(
        &self,
        child: &ChildRef,
        name: &Arc<str>,
        node: &DecodedNode,
        unique: &mut Uniqueness,
    ) -> Result<Arc<[ChildRef]>> {
        let inner = &self.inner;
        let context = CheckContext {
            reference: child.clone(),
            bases: inner.base_paths.clone(),
            root_next: inner.root_next,
            max_fragment_id: inner.max_fragment_id,
        };
        let memo = node.checked.lock().ok().and_then(|m| {
            m.as_ref()
                .filter(|b| b.0.covers(&context))
                .map(|b| b.1.clone())
        });
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
        let bounds = self.bounds();
        invariants::check_node(
            name,
            child,
            &node.children,
            &node.buffer,
            node.buffer_deltas,
            &bounds,
        )
        .map(Arc::from)
    }

    /// The bounds of this version an object is checked against.
    pub(crate) fn bounds(&self) -> Bounds<'_> {
        Bounds {
            bases: &self.inner.bases,
            root_next: self.inner.root_next,
            max_fragment_id: self.inner.max_fragment_id,
        }
    }

    /// Checks a decoded leaf against its reference.
    pub(super) fn check_leaf(
        &self,
        child: &ChildRef,
        name: &str,
        leaf: &DecodedLeaf,
    ) -> Result<()> {
        let ids = leaf.first_id().zip(leaf.last_id());
        invariants::check_leaf(name, child, leaf.totals, ids, self.inner.max_fragment_id)?;
        invariants::check_record_bases(name, &leaf.records, &self.inner.bases)
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
