//! The rules a writer of Fragment Reuse Index histories keeps, for any engine that records
//! rewrites through it (lancet's facade composes them in `Dataset::commit_rewrite`,
//! `trim_fri` and `upgrade_fri`):
//!
//! - **Entry flags** ([`check_entry_flags`]): a tagged entry (index_version ≥ 1) needs flag
//!   1024 in both words; on a stable-row-id table an entry needs flag 512 in both words and is
//!   never tagged (Lance 14 release builds refuse tagged histories there).
//! - **Extending** ([`extendable`]): a writer extends only a history it can interpret
//!   entirely, and never on a stable-row-id table.
//! - **Destinations** ([`check_destination`]): new fragments holding rows in at least one data
//!   file (Lance 14 reads `physical_rows` 0 as unknown), with no deletion file and no row ids.
//! - **A transition** ([`ordered_compaction`], [`extend`]): its digests and mapping checked,
//!   appended to the prior history (a new tagged one when there is none), and the lineage rules
//!   of [`History::new`] holding afterwards; a violation is the caller's `InvalidInput`.
//! - **Trimming** ([`History::trimmed`]): only transitions some index still needs are kept.
//! - **Legacy or tagged** ([`keeps_legacy`]): a table whose history is not tagged keeps
//!   legacy (v0) entries, as pylance writes them; tagged is sticky.

use lancet_paths::flags;
use lancet_proto::table::transaction::rewrite::RewriteGroup;
use lancet_proto::table::DataFragment;
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{corrupt, Result, ReuseError};
use crate::history::History;
use crate::ledger::{check, Digest, Ledger, Mapping, Transition};

/// The feature-flag rules of an FRI entry of `index_version` in a manifest with the flag
/// words `reader` and `writer` (`what`: the manifest, for the error).
pub fn check_entry_flags(
    index_version: i32,
    reader: u64,
    writer: u64,
    stable_row_ids: bool,
    what: &str,
) -> Result<()> {
    let both = |flag: u64| reader & flag != 0 && writer & flag != 0;
    if index_version != 0 && !both(flags::FRAGMENT_REUSE_INDEX) {
        return Err(corrupt(
            what,
            "a tagged FRI entry needs feature flag 1024 in both words",
        ));
    }
    if stable_row_ids && !both(flags::FRAG_REUSE_WITH_STABLE_ROW_IDS) {
        return Err(corrupt(
            what,
            "an FRI on a stable-row-id table needs feature flag 512 in both words",
        ));
    }
    if stable_row_ids && index_version != 0 {
        return Err(corrupt(
            what,
            "a tagged FRI entry on a stable-row-id table (writers must not publish one)",
        ));
    }
    Ok(())
}

/// `ledger` (the current history, if any) when a writer may extend it.
pub fn extendable(
    ledger: Option<Ledger>,
    stable_row_ids: bool,
    what: &str,
) -> Result<Option<Ledger>> {
    let refuse = |rule: &str| ReuseError::Unsupported {
        what: what.to_string(),
        rule: rule.to_string(),
    };
    if stable_row_ids {
        return Err(refuse(
            "a tagged Fragment Reuse Index on a stable-row-id table",
        ));
    }
    if ledger.as_ref().is_some_and(|l| l.has_unsupported) {
        return Err(refuse(
            "the history has transitions lancet cannot interpret",
        ));
    }
    Ok(ledger)
}

/// A rewrite's destination `f` as written by the caller, before it is numbered.
pub fn check_destination(f: &DataFragment) -> Result<()> {
    if f.deletion_file.is_some() || f.row_id_sequence.is_some() {
        return Err(ReuseError::InvalidInput(
            "a destination must not carry a deletion file or row ids".into(),
        ));
    }
    if f.physical_rows == 0 || f.files.is_empty() {
        return Err(ReuseError::InvalidInput(
            "a destination must hold rows in at least one data file".into(),
        ));
    }
    Ok(())
}

