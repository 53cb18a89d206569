//! `Dataset::verify_data` (issue 19): a data file that is missing, is not a Lance file, holds
//! another row count than `physical_rows`, or other field ids than its `DataFile` lists breaks
//! the named invariant; `verify` (which reads no data file) passes on each of these versions.

mod common;

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field as ArrowField, Schema};
use lancet::file::{manifest_fields, write_file, FileVersion, WriteOptions};
use lancet::paths::DatasetStore;
use lancet::proto::table::{DataFile, DataFragment, Manifest};
use lancet::{Dataset, ErrorKind, Invariant};

/// A fragment of `rows` rows in a Lance file `data/{name}` of columns `a` (id 0) and `b`
/// (id 1), written under `dir`.
async fn written_fragment(dir: &std::path::Path, id: u64, name: &str, rows: i64) -> DataFragment {
    let store = DatasetStore::create(dir.to_str().unwrap()).unwrap();
    let fs = lancet::file_store_for(&store).unwrap();
    let column =
        |r: std::ops::Range<i64>| -> ArrayRef { Arc::new(Int64Array::from_iter_values(r)) };
    let batch = RecordBatch::try_from_iter([("a", column(0..rows)), ("b", column(rows..2 * rows))])
        .unwrap();
    let written = write_file(
        &fs,
        &store.path(&format!("data/{name}")),
        &schema(),
        &[batch],
        &WriteOptions::default(),
    )
    .await
    .unwrap();
    let (major, minor) = FileVersion::V2_1.data_file_version();
    DataFragment {
        id,
        files: vec![DataFile {
            path: name.to_string(),
            fields: vec![0, 1],
            column_indices: vec![0, 1],
            file_major_version: major,
            file_minor_version: minor,
            file_size_bytes: written.size_bytes,
            base_id: None,
        }],
        physical_rows: written.num_rows,
        ..Default::default()
    }
}

fn schema() -> Schema {
    Schema::new(vec![
        ArrowField::new("a", DataType::Int64, false),
        ArrowField::new("b", DataType::Int64, false),
    ])
}

/// A table in a fresh directory whose second fragment is `broken(fragment 1)`.
async fn table_with(
    broken: impl FnOnce(&std::path::Path, &mut DataFragment),
) -> (tempfile::TempDir, Dataset) {
    table_allocating(None, broken).await
}

/// [`table_with`], the manifest recording `allocated` as its highest field id ever allocated.
async fn table_allocating(
    allocated: Option<i32>,
    broken: impl FnOnce(&std::path::Path, &mut DataFragment),
) -> (tempfile::TempDir, Dataset) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let good = written_fragment(&dir, 0, "good.lance", 40).await;
    let mut second = written_fragment(&dir, 1, "second.lance", 25).await;
    broken(&dir, &mut second);
    let m = Manifest {
        fields: manifest_fields(&schema()).unwrap(),
        fragments: vec![good, second],
        max_fragment_id: Some(1),
        max_allocated_field_id: allocated,
        // the flag that goes with the field (Lance's non-reusable field ids)
        writer_feature_flags: match allocated {
            Some(_) => lancet::proto::flags::NON_REUSABLE_FIELD_IDS,
            None => 0,
        },
        ..Default::default()
    };
    (tmp, common::table_of(&dir, m).await)
}

async fn broken_invariant(ds: &Dataset) -> (Invariant, String) {
    ds.verify().await.unwrap();
    let err = ds.storage().verify_data().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    let message = err.to_string();
    let invariant = err
        .invariant()
        .unwrap_or_else(|| panic!("no invariant named in {message}"));
    assert!(message.contains(&format!("{invariant} (")), "{message}");
    (invariant, message)
}

#[tokio::test]
async fn data_files_that_match_their_fragments_pass() {
    let (_dir, ds) = table_with(|_, _| {}).await;
    let report = ds.storage().verify_data().await.unwrap();
    assert_eq!(report.fragments, 2);
}

#[tokio::test]
async fn a_missing_data_file_breaks_data_file_opens() {
    let (_dir, ds) = table_with(|_, f| f.files[0].path = "absent.lance".into()).await;
    let (invariant, message) = broken_invariant(&ds).await;
    assert_eq!(invariant, Invariant::DataFileOpens);
    assert!(
        message.contains("fragment 1 data file absent.lance"),
        "{message}"
    );
}

#[tokio::test]
async fn a_file_that_is_not_a_lance_file_breaks_data_file_opens() {
    let (_dir, ds) = table_with(|dir, f| {
        std::fs::write(dir.join("data/junk.lance"), vec![7u8; 4096]).unwrap();
        f.files[0].path = "junk.lance".into();
        f.files[0].file_size_bytes = 4096;
    })
    .await;
    assert_eq!(broken_invariant(&ds).await.0, Invariant::DataFileOpens);
}

#[tokio::test]
async fn a_row_count_other_than_physical_rows_breaks_data_file_rows() {
    let (_dir, ds) = table_with(|_, f| f.physical_rows = 24).await;
    let (invariant, message) = broken_invariant(&ds).await;
    assert_eq!(invariant, Invariant::DataFileRows);
    assert!(
        message.contains("25 rows in the file, physical_rows 24"),
        "{message}"
    );
}

#[tokio::test]
async fn other_field_ids_than_the_data_file_lists_break_data_file_fields() {
    // a file of another schema: the fragment says it holds only field 0
    let (_dir, ds) = table_with(|_, f| f.files[0].fields = vec![0]).await;
    assert_eq!(broken_invariant(&ds).await.0, Invariant::DataFileFields);
    // a field the schema does not hold may be a column a Project dropped (Lance leaves its
    // id in the files that held it): the stored version alone cannot tell, so only the file
    // can, and does
    let (_dir, ds) = table_with(|_, f| f.files[0].fields = vec![0, 2]).await;
    ds.verify().await.unwrap();
    assert_eq!(broken_invariant(&ds).await.0, Invariant::DataFileFields);
    // where the table records the ids it allocated, one beyond them is found without
    // opening the file
    let (_dir, ds) = table_allocating(Some(1), |_, f| f.files[0].fields = vec![0, 2]).await;
    let err = ds.verify().await.unwrap_err();
    assert!(err.to_string().contains("DataFileFieldsInSchema"), "{err}");
    // a tombstone (-2) stands for one retired column the file still holds: [0, -2] is the
    // file's two columns, [-2] leaves one of them unaccounted for
    let (_dir, ds) = table_with(|_, f| f.files[0].fields = vec![0, -2]).await;
    ds.storage().verify_data().await.unwrap();
    let (_dir, ds) = table_with(|_, f| f.files[0].fields = vec![-2]).await;
    assert_eq!(broken_invariant(&ds).await.0, Invariant::DataFileFields);
}
