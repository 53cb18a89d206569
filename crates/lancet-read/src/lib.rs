//! lancet-read: one version of a Lance table, opened, and every answer read from it.
//!
//! A [`Snapshot`] is one version of one table as read: its manifest,
//! fragments (flat list or fragment tree), base paths, stores, the caches every handle of the
//! table shares, and the one place a fragment's row count is resolved. Over it this crate
//! composes the subsystem crates into reads: scans ([`scan`]), exact answers to a filter
//! through BTrees with the Fragment Reuse Index's translation ([`search`], [`index_answer`]),
//! takes by row id or address ([`take`]), the rows changed between versions ([`changes`]),
//! the key lookup of a merge ([`merge_target`]) and the verification of a stored version
//! against `lancet-txn`'s invariants ([`verify`]).
//!
//! It sits between the subsystem crates (which may not depend on each other) and the `lancet`
//! facade, which adds the write path, the commit loop and the `Dataset` handle. An engine that
//! only reads Lance tables can embed this crate without the write path; the facade re-exports
//! its public types, so users of `lancet` never name it. [`Error`] is the
//! table's error type, shared with the facade's writes.
//!
//! Stored bytes pass through here (fragment bitmaps, deletion vectors, filter literals), so the
//! crate denies `unwrap`, `expect` and unchecked indexing outside tests, as the decoding crates
//! do.

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod cache;
pub mod changes;
pub mod count;
pub mod error;
pub mod fri;
pub mod history;
pub mod index_answer;
pub mod indexes;
pub mod merge_target;
pub mod paths;
pub mod row_columns;
pub mod rowids;
pub mod rows;
pub mod scan;
pub mod search;
pub mod segment;
pub mod session_caches;
pub mod snapshot;
pub mod subsystem_caches;
pub mod take;
pub mod verify;
pub mod version_ref;

pub use error::{Error, ErrorKind, Result};
pub use snapshot::Snapshot;
