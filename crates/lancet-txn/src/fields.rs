//! Field-id rules of a table's schema: which ids a table has handed out (never handed out
//! again), and how a field path names a field.

use lancet_proto::file::Field;

/// The highest field id a table has allocated, as Lance 14.0.2's `Manifest::max_field_id`:
/// the highest of `max_allocated_field_id` (where the table records it), the ids its schema
/// holds and the ids any data file of `fragments` names — a dropped column's id stays in the
/// files that hold its values, and a new column must never take it (it would read those
/// values). `None` for a table with no field at all.
pub fn max_field_id<'a>(
    manifest: &lancet_proto::table::Manifest,
    fragments: impl IntoIterator<Item = &'a lancet_proto::table::DataFragment>,
) -> Option<i32> {
    // the recorded high-water mark, and never below an id in use (a stale or hostile record)
    manifest
        .fields
        .iter()
        .map(|f| f.id)
        .chain(manifest.max_allocated_field_id)
        .chain(
            fragments
                .into_iter()
                .flat_map(|f| f.files.iter().flat_map(|d| d.fields.iter().copied())),
        )
        .max()
}

/// The top-level field (a column of the table) named `name`.
pub fn top_level<'a>(fields: &'a [Field], name: &str) -> Option<&'a Field> {
    fields.iter().find(|f| f.parent_id == -1 && f.name == name)
}

/// The id of the field at `path` (`a.b`: field `b` under top-level field `a`), as Lance
/// resolves a field path; `None` when the schema has no such field.
pub fn field_id_by_path(fields: &[Field], path: &str) -> Option<i32> {
    let mut parent = -1;
    let mut id = None;
    for part in path.split('.') {
        let f = fields
            .iter()
            .find(|f| f.parent_id == parent && f.name == part)?;
        parent = f.id;
        id = Some(f.id);
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use lancet_proto::table::{DataFile, DataFragment, Manifest};

    #[test]
    fn the_highest_id_allocated_counts_schema_files_and_the_record() {
        let field = |id| Field {
            id,
            ..Default::default()
        };
        let fragment = |ids: Vec<i32>| DataFragment {
            files: vec![DataFile {
                fields: ids,
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut m = Manifest {
            fields: vec![field(0), field(1)],
            ..Default::default()
        };
        assert_eq!(max_field_id(&m, []), Some(1));
        // a dropped column's id still named by a file
        assert_eq!(max_field_id(&m, [&fragment(vec![0, 1, 4])]), Some(4));
        // the record, and never below an id in use
        m.max_allocated_field_id = Some(7);
        assert_eq!(max_field_id(&m, []), Some(7));
        m.max_allocated_field_id = Some(0);
        assert_eq!(max_field_id(&m, []), Some(1));
        assert_eq!(max_field_id(&Manifest::default(), []), None);
    }
}
