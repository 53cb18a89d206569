//! The columns every row has without a data file holding them: `_rowid`, `_rowaddr`,
//! `_row_created_at_version` and `_row_last_updated_at_version`. A scan adds them after its
//! projected columns when asked, and a filter may name them (`_rowid = 7`,
//! `_rowaddr >= 4294967296`, `_row_last_updated_at_version > 3`), as in Lance. A table column
//! of the same name comes first: a filter naming it reads the column.
//!
//! `_rowaddr` is `fragment id << 32 | offset`; `_rowid` is the row's stable id from its
//! fragment's row-id sequence on tables with stable row ids, and its address elsewhere.
//! The version columns come from the fragment's version sequences; a fragment without one
//! reads as version 1 (Lance 14.0.2: "no version metadata and every row reads as version 1").
//! A deleted row shown by a scan of deleted rows has no `_rowid` or `_rowaddr` (both NULL)
//! and keeps its versions, as in Lance.

use arrow_array::UInt64Array;
use lancet_proto::table::data_fragment::{CreatedAtVersionSequence, LastUpdatedAtVersionSequence};
use lancet_proto::table::DataFragment;
use lancet_proto::RowAddress;
use lancet_rowid::VersionSequence;
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
    /// `_row_last_updated_at_version`.
    LastUpdatedAt,
    /// `_row_created_at_version`.
    CreatedAt,
}

impl RowColumn {
    /// Every row column, in the order a scan adds those asked for (Lance's).
    pub const ALL: [RowColumn; 4] = [
        RowColumn::Id,
        RowColumn::Address,
        RowColumn::LastUpdatedAt,
        RowColumn::CreatedAt,
    ];

    /// The row column called `name`, if any.
    pub fn named(name: &str) -> Option<RowColumn> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The column's name.
    pub fn name(self) -> &'static str {
        match self {
            RowColumn::Id => "_rowid",
            RowColumn::Address => "_rowaddr",
            RowColumn::LastUpdatedAt => "_row_last_updated_at_version",
            RowColumn::CreatedAt => "_row_created_at_version",
        }
    }

    /// The column of `fragment`, ready to give values (its sequence decoded once).
    pub fn of(self, snap: &Snapshot, fragment: &DataFragment) -> Result<RowValues> {
        let id = u32::try_from(fragment.id).map_err(|_| Error::Corrupt {
            at: snap.manifest_ref(),
            rule: format!("fragment {} exceeds 32 bits", fragment.id),
        })?;
        let spilled = |what: &str| -> Error {
            lancet_rowid::RowIdError::Unsupported {
                fragment: fragment.id,
                rule: format!(
                    "its {what} versions are in a spilled column (flag 2048), which lancet does not read yet"
                ),
            }
            .into()
        };
        let source = match self {
            RowColumn::Address => Source::Addresses(RowAddress::first_of(id)),
            RowColumn::Id => match rowids::row_id_sequence(snap, fragment)? {
                Some(sequence) => Source::Ids(sequence),
                None if snap.has_stable_row_ids() => {
                    return Err(lancet_rowid::RowIdError::MissingSequence {
                        fragment: fragment.id,
                    }
                    .into())
                }
                None => Source::Addresses(RowAddress::first_of(id)),
            },
            RowColumn::CreatedAt => {
                if let Some(CreatedAtVersionSequence::ColumnCreatedAtVersions(_)) =
                    fragment.created_at_version_sequence
                {
                    return Err(spilled("created-at"));
                }
                Source::Versions(rowids::version_sequences(snap, fragment)?.0)
            }
            RowColumn::LastUpdatedAt => {
                if let Some(LastUpdatedAtVersionSequence::ColumnLastUpdatedAtVersions(_)) =
                    fragment.last_updated_at_version_sequence
                {
                    return Err(spilled("last-updated-at"));
                }
                Source::Versions(rowids::version_sequences(snap, fragment)?.1)
            }
        };
        Ok(RowValues {
            source,
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

/// Where one fragment's row column comes from.
enum Source {
    /// Addresses from the fragment's first.
    Addresses(u64),
    /// Stable ids from the fragment's sequence.
    Ids(lancet_rowid::RowIdSequence),
    /// Versions from the fragment's sequence; version 1 without one.
    Versions(Option<VersionSequence>),
}

/// One fragment's row column, ready to give values.
pub struct RowValues {
    source: Source,
    fragment: u64,
    physical_rows: u64,
}

impl RowValues {
    /// The values of the rows at `offsets`; an offset in `deleted` has no `_rowid` or
    /// `_rowaddr` (NULL) and keeps its versions. A row-id sequence shorter than an offset is
    /// the table's corruption; a version sequence shorter than one reads version 1, as Lance.
    pub fn at(&self, offsets: &[u64], deleted: Option<&RoaringBitmap>) -> Result<UInt64Array> {
        let shown = |o: u64| match deleted {
            Some(d) => u32::try_from(o).map_or(true, |o| !d.contains(o)),
            None => true,
        };
        match &self.source {
            Source::Ids(seq) => offsets
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
            Source::Addresses(base) => Ok(offsets
                .iter()
                .map(|&o| shown(o).then_some(base | o))
                .collect()),
            Source::Versions(seq) => Ok(offsets
                .iter()
                .map(|&o| Some(seq.as_ref().and_then(|s| s.version_at(o)).unwrap_or(1)))
                .collect()),
        }
    }
}
