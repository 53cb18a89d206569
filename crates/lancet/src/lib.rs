//! lancet: the table-metadata machinery of the Lance columnar format, composed.
//!
//! This crate is deliberately thin. It opens a dataset ([`Dataset::open`],
//! [`Dataset::checkout`]) as a snapshot of [`lancet-read`](read), which composes every read
//! (scans, index-answered searches, takes, changes) and owns one cache configuration
//! ([`Caches`]) that the subsystem crates plug into; this crate adds the write path: each
//! operation planned by `lancet-txn`, judged by its invariants and published by the commit
//! loop. Format logic lives in the subsystem crates; an engine that only reads can embed
//! `lancet-read` alone.
//!
//! Stored bytes pass through here too (fragment bitmaps, transactions, deletion vectors,
//! filter literals), so the crate denies `unwrap`, `expect` and unchecked indexing outside
//! tests, as the decoding crates do.
//!
//! # Open and read
//!
//! ```
//! # use std::sync::Arc;
//! # use arrow_array::{Int64Array, RecordBatch};
//! # use arrow_schema::{DataType, Field, Schema};
//! # use futures::TryStreamExt;
//! use lancet::{CreateOptions, Dataset, Filter, ScanOptions};
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! # let dir = tempfile::tempdir()?;
//! # let uri = dir.path().to_str().unwrap();
//! let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
//! let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from_iter_values(0..100))])?;
//! Dataset::create(uri, schema, futures::stream::iter([Ok(batch)]), CreateOptions::default()).await?;
//!
//! let ds = Dataset::open(uri).await?; // the latest version; `open_version` for another
//! let rows: Vec<RecordBatch> = ds
//!     .scan(ScanOptions { filter: Some(Filter::parse("id >= 90")?), ..Default::default() })
//!     .await?
//!     .try_collect()
//!     .await?;
//! assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), 10);
//! let found = ds.search(&Filter::parse("id = 7")?).await?; // row ids where it is TRUE
//! let taken = ds.take(&found.row_ids.iter().collect::<Vec<_>>(), None).await?;
//! assert_eq!(taken.num_rows(), 1);
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! # Write
//!
//! Every write is judged by `lancet-txn`'s invariants before it publishes (a refused write
//! publishes nothing) and returns one shape, [`Committed`]: the new version, the rows and
//! fragments it changed, what it wrote and how many attempts it took.
//!
//! ```
//! # use std::sync::Arc;
//! # use arrow_array::{Int64Array, RecordBatch};
//! # use arrow_schema::{DataType, Field, Schema};
//! use lancet::{CreateOptions, Dataset, Filter};
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! # let dir = tempfile::tempdir()?;
//! # let uri = dir.path().to_str().unwrap();
//! # let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
//! # let rows = |r: std::ops::Range<i64>| RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from_iter_values(r))]);
//! let ds = Dataset::create(uri, schema.clone(), futures::stream::iter([Ok(rows(0..100)?)]), CreateOptions::default()).await?.dataset;
//! let ds = ds.append(futures::stream::iter([Ok(rows(100..150)?)])).await?.dataset;
//! let deleted = ds.delete(&Filter::parse("id < 10")?).await?;
//! assert_eq!(deleted.rows, 10);
//! let ds = deleted.dataset;
//! let ds = ds.update(&Filter::parse("id = 149")?, &["id = id + 1000"]).await?.dataset;
//! let ds = ds.add_column("twice", "id * 2", Default::default()).await?.dataset;
//! assert_eq!(ds.num_rows(), Some(140));
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! # Maintain
//!
//! ```
//! # use std::sync::Arc;
//! # use arrow_array::{Int64Array, RecordBatch};
//! # use arrow_schema::{DataType, Field, Schema};
//! use lancet::{CleanupPolicy, CompactionOptions, CreateOptions, Dataset, Filter};
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! # let dir = tempfile::tempdir()?;
//! # let uri = dir.path().to_str().unwrap();
//! # let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
//! # let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from_iter_values(0..1000))])?;
//! let options = CreateOptions { max_rows_per_file: 100, ..Default::default() };
//! let ds = Dataset::create(uri, schema, futures::stream::iter([Ok(batch)]), options).await?.dataset;
//! let ds = ds.build_btree("id", None).await?.dataset; // Lance's default page size
//! let ds = ds.delete(&Filter::parse("id % 3 = 0")?).await?.dataset;
//! // rewrite the fragments with deletions; the BTree is remapped in the same commit
//! let compacted = ds.optimize().compact(&CompactionOptions::default()).await?;
//! assert_eq!((compacted.versions, compacted.fragments_removed), (1, 10));
//! let ds = compacted.dataset.optimize().optimize_indices(&Default::default()).await?.dataset;
//! let report = ds.cleanup(&CleanupPolicy { retain_versions: Some(1), ..Default::default() }).await?;
//! assert!(!report.removed_versions.is_empty());
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! # Inspect
//!
//! ```
//! # use std::sync::Arc;
//! # use arrow_array::{Int64Array, RecordBatch};
//! # use arrow_schema::{DataType, Field, Schema};
//! use lancet::{CreateOptions, Dataset, ErrorKind};
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! # let dir = tempfile::tempdir()?;
//! # let uri = dir.path().to_str().unwrap();
//! # let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
//! # let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from_iter_values(0..10))])?;
//! let ds = Dataset::create(uri, schema, futures::stream::iter([Ok(batch)]), CreateOptions::default()).await?.dataset;
//! ds.verify().await?; // every invariant of the stored version
//! ds.storage().verify_data().await?; // and every data file's footer against its record
//! for f in ds.fragments().await?.iter() {
//!     println!("fragment {} holds {} rows", f.id, f.physical_rows);
//! }
//! // below the table API: the version as stored
//! let storage = ds.storage();
//! assert!(storage.tree().is_none()); // a flat table
//! assert_eq!(storage.transaction().await?.map(|t| t.operation_name()).as_deref(), Some("Overwrite"));
//! let missing = Dataset::open(&format!("{uri}/nothing-here")).await.unwrap_err();
//! assert_eq!(missing.kind(), ErrorKind::NotFound);
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod backfill;
mod branches;
mod cleanup;
mod clone;
mod commit;
mod committed;
mod compaction;
mod convert;
mod create;
mod dataset;
mod handle;
mod index_build;
mod merge;
mod metadata;
mod mutate;
mod operations;
mod optimize;
mod optimizer;
mod plan;
mod prepare;
mod publish;
mod redo;
mod rewrite;
mod schema_change;
mod storage;
mod tags;
mod write;

