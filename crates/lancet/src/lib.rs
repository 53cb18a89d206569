//! lancet: the table-metadata machinery of the Lance columnar format, composed.
//!
//! This crate is deliberately thin. It opens a dataset ([`Dataset::open`],
//! [`Dataset::checkout`]) over `lancet-paths` (object store, manifest files, base paths) and
//! `lancet-file` (Lance files), commits new manifest versions, and owns one cache configuration
//! ([`Caches`]) that the subsystem crates plug into. Format logic lives in the subsystem crates.
//!
//! Stored bytes pass through here too (fragment bitmaps, transactions, deletion vectors,
//! filter literals), so the crate denies `unwrap`, `expect` and unchecked indexing outside
//! tests, as the decoding crates do.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod backfill;
mod cache;
mod cleanup;
mod clone;
mod commit;
mod compaction;
mod dataset;
mod error;
mod fri;
mod indexes;
mod mutate;
mod operations;
mod optimize;
mod publish;
mod rewrite;
mod rowids;
mod scan;
mod search;
mod verify;
mod write;

pub use backfill::AddColumnOptions;
pub use cache::{
    ByteCache, CacheConfig, CacheStats, Caches, MokaPageCache, TreeNodeCache, Weighted,
};
pub use cleanup::{
    CleanupPolicy, CleanupProgress, CleanupReport, KindTotals, DEFAULT_OLDER_THAN,
    DEFAULT_UNVERIFIED_OLDER_THAN,
};
pub use commit::Committed;
pub use compaction::{Compacted, CompactionOptions, CompactionResult, CompactionTask};
pub use dataset::{Dataset, FragmentSummary};
pub use error::{Error, ErrorKind, Result};
pub use indexes::{BTreeSegment, IndexSummary};
pub use lancet_filter::{Arith, Expr, Filter, FilterError, Leaf, Lit, Op, Truth, Typing};
pub use lancet_proto::table::transaction::Operation;
pub use lancet_proto::RowAddress;
pub use lancet_txn::{compatibility, Compatibility, Invariant};
pub use mutate::Changed;
pub use optimize::OptimizeOptions;
pub use rewrite::{RewriteGroup, RewriteMapping};
pub use scan::ScanOptions;
pub use search::{SearchOptions, SearchResult};
pub use verify::VerifyReport;
pub use write::{CreateOptions, Layout};

pub use lancet_btree as btree;
pub use lancet_file as file;
pub use lancet_filter as filter;
pub use lancet_paths as paths;
pub use lancet_proto as proto;
pub use lancet_reuse as reuse;
pub use lancet_rowid as rowid;
pub use lancet_tree as tree;
pub use lancet_txn as txn;
