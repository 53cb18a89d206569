//! What a fragment record says about its rows. Manifests written before Lance recorded
//! counts (and fragments committed with `physical_rows` 0) leave them unknown: Lance 14
//! reads `physical_rows == 0` on a fragment with data files, and `num_deleted_rows == 0` on a
//! deletion file, as "unknown", to be counted from the files.

use crate::table::DataFragment;

/// Counts of one fragment, with what is unknown left as `None` (Lance 14 writes 0 for "unknown"
/// `physical_rows` and `num_deleted_rows` in flat manifests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentSummary {
    pub id: u64,
    pub physical_rows: Option<u64>,
    pub num_deleted_rows: Option<u64>,
}

impl FragmentSummary {
    pub fn of(f: &DataFragment) -> Self {
        let deleted = match &f.deletion_file {
            None => Some(0),
            Some(d) if d.num_deleted_rows == 0 => None,
            Some(d) => Some(d.num_deleted_rows),
        };
        Self {
            id: f.id,
            physical_rows: (f.physical_rows != 0).then_some(f.physical_rows),
            num_deleted_rows: deleted,
        }
    }

    /// Visible rows, when both counts are known.
    pub fn visible_rows(&self) -> Option<u64> {
        self.physical_rows?.checked_sub(self.num_deleted_rows?)
    }
}

/// Whether `f`'s record leaves its row count unknown (0, with data files to count).
pub fn rows_unknown(f: &DataFragment) -> bool {
    f.physical_rows == 0 && !f.files.is_empty()
}
