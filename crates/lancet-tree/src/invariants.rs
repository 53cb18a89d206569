//! The named checks every tree object passes against its reference and the version it
//! belongs to: the reader runs them on each object it decodes before anything in it is used,
//! and the writer on each object it produces before the object joins the commit, so a writer
//! bug surfaces as a typed `Corrupt` error naming the object and the [`Rule`] instead of a
//! published tree that readers refuse. Each check is a function of the object and its bounds
//! alone (no I/O), where either side can reach it.

use lancet_paths::BaseTable;
use lancet_proto::table::FragmentTreeChild;

use crate::error::{Result, Rule, TreeError};
use crate::mutation::Mutation;
use crate::records::{check_max_id, Totals, WideTotals};
use crate::routing::{check_children, ChildRef, KeyRange};
use crate::sequences::SequenceSet as HashSet;

/// What a version allows its objects to name and reach.
pub(crate) struct Bounds<'a> {
    /// The datasets `base_id`s resolve to.
    pub bases: &'a BaseTable,
    /// The root's `next_action_sequence`: every buffered sequence and leaf watermark lies
    /// below it.
    pub root_next: u64,
    /// The manifest's `max_fragment_id`: no record or mutation names a higher id.
    pub max_fragment_id: Option<u32>,
}

/// The root's children (the whole key range, any height) and its buffer (sequences below
/// its next, none in `seen`, which collects them). Returns the checked children.
pub(crate) fn check_root(
    name: &str,
    children: &[FragmentTreeChild],
    buffer: &[Mutation],
    current: &lancet_paths::ResolvedBase,
    bounds: &Bounds<'_>,
    seen: &mut HashSet,
) -> Result<Vec<ChildRef>> {
    let checked = check_children(
        children,
        KeyRange::ALL,
        None,
        bounds.bases,
        current,
        bounds.root_next,
    )
    .map_err(|v| v.at(name))?;
    check_buffer(
        name,
        buffer,
        KeyRange::ALL,
        (1, bounds.root_next),
        Rule::SequenceAboveRoot,
        bounds.max_fragment_id,
        seen,
        &HashSet::default(),
    )?;
    Ok(checked)
}

/// An interior against its reference: `num_children`, each child (kind, height, path, base,
/// ranges, watermark, summary), its buffer (range, ids, sequences below the root's next, no
/// sequence twice), and the reference's summary = children plus buffer deltas. Returns the
/// checked children.
pub(crate) fn check_node(
    name: &str,
    reference: &ChildRef,
    children: &[FragmentTreeChild],
    buffer: &[Mutation],
    buffer_deltas: WideTotals,
    bounds: &Bounds<'_>,
) -> Result<Vec<ChildRef>> {
    let corrupt = |rule, detail: String| TreeError::corrupt(name, rule, detail);
    if children.len() != reference.num_children as usize {
        return Err(corrupt(
            Rule::ChildCount,
            format!(
                "num_children is {}, the node has {} children",
                reference.num_children,
                children.len()
            ),
        ));
    }
    let checked = check_children(
        children,
        reference.range,
        reference.height.checked_sub(1),
        bounds.bases,
        &reference.location.base,
        bounds.root_next,
    )
    .map_err(|v| v.at(name))?;
    check_buffer(
        name,
        buffer,
        reference.range,
        (1, bounds.root_next),
        Rule::SequenceAboveRoot,
        bounds.max_fragment_id,
        &mut HashSet::default(),
        &HashSet::default(),
    )?;
    let mut sum = WideTotals::default();
    for c in &checked {
        sum.add_totals(c.summary);
    }
    sum.add_deltas_wide(buffer_deltas);
    let mut expected = WideTotals::default();
    expected.add_totals(reference.summary);
    if sum != expected {
        return Err(corrupt(
            Rule::NodeSummary,
            format!(
                "the reference says {:?}, children plus buffer deltas give {sum:?}",
                reference.summary
            ),
        ));
    }
    Ok(checked)
}

/// A leaf against its reference: its records' totals are the reference's summary, it holds
/// at least one record, and its first and last ids (`ids`) lie in the inherited range and at
/// most `max_fragment_id`.
pub(crate) fn check_leaf(
    name: &str,
    reference: &ChildRef,
    totals: Totals,
    ids: Option<(u64, u64)>,
    max_fragment_id: Option<u32>,
) -> Result<()> {
    let corrupt = |rule, detail: String| TreeError::corrupt(name, rule, detail);
    if totals != reference.summary {
        return Err(corrupt(
            Rule::LeafSummary,
            format!(
                "the reference says {:?}, the records give {totals:?}",
                reference.summary
            ),
        ));
    }
    check_leaf_ids(name, reference.range, ids, max_fragment_id)
}

/// Every `base_id` a record's data, deletion or overlay file sets names a base path of the
/// manifest (`bases`).
pub(crate) fn check_record_bases(
    name: &str,
    records: &[lancet_proto::table::DataFragment],
    bases: &BaseTable,
) -> Result<()> {
    for f in records {
        let named = f
            .files
            .iter()
            .chain(f.overlays.iter().filter_map(|o| o.data_file.as_ref()))
            .filter_map(|d| d.base_id)
            .chain(f.deletion_file.as_ref().and_then(|d| d.base_id));
        for id in named {
            if bases.get(id).is_none() {
                return Err(TreeError::corrupt(
                    name,
                    Rule::RecordBaseId,
                    format!(
                        "fragment {} names base_id {id}, which the manifest's base_paths do not hold",
                        f.id
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A leaf's first and last ids (`None`: it holds no record) inside its inherited `range` and
/// at most `max_fragment_id`; the whole-leaf check and the point read share it.
pub(crate) fn check_leaf_ids(
    name: &str,
    range: KeyRange,
    ids: Option<(u64, u64)>,
    max_fragment_id: Option<u32>,
) -> Result<()> {
    let corrupt = |rule, detail: String| TreeError::corrupt(name, rule, detail);
    let Some((first, last)) = ids else {
        return Err(corrupt(Rule::LeafEmpty, "a leaf holds no records".into()));
    };
    if !range.contains(first) || !range.contains(last) {
        return Err(corrupt(
            Rule::LeafIdRange,
            format!(
                "ids {first}..={last} leave the inherited range {}..{}",
                range.lo, range.hi
            ),
        ));
    }
    check_max_id(max_fragment_id, last).map_err(|v| v.at(name))
}

/// Checks one buffer in its node's context: targets inside `range` and at most
/// `max_fragment_id`, sequences in `seq_range` (half open; outside is `seq_rule`), unique
/// within this operation (`seen`, `also_seen`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_buffer(
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
    use crate::routing::KeyRange;

    use crate::testing::removal as remove;

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
