//! Rules on one fragment record, wherever it comes from (a leaf row, an `upsert_fragment`
//! payload, or the record a mutation produces), and the counts the tree's summaries add up.
//!
//! - Deletion files carry `0 < num_deleted_rows ≤ physical_rows` (spec "Leaf format"; decision
//!   7: proto3 cannot tell 0 from absent, so 0 is rejected). Counts in the tree are known:
//!   `physical_rows` 0 is zero rows.
//! - DataFile mapping rules (decision 8): `fields` holds no −1; a legacy file (major version 0)
//!   has no `column_indices`; any other file has one column index per field, with no duplicate
//!   other than −1.
//! - Base ids: a null `base_id` inherits the dataset of the object holding the record; when
//!   that object was reached through `base_id` B, the resolved record names B explicitly, as a
//!   flat manifest of the same version would ([`inherit_base`]).
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::collections::HashSet;

use lancet_proto::table::{DataFile, DataFragment, DeletionFile};

use crate::error::{Rule, TreeError};

/// A broken rule found by a pure check, before the object it belongs to is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: Rule,
    pub detail: String,
}

impl Violation {
    pub fn new(rule: Rule, detail: impl Into<String>) -> Self {
        Self {
            rule,
            detail: detail.into(),
        }
    }

    /// The violation as a corruption of `object`.
    pub fn at(self, object: &str) -> TreeError {
        TreeError::corrupt(object, self.rule, self.detail)
    }
}

pub type Checked<T> = std::result::Result<T, Violation>;

/// Record counts summed over a subtree: fragments, physical rows, visible rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub fragments: u64,
    pub total_rows: u64,
    pub visible_rows: u64,
}

/// Signed sums of counts (summaries plus mutation deltas), wide enough that no sum of u64
/// summaries and i64 deltas over one node can overflow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WideTotals {
    pub fragments: i128,
    pub total_rows: i128,
    pub visible_rows: i128,
}

impl WideTotals {
    pub(crate) fn add_deltas_wide(&mut self, other: WideTotals) {
        self.fragments += other.fragments;
        self.total_rows += other.total_rows;
        self.visible_rows += other.visible_rows;
    }

    /// Adds one resolved record (counts already checked when it was produced).
    pub(crate) fn add_record(&mut self, f: &DataFragment) {
        if let Ok((total, visible)) = crate::records::record_counts(f) {
            self.add_totals(Totals {
                fragments: 1,
                total_rows: total,
                visible_rows: visible,
            });
        }
    }

    pub fn add_totals(&mut self, t: Totals) {
        self.fragments += i128::from(t.fragments);
        self.total_rows += i128::from(t.total_rows);
        self.visible_rows += i128::from(t.visible_rows);
    }

    pub fn add_deltas(&mut self, d: Deltas) {
        self.fragments += i128::from(d.fragments);
        self.total_rows += i128::from(d.total_rows);
        self.visible_rows += i128::from(d.visible_rows);
    }

    /// The sums as non-negative totals with `visible ≤ total`, or what is wrong with them.
    pub fn to_totals(self) -> std::result::Result<Totals, lancet_proto::Malformed> {
        self.totals().map_err(lancet_proto::Malformed::from)
    }

    fn totals(self) -> std::result::Result<Totals, String> {
        let conv = |v: i128, what: &str| {
            u64::try_from(v).map_err(|_| format!("{what} sums to {v}, outside 0..=2^64-1"))
        };
        let t = Totals {
            fragments: conv(self.fragments, "fragment count")?,
            total_rows: conv(self.total_rows, "total_rows")?,
            visible_rows: conv(self.visible_rows, "visible_rows")?,
        };
        if t.visible_rows > t.total_rows {
            return Err(format!(
                "visible_rows {} exceeds total_rows {}",
                t.visible_rows, t.total_rows
            ));
        }
        Ok(t)
    }
}

/// The three count deltas of a mutation: record after minus record before.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deltas {
    pub fragments: i64,
    pub total_rows: i64,
    pub visible_rows: i64,
}

impl Deltas {
    /// Deltas from `before` to `after` (an absent record counts as zero).
    pub fn between(before: Option<&DataFragment>, after: Option<&DataFragment>) -> Checked<Self> {
        let (b, a) = (record_counts_opt(before)?, record_counts_opt(after)?);
        let diff = |x: u64, y: u64| {
            i64::try_from(i128::from(x) - i128::from(y))
                .map_err(|_| Violation::new(Rule::MutationDelta, "a row delta exceeds i64"))
        };
        Ok(Self {
            fragments: i64::from(after.is_some()) - i64::from(before.is_some()),
            total_rows: diff(a.0, b.0)?,
            visible_rows: diff(a.1, b.1)?,
        })
    }
}

fn record_counts_opt(f: Option<&DataFragment>) -> Checked<(u64, u64)> {
    f.map_or(Ok((0, 0)), record_counts)
}

/// `(physical_rows, visible_rows)` of a record, checking decision 7 on its deletion file.
pub(crate) fn record_counts(f: &DataFragment) -> Checked<(u64, u64)> {
    let deleted = match &f.deletion_file {
        None => 0,
        Some(d) => {
            check_deletion_file(d, Some(f.physical_rows))?;
            d.num_deleted_rows
        }
    };
    Ok((f.physical_rows, f.physical_rows - deleted))
}

