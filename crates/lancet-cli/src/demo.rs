//! `lancet demo`: writes a small real Lance table in three versions, every one of which
//! pylance 14.0.2 opens: (1) three fragments with stable row ids (data files by lance-file,
//! manifest by lancet), (2) a deletion of every row of fragment 1 whose id is a multiple of 7,
//! (3) a BTree index on `id` trained by lancet. With `--layout tree` a fourth version keeps the
//! fragments in a fragment tree (which Lance 14 refuses by its flag, as it must).

use std::sync::Arc;

use arrow_array::{Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use lancet::file::{manifest_fields, write_file, FileVersion, WriteOptions};
use lancet::paths::manifest::{self};
use lancet::paths::{DatasetStore, ObjectUuid};
use lancet::proto::prost_types::Timestamp;
use lancet::proto::table::data_fragment::RowIdSequence as RowIds;
use lancet::proto::table::manifest::{DataStorageFormat, WriterVersion};
use lancet::proto::table::{DataFile, DataFragment, Manifest};
use lancet::rowid::deletion;
use lancet::rowid::RowIdSequence;
use lancet::tree::{Action, TreeWriterConfig};
use lancet::Dataset;

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

fn now() -> Timestamp {
    lancet::paths::manifest::now_timestamp()
}

/// Creates the demo dataset at `uri` and returns it opened.
pub async fn create(uri: &str) -> Result<Dataset, CliError> {
    let store = DatasetStore::create(uri)?;
    if !manifest::list_versions(&store).await?.is_empty() {
        return Err(CliError::Usage(format!(
            "{uri} already holds a dataset; choose an empty directory"
        )));
    }
    let fs = lancet::Dataset::file_store_for(&store)?;
    let schema = schema();
    let fields = manifest_fields(&schema)?;
    let field_ids: Vec<i32> = fields.iter().map(|f| f.id).collect();
    let (major, minor) = FILE_VERSION.data_file_version();
    let mut fragments = Vec::new();
    for id in 0..FRAGMENTS {
        let name = format!("{}.lance", ObjectUuid::new_v4());
        let path = store.path(&format!("data/{name}"));
        let batch = rows(id * ROWS_PER_FRAGMENT, ROWS_PER_FRAGMENT);
        let options = WriteOptions {
            version: FILE_VERSION,
            ..Default::default()
        };
        let written = write_file(&fs, &path, &schema, &[batch], &options).await?;
        fragments.push(DataFragment {
            id: id as u64,
            files: vec![DataFile {
                path: name,
                fields: field_ids.clone(),
                column_indices: (0..field_ids.len() as i32).collect(),
                file_major_version: major,
                file_minor_version: minor,
                file_size_bytes: written.size_bytes,
                base_id: None,
            }],
            physical_rows: written.num_rows,
            row_id_sequence: Some(RowIds::InlineRowIds(
                RowIdSequence::from_range(
                    (id * ROWS_PER_FRAGMENT) as u64..((id + 1) * ROWS_PER_FRAGMENT) as u64,
                )
                .encode(),
            )),
            ..Default::default()
        });
    }
    let manifest = Manifest {
        fields,
        fragments,
        version: 1,
        timestamp: Some(now()),
        max_fragment_id: Some((FRAGMENTS - 1) as u32),
        next_row_id: (FRAGMENTS * ROWS_PER_FRAGMENT) as u64,
        reader_feature_flags: lancet::paths::flags::STABLE_ROW_IDS,
        writer_feature_flags: lancet::paths::flags::STABLE_ROW_IDS,
        writer_version: Some(WriterVersion {
            library: "lancet".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            prerelease: None,
            build_metadata: None,
        }),
        data_format: Some(DataStorageFormat {
            file_format: "lance".into(),
            version: format!("{major}.{minor}"),
        }),
        ..Default::default()
    };
    manifest::write_manifest(&store, &manifest::ManifestContent::new(&manifest)).await?;
    let v1 =
        Dataset::open_with(store.clone(), None, lancet::Caches::new(Default::default())).await?;
    let v2 = delete_sevens(&v1).await?;
    Ok(v2.build_btree("id", 256).await?)
}

/// Version 2: deletes the rows of fragment [`DELETED_FRAGMENT`] whose id is a multiple of 7,
/// with a deletion file lancet writes and a storage action.
async fn delete_sevens(ds: &Dataset) -> Result<Dataset, CliError> {
    let first = DELETED_FRAGMENT * ROWS_PER_FRAGMENT as u64;
    let deleted: roaring::RoaringBitmap = (0..ROWS_PER_FRAGMENT as u32)
        .filter(|o| (first + u64::from(*o)).is_multiple_of(7))
        .collect();
    let file =
        deletion::write_deletion_file(ds.store(), DELETED_FRAGMENT, ds.version(), &deleted).await?;
    Ok(ds
        .commit_with_actions(
            ds.manifest().clone(),
            ds.indices(),
            &[(DELETED_FRAGMENT, Action::AddDeletionFile(file))],
            &TreeWriterConfig::default(),
        )
        .await?)
}

pub async fn run(dir: &str, tree: bool) -> Result<(), CliError> {
    let mut ds = create(dir).await?;
    if tree {
        ds = ds
            .convert_to_tree(&TreeWriterConfig::default(), |_, _| {})
            .await?;
    }
    println!(
        "created Lance dataset at {} (version {}, {} fragments, {} rows)",
        ds.uri(),
        ds.version(),
        ds.fragments().await?.len(),
        ds.num_rows().unwrap_or(0)
    );
    if tree {
        println!(
            "version {} keeps its fragments in a fragment tree: try `lancet tree show {}` (Lance 14 refuses this version; version {} opens)",
            ds.version(),
            ds.uri(),
            ds.version() - 1
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
