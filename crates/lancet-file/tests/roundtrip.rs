use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray, UInt16Array};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use lancet_file::{write_file, FileError, FileStore, FileVersion, LanceFile, WriteOptions};
use object_store::memory::InMemory;
use object_store::path::Path;

fn schema() -> Schema {
    Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("label", DataType::UInt16, true),
        Field::new("name", DataType::Utf8, true),
    ])
}

fn batch(start: i64, n: usize) -> RecordBatch {
    let ids: Vec<i64> = (start..start + n as i64).collect();
    RecordBatch::try_new(
        Arc::new(schema()),
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(UInt16Array::from(
                ids.iter()
                    .map(|i| (i % 3 != 0).then_some(*i as u16))
                    .collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                ids.iter().map(|i| format!("n{i}")).collect::<Vec<_>>(),
            )),
        ],
    )
    .unwrap()
}

fn memory() -> FileStore {
    FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap()
}

/// A table's data file records its columns' field ids from the manifest's schema.
#[tokio::test]
async fn field_ids_are_written_as_given() {
    let fs = memory();
    let n = schema().fields().len();
    let ids: Vec<i32> = (0..n as i32).map(|i| 7 + 2 * i).collect();
    let path = Path::from("ids.lance");
    let options = WriteOptions {
        field_ids: Some(ids.clone()),
        ..Default::default()
    };
    let written = write_file(&fs, &path, &schema(), &[batch(0, 10)], &options)
        .await
        .unwrap();
    let file = LanceFile::open(&fs, &path, Some(written.size_bytes))
        .await
        .unwrap();
    assert_eq!(file.field_ids(), ids.as_slice());
    for wrong in [ids[1..].to_vec(), [ids.clone(), vec![99]].concat()] {
        let options = WriteOptions {
            field_ids: Some(wrong),
            ..Default::default()
        };
        let err = write_file(
            &fs,
            &Path::from("bad.lance"),
            &schema(),
            &[batch(0, 1)],
            &options,
        )
        .await
        .unwrap_err();
        assert!(matches!(err, FileError::InvalidInput { .. }), "{err}");
    }
}

#[tokio::test]
async fn writes_and_reads_rows_metadata_and_buffers() {
    for version in [FileVersion::V2_0, FileVersion::V2_1, FileVersion::V2_2] {
        let fs = memory();
        let path = Path::from("dir/file.lance");
        let options = WriteOptions {
            version,
            metadata: HashMap::from([("k".to_string(), "v".to_string())]),
            global_buffers: vec![Bytes::from_static(b"LSPC-one"), Bytes::from_static(b"two")],
            ..Default::default()
        };
        let written = write_file(
            &fs,
            &path,
            &schema(),
            &[batch(0, 100), batch(100, 50)],
            &options,
        )
        .await
        .unwrap();
        assert_eq!(written.num_rows, 150);
        assert_eq!(written.global_buffers, vec![1, 2]);

        let file = LanceFile::open(&fs, &path, Some(written.size_bytes))
            .await
            .unwrap();
        assert_eq!(file.num_rows(), 150);
        file.check_schema(&schema()).unwrap();
        assert_eq!(file.metadata().get("k").map(String::as_str), Some("v"));
        assert_eq!(file.global_buffer(1).await.unwrap().as_ref(), b"LSPC-one");
        assert_eq!(file.global_buffer(2).await.unwrap().as_ref(), b"two");
        assert!(matches!(
            file.global_buffer(9).await,
            Err(FileError::OutOfRange { .. })
        ));

        let all = file.read_all().await.unwrap();
        assert_eq!(all.num_rows(), 150);
        assert_eq!(all.column(0).as_ref(), batch(0, 150).column(0).as_ref());
        assert_eq!(all.column(1).as_ref(), batch(0, 150).column(1).as_ref());

        let some = file.read_range(98..103).await.unwrap();
        assert_eq!(some.column(2).as_ref(), batch(98, 5).column(2).as_ref());

        let ranges = file.read_ranges(&[0..2, 2..4, 140..150]).await.unwrap();
        let ids = ranges
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let expect: Vec<i64> = (0..4).chain(140..150).collect();
        assert_eq!(ids.values().to_vec(), expect);

        assert!(matches!(
            file.read_range(100..151).await,
            Err(FileError::OutOfRange { .. })
        ));
    }
}

#[tokio::test]
async fn schema_checks_are_exact() {
    let fs = memory();
    let path = Path::from("f.lance");
    write_file(
        &fs,
        &path,
        &schema(),
        &[batch(0, 10)],
        &WriteOptions::default(),
    )
    .await
    .unwrap();
    let file = LanceFile::open(&fs, &path, None).await.unwrap();
    let wrong = Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("label", DataType::UInt16, true),
        Field::new("name", DataType::Utf8, true),
    ]);
    assert!(matches!(
        file.check_schema(&wrong),
        Err(FileError::SchemaMismatch { .. })
    ));

    // a batch whose schema differs from the declared one is refused before anything is written
    let other = Path::from("g.lance");
    let err = write_file(
        &fs,
        &other,
        &wrong,
        &[batch(0, 1)],
        &WriteOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, FileError::InvalidInput { .. }), "{err}");
}