pub use backfill::AddColumnOptions;
pub use branches::Branches;
pub use cleanup::{
    CleanupPolicy, CleanupProgress, CleanupReport, KindTotals, DEFAULT_OLDER_THAN,
    DEFAULT_UNVERIFIED_OLDER_THAN,
};
pub use committed::{Committed, MergeStats};
pub use compaction::{Compaction, CompactionOptions, CompactionResult, CompactionTask};
pub use handle::Dataset;
pub use lancet_filter::exprs::{Assignment, ValueExpr};
pub use lancet_filter::{Arith, Expr, Filter, FilterError, Leaf, Lit, Op, Truth, Typing};
pub use lancet_paths::refs::Branch;
pub use lancet_proto::table::transaction::Operation;
pub use lancet_proto::FragmentSummary;
pub use lancet_proto::RowAddress;
pub use lancet_read::cache::{ByteCache, CacheConfig, CacheStats, Weighted};
pub use lancet_read::changes::Changes;
pub use lancet_read::error::{Error, ErrorKind, Result};
pub use lancet_read::indexes::IndexSummary;
pub use lancet_read::segment::BTreeSegment;
pub use lancet_read::session_caches::Caches;
pub use lancet_read::snapshot::file_store_for;
pub use lancet_read::subsystem_caches::{MokaPageCache, TreeNodeCache};
pub use lancet_read::version_ref::VersionRef;
pub use lancet_txn::build::Change;
pub use lancet_txn::rebase::ConflictCause;
pub use lancet_txn::{compatibility, Compatibility, Invariant};
pub use merge::{MergeInsert, MergeOptions};
pub use metadata::{FieldEntries, MetadataTarget};

pub use create::{create_from_fragments, write_new_fragments, CreateOptions, Layout};
pub use lancet_paths::refs::Tag;
pub use lancet_read::search::{SearchOptions, SearchResult};
pub use lancet_read::take::RowsAt;
pub use lancet_read::verify::VerifyReport;
pub use lancet_read::{row_columns::RowColumn, scan::ScanMetrics, scan::ScanOptions};
pub use optimize::OptimizeOptions;
pub use optimizer::Optimizer;
pub use rewrite::{RewriteGroup, RewriteMapping};
pub use schema_change::ColumnAlteration;
pub use storage::Storage;
pub use tags::Tags;
pub use write::{batches, batches_from_reader, AppendOptions};

pub use lancet_btree as btree;
pub use lancet_file as file;
pub use lancet_filter as filter;
pub use lancet_paths as paths;
pub use lancet_proto as proto;
pub use lancet_read as read;
pub use lancet_reuse as reuse;
pub use lancet_rowid as rowid;
pub use lancet_tree as tree;
pub use lancet_txn as txn;
