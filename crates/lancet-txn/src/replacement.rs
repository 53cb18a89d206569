//! A DataReplacement's rule, as Lance 14.0.2 builds it (`manifest_build.rs`,
//! `Operation::DataReplacement`):
//!
//! - **One field list.** Every replacement file of the operation holds the same field ids in
//!   the same order ([`same_fields`]); otherwise the operation is refused.
//! - **In place** when a data file of the fragment holds exactly the new file's field ids, in
//!   order, at the same file version: that slot takes the new file's path, size and base (its
//!   field list and column indices stay).
//! - **Added** when no data file of the fragment covers any replaced field (a column that had
//!   no data file, read as NULL).
//! - **Tombstoned and appended** otherwise, when every replaced field is covered and no legacy
//!   (v1) file covers one: the replaced fields become `-2` in the files holding them, a file
//!   left with no field of the schema (nor a spilled row-lineage column) is dropped, and the
//!   new file is appended.
//! - **Nothing changed** (a file covering only some of the replaced fields, or a v1 file
//!   covering one) is refused.
//! - Overlays committed at or before the version the replacement was read on lose the
//!   replaced fields (an overlay left with none goes); later overlays are newer values and
//!   stay.

use std::collections::HashSet;

use lancet_proto::file::Field;
use lancet_proto::table::data_fragment::{
    CreatedAtVersionSequence, LastUpdatedAtVersionSequence, RowIdSequence,
};
use lancet_proto::table::{DataFile, DataFragment};

use crate::error::{Result, TxnError};

/// The field id marking a field a later data file answers for (Lance's `TOMBSTONE_FIELD_ID`).
pub const TOMBSTONE_FIELD_ID: i32 = -2;
/// The reserved ids of row-lineage columns spilled into a data file (Lance's
/// `ROW_ID_FIELD_ID`, `ROW_CREATED_AT_VERSION_FIELD_ID`, `ROW_LAST_UPDATED_AT_VERSION_FIELD_ID`).
const ROW_ID_FIELD_ID: i32 = -3;
const ROW_CREATED_AT_VERSION_FIELD_ID: i32 = -4;
const ROW_LAST_UPDATED_AT_VERSION_FIELD_ID: i32 = -5;

const NAME: &str = "DataReplacement";

/// Refuses replacement files whose field lists differ (Lance requires one list).
pub fn same_fields<'a>(files: impl IntoIterator<Item = &'a DataFile>) -> Result<()> {
    let mut files = files.into_iter();
    let Some(first) = files.next() else {
        return Ok(());
    };
    match files.find(|f| f.fields != first.fields) {
        Some(other) => Err(TxnError::operation(
            NAME,
            format!(
                "every replacement file must hold the same fields: {:?} and {:?}",
                first.fields, other.fields
            ),
        )),
        None => Ok(()),
    }
}

/// `fragment` with `new_file` put in by the module's rule, against the table's `schema`;
/// `read_version` is the version the replacement was prepared on.
pub fn replace_data_file(
    fragment: &DataFragment,
    new_file: &DataFile,
    schema: &[Field],
    read_version: u64,
) -> Result<DataFragment> {
    let mut f = fragment.clone();
    let replaced = with_descendants(&new_file.fields, schema);
    let mut in_place = false;
    let mut covered: HashSet<i32> = HashSet::new();
    for file in &mut f.files {
        if file.fields == new_file.fields
            && file.file_major_version == new_file.file_major_version
            && file.file_minor_version == new_file.file_minor_version
        {
            file.path.clone_from(&new_file.path);
            file.file_size_bytes = new_file.file_size_bytes;
            file.base_id = new_file.base_id;
            in_place = true;
        }
        covered.extend(with_descendants(&file.fields, schema));
    }
    if covered.is_disjoint(&replaced) {
        f.files.push(new_file.clone());
    } else if !in_place
        && replaced.is_subset(&covered)
        && f.files
            .iter()
            .all(|d| !is_legacy(d) || d.fields.iter().all(|x| !replaced.contains(x)))
    {
        for file in f.files.iter_mut().filter(|d| !is_legacy(d)) {
            for x in &mut file.fields {
                if replaced.contains(x) {
                    *x = TOMBSTONE_FIELD_ID;
                }
            }
        }
        let live: HashSet<i32> = schema.iter().map(|s| s.id).collect();
        let spilled = spilled_lineage(fragment);
        f.files.retain(|d| {
            d.fields
                .iter()
                .any(|x| live.contains(x) || spilled.contains(x))
        });
        f.files.push(new_file.clone());
    }
    if f == *fragment {
        return Err(TxnError::operation(
            NAME,
            format!(
                "fragment {}: no data file matches the replacement's fields {:?} (same order and \
                 file version), and they cannot be tombstoned (a file holds only some of them, \
                 or a legacy file holds one)",
                f.id, new_file.fields
            ),
        ));
    }
    tombstone_overlays(&mut f, &replaced, read_version);
    Ok(f)
}

