//! `lancet bench cleanup`: what a cleanup costs on a long history.
//!
//! Builds a table of `fragments` fragments (flat, or in a fragment tree), then `versions`
//! commits: each replaces `changed` fragments by new ones (new data files) and gives one
//! fragment a new deletion file, and every data and deletion file is written as a small
//! object, so a version adds `changed + 3` objects (data, deletion, manifest, transaction;
//! more for tree objects). Then, through a store that counts requests, from a cold handle: a
//! dry run, and the cleanup keeping the newest `retain` versions. Reports time and requests
//! of each, and the objects before and after.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use lancet::paths::DatasetStore;
use lancet::proto::table::{DataFile, DataFragment, DeletionFile};
use lancet::tree::{Action, TreeWriterConfig};
use lancet::{Caches, CleanupPolicy, Dataset};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use serde_json::json;

use crate::error::BenchError;

/// Requests of each kind a store served.
#[derive(Debug, Default)]
struct Counts {
    get: AtomicU64,
    put: AtomicU64,
    list: AtomicU64,
    delete: AtomicU64,
}

impl Counts {
    fn json(&self) -> serde_json::Value {
        json!({
            "get": self.get.load(Ordering::Relaxed),
            "put": self.put.load(Ordering::Relaxed),
            "list": self.list.load(Ordering::Relaxed),
            "delete": self.delete.load(Ordering::Relaxed),
        })
    }
}

/// An object store that counts the requests it passes on.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn ObjectStore>,
    counts: Arc<Counts>,
}

impl std::fmt::Display for Counting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for Counting {
    async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
        self.counts.put.fetch_add(1, Ordering::Relaxed);
        self.inner.put_opts(l, p, o).await
    }
    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.counts.put.fetch_add(1, Ordering::Relaxed);
        self.inner.put_multipart_opts(l, o).await
    }
    async fn get_opts(&self, l: &Path, o: GetOptions) -> Result<GetResult> {
        self.counts.get.fetch_add(1, Ordering::Relaxed);
        self.inner.get_opts(l, o).await
    }
    async fn get_ranges(&self, l: &Path, r: &[std::ops::Range<u64>]) -> Result<Vec<Bytes>> {
        self.counts.get.fetch_add(1, Ordering::Relaxed);
        self.inner.get_ranges(l, r).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        use futures::StreamExt;
        let counts = self.counts.clone();
        self.inner.delete_stream(
            locations
                .inspect(move |_| {
                    counts.delete.fetch_add(1, Ordering::Relaxed);
                })
                .boxed(),
        )
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.counts.list.fetch_add(1, Ordering::Relaxed);
        self.inner.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.counts.list.fetch_add(1, Ordering::Relaxed);
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, from: &Path, to: &Path, o: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, o).await
    }
}

pub struct Options {
    pub fragments: u64,
    pub versions: u64,
    pub changed: u64,
    pub retain: u64,
    pub tree: bool,
    pub store: Option<String>,
    pub json: bool,
}

fn data_file(name: String, size: u64) -> DataFile {
    DataFile {
        path: name,
        fields: vec![0, 1],
        column_indices: vec![0, 1],
        file_major_version: 2,
        file_minor_version: 1,
        file_size_bytes: size,
        base_id: None,
    }
}

/// The bytes of every data file: a Lance file of 1,000 rows of fields 0 and 1 (written once,
/// then copied under each name; a file's bytes do not name it).
async fn template_file(store: &DatasetStore) -> Result<Bytes, BenchError> {
    use std::sync::Arc;
    let schema = arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("a", arrow_schema::DataType::Int64, false),
        arrow_schema::Field::new("b", arrow_schema::DataType::Int64, false),
    ]);
    let column: arrow_array::ArrayRef =
        Arc::new(arrow_array::Int64Array::from_iter_values(0..1000));
    let batch =
        arrow_array::RecordBatch::try_new(Arc::new(schema.clone()), vec![column.clone(), column])
            .map_err(|e| BenchError::Usage(e.to_string()))?;
    let path = store.path(&lancet::paths::layout::data_path("template.lance"));
    lancet::file::write_file(
        &lancet::file_store_for(store)?,
        &path,
        &schema,
        std::slice::from_ref(&batch),
        &lancet::file::WriteOptions::default(),
    )
    .await?;
    let bytes = store.get(&path, None).await?;
    store.delete(&path).await?;
    Ok(bytes)
}

fn fragment(id: u64, size: u64) -> DataFragment {
    DataFragment {
        id,
        files: vec![data_file(format!("d{id}.lance"), size)],
        physical_rows: 1000,
        ..Default::default()
    }
}

/// Writes every data file (a copy of `template`) and deletion file (its first rows deleted)
/// the commit's actions add, as a writer does before it commits.
async fn write_files(
    ds: &Dataset,
    actions: &[(u64, Action)],
    template: &Bytes,
) -> Result<(), BenchError> {
    let store = ds.storage().store();
    for (id, action) in actions {
        let (path, bytes) = match action {
            Action::Upsert(f) => (
                lancet::paths::layout::data_path(&f.files[0].path),
                template.clone(),
            ),
            Action::AddDeletionFile(d) => {
                let n = u32::try_from(d.num_deleted_rows).unwrap_or(1);
                let deleted: roaring::RoaringBitmap = (0..n).collect();
                (
                    lancet::paths::layout::deletion_path(*id, d)?,
                    Bytes::from(lancet::rowid::deletion::encode_bitmap(&deleted)),
                )
            }
            _ => continue,
        };
        store.put(&store.path(&path), bytes).await?;
    }
    Ok(())
}

