//! A fragment's rows: written from batches, split every `max_rows_per_file` rows, read back
//! from the files that hold each column (NULL where none does).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray, StructArray};
use arrow_schema::{DataType, Field, Fields, Schema};
use futures::stream;
use lancet_file::{
    read_fragment, write_fragments, Column, DataFileAt, FileError, FileStore, FileVersion,
    FragmentOptions, Progress, Rows, WriteProgress,
};
use object_store::memory::InMemory;
use object_store::path::Path;

fn memory() -> FileStore {
    FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap()
}

fn schema() -> Schema {
    Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Utf8, true),
    ])
}

fn rows(start: i64, n: i64) -> RecordBatch {
    RecordBatch::try_new(
        Arc::new(schema()),
        vec![
            Arc::new(Int64Array::from_iter_values(start..start + n)),
            Arc::new(StringArray::from_iter(
                (start..start + n).map(|i| (i % 3 != 0).then(|| format!("s{i}"))),
            )),
        ],
    )
    .unwrap()
}

fn columns(schema: &Schema, ids: &[Vec<i32>]) -> Vec<Column> {
    schema
        .fields()
        .iter()
        .zip(ids)
        .map(|(f, ids)| Column {
            ids: ids.clone(),
            field: f.clone(),
        })
        .collect()
}

fn at(fs: &FileStore, dir: &Path, f: &lancet_proto::table::DataFile) -> DataFileAt {
    DataFileAt {
        store: fs.clone(),
        path: dir.clone().join(f.path.as_str()),
        size: Some(f.file_size_bytes),
        fields: f.fields.clone(),
        legacy: false,
    }
}

#[tokio::test]
async fn planned_file_sizes_close_files_where_planned() {
    let fs = memory();
    let dir = Path::from("t/data");
    let options = FragmentOptions {
        max_rows_per_file: 250,
        max_rows_per_group: 64,
        planned_rows: vec![301, 300],
        ..Default::default()
    };
    let batches = stream::iter([Ok::<_, FileError>(rows(0, 300)), Ok(rows(300, 400))]);
    let written = write_fragments(&fs, &dir, &schema(), &[0, 1], batches, options.clone())
        .await
        .unwrap();
    let counts: Vec<u64> = written.iter().map(|f| f.physical_rows).collect();
    // past the plan, files close every max_rows_per_file rows
    assert_eq!(counts, [301, 300, 99]);
    let zero = FragmentOptions {
        planned_rows: vec![10, 0],
        ..options
    };
    let batches = stream::iter([Ok::<_, FileError>(rows(0, 30))]);
    let refused = write_fragments(&fs, &dir, &schema(), &[0, 1], batches, zero).await;
    assert!(matches!(refused, Err(FileError::InvalidInput { .. })));
}

/// Records what a write tells it; fails the `fail_at`-th call when set.
struct Recorder {
    told: std::sync::Mutex<Vec<String>>,
    fail_at: Option<usize>,
}

impl Recorder {
    fn note(&self, what: String) -> Result<(), String> {
        let mut told = self.told.lock().unwrap();
        told.push(what);
        match self.fail_at == Some(told.len()) {
            true => Err("the observer gave up".into()),
            false => Ok(()),
        }
    }
}

impl WriteProgress for Recorder {
    fn begin(&self, f: &lancet_proto::table::DataFragment) -> Result<(), String> {
        self.note(format!("begin files={}", f.files.len()))
    }
    fn complete(&self, f: &lancet_proto::table::DataFragment) -> Result<(), String> {
        self.note(format!(
            "complete rows={} files={}",
            f.physical_rows,
            f.files.len()
        ))
    }
}