/// `fields` with every schema field below them (a nested parent's children).
fn with_descendants(fields: &[i32], schema: &[Field]) -> HashSet<i32> {
    let mut ids: HashSet<i32> = fields.iter().copied().filter(|x| *x >= 0).collect();
    loop {
        let before = ids.len();
        for s in schema {
            if ids.contains(&s.parent_id) {
                ids.insert(s.id);
            }
        }
        if ids.len() == before {
            return ids;
        }
    }
}

/// A legacy (v1) data file: Lance's reader finds a v1 file's pages from its first field, so
/// a field there is never tombstoned.
fn is_legacy(file: &DataFile) -> bool {
    file.file_major_version == 0 && file.file_minor_version <= 2
}

/// The reserved ids of the row-lineage columns `fragment` keeps in a data file.
fn spilled_lineage(fragment: &DataFragment) -> Vec<i32> {
    let mut ids = Vec::new();
    if matches!(
        fragment.row_id_sequence,
        Some(RowIdSequence::ColumnRowIds(_))
    ) {
        ids.push(ROW_ID_FIELD_ID);
    }
    if matches!(
        fragment.created_at_version_sequence,
        Some(CreatedAtVersionSequence::ColumnCreatedAtVersions(_))
    ) {
        ids.push(ROW_CREATED_AT_VERSION_FIELD_ID);
    }
    if matches!(
        fragment.last_updated_at_version_sequence,
        Some(LastUpdatedAtVersionSequence::ColumnLastUpdatedAtVersions(_))
    ) {
        ids.push(ROW_LAST_UPDATED_AT_VERSION_FIELD_ID);
    }
    ids
}