/// The digests of one rewrite group's sources: each fragment (with its deleted offsets, as
/// the caller read them) a source of the rewrite once (`seen` holds the ids of the groups
/// before), at least one source in the group.
pub fn source_digests(
    sources: &[(&DataFragment, &RoaringBitmap)],
    seen: &mut std::collections::HashSet<u32>,
) -> Result<Vec<Digest>> {
    if sources.is_empty() {
        return Err(ReuseError::InvalidInput(
            "a rewrite needs at least one source".into(),
        ));
    }
    sources
        .iter()
        .map(|(f, deleted)| {
            let id = u32::try_from(f.id).map_err(|_| {
                ReuseError::InvalidInput(format!("fragment id {} exceeds 32 bits", f.id))
            })?;
            if !seen.insert(id) {
                return Err(ReuseError::InvalidInput(format!(
                    "fragment {id} is a source twice"
                )));
            }
            Ok(Digest {
                id,
                physical_rows: f.physical_rows,
                num_deleted_rows: deleted.len(),
            })
        })
        .collect()
}

/// Numbers a group's `destinations` from `next_id` (`next_id` advanced past them) and
/// returns their digests: new fragment ids after every id the table has used, as Lance
/// numbers a compaction's outputs. (A destination a caller hands in is checked first by
/// [`check_destination`]; a compaction's own outputs may carry row ids.)
pub fn number_destinations(
    destinations: &mut [DataFragment],
    next_id: &mut u64,
) -> Result<Vec<Digest>> {
    destinations
        .iter_mut()
        .map(|f| {
            f.id = *next_id;
            *next_id = next_id.saturating_add(1);
            let id = u32::try_from(f.id)
                .map_err(|_| ReuseError::InvalidInput("fragment ids exhausted".into()))?;
            Ok(Digest {
                id,
                physical_rows: f.physical_rows,
                num_deleted_rows: 0,
            })
        })
        .collect()
}

/// One rewrite group numbered: both sides' digests, the sources' deleted offsets (in source
/// order) and the group as Lance 14's Rewrite records it (sources as they were, destinations
/// with their new ids, last in the version since their ids are the largest).
#[derive(Debug, Clone)]
pub struct NumberedGroup {
    pub sources: Vec<Digest>,
    pub destinations: Vec<Digest>,
    pub deleted: Vec<RoaringBitmap>,
    pub recorded: RewriteGroup,
}

/// A group of a rewrite (a compaction's task, or a caller's rewrite) as the caller read it:
/// each source with its deleted offsets (distinct across the groups: `seen`), and its
/// destinations, numbered here from `next_id` ([`number_destinations`]).
pub fn number_group(
    sources: Vec<(&DataFragment, RoaringBitmap)>,
    mut destinations: Vec<DataFragment>,
    seen: &mut std::collections::HashSet<u32>,
    next_id: &mut u64,
) -> Result<NumberedGroup> {
    let read: Vec<(&DataFragment, &RoaringBitmap)> = sources.iter().map(|(f, d)| (*f, d)).collect();
    let src = source_digests(&read, seen)?;
    let dst = number_destinations(&mut destinations, next_id)?;
    let (records, deleted): (Vec<&DataFragment>, Vec<RoaringBitmap>) = sources.into_iter().unzip();
    Ok(NumberedGroup {
        sources: src,
        destinations: dst,
        deleted,
        recorded: RewriteGroup {
            old_fragments: records.into_iter().cloned().collect(),
            new_fragments: destinations,
        },
    })
}

/// The mapping of an ordered compaction of `sources` (with their deleted offsets, in the same
/// order): every surviving row's address, in source order.
pub fn ordered_compaction(sources: &[Digest], deleted: &[RoaringBitmap]) -> Result<Mapping> {
    let mut surviving = RoaringTreemap::new();
    for (s, del) in sources.iter().zip(deleted) {
        let rows = u32::try_from(s.physical_rows)
            .map_err(|_| ReuseError::InvalidInput(format!("fragment {} is too large", s.id)))?;
        let mut live = RoaringBitmap::new();
        live.insert_range(0..rows);
        live -= del;
        // a fragment's addresses are its id in the high 32 bits (`RowAddress`), its offsets
        // below: its bitmap whole, with no insert per row
        surviving |= RoaringTreemap::from_bitmaps([(s.id, live)]);
    }
    Ok(Mapping::OrderedCompaction { surviving })
}

