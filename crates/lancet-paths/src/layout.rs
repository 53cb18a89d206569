//! Where each kind of object lives in a dataset root, spelled once: every other crate names a
//! dataset path through these (a plain-directory base holds files directly: see
//! [`crate::files`], which resolves a file's base first).

use lancet_proto::table::deletion_file::DeletionFileType;
use lancet_proto::table::{DeletionFile, Transaction};

use crate::error::{PathsError, Result};

/// Data files: `data/{name}`.
pub const DATA_DIR: &str = "data";
/// Deletion files: `_deletions/{fragment}-{read_version}-{id}.{arrow|bin}`.
pub const DELETIONS_DIR: &str = "_deletions";
/// Index segments: `_indices/{uuid}/…`.
pub const INDICES_DIR: &str = "_indices";
/// Fragment Reuse Index row maps lancet writes: `_fri/{map_id}/…`.
pub const FRI_DIR: &str = "_fri";
/// Transaction files: `_transactions/{read_version}-{uuid}.txn`.
pub const TRANSACTIONS_DIR: &str = "_transactions";

/// Branches' own dataset roots: `tree/{name}/` (`tree/{name}/_versions/`, ...).
pub const BRANCH_TREES_DIR: &str = "tree";

/// `data/{name}`.
pub fn data_path(name: &str) -> String {
    format!("{DATA_DIR}/{name}")
}

/// `_deletions/{name}` of fragment `fragment`'s deletion file `file`.
pub fn deletion_path(fragment: u64, file: &DeletionFile) -> Result<String> {
    Ok(format!(
        "{DELETIONS_DIR}/{}",
        deletion_file_name(fragment, file)?
    ))
}

/// File name of a deletion file: `{fragment_id}-{read_version}-{id}.{arrow|bin}`.
pub fn deletion_file_name(fragment_id: u64, file: &DeletionFile) -> Result<String> {
    let suffix = match DeletionFileType::try_from(file.file_type) {
        Ok(DeletionFileType::ArrowArray) => "arrow",
        Ok(DeletionFileType::Bitmap) => "bin",
        Err(_) => {
            return Err(PathsError::InvalidRelativePath {
                path: format!("{fragment_id}-{}-{}", file.read_version, file.id),
                rule: "unknown deletion file type",
            })
        }
    };
    Ok(format!(
        "{fragment_id}-{}-{}.{suffix}",
        file.read_version, file.id
    ))
}

/// `{read_version}-{uuid}.txn`: the file name Lance gives a transaction (what
/// `Manifest.transaction_file` holds).
pub fn transaction_file_name(transaction: &Transaction) -> String {
    format!("{}-{}.txn", transaction.read_version, transaction.uuid)
}

/// `_indices/{uuid}`: an index segment's directory.
pub fn index_dir(uuid: impl std::fmt::Display) -> String {
    format!("{INDICES_DIR}/{uuid}")
}

/// `_indices/{uuid}/{file}`: one file of an index segment.
pub fn index_file(uuid: impl std::fmt::Display, file: &str) -> String {
    format!("{INDICES_DIR}/{uuid}/{file}")
}

/// `_fri/{map_id}`: a row map's directory.
pub fn fri_dir(map_id: impl std::fmt::Display) -> String {
    format!("{FRI_DIR}/{map_id}")
}

/// `tree/{name}`: branch `name`'s dataset root, relative to the main dataset's root.
pub fn branch_root(name: &str) -> String {
    format!("{BRANCH_TREES_DIR}/{name}")
}

/// Branch `name`'s dataset root as a URI below the main dataset's `uri`.
pub fn branch_uri(uri: &str, name: &str) -> String {
    format!("{}/{}", uri.trim_end_matches('/'), branch_root(name))
}

/// `_fri/{map_id}/{file}`: one file of a row map.
pub fn fri_file(map_id: impl std::fmt::Display, file: &str) -> String {
    format!("{FRI_DIR}/{map_id}/{file}")
}

/// `_transactions/{file}`: a transaction file named by `Manifest.transaction_file`.
pub fn transaction_path(file: &str) -> String {
    format!("{TRANSACTIONS_DIR}/{file}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_spelled_as_lance_spells_them() {
        assert_eq!(data_path("a.lance"), "data/a.lance");
        let d = DeletionFile {
            file_type: 1,
            read_version: 3,
            id: 9,
            ..Default::default()
        };
        assert_eq!(deletion_path(4, &d).unwrap(), "_deletions/4-3-9.bin");
        assert_eq!(index_dir("u"), "_indices/u");
        assert_eq!(
            index_file("u", "page_data.lance"),
            "_indices/u/page_data.lance"
        );
        assert_eq!(fri_dir(7), "_fri/7");
        assert_eq!(fri_file(7, "m.lance"), "_fri/7/m.lance");
        assert_eq!(branch_root("a/b"), "tree/a/b");
        assert_eq!(branch_uri("s3://b/t/", "x"), "s3://b/t/tree/x");
        assert_eq!(transaction_path("1-u.txn"), "_transactions/1-u.txn");
    }
}
