//! Fragments pylance wrote (`peer.py rewrite` prints their JSON) as lancet's protobufs, and
//! the destination labels of a partitioning rewrite.

use serde_json::Value;

/// The `fragments` array of `v` as `DataFragment`s (ids are assigned at commit).
pub fn fragments_of(v: &Value) -> Vec<lancet::proto::table::DataFragment> {
    use lancet::proto::table::{DataFile, DataFragment};
    let ints = |v: &Value| -> Vec<i32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap() as i32)
            .collect()
    };
    v["fragments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| DataFragment {
            files: f["files"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| DataFile {
                    path: d["path"].as_str().unwrap().to_string(),
                    fields: ints(&d["fields"]),
                    column_indices: ints(&d["column_indices"]),
                    file_major_version: d["file_major_version"].as_u64().unwrap() as u32,
                    file_minor_version: d["file_minor_version"].as_u64().unwrap() as u32,
                    file_size_bytes: d["file_size_bytes"].as_u64().unwrap(),
                    base_id: d["base_id"].as_u64().map(|b| b as u32),
                })
                .collect(),
            physical_rows: f["physical_rows"].as_u64().unwrap(),
            ..Default::default()
        })
        .collect()
}

/// The `labels` array of `v` (`peer.py rewrite ... partition K`): each source row's
/// destination.
pub fn labels_of(v: &Value) -> Vec<u16> {
    v["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_u64().unwrap() as u16)
        .collect()
}
