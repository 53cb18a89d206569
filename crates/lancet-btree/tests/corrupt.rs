//! A corrupt `page_lookup.lance` or `page_data.lance` is a typed error naming the file.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use lancet_btree::{page_data_schema, page_lookup_schema};
use lancet_btree::{BTreeError, BTreeIndex, NoCache, Query};
use lancet_file::{write_file, FileStore, WriteOptions};
use object_store::memory::InMemory;
use object_store::path::Path;

struct Lookup {
    mins: Vec<Option<i64>>,
    maxs: Vec<Option<i64>>,
    nulls: Vec<u32>,
    idx: Vec<u32>,
    meta: Vec<(&'static str, &'static str)>,
}

fn good() -> Lookup {
    Lookup {
        mins: vec![Some(1), Some(5), Some(9)],
        maxs: vec![Some(4), Some(8), Some(9)],
        nulls: vec![0, 0, 0],
        idx: vec![0, 1, 2],
        meta: vec![("batch_size", "4"), ("range_partitioned", "false")],
    }
}

async fn open(l: Lookup, data_rows: usize) -> (Result<BTreeIndex, BTreeError>, FileStore, Path) {
    let fs = FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap();
    let dir = Path::from("_indices/bad");
    let batch = RecordBatch::try_new(
        page_lookup_schema(&DataType::Int64),
        vec![
            Arc::new(Int64Array::from(l.mins)) as ArrayRef,
            Arc::new(Int64Array::from(l.maxs)),
            Arc::new(UInt32Array::from(l.nulls)),
            Arc::new(UInt32Array::from(l.idx)),
        ],
    )
    .unwrap();
    let metadata: HashMap<String, String> = l
        .meta
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let opts = WriteOptions {
        metadata,
        ..Default::default()
    };
    write_file(
        &fs,
        &dir.clone().join("page_lookup.lance"),
        &page_lookup_schema(&DataType::Int64),
        &[batch],
        &opts,
    )
    .await
    .unwrap();
    let values: Vec<i64> = (1..=data_rows as i64).collect();
    let data = RecordBatch::try_new(
        page_data_schema(&DataType::Int64),
        vec![
            Arc::new(Int64Array::from(values)) as ArrayRef,
            Arc::new(UInt64Array::from_iter_values(0..data_rows as u64)),
        ],
    )
    .unwrap();
    write_file(
        &fs,
        &dir.clone().join("page_data.lance"),
        &page_data_schema(&DataType::Int64),
        &[data],
        &WriteOptions::default(),
    )
    .await
    .unwrap();
    (
        BTreeIndex::open(&fs, &dir, Arc::new(NoCache), &HashMap::new()).await,
        fs,
        dir,
    )
}

fn assert_corrupt(r: Result<BTreeIndex, BTreeError>, needle: &str) {
    match r {
        Err(BTreeError::Corrupt { at, rule }) => {
            assert!(at.object.ends_with("page_lookup.lance"), "{at}");
            assert!(rule.contains(needle), "{rule:?} should mention {needle:?}");
        }
        other => panic!("expected Corrupt({needle}), got {other:?}"),
    }
}

#[tokio::test]
async fn a_valid_lookup_opens_and_searches() {
    let (index, _, _) = open(good(), 9).await;
    let index = index.unwrap();
    let r = index
        .search(&Query::Equals(Arc::new(Int64Array::from(vec![6]))))
        .await
        .unwrap();
    assert_eq!(r.true_ids.iter().collect::<Vec<_>>(), vec![5]);
    assert_eq!(index.pages_read(), 1, "only the page holding 6 is read");
}

#[tokio::test]
async fn every_lookup_rule_rejects() {
    let mut l = good();
    l.mins.swap(0, 1);
    l.maxs.swap(0, 1);
    assert_corrupt(open(l, 9).await.0, "not sorted");

    let mut l = good();
    l.idx = vec![0, 1, 7];
    assert_corrupt(open(l, 9).await.0, "out of range");

    let mut l = good();
    l.idx = vec![0, 1, 1];
    assert_corrupt(open(l, 9).await.0, "appears twice");

    let mut l = good();
    l.meta = vec![("range_partitioned", "false")];
    assert_corrupt(open(l, 9).await.0, "no batch_size");

    let mut l = good();
    l.meta = vec![("batch_size", "0")];
    assert_corrupt(open(l, 9).await.0, "positive integer");

    let mut l = good();
    l.meta = vec![("batch_size", "four")];
    assert_corrupt(open(l, 9).await.0, "positive integer");

    let mut l = good();
    l.maxs[1] = Some(3);
    assert_corrupt(open(l, 9).await.0, "min > max");

    let mut l = good();
    l.nulls[2] = 5;
    assert_corrupt(open(l, 9).await.0, "NULLs");

    let mut l = good();
    l.maxs[0] = None;
    assert_corrupt(open(l, 9).await.0, "NULL max");

    // NULL min and max claim an all-NULL page, but only 2 of its 4 rows are NULL: range
    // searches would skip the page's values
    let mut l = good();
    l.mins[0] = None;
    l.maxs[0] = None;
    l.nulls[0] = 2;
    assert_corrupt(open(l, 9).await.0, "only 2 of its 4 rows are NULL");

    let mut l = good();
    l.meta = vec![("batch_size", "4"), ("range_partitioned", "true")];
    assert!(matches!(
        open(l, 9).await.0,
        Err(BTreeError::Unsupported { .. })
    ));
}