#[tokio::test]
async fn progress_is_told_each_fragment_begun_and_finished() {
    let fs = memory();
    let dir = Path::from("t/data");
    let recorder = Arc::new(Recorder {
        told: Default::default(),
        fail_at: None,
    });
    let options = FragmentOptions {
        max_rows_per_file: 4,
        progress: Progress::to(recorder.clone()),
        ..Default::default()
    };
    let batches = stream::iter([Ok::<_, FileError>(rows(0, 3)), Ok(rows(3, 7))]);
    let written = write_fragments(&fs, &dir, &schema(), &[0, 1], batches, options)
        .await
        .unwrap();
    assert_eq!(written.len(), 3);
    assert_eq!(
        *recorder.told.lock().unwrap(),
        [
            "begin files=0",
            "complete rows=4 files=1",
            "begin files=0",
            "complete rows=4 files=1",
            "begin files=0",
            "complete rows=2 files=1",
        ]
    );

    // an observer's failure stops the write, with the observer's reason
    let failing = Arc::new(Recorder {
        told: Default::default(),
        fail_at: Some(3),
    });
    let options = FragmentOptions {
        max_rows_per_file: 4,
        progress: Progress::to(failing.clone()),
        ..Default::default()
    };
    let batches = stream::iter([Ok::<_, FileError>(rows(0, 10))]);
    let refused = write_fragments(&fs, &dir, &schema(), &[0, 1], batches, options).await;
    assert!(
        matches!(&refused, Err(FileError::InvalidInput { rule, .. }) if rule.contains("gave up")),
        "{refused:?}"
    );
    assert_eq!(failing.told.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn rows_are_split_into_fragments_and_read_back() {
    let fs = memory();
    let dir = Path::from("t/data");
    let options = FragmentOptions {
        version: FileVersion::V2_2,
        max_rows_per_file: 250,
        max_rows_per_group: 100,
        ..Default::default()
    };
    let batches = stream::iter([Ok::<_, FileError>(rows(0, 300)), Ok(rows(300, 400))]);
    let written = write_fragments(&fs, &dir, &schema(), &[0, 1], batches, options)
        .await
        .unwrap();
    let counts: Vec<u64> = written.iter().map(|f| f.physical_rows).collect();
    assert_eq!(counts, [250, 250, 200]);
    for f in &written {
        assert_eq!(f.id, 0);
        let file = &f.files[0];
        assert_eq!((file.file_major_version, file.file_minor_version), (2, 2));
        assert_eq!(file.fields, [0, 1]);
        assert_eq!(file.column_indices, [0, 1]);
        assert!(file.file_size_bytes > 0);
        assert!(f.row_id_sequence.is_none());
    }
    let projection = columns(&schema(), &[vec![0], vec![1]]);
    let second = &written[1];
    let files = [at(&fs, &dir, &second.files[0])];
    let all = read_fragment(&files, &projection, 250, Rows::All)
        .await
        .unwrap();
    let ids = all.column(0).as_primitive::<Int64Type>();
    assert_eq!(ids.value(0), 250);
    assert_eq!(ids.value(249), 499);
    let some = read_fragment(&files, &projection[1..], 250, Rows::At(&[0, 2, 249]))
        .await
        .unwrap();
    let s: Vec<Option<&str>> = some.column(0).as_string::<i32>().iter().collect();
    assert_eq!(s, [Some("s250"), None, Some("s499")]);
    let range = read_fragment(&files, &projection[..1], 250, Rows::Range(10..12))
        .await
        .unwrap();
    assert_eq!(range.num_rows(), 2);
    // offsets dense in their span (read as the span, kept by a mask) and sparse ones
    // (taken) read the same rows; an offset past the rows is refused either way
    let dense: Vec<u64> = (100..200).filter(|o| o % 7 != 0).collect();
    for offsets in [dense, vec![3, 120, 248]] {
        let got = read_fragment(&files, &projection[..1], 250, Rows::At(&offsets))
            .await
            .unwrap();
        let ids: Vec<i64> = got.column(0).as_primitive::<Int64Type>().values().to_vec();
        let want: Vec<i64> = offsets.iter().map(|o| 250 + *o as i64).collect();
        assert_eq!(ids, want);
    }
    for offsets in [(240..251).collect(), vec![3, 120, 400]] {
        let err = read_fragment(&files, &projection[..1], 250, Rows::At(&offsets))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                FileError::OutOfRange { .. } | FileError::InvalidInput { .. }
            ),
            "{err:?}"
        );
    }
    // a record that lies about its rows is refused
    let err = read_fragment(&files, &projection, 251, Rows::All)
        .await
        .unwrap_err();
    assert!(matches!(err, FileError::Corrupt { .. }), "{err}");
}

