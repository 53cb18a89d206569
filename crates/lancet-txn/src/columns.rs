//! Columns a change adds or rewrites, as Lance 14.0.2 records them: the new fields numbered
//! after every id the table has allocated (`Manifest::max_field_id`), and the fragments of
//! the Merge that publishes them, each with the files written for it.
//!
//! The three paths that add fields — a new column with its values, columns added as NULL,
//! and a cast (a new field for the column, new files) — build their fields and fragments
//! here, so the numbering and the Merge's shape are stated once.

use std::collections::HashMap;

use lancet_proto::file::Field;
use lancet_proto::table::transaction::{DataReplacement, DataReplacementGroup, Operation};
use lancet_proto::table::{DataFile, DataFragment, Manifest};

use crate::fields::max_field_id;

/// The id the next new field takes: one after every id `manifest` (with its `fragments`'
/// data files) has allocated, 0 on a table with no field.
pub fn next_field_id<'a>(
    manifest: &Manifest,
    fragments: impl IntoIterator<Item = &'a DataFragment>,
) -> i32 {
    max_field_id(manifest, fragments).map_or(0, |id| id + 1)
}

/// `new`, numbered from 0 (as a schema's fields are numbered on their own: parents before
/// children, a top-level field's parent -1), shifted to start at `first`: ids and the
/// parent ids that point inside `new` move together.
pub fn numbered_from(mut new: Vec<Field>, first: i32) -> Vec<Field> {
    for f in &mut new {
        f.id += first;
        if f.parent_id >= 0 {
            f.parent_id += first;
        }
    }
    new
}

/// Whether publishing `added` keeps Lance's nullability promise for data written meanwhile
/// (Lance 14.0.2's `merge_introduces_required_field` negated): a new non-nullable top-level
/// column does not, since an append prepared without it holds no values for it and must
/// retry.
pub fn preserves_nullability(added: &[Field]) -> bool {
    added.iter().all(|f| f.parent_id != -1 || f.nullable)
}

/// `fragments` as a Merge lists them: each with the files `written` for it (by fragment id,
/// in the order written) after its own.
pub fn with_written(fragments: &[DataFragment], written: &[(u64, DataFile)]) -> Vec<DataFragment> {
    let mut by_fragment: HashMap<u64, Vec<&DataFile>> = HashMap::new();
    for (id, file) in written {
        by_fragment.entry(*id).or_default().push(file);
    }
    fragments
        .iter()
        .map(|f| {
            let mut f = f.clone();
            if let Some(files) = by_fragment.get(&f.id) {
                f.files.extend(files.iter().map(|&d| d.clone()));
            }
            f
        })
        .collect()
}

/// The fragments no data file of which holds field `id`: its column reads NULL there until a
/// file for it is put in place (what a stopped backfill has left to do).
pub fn lacking(fragments: &[DataFragment], id: i32) -> impl Iterator<Item = &DataFragment> {
    fragments
        .iter()
        .filter(move |f| !f.files.iter().any(|d| d.fields.contains(&id)))
}

/// Lance's DataReplacement putting each of `files` in place for its fragment (the files of
/// one column, written after the column was published).
pub fn data_replacement(files: &[(u64, DataFile)]) -> Operation {
    let replacements = files
        .iter()
        .map(|(id, file)| DataReplacementGroup {
            fragment_id: *id,
            new_file: Some(file.clone()),
        })
        .collect();
    Operation::DataReplacement(DataReplacement { replacements })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(id: i32, parent_id: i32, nullable: bool) -> Field {
        Field {
            id,
            parent_id,
            nullable,
            ..Default::default()
        }
    }

    #[test]
    fn new_fields_take_ids_after_every_allocated_one_and_keep_their_parents() {
        let manifest = Manifest {
            fields: vec![field(0, -1, true), field(1, -1, true)],
            max_allocated_field_id: Some(5),
            ..Default::default()
        };
        let first = next_field_id(&manifest, []);
        assert_eq!(first, 6);
        // a struct and its child, numbered on their own
        let new = numbered_from(vec![field(0, -1, true), field(1, 0, true)], first);
        assert_eq!(
            new.iter().map(|f| (f.id, f.parent_id)).collect::<Vec<_>>(),
            [(6, -1), (7, 6)]
        );
        assert_eq!(next_field_id(&Manifest::default(), []), 0);
    }

    #[test]
    fn only_a_required_top_level_column_breaks_nullability() {
        assert!(preserves_nullability(&[field(3, -1, true)]));
        assert!(preserves_nullability(&[
            field(3, -1, true),
            field(4, 3, false)
        ]));
        assert!(!preserves_nullability(&[field(3, -1, false)]));
    }

    #[test]
    fn a_fragment_lacks_a_field_no_file_of_which_holds_it() {
        let fragment = |id: u64, fields: Vec<i32>| DataFragment {
            id,
            files: vec![DataFile {
                fields,
                ..Default::default()
            }],
            ..Default::default()
        };
        let fragments = [
            fragment(1, vec![0, 1]),
            fragment(2, vec![0]),
            fragment(3, vec![1]),
        ];
        let ids: Vec<u64> = lacking(&fragments, 1).map(|f| f.id).collect();
        assert_eq!(ids, [2]);
    }

    #[test]
    fn each_fragment_gains_the_files_written_for_it() {
        let file = |path: &str| DataFile {
            path: path.into(),
            ..Default::default()
        };
        let fragment = |id: u64| DataFragment {
            id,
            files: vec![file(&format!("own-{id}"))],
            ..Default::default()
        };
        let listed = with_written(
            &[fragment(1), fragment(2), fragment(3)],
            &[(3, file("a")), (1, file("b")), (3, file("c"))],
        );
        let paths: Vec<Vec<&str>> = listed
            .iter()
            .map(|f| f.files.iter().map(|d| d.path.as_str()).collect())
            .collect();
        assert_eq!(
            paths,
            [vec!["own-1", "b"], vec!["own-2"], vec!["own-3", "a", "c"]]
        );
    }
}
