//! `lancet demo`: writes a small real Lance table in three versions, every one of which
//! pylance 14.0.2 opens, through lancet's write API: (1) `Dataset::create` of three fragments
//! with stable row ids, (2) `Dataset::delete` of every row of fragment 1 whose id is a
//! multiple of 7, (3) a BTree index on `id` trained by lancet. With `--layout tree` the table
//! then grows as a fragment tree (which Lance 14 refuses by its flag, as it must): version 4
//! moves the fragments into a tree, 5 appends a fragment, 6 deletes rows, and the appended
//! rows are scanned back through the tree.

use std::sync::Arc;

use arrow_array::{Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use futures::TryStreamExt;
use lancet::file::FileVersion;
use lancet::tree::TreeWriterConfig;
use lancet::{CreateOptions, Dataset, Filter, ScanOptions};

use crate::error::CliError;

/// Rows per fragment and number of fragments of the demo table.
const ROWS_PER_FRAGMENT: i64 = 1000;
const FRAGMENTS: i64 = 3;
const FILE_VERSION: FileVersion = FileVersion::V2_1;
/// The fragment whose rows with `id % 7 == 0` version 2 deletes.
pub const DELETED_FRAGMENT: u64 = 1;

pub fn schema() -> Schema {
    Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("value", DataType::Float64, true),
    ])
}

/// Rows `start..start+n`: `id = i`, `name = "name-{i}"` (NULL every 10th row), `value = i / 2`.
pub fn rows(start: i64, n: i64) -> RecordBatch {
    let ids: Vec<i64> = (start..start + n).collect();
    let names: Vec<Option<String>> = ids
        .iter()
        .map(|i| (i % 10 != 9).then(|| format!("name-{i}")))
        .collect();
    let values: Vec<f64> = ids.iter().map(|i| *i as f64 / 2.0).collect();
    RecordBatch::try_new(
        Arc::new(schema()),
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(names)),
            Arc::new(Float64Array::from(values)),
        ],
    )
    .unwrap_or_else(|_| RecordBatch::new_empty(Arc::new(schema())))
}

/// Creates the demo dataset at `uri` and returns it opened: version 1 with three fragments,
/// version 2 deleting the rows of fragment [`DELETED_FRAGMENT`] whose id is a multiple of 7,
/// version 3 a BTree on `id`.
pub async fn create(uri: &str) -> Result<Dataset, CliError> {
    let batches = (0..FRAGMENTS).map(|f| Ok(rows(f * ROWS_PER_FRAGMENT, ROWS_PER_FRAGMENT)));
    let v1 = Dataset::create(
        uri,
        Arc::new(schema()),
        futures::stream::iter(batches),
        CreateOptions {
            stable_row_ids: true,
            data_storage_version: FILE_VERSION,
            max_rows_per_file: ROWS_PER_FRAGMENT as u64,
            ..Default::default()
        },
    )
    .await
    .map_err(|e| match e {
        lancet::Error::InvalidArgument { reason, .. } => {
            CliError::Usage(format!("{uri}: {reason}; choose an empty directory"))
        }
        e => e.into(),
    })?;
    let first = DELETED_FRAGMENT as i64 * ROWS_PER_FRAGMENT;
    let sevens = Filter::parse(&format!(
        "id % 7 = 0 AND id >= {first} AND id < {}",
        first + ROWS_PER_FRAGMENT
    ))?;
    let v2 = v1.dataset.delete(&sevens).await?.dataset;
    Ok(v2.build_btree("id", 256).await?.dataset)
}

/// The tree demo's growth after the conversion: an append of one more fragment, then a
/// delete of every row whose id ends in 5, both committed to the tree.
async fn grow_tree(ds: Dataset) -> Result<Dataset, CliError> {
    let next = FRAGMENTS * ROWS_PER_FRAGMENT;
    let appended = ds
        .append(futures::stream::iter([Ok(rows(next, ROWS_PER_FRAGMENT))]))
        .await?
        .dataset;
    Ok(appended
        .delete(&Filter::parse("id % 10 = 5")?)
        .await?
        .dataset)
}

pub async fn run(dir: &str, tree: bool) -> Result<(), CliError> {
    let mut ds = create(dir).await?;
    if tree {
        ds = ds
            .storage()
            .convert_to_tree(&TreeWriterConfig::default(), |_, _| {})
            .await?
            .dataset;
        ds = grow_tree(ds).await?;
    }
    println!(
        "created Lance dataset at {} (version {}, {} fragments, {} rows)",
        ds.uri(),
        ds.version(),
        ds.fragments().await?.len(),
        ds.num_rows().unwrap_or(0)
    );
    if tree {
        let first = ds
            .scan(ScanOptions {
                filter: Some(Filter::parse("id >= 3000")?),
                with_row_id: true,
                limit: Some(5),
                ..Default::default()
            })
            .await?
            .try_collect::<Vec<_>>()
            .await?;
        let shown = arrow_cast::pretty::pretty_format_batches(&first)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        println!(
            "versions: 1-3 as the flat demo, 4 the fragments moved into a fragment tree, 5 an append and 6 a delete committed to the tree (Lance 14 refuses versions 4-6; version 3 opens)"
        );
        println!("the first appended rows, scanned through the tree:\n{shown}");
        println!(
            "try `lancet tree show {}` and `lancet scan {} --limit 10`",
            ds.uri(),
            ds.uri()
        );
    } else {
        println!(
            "versions: 1 three fragments with stable row ids, 2 a deletion, 3 a BTree index on id"
        );
        println!(
            "open it with: python -c \"import lance; print(lance.dataset('{}').to_table(filter='id = 7', with_row_id=True))\"",
            ds.uri()
        );
    }
    Ok(())
}
