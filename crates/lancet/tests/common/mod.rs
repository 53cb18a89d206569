//! Test tables and a reachability oracle shared by the facade's integration tests.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::Path;

use futures::TryStreamExt;
use lancet::paths::manifest::{list_versions, write_manifest, ManifestContent};
use lancet::paths::DatasetStore;
use lancet::proto::table::{DataFile, DataFragment, Manifest};
use lancet::{Caches, Dataset};

/// A fragment of 50 rows in one data file `{id}.lance`.
pub fn fragment(id: u64) -> DataFragment {
    fragment_in(id, &format!("{id}.lance"))
}

/// A fragment of 50 rows in one data file at `path` (relative to `data/`).
pub fn fragment_in(id: u64, path: &str) -> DataFragment {
    DataFragment {
        id,
        files: vec![DataFile {
            path: path.to_string(),
            fields: vec![0],
            column_indices: vec![0],
            file_major_version: 2,
            file_minor_version: 1,
            ..Default::default()
        }],
        physical_rows: 50,
        ..Default::default()
    }
}

/// Version 1 of a flat table of fragments `0..n` at `dir`.
pub async fn flat_table(dir: &Path, n: u64) -> Dataset {
    let m = Manifest {
        fragments: (0..n).map(fragment).collect(),
        max_fragment_id: n.checked_sub(1).map(|m| m as u32),
        ..Default::default()
    };
    table_of(dir, m).await
}

/// Version 1 of a table at `dir` holding `m` (written raw, with a commit time), opened.
pub async fn table_of(dir: &Path, mut m: Manifest) -> Dataset {
    let store = DatasetStore::create(dir.to_str().unwrap()).unwrap();
    m.version = 1;
    m.timestamp = Some(lancet::paths::manifest::now_timestamp());
    write_manifest(&store, &ManifestContent::new(&m))
        .await
        .unwrap();
    Dataset::open_with(store, None, Caches::new(Default::default()))
        .await
        .unwrap()
}

/// Copies a directory tree.
pub fn copy(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every file under `dir`, relative, `/`-separated.
pub fn files(dir: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                walk(root, &entry.path(), out);
            } else {
                let rel = entry.path().strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel.to_str().unwrap().replace('\\', "/"));
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

/// What one version of `ds`'s table needs in its own directory, computed from the facade's
/// public reads: its manifest, its transaction, its tree objects, and the data and deletion
/// files of its resolved fragments that live in this dataset (no `base_id`).
pub async fn needed_by(ds: &Dataset) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    out.insert(ds.storage().manifest_path());
    let tf = &ds.storage().manifest().transaction_file;
    if !tf.is_empty() {
        out.insert(format!("_transactions/{tf}"));
    }
    let fragments: Vec<DataFragment> = match ds.storage().tree() {
        Some(tree) => {
            let walk = tree.walk().await.unwrap();
            for o in walk.objects() {
                if o.base.base_id.is_none() {
                    out.insert(o.path.clone());
                }
            }
            walk.into_stream().try_collect().await.unwrap()
        }
        None => ds.storage().manifest().fragments.clone(),
    };
    for f in &fragments {
        for l in ds.storage().data_file_locations(f).unwrap() {
            if l.base.base_id.is_none() {
                out.insert(l.path);
            }
        }
        if let Some(l) = ds.storage().deletion_file_location(f).unwrap() {
            if l.base.base_id.is_none() {
                out.insert(l.path);
            }
        }
    }
    out
}

/// Writes a placeholder object for every data and deletion file `ds` names in its own
/// directory that does not exist yet (cleanup never reads them).
pub async fn materialize_files(dir: &Path, ds: &Dataset) {
    for path in needed_by(ds).await {
        let full = dir.join(&path);
        if !full.exists() && (path.starts_with("data/") || path.starts_with("_deletions/")) {
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, b"placeholder").unwrap();
        }
    }
}

/// The versions of the table at `dir`.
pub async fn versions(dir: &Path) -> Vec<u64> {
    let store = DatasetStore::open(dir.to_str().unwrap()).unwrap();
    list_versions(&store)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.version)
        .collect()
}

/// Files cleanup may ever delete (Lance's candidates and `_bt/`).
pub fn candidate(path: &str) -> bool {
    [
        "_versions/",
        "_transactions/",
        "data/",
        "_deletions/",
        "_indices/",
        "_fri/",
        "_bt/",
    ]
    .iter()
    .any(|p| path.starts_with(p))
        && !path.ends_with("latest_version_hint.json")
}

/// `fragment` with each data file written for real under `ds`'s `data/`: a Lance file of
/// `physical_rows` rows of one int64 column (field id 0), as the rewrite's caller would have
/// written it (a commit reads the footers of the files it adds).
pub async fn written(ds: &Dataset, mut fragment: DataFragment) -> DataFragment {
    use std::sync::Arc;
    let rows = fragment.physical_rows as i64;
    let schema = arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "a",
        arrow_schema::DataType::Int64,
        false,
    )]);
    let column: arrow_array::ArrayRef =
        Arc::new(arrow_array::Int64Array::from_iter_values(0..rows));
    let batch = arrow_array::RecordBatch::try_from_iter([("a", column)]).unwrap();
    for file in &mut fragment.files {
        let path = ds.storage().store().path(&format!("data/{}", file.path));
        let written = lancet::file::write_file(
            ds.storage().file_store(),
            &path,
            &schema,
            std::slice::from_ref(&batch),
            &lancet::file::WriteOptions::default(),
        )
        .await
        .unwrap();
        file.fields = vec![0];
        file.file_size_bytes = written.size_bytes;
    }
    fragment
}