#[tokio::test]
async fn data_rows_must_match_the_lookup() {
    // 3 pages of 4 rows need 9..=12 data rows; 20 rows is 5 pages
    let (index, _, _) = open(good(), 20).await;
    let err = index.unwrap().search(&Query::IsNull).await;
    // IS NULL selects no page here; an equality forces the data file open
    assert!(err.is_ok());
    let (index, _, _) = open(good(), 20).await;
    let err = index
        .unwrap()
        .search(&Query::Equals(Arc::new(Int64Array::from(vec![5]))))
        .await
        .unwrap_err();
    assert!(
        matches!(err, BTreeError::Corrupt { ref at, .. } if at.object.ends_with("page_data.lance")),
        "{err}"
    );
}

/// The bounds statistics report: the first page not wholly NULL's min, the last page's max;
/// none when every page is NULL.
#[tokio::test]
async fn bounds_skip_all_null_pages() {
    let value = |a: &ArrayRef| a.as_any().downcast_ref::<Int64Array>().unwrap().value(0);
    let (index, _, _) = open(good(), 9).await;
    let (min, max) = index.unwrap().lookup().bounds().unwrap();
    assert_eq!((value(&min), value(&max)), (1, 9));
    let l = Lookup {
        mins: vec![None, Some(1), Some(5)],
        maxs: vec![None, Some(4), Some(8)],
        nulls: vec![4, 0, 0],
        idx: vec![0, 1, 2],
        meta: vec![("batch_size", "4")],
    };
    let (index, _, _) = open(l, 12).await;
    let (min, max) = index.unwrap().lookup().bounds().unwrap();
    assert_eq!((value(&min), value(&max)), (1, 8));
    let l = Lookup {
        mins: vec![None],
        maxs: vec![None],
        nulls: vec![3],
        idx: vec![0],
        meta: vec![("batch_size", "4")],
    };
    let (index, _, _) = open(l, 3).await;
    assert!(index.unwrap().lookup().bounds().is_none());
}

#[tokio::test]
async fn a_short_last_page_with_null_bounds_must_be_all_null() {
    // data page 2 holds rows 8..10 (2 rows); its lookup row says NULL min and max with
    // only 1 NULL: the lookup alone cannot tell, the data file's row count can
    let l = Lookup {
        mins: vec![None, Some(1), Some(5)],
        maxs: vec![None, Some(4), Some(8)],
        nulls: vec![1, 0, 0],
        idx: vec![2, 0, 1],
        meta: vec![("batch_size", "4")],
    };
    let (index, _, _) = open(l, 10).await;
    let err = index
        .unwrap()
        .search(&Query::Equals(Arc::new(Int64Array::from(vec![5]))))
        .await
        .unwrap_err();
    assert!(
        matches!(err, BTreeError::Corrupt { ref at, ref rule }
            if at.object.ends_with("page_data.lance") && rule.contains("only 1 of its 2 rows")),
        "{err}"
    );
}

#[tokio::test]
async fn schema_mismatch_is_rejected() {
    let fs = FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap();
    let dir = Path::from("_indices/s");
    // null_count nullable: not the exact schema
    let schema = Arc::new(Schema::new(vec![
        Field::new("min", DataType::Int64, true),
        Field::new("max", DataType::Int64, true),
        Field::new("null_count", DataType::UInt32, true),
        Field::new("page_idx", DataType::UInt32, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(vec![1])) as ArrayRef,
            Arc::new(Int64Array::from(vec![1])),
            Arc::new(UInt32Array::from(vec![0])),
            Arc::new(UInt32Array::from(vec![0])),
        ],
    )
    .unwrap();
    let opts = WriteOptions {
        metadata: [("batch_size".to_string(), "4".to_string())].into(),
        ..Default::default()
    };
    write_file(
        &fs,
        &dir.clone().join("page_lookup.lance"),
        &schema,
        &[batch],
        &opts,
    )
    .await
    .unwrap();
    let err = BTreeIndex::open(&fs, &dir, Arc::new(NoCache), &HashMap::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            BTreeError::File(lancet_file::FileError::SchemaMismatch { .. })
        ),
        "{err}"
    );
}