#[tokio::test]
async fn a_column_no_file_holds_reads_as_null() {
    let fs = memory();
    let dir = Path::from("t/data");
    let written = write_fragments(
        &fs,
        &dir,
        &schema(),
        &[0, 1],
        stream::iter([Ok::<_, FileError>(rows(0, 10))]),
        FragmentOptions::default(),
    )
    .await
    .unwrap();
    let table = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Utf8, true),
        Field::new("w", DataType::Float32, true),
    ]);
    let projection = columns(&table, &[vec![0], vec![1], vec![2]]);
    let files = [at(&fs, &dir, &written[0].files[0])];
    let batch = read_fragment(&files, &projection[2..], 10, Rows::At(&[1, 5]))
        .await
        .unwrap();
    assert_eq!(batch.num_rows(), 2);
    assert_eq!(batch.column(0).null_count(), 2);
    assert_eq!(batch.schema().field(0).name(), "w");
}

#[tokio::test]
async fn rows_of_another_schema_are_refused() {
    let fs = memory();
    let other = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("s", DataType::Utf8, true),
        ])),
        vec![
            Arc::new(arrow_array::Int32Array::from(vec![1])),
            Arc::new(StringArray::from(vec!["a"])),
        ],
    )
    .unwrap();
    let err = write_fragments(
        &fs,
        &Path::from("t/data"),
        &schema(),
        &[0, 1],
        stream::iter([Ok::<_, FileError>(other)]),
        FragmentOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, FileError::InvalidInput { rule, .. } if rule.contains("\"id\" (Int32)")),
        "{err}"
    );
    // a non-nullable input column fits a nullable table column
    let strict = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("s", DataType::Utf8, false),
        ])),
        vec![
            Arc::new(Int64Array::from(vec![1])),
            Arc::new(StringArray::from(vec!["a"])),
        ],
    )
    .unwrap();
    assert!(lancet_file::conform(&strict, &schema()).is_ok());
}

#[tokio::test]
async fn nested_columns_list_the_fields_that_own_columns() {
    let fs = memory();
    let point = Fields::from(vec![
        Field::new("x", DataType::Int64, true),
        Field::new("y", DataType::Int64, true),
    ]);
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("p", DataType::Struct(point.clone()), true),
    ]);
    let p: ArrayRef = Arc::new(StructArray::new(
        point,
        vec![
            Arc::new(Int64Array::from(vec![1, 2])),
            Arc::new(Int64Array::from(vec![3, 4])),
        ],
        None,
    ));
    let batch = RecordBatch::try_new(
        Arc::new(schema.clone()),
        vec![Arc::new(Int64Array::from(vec![0, 1])), p],
    )
    .unwrap();
    for (version, fields) in [
        (FileVersion::V2_0, vec![0, 1, 2, 3]),
        (FileVersion::V2_1, vec![0, 2, 3]),
    ] {
        let dir = Path::from(format!("t{version:?}/data"));
        let written = write_fragments(
            &fs,
            &dir,
            &schema,
            &[0, 1, 2, 3],
            stream::iter([Ok::<_, FileError>(batch.clone())]),
            FragmentOptions {
                version,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let file = &written[0].files[0];
        assert_eq!(file.fields, fields, "{version:?}");
        let indices: Vec<i32> = (0..fields.len() as i32).collect();
        assert_eq!(file.column_indices, indices);
        // the struct column is found by its leaves' ids
        let projection = columns(&schema, &[vec![0], vec![1, 2, 3]]);
        let read = read_fragment(&[at(&fs, &dir, file)], &projection, 2, Rows::All)
            .await
            .unwrap();
        assert_eq!(read.column(1).as_struct().num_columns(), 2);
        assert_eq!(read.column(1).null_count(), 0);
    }
}