/// Writes, under `ds`'s directory, every data file and deletion file `actions` add that is
/// not there yet, as a writer does before it commits (a commit reads the footers of the data
/// files it adds and looks its deletion files up): each data file a Lance file of
/// `physical_rows` rows holding exactly the fields its record lists (int64 columns), each
/// deletion file deleting the fragment's first `num_deleted_rows` rows.
pub async fn stage(ds: &Dataset, actions: &[(u64, lancet::tree::Action)]) {
    use lancet::tree::Action;
    for (id, action) in actions {
        match action {
            Action::Upsert(f) => stage_fragment(ds, f).await,
            Action::AddDeletionFile(d) => stage_deletion_file(ds, *id, d).await,
            Action::AddDataFile(_) | Action::ReplaceDataFile { .. } => {
                let Some(f) = ds.storage().fragment(*id).await.unwrap() else {
                    continue;
                };
                let file = match action {
                    Action::AddDataFile(file) => file.clone(),
                    Action::ReplaceDataFile {
                        expected_path,
                        path,
                        base_id,
                        ..
                    } => match f.files.iter().find(|d| &d.path == expected_path) {
                        Some(old) => DataFile {
                            path: path.clone(),
                            base_id: *base_id,
                            ..old.clone()
                        },
                        None => continue,
                    },
                    _ => continue,
                };
                stage_fragment(
                    ds,
                    &DataFragment {
                        id: *id,
                        files: vec![file],
                        physical_rows: f.physical_rows,
                        ..Default::default()
                    },
                )
                .await
            }
            _ => {}
        }
    }
}

/// [`stage`] for the data files and deletion file of one fragment record.
pub async fn stage_fragment(ds: &Dataset, f: &DataFragment) {
    for file in &f.files {
        if file.base_id.is_some() {
            continue;
        }
        let path = ds.storage().store().path(&format!("data/{}", file.path));
        if ds.storage().store().size(&path).await.is_ok() {
            continue;
        }
        let fields: Vec<i32> = file.fields.iter().copied().filter(|f| *f >= 0).collect();
        let schema = arrow_schema::Schema::new(
            fields
                .iter()
                .map(|id| {
                    arrow_schema::Field::new(format!("c{id}"), arrow_schema::DataType::Int64, true)
                })
                .collect::<Vec<_>>(),
        );
        let rows = f.physical_rows as i64;
        let columns: Vec<arrow_array::ArrayRef> = fields
            .iter()
            .map(|_| {
                std::sync::Arc::new(arrow_array::Int64Array::from_iter_values(0..rows))
                    as arrow_array::ArrayRef
            })
            .collect();
        let batch = arrow_array::RecordBatch::try_new(std::sync::Arc::new(schema.clone()), columns)
            .unwrap();
        lancet::file::write_file(
            ds.storage().file_store(),
            &path,
            &schema,
            std::slice::from_ref(&batch),
            &lancet::file::WriteOptions {
                field_ids: Some(fields.clone()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    }
    if let Some(d) = &f.deletion_file {
        stage_deletion_file(ds, f.id, d).await;
    }
}

/// Writes the deletion file `d` of fragment `fragment`: its first `num_deleted_rows` rows
/// (at least one) deleted, in the format its record names.
pub async fn stage_deletion_file(
    ds: &Dataset,
    fragment: u64,
    d: &lancet::proto::table::DeletionFile,
) {
    let name = lancet::paths::files::deletion_file_name(fragment, d).unwrap();
    let path = ds.storage().store().path(&format!("_deletions/{name}"));
    if ds.storage().store().size(&path).await.is_ok() {
        return;
    }
    let deleted: roaring::RoaringBitmap = (0..d.num_deleted_rows.max(1) as u32).collect();
    let bytes = match d.file_type {
        1 => lancet::rowid::deletion::encode_bitmap(&deleted),
        _ => lancet::rowid::deletion::encode_arrow(&deleted).unwrap(),
    };
    ds.storage().store().put(&path, bytes.into()).await.unwrap();
}

/// `Storage::commit_actions` after [`stage`]: the files the actions add are written first, as a
/// writer writes them before it commits.
#[allow(async_fn_in_trait)]
pub trait CommitStaged {
    async fn commit_staged(
        &self,
        manifest: Manifest,
        indices: &[lancet::proto::table::IndexMetadata],
        actions: &[(u64, lancet::tree::Action)],
        config: &lancet::tree::TreeWriterConfig,
    ) -> lancet::Result<Dataset>;
}

impl CommitStaged for Dataset {
    async fn commit_staged(
        &self,
        manifest: Manifest,
        indices: &[lancet::proto::table::IndexMetadata],
        actions: &[(u64, lancet::tree::Action)],
        config: &lancet::tree::TreeWriterConfig,
    ) -> lancet::Result<Dataset> {
        stage(self, actions).await;
        self.storage()
            .commit_actions(manifest, indices, actions, config)
            .await
            .map(|c| c.dataset)
    }
}
