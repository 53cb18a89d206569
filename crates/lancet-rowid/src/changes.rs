//! Which rows changed between two versions, by their created and last-updated versions, as
//! Lance 14.0.2's `delta` selects them on a stable-row-id table: rows inserted (created in
//! the range) and rows updated (created before it, last updated in it). A row a compaction
//! only moved keeps its id and versions, so it is neither. Rows written before Lance tracked
//! versions (no version sequence) count as created and updated at version 1.

use lancet_proto::table::DataFragment;
use lancet_proto::RowAddress;
use roaring::RoaringBitmap;

use crate::error::Result;
use crate::fragment::{row_ids_of, versions_of};
use crate::live::fragment_id32;
use crate::version::VersionSequence;

/// Which rows a change selects in versions `(begin, end]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Inserted,
    Updated,
}

impl Change {
    /// Whether a row created at version `created` and last updated at `updated` is this
    /// change of versions `(begin, end]`.
    pub fn holds(self, created: u64, updated: u64, begin: u64, end: u64) -> bool {
        match self {
            Change::Inserted => created > begin && created <= end,
            Change::Updated => created <= begin && updated > begin && updated <= end,
        }
    }
}

/// The rows a change selects, column by column, in the order found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangedRows {
    pub addresses: Vec<u64>,
    pub row_ids: Vec<u64>,
    pub created_at: Vec<u64>,
    pub updated_at: Vec<u64>,
}

impl ChangedRows {
    /// Adds the live rows of `fragment` (`deleted`: its deleted offsets) that `change`
    /// selects in versions `(begin, end]`, in offset order. A fragment without an inline
    /// row-id sequence adds nothing; `manifest` names where the fragment was read.
    pub fn add_fragment(
        &mut self,
        fragment: &DataFragment,
        manifest: &str,
        deleted: &RoaringBitmap,
        change: Change,
        (begin, end): (u64, u64),
    ) -> Result<()> {
        let Some(sequence) = row_ids_of(fragment, manifest)? else {
            return Ok(());
        };
        let (created, updated) = versions_of(fragment, manifest)?;
        let id = fragment_id32(fragment)?;
        let at = |s: &Option<VersionSequence>, offset: u64| {
            s.as_ref().and_then(|s| s.version_at(offset)).unwrap_or(1)
        };
        for (offset, row_id) in sequence.iter().enumerate() {
            let Ok(o) = u32::try_from(offset) else { break };
            if deleted.contains(o) {
                continue;
            }
            let (c, u) = (at(&created, u64::from(o)), at(&updated, u64::from(o)));
            if change.holds(c, u, begin, end) {
                self.addresses.push(RowAddress::new(id, o).as_u64());
                self.row_ids.push(row_id);
                self.created_at.push(c);
                self.updated_at.push(u);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_and_updated_rows_are_told_apart_by_their_versions() {
        // created in (2, 5]: inserted, whatever its update
        assert!(Change::Inserted.holds(3, 4, 2, 5));
        assert!(!Change::Inserted.holds(2, 4, 2, 5));
        assert!(!Change::Inserted.holds(6, 6, 2, 5));
        // created at or before 2, last updated in (2, 5]: updated
        assert!(Change::Updated.holds(1, 5, 2, 5));
        assert!(!Change::Updated.holds(1, 2, 2, 5));
        assert!(
            !Change::Updated.holds(1, 6, 2, 5),
            "updated again after the range"
        );
        assert!(
            !Change::Updated.holds(3, 4, 2, 5),
            "an insert is not an update"
        );
    }

    #[test]
    fn a_fragment_without_row_ids_adds_nothing_and_rows_without_versions_are_version_1() {
        let mut rows = ChangedRows::default();
        let plain = DataFragment {
            id: 1,
            physical_rows: 3,
            ..Default::default()
        };
        rows.add_fragment(&plain, "m", &RoaringBitmap::new(), Change::Inserted, (0, 5))
            .unwrap();
        assert_eq!(rows, ChangedRows::default());
        let sequence = crate::sequence::RowIdSequence::from_range(10..13);
        let with_ids = DataFragment {
            id: 2,
            physical_rows: 3,
            row_id_sequence: Some(
                lancet_proto::table::data_fragment::RowIdSequence::InlineRowIds(sequence.encode()),
            ),
            ..Default::default()
        };
        let deleted: RoaringBitmap = [1u32].into_iter().collect();
        rows.add_fragment(&with_ids, "m", &deleted, Change::Inserted, (0, 5))
            .unwrap();
        assert_eq!(rows.row_ids, [10, 12]);
        assert_eq!(rows.created_at, [1, 1]);
        assert_eq!(
            rows.addresses,
            [
                RowAddress::new(2, 0).as_u64(),
                RowAddress::new(2, 2).as_u64()
            ]
        );
        // the same rows are not inserted after version 1
        let mut later = ChangedRows::default();
        later
            .add_fragment(&with_ids, "m", &deleted, Change::Inserted, (1, 5))
            .unwrap();
        assert!(later.row_ids.is_empty());
    }
}
