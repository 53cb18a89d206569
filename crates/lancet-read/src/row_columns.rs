//! `_rowid` and `_rowaddr`: the columns every row has without a data file holding them.
//! A scan adds them after its projected columns when asked, and a filter may name them
//! (`_rowid = 7`, `_rowaddr >= 4294967296`), as in Lance. A table column of the same name
//! comes first: a filter naming it reads the column.
//!
//! `_rowaddr` is `fragment id << 32 | offset`; `_rowid` is the row's stable id from its
//! fragment's row-id sequence on tables with stable row ids, and its address elsewhere.
//! A deleted row shown by a scan of deleted rows has neither (both NULL), as in Lance.

use arrow_array::UInt64Array;
use lancet_proto::table::DataFragment;
use lancet_proto::RowAddress;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::rowids;
use crate::snapshot::Snapshot;

/// One of the row columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowColumn {
    /// `_rowid`.
    Id,
    /// `_rowaddr`.
    Address,
}

impl RowColumn {
    /// The row column called `name`, if any.
    pub fn named(name: &str) -> Option<RowColumn> {
        match name {
            "_rowid" => Some(RowColumn::Id),
            "_rowaddr" => Some(RowColumn::Address),
            _ => None,
        }
    }

    /// The column's name.
    pub fn name(self) -> &'static str {
        match self {
            RowColumn::Id => "_rowid",
            RowColumn::Address => "_rowaddr",
        }
    }

    /// The column of `fragment`, ready to give values (its row-id sequence decoded once).
    pub fn of(self, snap: &Snapshot, fragment: &DataFragment) -> Result<RowValues> {
        let id = u32::try_from(fragment.id).map_err(|_| Error::Corrupt {
            at: snap.manifest_ref(),
            rule: format!("fragment {} exceeds 32 bits", fragment.id),
        })?;
        let sequence = match self {
            RowColumn::Id => rowids::row_id_sequence(snap, fragment)?,
            RowColumn::Address => None,
        };
        if self == RowColumn::Id && sequence.is_none() && snap.has_stable_row_ids() {
            return Err(lancet_rowid::RowIdError::MissingSequence {
                fragment: fragment.id,
            }
            .into());
        }
        Ok(RowValues {
            base: RowAddress::first_of(id),
            sequence,
            fragment: fragment.id,
            physical_rows: fragment.physical_rows,
        })
    }

    /// The column's values for the rows at `offsets` of `fragment` ([`RowColumn::of`] then
    /// [`RowValues::at`]).
    pub fn values(
        self,
        snap: &Snapshot,
        fragment: &DataFragment,
        offsets: &[u64],
        deleted: Option<&RoaringBitmap>,
    ) -> Result<UInt64Array> {
        self.of(snap, fragment)?.at(offsets, deleted)
    }
}

/// One fragment's `_rowid` or `_rowaddr`: stable ids from its sequence, or addresses.
pub struct RowValues {
    base: u64,
    sequence: Option<lancet_rowid::RowIdSequence>,
    fragment: u64,
    physical_rows: u64,
}

impl RowValues {
    /// The values of the rows at `offsets`; an offset in `deleted` is NULL. A row-id
    /// sequence shorter than an offset is the table's corruption.
    pub fn at(&self, offsets: &[u64], deleted: Option<&RoaringBitmap>) -> Result<UInt64Array> {
        let shown = |o: u64| match deleted {
            Some(d) => u32::try_from(o).map_or(true, |o| !d.contains(o)),
            None => true,
        };
        match &self.sequence {
            Some(seq) => offsets
                .iter()
                .map(|&o| match shown(o) {
                    true => seq.get(o).map(Some).ok_or_else(|| {
                        lancet_rowid::RowIdError::LengthMismatch {
                            fragment: self.fragment,
                            sequence_len: seq.len(),
                            physical_rows: self.physical_rows,
                        }
                        .into()
                    }),
                    false => Ok(None),
                })
                .collect::<Result<UInt64Array>>(),
            None => Ok(offsets
                .iter()
                .map(|&o| shown(o).then_some(self.base | o))
                .collect()),
        }
    }
}