/// Decision 7: `num_deleted_rows` is nonzero and, when the record is known, at most its
/// `physical_rows`.
pub(crate) fn check_deletion_file(d: &DeletionFile, physical_rows: Option<u64>) -> Checked<()> {
    if d.num_deleted_rows == 0 {
        return Err(Violation::new(
            Rule::DeletionCount,
            "a deletion file must carry num_deleted_rows (0 is not a count)",
        ));
    }
    if let Some(rows) = physical_rows {
        if d.num_deleted_rows > rows {
            return Err(Violation::new(
                Rule::DeletionCount,
                format!(
                    "num_deleted_rows {} exceeds physical_rows {rows}",
                    d.num_deleted_rows
                ),
            ));
        }
    }
    Ok(())
}

/// Decision 8: the DataFile mapping rules.
pub(crate) fn check_data_file(f: &DataFile) -> Checked<()> {
    let bad = |detail: String| Err(Violation::new(Rule::DataFileMapping, detail));
    if f.fields.contains(&-1) {
        return bad(format!("data file {:?}: fields holds -1", f.path));
    }
    if f.file_major_version == 0 {
        if !f.column_indices.is_empty() {
            return bad(format!(
                "data file {:?}: a legacy (major version 0) file has column_indices",
                f.path
            ));
        }
        return Ok(());
    }
    if f.column_indices.len() != f.fields.len() {
        return bad(format!(
            "data file {:?}: {} column indices for {} fields",
            f.path,
            f.column_indices.len(),
            f.fields.len()
        ));
    }
    let mut seen = HashSet::with_capacity(f.column_indices.len());
    for &c in &f.column_indices {
        if c != -1 && !seen.insert(c) {
            return bad(format!("data file {:?}: column index {c} repeats", f.path));
        }
    }
    Ok(())
}

/// Every rule on one complete record: counts and each data file's mapping.
pub(crate) fn check_record(f: &DataFragment) -> Checked<()> {
    record_counts(f)?;
    for file in &f.files {
        check_data_file(file)?;
    }
    for overlay in &f.overlays {
        if let Some(file) = &overlay.data_file {
            check_data_file(file)?;
        }
    }
    Ok(())
}

/// Gives every null `base_id` of a record's files, deletion file and overlay files the id of
/// the dataset the record was read from (`None`: the current dataset, nothing changes).
pub(crate) fn inherit_base(f: &mut DataFragment, base: Option<u32>) {
    let Some(id) = base else { return };
    for file in &mut f.files {
        file.base_id.get_or_insert(id);
    }
    if let Some(d) = &mut f.deletion_file {
        d.base_id.get_or_insert(id);
    }
    for overlay in &mut f.overlays {
        if let Some(file) = &mut overlay.data_file {
            file.base_id.get_or_insert(id);
        }
    }
}

/// Every stored or targeted fragment id is at most `max_fragment_id`; none is when it is
/// absent ([`Rule::MaxFragmentId`]).
pub(crate) fn check_max_id(max: Option<u32>, id: u64) -> std::result::Result<(), Violation> {
    match max {
        Some(max) if id <= u64::from(max) => Ok(()),
        Some(max) => Err(Violation::new(
            Rule::MaxFragmentId,
            format!("fragment id {id} exceeds max_fragment_id {max}"),
        )),
        None => Err(Violation::new(
            Rule::MaxFragmentId,
            format!("fragment id {id} is stored or targeted but max_fragment_id is absent"),
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn file(major: u32, fields: Vec<i32>, cols: Vec<i32>) -> DataFile {
        DataFile {
            path: "a.lance".into(),
            fields,
            column_indices: cols,
            file_major_version: major,
            file_minor_version: 0,
            ..Default::default()
        }
    }

    #[test]
    fn mapping_rules() {
        assert!(check_data_file(&file(2, vec![0, 1], vec![0, 1])).is_ok());
        assert!(check_data_file(&file(2, vec![0, -2], vec![0, -1])).is_ok());
        assert!(check_data_file(&file(2, vec![0, 1], vec![-1, -1])).is_ok());
        assert!(check_data_file(&file(0, vec![0, 1], vec![])).is_ok());
        for bad in [
            file(2, vec![0, -1], vec![0, 1]),
            file(0, vec![0], vec![0]),
            file(2, vec![0, 1], vec![0]),
            file(2, vec![0, 1], vec![3, 3]),
        ] {
            assert_eq!(
                check_data_file(&bad).unwrap_err().rule,
                Rule::DataFileMapping
            );
        }
    }

    #[test]
    fn deletion_counts() {
        let mut f = DataFragment {
            physical_rows: 10,
            deletion_file: Some(DeletionFile {
                num_deleted_rows: 3,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(record_counts(&f).unwrap(), (10, 7));
        f.deletion_file.as_mut().unwrap().num_deleted_rows = 0;
        assert_eq!(record_counts(&f).unwrap_err().rule, Rule::DeletionCount);
        f.deletion_file.as_mut().unwrap().num_deleted_rows = 11;
        assert_eq!(record_counts(&f).unwrap_err().rule, Rule::DeletionCount);
    }

    #[test]
    fn deltas_count_absent_as_zero() {
        let f = DataFragment {
            physical_rows: 5,
            ..Default::default()
        };
        let d = Deltas::between(None, Some(&f)).unwrap();
        assert_eq!((d.fragments, d.total_rows, d.visible_rows), (1, 5, 5));
        let d = Deltas::between(Some(&f), None).unwrap();
        assert_eq!((d.fragments, d.total_rows, d.visible_rows), (-1, -5, -5));
        assert_eq!(Deltas::between(None, None).unwrap(), Deltas::default());
    }
}