/// Whether a writer publishes a history as a legacy (index_version 0) entry, as pylance
/// 14.0.2 does, rather than tagged: while the table's entry (`current`, if any) is legacy and
/// the tagged flag 1024 is not set (it is sticky: once a version sets it, the history stays
/// tagged). A history holding a stable partition is always tagged.
pub fn keeps_legacy(
    current: Option<&lancet_proto::table::IndexMetadata>,
    reader_flags: u64,
) -> bool {
    reader_flags & flags::FRAGMENT_REUSE_INDEX == 0
        && current.is_none_or(|c| c.index_version.unwrap_or(0) == 0)
}

/// `prior` (a new tagged history when `None`) with `t` appended, when `t` is well-formed and
/// the history's lineage rules still hold; a violation is `InvalidInput` naming the rule.
pub fn extend(prior: Option<Ledger>, t: Transition, what: &str) -> Result<Ledger> {
    let caller = |e: ReuseError| match e {
        ReuseError::Corrupt { rule, .. } => ReuseError::InvalidInput(rule),
        e => e,
    };
    check(&t, what).map_err(caller)?;
    let mut ledger = prior.unwrap_or_else(|| Ledger {
        index_version: 1,
        ..Default::default()
    });
    ledger.transitions.push(t);
    Ok(History::new(ledger, what).map_err(caller)?.ledger)
}

