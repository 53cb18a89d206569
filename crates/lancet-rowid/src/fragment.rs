//! The row-id structures a `DataFragment` carries, decoded strictly: its stable row id
//! sequence (`inline_row_ids`, field 5) and its created-at / last-updated-at version sequences
//! (fields 9 and 7). Sequences spilled to a column (flag 2048) are not read yet.

use lancet_proto::table::data_fragment::{
    CreatedAtVersionSequence as Created, LastUpdatedAtVersionSequence as Updated,
    RowIdSequence as PbRowIds,
};
use lancet_proto::table::DataFragment;
use lancet_proto::ObjectRef;

use crate::error::{Result, RowIdError};
use crate::sequence::RowIdSequence;
use crate::version::VersionSequence;

/// `fragment`'s row id sequence, if it has one; `manifest` names the object holding it.
pub fn row_ids_of(fragment: &DataFragment, manifest: &str) -> Result<Option<RowIdSequence>> {
    match &fragment.row_id_sequence {
        None => Ok(None),
        Some(PbRowIds::InlineRowIds(bytes)) => {
            RowIdSequence::decode(bytes)
                .map(Some)
                .map_err(|source| RowIdError::Corrupt {
                    at: ObjectRef::new(manifest)
                        .within(format!("row id sequence of fragment {}", fragment.id)),
                    source,
                })
        }
        Some(PbRowIds::ColumnRowIds(_)) => Err(RowIdError::Unsupported {
            fragment: fragment.id,
            rule: "its row ids are in a spilled column (flag 2048), which lancet does not read yet"
                .into(),
        }),
    }
}

/// `fragment`'s `(created_at, last_updated_at)` version sequences, where stored inline.
pub fn versions_of(
    fragment: &DataFragment,
    manifest: &str,
) -> Result<(Option<VersionSequence>, Option<VersionSequence>)> {
    let decode = |bytes: &[u8], what: &str| {
        VersionSequence::decode(bytes).map_err(|source| RowIdError::Corrupt {
            at: ObjectRef::new(manifest).within(format!(
                "{what} version sequence of fragment {}",
                fragment.id
            )),
            source,
        })
    };
    let created = match &fragment.created_at_version_sequence {
        Some(Created::InlineCreatedAtVersions(b)) => Some(decode(b, "created-at")?),
        _ => None,
    };
    let updated = match &fragment.last_updated_at_version_sequence {
        Some(Updated::InlineLastUpdatedAtVersions(b)) => Some(decode(b, "last-updated-at")?),
        _ => None,
    };
    Ok((created, updated))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sequences_decode_strictly_and_spilled_ones_are_named() {
        let mut f = DataFragment {
            id: 4,
            physical_rows: 3,
            ..Default::default()
        };
        assert!(row_ids_of(&f, "m").unwrap().is_none());
        f.row_id_sequence = Some(PbRowIds::InlineRowIds(
            RowIdSequence::from_range(5..8).encode(),
        ));
        assert_eq!(row_ids_of(&f, "m").unwrap().unwrap().len(), 3);
        f.row_id_sequence = Some(PbRowIds::InlineRowIds(vec![0xff]));
        let e = row_ids_of(&f, "m").unwrap_err();
        assert!(
            e.to_string().contains("row id sequence of fragment 4"),
            "{e}"
        );
        f.row_id_sequence = Some(PbRowIds::ColumnRowIds(Default::default()));
        assert!(matches!(
            row_ids_of(&f, "m"),
            Err(RowIdError::Unsupported { fragment: 4, .. })
        ));
        f.created_at_version_sequence = Some(Created::InlineCreatedAtVersions(vec![0xff]));
        let e = versions_of(&f, "m").unwrap_err();
        assert!(e.to_string().contains("created-at version sequence"), "{e}");
    }
}
