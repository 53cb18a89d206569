//! Where each kind of object lives in a dataset root, spelled once: every other crate names a
//! dataset path through these (a plain-directory base holds files directly: see
//! [`crate::files`], which resolves a file's base first).

use lancet_proto::table::DeletionFile;

use crate::error::Result;

/// Data files: `data/{name}`.
pub const DATA_DIR: &str = "data";
/// Deletion files: `_deletions/{fragment}-{read_version}-{id}.{arrow|bin}`.
pub const DELETIONS_DIR: &str = "_deletions";
/// Index segments: `_indices/{uuid}/…`.
pub const INDICES_DIR: &str = "_indices";
/// Fragment Reuse Index row maps lancet writes: `_fri/{map_id}/…`.
pub const FRI_DIR: &str = "_fri";
/// Transaction files: `_transactions/{read_version}-{uuid}.txn`.
pub use crate::transaction::TRANSACTIONS_DIR;

/// `data/{name}`.
pub fn data_path(name: &str) -> String {
    format!("{DATA_DIR}/{name}")
}

/// `_deletions/{name}` of fragment `fragment`'s deletion file `file`.
pub fn deletion_path(fragment: u64, file: &DeletionFile) -> Result<String> {
    Ok(format!(
        "{DELETIONS_DIR}/{}",
        crate::files::deletion_file_name(fragment, file)?
    ))
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
        assert_eq!(transaction_path("1-u.txn"), "_transactions/1-u.txn");
    }
}
