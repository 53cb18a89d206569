//! Where the files a fragment or index names live, given their resolved base.

use lancet_proto::table::{DataFile, DataFragment, DeletionFile, ExternalFile};

use crate::bases::{BaseRequirement, BaseTable, ResolvedBase};
use crate::error::{PathsError, Result};
use crate::tree_paths::check_relative;

/// One object: the base it lives in and its path relative to that base's URI.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectLocation {
    pub base: ResolvedBase,
    /// Relative to `base.uri`, `/`-separated.
    pub path: String,
}

impl ObjectLocation {
    /// The full URI or local path, for display.
    pub fn display_uri(&self) -> String {
        format!("{}/{}", self.base.uri, self.path)
    }
}

fn relative(path: &str) -> Result<&str> {
    check_relative(path).map_err(|rule| PathsError::InvalidRelativePath {
        path: path.to_string(),
        rule,
    })?;
    Ok(path)
}

/// Location of `dir/name` in a dataset root, or `name` in a plain directory base.
fn in_base(base: ResolvedBase, dir: &str, name: &str) -> ObjectLocation {
    let path = if base.is_dataset_root {
        format!("{dir}/{name}")
    } else {
        name.to_string()
    };
    ObjectLocation { base, path }
}

/// A data file: `{dataset}/data/{path}`, or `{dir}/{path}` under a plain-directory base.
pub fn data_file_location(
    file: &DataFile,
    bases: &BaseTable,
    inherited: &ResolvedBase,
) -> Result<ObjectLocation> {
    let base = bases.resolve(file.base_id, inherited, BaseRequirement::Any)?;
    Ok(in_base(
        base,
        crate::layout::DATA_DIR,
        relative(&file.path)?,
    ))
}

pub use crate::layout::deletion_file_name;

/// Every object `fragment` names, in order: its data files, its overlays' data files, its
/// deletion file. (Its ExternalFile arms, which lancet does not model, are not among them.)
pub fn fragment_locations(
    fragment: &DataFragment,
    bases: &BaseTable,
    inherited: &ResolvedBase,
) -> Result<Vec<ObjectLocation>> {
    let overlays = fragment
        .overlays
        .iter()
        .filter_map(|o| o.data_file.as_ref());
    let mut out = fragment
        .files
        .iter()
        .chain(overlays)
        .map(|f| data_file_location(f, bases, inherited))
        .collect::<Result<Vec<_>>>()?;
    if let Some(d) = &fragment.deletion_file {
        out.push(deletion_file_location(fragment.id, d, bases, inherited)?);
    }
    Ok(out)
}

/// A deletion file: `{dataset}/_deletions/{name}` or `{dir}/{name}`.
pub fn deletion_file_location(
    fragment_id: u64,
    file: &DeletionFile,
    bases: &BaseTable,
    inherited: &ResolvedBase,
) -> Result<ObjectLocation> {
    let base = bases.resolve(file.base_id, inherited, BaseRequirement::Any)?;
    Ok(in_base(
        base,
        crate::layout::DELETIONS_DIR,
        &deletion_file_name(fragment_id, file)?,
    ))
}

/// An `ExternalFile` embedded in fragment state: relative to the resolved dataset of the object
/// that contains it (it has no `base_id` of its own).
pub fn external_file_location(
    file: &ExternalFile,
    containing: &ResolvedBase,
) -> Result<ObjectLocation> {
    Ok(ObjectLocation {
        base: containing.clone(),
        path: relative(&file.path)?.to_string(),
    })
}