pub async fn run(o: Options) -> Result<(), BenchError> {
    if o.changed == 0 || o.changed > o.fragments || o.retain == 0 {
        return Err(BenchError::Usage(
            "bench cleanup needs 0 < --changed <= --fragments and --retain-versions >= 1".into(),
        ));
    }
    let temp = tempfile::tempdir()?;
    let uri = match &o.store {
        Some(u) => u.clone(),
        None => temp.path().join("table").to_string_lossy().into_owned(),
    };
    let setup = Instant::now();
    let store = DatasetStore::create(&uri)?;
    let template = template_file(&store).await?;
    let size = template.len() as u64;
    let fragment = |id| fragment(id, size);
    // the table through the public write path: created empty with the template file's
    // schema, then the initial fragments committed (their files written first)
    let schema = std::sync::Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("a", arrow_schema::DataType::Int64, false),
        arrow_schema::Field::new("b", arrow_schema::DataType::Int64, false),
    ]));
    let created = Dataset::create(
        &uri,
        schema,
        futures::stream::empty(),
        lancet::CreateOptions::default(),
    )
    .await?
    .dataset;
    let mut ds = Dataset::open_with(
        store,
        Some(created.version()),
        Caches::new(Default::default()),
    )
    .await?;
    let config = TreeWriterConfig::default();
    if o.tree {
        ds = ds
            .storage()
            .convert_to_tree(&config, |_, _| {})
            .await?
            .dataset;
    }
    let initial: Vec<(u64, Action)> = (0..o.fragments)
        .map(|id| (id, Action::Upsert(Box::new(fragment(id)))))
        .collect();
    write_files(&ds, &initial, &template).await?;
    ds = ds
        .storage()
        .commit_actions(ds.storage().manifest().clone(), &[], &initial, &config)
        .await?
        .dataset;
    let mut live: std::collections::VecDeque<u64> = (0..o.fragments).collect();
    let mut next = o.fragments;
    for v in 0..o.versions {
        let mut actions = Vec::new();
        for _ in 0..o.changed {
            if let Some(old) = live.pop_front() {
                actions.push((old, Action::Remove));
            }
            actions.push((next, Action::Upsert(Box::new(fragment(next)))));
            live.push_back(next);
            next += 1;
        }
        if let Some(&target) = live.front() {
            actions.push((
                target,
                Action::AddDeletionFile(DeletionFile {
                    file_type: 1,
                    read_version: ds.version(),
                    id: v,
                    num_deleted_rows: 1,
                    base_id: None,
                }),
            ));
        }
        write_files(&ds, &actions, &template).await?;
        ds = ds
            .storage()
            .commit_actions(ds.storage().manifest().clone(), &[], &actions, &config)
            .await?
            .dataset;
        if !o.json && (v + 1) % 1000 == 0 {
            eprintln!("setup: {} versions", v + 1);
        }
    }
    let setup_s = setup.elapsed().as_secs_f64();
    let objects_before = ds.storage().store().list("").await?.len();

    let mut out = serde_json::Map::new();
    for (name, dry) in [("dry_run", true), ("cleanup", false)] {
        let counts = Arc::new(Counts::default());
        let clean = DatasetStore::open(&uri)?;
        let counting = Arc::new(Counting {
            inner: clean.object_store().clone(),
            counts: counts.clone(),
        });
        // not a path: lance-io would read local files itself, around the counting store
        let store =
            DatasetStore::from_store(counting, clean.path(""), &format!("memory://counted{uri}"));
        let cold = Dataset::open_with(store, None, Caches::new(Default::default())).await?;
        let started = Instant::now();
        let report = cold
            .cleanup(&CleanupPolicy {
                older_than: None,
                retain_versions: Some(o.retain),
                dry_run: dry,
                delete_concurrency: 32,
                ..Default::default()
            })
            .await?;
        let total = report.total();
        out.insert(
            name.to_string(),
            json!({
                "s": started.elapsed().as_secs_f64(),
                "requests": counts.json(),
                "removed_versions": report.removed_versions.len(),
                "objects": total.objects,
                "bytes": total.bytes,
            }),
        );
    }
    let objects_after = Dataset::open(&uri)
        .await?
        .storage()
        .store()
        .list("")
        .await?
        .len();
    let report = json!({
        "layout": if o.tree { "tree" } else { "flat" },
        "versions": o.versions + 1,
        "setup_s": setup_s,
        "objects_before": objects_before,
        "objects_after": objects_after,
        "dry_run": out.get("dry_run"),
        "cleanup": out.get("cleanup"),
    });
    if o.json {
        println!("{report}");
    } else {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    }
    Ok(())
}
