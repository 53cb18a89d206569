//! The named checks an object passes against its reference and the version before anything
//! in it is used (each failure is a `Corrupt` error naming the object and the `Rule`).

use super::*;

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
    pub(super) fn check_leaf(
        &self,
        child: &ChildRef,
        name: &str,
        leaf: &DecodedLeaf,
    ) -> Result<()> {
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

/// Checks one buffer in its node's context: targets inside `range` and at most
/// `max_fragment_id`, sequences in `seq_range` (half open; outside is `seq_rule`), unique
/// within this operation (`seen`, `also_seen`).
#[allow(clippy::too_many_arguments)]
pub(super) fn check_buffer(
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
    seen.reserve(buffer.len());
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::mutation::Action;

    fn remove(sequence: u64, target: u64) -> Mutation {
        Mutation {
            sequence,
            target,
            action: Action::Remove,
            deltas: Default::default(),
        }
    }

    fn check(buffer: &[Mutation], range: KeyRange, max: Option<u32>) -> Result<()> {
        check_buffer(
            "node",
            buffer,
            range,
            (1, 10),
            Rule::SequenceAboveRoot,
            max,
            &mut HashSet::default(),
            &HashSet::default(),
        )
    }

    #[test]
    fn a_buffer_in_its_range_and_bounds_passes() {
        let range = KeyRange { lo: 5, hi: 10 };
        check(&[remove(1, 5), remove(9, 9)], range, Some(9)).unwrap();
    }

    #[test]
    fn each_buffer_rule_names_itself() {
        let range = KeyRange { lo: 5, hi: 10 };
        assert_eq!(
            check(&[remove(1, 4)], range, Some(9)).unwrap_err().rule(),
            Some(Rule::BufferRange)
        );
        assert_eq!(
            check(&[remove(1, 9)], range, Some(8)).unwrap_err().rule(),
            Some(Rule::MaxFragmentId)
        );
        assert_eq!(
            check(&[remove(1, 9)], range, None).unwrap_err().rule(),
            Some(Rule::MaxFragmentId)
        );
        assert_eq!(
            check(&[remove(10, 6)], range, Some(9)).unwrap_err().rule(),
            Some(Rule::SequenceAboveRoot)
        );
        assert_eq!(
            check(&[remove(0, 6)], range, Some(9)).unwrap_err().rule(),
            Some(Rule::SequenceAboveRoot)
        );
        assert_eq!(
            check(&[remove(3, 6), remove(3, 7)], range, Some(9))
                .unwrap_err()
                .rule(),
            Some(Rule::SequenceDuplicate)
        );
    }

    #[test]
    fn a_sequence_seen_in_another_buffer_is_a_duplicate() {
        let also: HashSet = [4].into_iter().collect();
        let r = check_buffer(
            "node",
            &[remove(4, 1)],
            KeyRange::ALL,
            (1, 10),
            Rule::SequenceAboveRoot,
            Some(9),
            &mut HashSet::default(),
            &also,
        );
        assert_eq!(r.unwrap_err().rule(), Some(Rule::SequenceDuplicate));
    }

    #[test]
    fn max_id_bounds_every_id() {
        assert!(check_max_id(Some(7), 7).is_ok());
        assert_eq!(
            check_max_id(Some(7), 8).unwrap_err().rule,
            Rule::MaxFragmentId
        );
        assert_eq!(check_max_id(None, 0).unwrap_err().rule, Rule::MaxFragmentId);
    }
}