/// The directory of an index segment: `{dataset}/_indices/{uuid}`.
pub fn index_dir_location(
    uuid: &crate::ObjectUuid,
    base_id: Option<u32>,
    bases: &BaseTable,
    inherited: &ResolvedBase,
) -> Result<ObjectLocation> {
    let base = bases.resolve(base_id, inherited, BaseRequirement::Any)?;
    Ok(in_base(base, crate::layout::INDICES_DIR, &uuid.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lancet_proto::table::deletion_file::DeletionFileType;
    use lancet_proto::table::BasePath;

    fn table() -> BaseTable {
        BaseTable::new(&[
            BasePath {
                id: 0,
                name: Some("src".into()),
                is_dataset_root: true,
                path: "/src".into(),
            },
            BasePath {
                id: 5,
                name: None,
                is_dataset_root: false,
                path: "/plain/".into(),
            },
        ])
        .unwrap()
    }

    #[test]
    fn a_fragment_names_its_data_overlay_and_deletion_files() {
        let here = ResolvedBase::current_dataset("/ds");
        let file = |path: &str, base_id| DataFile {
            path: path.into(),
            base_id,
            ..Default::default()
        };
        let f = DataFragment {
            id: 3,
            files: vec![file("a.lance", None), file("b.lance", Some(5))],
            overlays: vec![lancet_proto::table::DataOverlayFile {
                data_file: Some(file("o.lance", Some(0))),
                ..Default::default()
            }],
            deletion_file: Some(DeletionFile {
                read_version: 2,
                id: 9,
                num_deleted_rows: 1,
                ..Default::default()
            }),
            ..Default::default()
        };
        let shown: Vec<String> = fragment_locations(&f, &table(), &here)
            .unwrap()
            .iter()
            .map(|l| l.display_uri())
            .collect();
        assert_eq!(
            shown,
            [
                "/ds/data/a.lance",
                "/plain/b.lance",
                "/src/data/o.lance",
                "/ds/_deletions/3-2-9.arrow"
            ]
        );
        let mut unknown = f.clone();
        unknown.files[0].base_id = Some(77);
        assert!(fragment_locations(&unknown, &table(), &here).is_err());
    }

    #[test]
    fn data_and_deletion_files() {
        let here = ResolvedBase::current_dataset("/ds");
        let t = table();
        let mut f = DataFile {
            path: "abc.lance".into(),
            ..Default::default()
        };
        assert_eq!(
            data_file_location(&f, &t, &here).unwrap().display_uri(),
            "/ds/data/abc.lance"
        );
        f.base_id = Some(0);
        assert_eq!(
            data_file_location(&f, &t, &here).unwrap().display_uri(),
            "/src/data/abc.lance"
        );
        f.base_id = Some(5);
        assert_eq!(
            data_file_location(&f, &t, &here).unwrap().display_uri(),
            "/plain/abc.lance"
        );
        f.path = "../escape.lance".into();
        assert!(matches!(
            data_file_location(&f, &t, &here),
            Err(PathsError::InvalidRelativePath { .. })
        ));

        let d = DeletionFile {
            file_type: DeletionFileType::Bitmap as i32,
            read_version: 3,
            id: 99,
            num_deleted_rows: 2,
            base_id: None,
        };
        assert_eq!(
            deletion_file_location(7, &d, &t, &here)
                .unwrap()
                .display_uri(),
            "/ds/_deletions/7-3-99.bin"
        );
        let d = DeletionFile {
            file_type: 0,
            base_id: Some(0),
            ..d
        };
        assert_eq!(
            deletion_file_location(7, &d, &t, &here)
                .unwrap()
                .display_uri(),
            "/src/_deletions/7-3-99.arrow"
        );
        let bad = DeletionFile { file_type: 9, ..d };
        assert!(deletion_file_location(7, &bad, &t, &here).is_err());
    }

    #[test]
    fn external_files_are_relative_to_their_container() {
        let here = ResolvedBase::current_dataset("/ds");
        let e = ExternalFile {
            path: "_indices/x/details.binpb".into(),
            offset: 0,
            size: 10,
        };
        assert_eq!(
            external_file_location(&e, &here).unwrap().display_uri(),
            "/ds/_indices/x/details.binpb"
        );
        let e = ExternalFile {
            path: "/etc/passwd".into(),
            ..e
        };
        assert!(external_file_location(&e, &here).is_err());
    }
}