#[tokio::test]
async fn garbage_is_a_typed_error() {
    let store = Arc::new(InMemory::new());
    let fs = FileStore::new(store.clone(), "memory:///").unwrap();
    use object_store::ObjectStoreExt;
    let good = Path::from("good.lance");
    let written = write_file(
        &fs,
        &good,
        &schema(),
        &[batch(0, 100)],
        &WriteOptions::default(),
    )
    .await
    .unwrap();
    let valid = store.get(&good).await.unwrap().bytes().await.unwrap();
    assert_eq!(valid.len() as u64, written.size_bytes);
    let mut cases: Vec<Vec<u8>> = vec![vec![], b"LANC".to_vec(), vec![0; 40], vec![0xff; 200]];
    // truncations and single-byte flips of a real file
    for cut in [1usize, 8, 39, 40, 41, valid.len() / 2] {
        cases.push(valid[..valid.len() - cut].to_vec());
    }
    for at in (0..valid.len()).step_by(valid.len() / 40 + 1) {
        let mut flipped = valid.to_vec();
        flipped[at] ^= 0x5a;
        cases.push(flipped);
    }
    let path = Path::from("bad.lance");
    let mut rejected = 0;
    for bytes in cases {
        store.put(&path, Bytes::from(bytes).into()).await.unwrap();
        // Opening and reading must give a typed error or valid data, never a panic.
        match LanceFile::open(&fs, &path, None).await {
            Err(FileError::Lance { .. } | FileError::Corrupt { .. }) => rejected += 1,
            Err(other) => panic!("unexpected error kind: {other}"),
            Ok(file) => {
                let _ = file.read_all().await;
            }
        }
    }
    assert!(rejected >= 10);
}

/// 300 rows of the test schema written as `name` in an in-memory store: the store, the path
/// and the file's bytes.
async fn written_in_memory(version: FileVersion, name: &str) -> (FileStore, Path, bytes::Bytes) {
    let raw = Arc::new(InMemory::new());
    let fs = FileStore::new(raw.clone(), "memory:///").unwrap();
    let path = Path::from(name);
    let options = WriteOptions {
        version,
        ..Default::default()
    };
    write_file(&fs, &path, &schema(), &[batch(0, 300)], &options)
        .await
        .unwrap();
    let bytes = object_store::ObjectStoreExt::get(raw.as_ref(), &path)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    (fs, path, bytes)
}

#[tokio::test]
async fn files_held_in_memory_read_and_take_like_stored_ones() {
    for version in [FileVersion::V2_0, FileVersion::V2_1] {
        let (fs, path, bytes) = written_in_memory(version, "held.lance").await;
        let held = lancet_file::open_bytes_exact(&path, bytes, &schema())
            .await
            .unwrap();
        let stored = LanceFile::open(&fs, &path, None).await.unwrap();
        assert_eq!(
            held.read_all().await.unwrap(),
            stored.read_all().await.unwrap()
        );
        assert_eq!(held.read_range(17..40).await.unwrap(), batch(17, 23));
        let taken = held.take_rows(&[0, 150, 299]).await.unwrap();
        let ids = taken
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(ids.values().to_vec(), vec![0, 150, 299]);
        assert!(matches!(
            held.take_rows(&[5, 5]).await,
            Err(FileError::InvalidInput { .. })
        ));
        assert_eq!(stored.take_rows(&[150]).await.unwrap(), batch(150, 1));
        assert_eq!(held.take_rows(&[]).await.unwrap().num_rows(), 0);
        assert!(matches!(
            held.take_rows(&[3, 300]).await,
            Err(FileError::OutOfRange { .. })
        ));
    }
}

#[tokio::test]
async fn a_file_reopened_from_its_outline_reads_like_a_fresh_open_and_refuses_other_bytes() {
    for version in [FileVersion::V2_0, FileVersion::V2_1] {
        let (_, path, bytes) = written_in_memory(version, "outlined.lance").await;
        let first = lancet_file::open_bytes_exact(&path, bytes.clone(), &schema())
            .await
            .unwrap();
        let outline = first.outline();
        assert!(outline.size_bytes() > 0 && outline.size_bytes() < bytes.len() as u64);
        let again = lancet_file::reopen_bytes(&path, bytes.clone(), &outline)
            .await
            .unwrap();
        assert_eq!(again.schema(), first.schema());
        assert_eq!(again.read_all().await.unwrap(), batch(0, 300));
        assert_eq!(again.take_rows(&[150]).await.unwrap(), batch(150, 1));

        // Bytes of another length under the outline: a typed corruption, nothing read.
        let shorter = bytes.slice(..bytes.len() - 1);
        assert!(matches!(
            lancet_file::reopen_bytes(&path, shorter, &outline).await,
            Err(FileError::Corrupt { .. })
        ));
        // Bytes of the same length but other content (a store serving something else under
        // an immutable name): reads give typed errors or rows, never a panic.
        let mut noise = bytes.to_vec();
        for (i, b) in noise.iter_mut().enumerate().take(bytes.len() - 64) {
            *b ^= (i as u8).wrapping_mul(151) | 1;
        }
        if let Ok(file) = lancet_file::reopen_bytes(&path, noise.into(), &outline).await {
            let _ = file.read_all().await;
            let _ = file.take_rows(&[7]).await;
        }
    }
}