impl History {
    /// The history trimmed to the transitions an index covering `indexed` still needs
    /// ([`History::needed_for`]), as a tagged ledger; `None` when every one is needed.
    pub fn trimmed(&self, indexed: &RoaringBitmap) -> Option<Ledger> {
        let keep = self.needed_for(indexed);
        if keep.len() == self.ledger.transitions.len() {
            return None;
        }
        Some(Ledger {
            index_version: 1,
            transitions: keep
                .iter()
                .filter_map(|&i| self.ledger.transitions.get(i).cloned())
                .collect(),
            has_unsupported: false,
            unmodelled_row_maps: Vec::new(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn digest(id: u32, rows: u64, deleted: u64) -> Digest {
        Digest {
            id,
            physical_rows: rows,
            num_deleted_rows: deleted,
        }
    }

    #[test]
    fn entry_flags_follow_the_spec() {
        let tagged = flags::FRAGMENT_REUSE_INDEX;
        let stable = flags::FRAG_REUSE_WITH_STABLE_ROW_IDS;
        assert!(check_entry_flags(1, tagged, tagged, false, "m").is_ok());
        assert!(check_entry_flags(1, tagged, 0, false, "m").is_err());
        assert!(check_entry_flags(0, 0, 0, false, "m").is_ok());
        assert!(check_entry_flags(0, stable, stable, true, "m").is_ok());
        assert!(check_entry_flags(0, 0, 0, true, "m").is_err());
        let all = tagged | stable;
        assert!(check_entry_flags(1, all, all, true, "m").is_err());
    }

    #[test]
    fn histories_are_extended_only_where_a_writer_may() {
        assert!(extendable(None, true, "m").is_err());
        let skipped = Ledger {
            has_unsupported: true,
            ..Default::default()
        };
        assert!(extendable(Some(skipped), false, "m").is_err());
        assert_eq!(extendable(None, false, "m").unwrap(), None);
    }

    #[test]
    fn a_group_is_numbered_after_the_table_and_recorded_as_lance_records_it() {
        let source = |id: u64| DataFragment {
            id,
            physical_rows: 4,
            ..Default::default()
        };
        let (a, b) = (source(2), source(5));
        let deleted: RoaringBitmap = [1u32].into_iter().collect();
        let out = DataFragment {
            physical_rows: 7,
            ..Default::default()
        };
        let (mut seen, mut next_id) = (std::collections::HashSet::new(), 9);
        let group = number_group(
            vec![(&a, deleted.clone()), (&b, RoaringBitmap::new())],
            vec![out.clone()],
            &mut seen,
            &mut next_id,
        )
        .unwrap();
        assert_eq!(group.sources, [digest(2, 4, 1), digest(5, 4, 0)]);
        assert_eq!(group.destinations, [digest(9, 7, 0)]);
        assert_eq!(next_id, 10);
        assert_eq!(group.deleted, [deleted, RoaringBitmap::new()]);
        let old: Vec<u64> = group.recorded.old_fragments.iter().map(|f| f.id).collect();
        assert_eq!(old, [2, 5]);
        assert_eq!(group.recorded.new_fragments[0].id, 9);
        // a source of an earlier group cannot be a source again
        let again = number_group(
            vec![(&a, RoaringBitmap::new())],
            vec![out],
            &mut seen,
            &mut next_id,
        );
        assert!(again.is_err());
    }

    #[test]
    fn destinations_hold_rows_and_carry_nothing_else() {
        let mut f = DataFragment {
            physical_rows: 3,
            files: vec![Default::default()],
            ..Default::default()
        };
        assert!(check_destination(&f).is_ok());
        f.deletion_file = Some(Default::default());
        assert!(check_destination(&f).is_err());
        f.deletion_file = None;
        f.physical_rows = 0;
        assert!(check_destination(&f).is_err());
    }

    #[test]
    fn a_transition_is_checked_before_it_is_recorded() {
        let sources = [digest(0, 4, 1), digest(1, 2, 0)];
        let deleted = [[2u32].into_iter().collect(), RoaringBitmap::new()];
        let mapping = ordered_compaction(&sources, &deleted).unwrap();
        let Mapping::OrderedCompaction { surviving } = &mapping else {
            panic!()
        };
        assert_eq!(surviving.len(), 5);
        let t = Transition {
            dataset_version: None,
            sources: sources.to_vec(),
            destinations: vec![digest(2, 5, 0)],
            mapping: mapping.clone(),
        };
        let ledger = extend(None, t.clone(), "m").unwrap();
        assert_eq!((ledger.index_version, ledger.transitions.len()), (1, 1));
        // the destinations must hold every surviving row
        let short = Transition {
            destinations: vec![digest(2, 4, 0)],
            ..t.clone()
        };
        assert!(matches!(
            extend(None, short, "m"),
            Err(ReuseError::InvalidInput(_))
        ));
        // fragment 0 consumed twice
        assert!(matches!(
            extend(Some(ledger), t, "m"),
            Err(ReuseError::InvalidInput(_))
        ));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod group_tests {
    use std::collections::HashSet;

    use lancet_proto::table::{DataFile, DeletionFile};

    use super::*;

    fn fragment(id: u64, rows: u64) -> DataFragment {
        DataFragment {
            id,
            files: vec![DataFile {
                path: format!("{id}.lance"),
                ..Default::default()
            }],
            physical_rows: rows,
            ..Default::default()
        }
    }

    #[test]
    fn a_group_takes_each_source_once_and_numbers_its_destinations_after_every_id() {
        let (a, b) = (fragment(3, 10), fragment(5, 20));
        let deleted: RoaringBitmap = [1u32, 2].into_iter().collect();
        let none = RoaringBitmap::new();
        let mut seen = HashSet::new();
        let digests = source_digests(&[(&a, &deleted), (&b, &none)], &mut seen).unwrap();
        assert_eq!(
            digests
                .iter()
                .map(|d| (d.id, d.physical_rows, d.num_deleted_rows))
                .collect::<Vec<_>>(),
            [(3, 10, 2), (5, 20, 0)]
        );
        // a later group naming fragment 5 again, or no source at all, is refused
        assert!(source_digests(&[(&b, &none)], &mut seen).is_err());
        assert!(source_digests(&[], &mut HashSet::new()).is_err());
        let mut outputs = vec![fragment(0, 14), fragment(0, 14)];
        let mut next = 9;
        let out = number_destinations(&mut outputs, &mut next).unwrap();
        assert_eq!(out.iter().map(|d| d.id).collect::<Vec<_>>(), [9, 10]);
        assert_eq!(outputs.iter().map(|f| f.id).collect::<Vec<_>>(), [9, 10]);
        assert_eq!(next, 11);
        // a destination handed in carrying a deletion file, or holding nothing, is refused
        let bad = DataFragment {
            deletion_file: Some(DeletionFile::default()),
            ..fragment(0, 4)
        };
        assert!(check_destination(&bad).is_err());
        assert!(check_destination(&fragment(0, 0)).is_err());
        assert!(check_destination(&fragment(0, 4)).is_ok());
    }
}