/// The replaced fields tombstoned in the overlays committed at or before `read_version`;
/// an overlay left with no field goes.
fn tombstone_overlays(f: &mut DataFragment, replaced: &HashSet<i32>, read_version: u64) {
    for overlay in f
        .overlays
        .iter_mut()
        .filter(|o| o.committed_version <= read_version)
    {
        if let Some(d) = overlay.data_file.as_mut() {
            for x in &mut d.fields {
                if replaced.contains(x) {
                    *x = TOMBSTONE_FIELD_ID;
                }
            }
        }
    }
    f.overlays.retain(|o| {
        o.committed_version > read_version
            || o.data_file
                .as_ref()
                .is_some_and(|d| d.fields.iter().any(|x| *x != TOMBSTONE_FIELD_ID))
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use lancet_proto::table::DataOverlayFile;

    fn file(path: &str, fields: &[i32]) -> DataFile {
        DataFile {
            path: path.into(),
            fields: fields.to_vec(),
            column_indices: (0..fields.len() as i32).collect(),
            file_major_version: 2,
            file_minor_version: 0,
            ..Default::default()
        }
    }

    fn schema(ids: &[i32]) -> Vec<Field> {
        ids.iter()
            .map(|&id| Field {
                id,
                parent_id: -1,
                ..Default::default()
            })
            .collect()
    }

    fn fragment(files: Vec<DataFile>) -> DataFragment {
        DataFragment {
            id: 3,
            files,
            physical_rows: 10,
            ..Default::default()
        }
    }

    #[test]
    fn an_exact_match_is_replaced_in_place_keeping_its_columns() {
        let f = fragment(vec![file("a", &[0, 1]), file("b", &[2])]);
        let mut new = file("b2", &[2]);
        new.file_size_bytes = 77;
        new.column_indices = vec![5];
        let r = replace_data_file(&f, &new, &schema(&[0, 1, 2]), 1).unwrap();
        assert_eq!(r.files[0], f.files[0]);
        assert_eq!(r.files[1].path, "b2");
        assert_eq!(r.files[1].file_size_bytes, 77);
        assert_eq!(
            r.files[1].column_indices,
            vec![0],
            "the slot's columns stay"
        );
    }

    #[test]
    fn a_field_with_no_file_gets_the_new_one() {
        let f = fragment(vec![file("a", &[0, 1])]);
        let r = replace_data_file(&f, &file("c", &[5]), &schema(&[0, 1, 5]), 1).unwrap();
        assert_eq!(r.files.len(), 2);
        assert_eq!(r.files[1].path, "c");
    }

    #[test]
    fn fields_inside_a_wider_file_are_tombstoned_and_the_file_appended() {
        let f = fragment(vec![file("a", &[0, 1]), file("b", &[2])]);
        let r = replace_data_file(&f, &file("x", &[1]), &schema(&[0, 1, 2]), 1).unwrap();
        let fields: Vec<(&str, Vec<i32>)> = r
            .files
            .iter()
            .map(|d| (d.path.as_str(), d.fields.clone()))
            .collect();
        assert_eq!(
            fields,
            [("a", vec![0, -2]), ("b", vec![2]), ("x", vec![1])],
            "field 1 answered by x"
        );
        // only the replaced field counts as rewritten (an index on field 0 keeps fragment 3)
        assert_eq!(crate::coverage::rewritten_fields(&f, &r), vec![1]);
    }

    #[test]
    fn another_order_or_version_tombstones_the_whole_file_and_drops_it() {
        let f = fragment(vec![file("a", &[0, 1]), file("b", &[2])]);
        let r = replace_data_file(&f, &file("a2", &[1, 0]), &schema(&[0, 1, 2]), 1).unwrap();
        let paths: Vec<&str> = r.files.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["b", "a2"]);
        let mut newer = file("a3", &[0, 1]);
        newer.file_minor_version = 1;
        let r = replace_data_file(&f, &newer, &schema(&[0, 1, 2]), 1).unwrap();
        let paths: Vec<&str> = r.files.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["b", "a3"]);
    }

    #[test]
    fn a_partial_cover_or_a_legacy_file_is_refused() {
        let f = fragment(vec![file("a", &[0, 1])]);
        let e = replace_data_file(&f, &file("x", &[1, 7]), &schema(&[0, 1, 7]), 1).unwrap_err();
        assert!(e.to_string().contains("fragment 3"), "{e}");
        let mut legacy = file("a", &[0, 1]);
        legacy.file_major_version = 0;
        legacy.file_minor_version = 2;
        let f = fragment(vec![legacy]);
        let mut x = file("x", &[1]);
        x.file_major_version = 0;
        x.file_minor_version = 2;
        assert!(replace_data_file(&f, &x, &schema(&[0, 1]), 1).is_err());
    }

    #[test]
    fn a_file_keeping_a_spilled_row_id_column_stays() {
        let mut f = fragment(vec![file("a", &[0, ROW_ID_FIELD_ID]), file("b", &[1])]);
        f.row_id_sequence = Some(RowIdSequence::ColumnRowIds(Default::default()));
        let r = replace_data_file(&f, &file("a2", &[0]), &schema(&[0, 1]), 1).unwrap();
        assert_eq!(r.files[0].fields, vec![-2, ROW_ID_FIELD_ID]);
        f.row_id_sequence = None;
        let r = replace_data_file(&f, &file("a2", &[0]), &schema(&[0, 1]), 1).unwrap();
        assert_eq!(r.files.len(), 2, "a file of tombstones and a stray id goes");
    }

    #[test]
    fn overlays_read_before_lose_the_fields_later_ones_stay() {
        let overlay = |version: u64, fields: &[i32]| DataOverlayFile {
            data_file: Some(file("o", fields)),
            committed_version: version,
            coverage: None,
        };
        let mut f = fragment(vec![file("a", &[0, 1])]);
        f.overlays = vec![overlay(2, &[1]), overlay(3, &[0, 1]), overlay(9, &[1])];
        let r = replace_data_file(&f, &file("x", &[1]), &schema(&[0, 1]), 5).unwrap();
        let kept: Vec<(u64, Vec<i32>)> = r
            .overlays
            .iter()
            .map(|o| (o.committed_version, o.data_file.clone().unwrap().fields))
            .collect();
        assert_eq!(kept, [(3, vec![0, -2]), (9, vec![1])]);
    }

    #[test]
    fn replacement_files_of_one_operation_hold_one_field_list() {
        assert!(same_fields([&file("a", &[1]), &file("b", &[1])]).is_ok());
        let e = same_fields([&file("a", &[1]), &file("b", &[2])]).unwrap_err();
        assert!(e.to_string().contains("same fields"), "{e}");
    }
}
