//! Lance 14 transactions for any engine that publishes versions of a Lance table.
//!
//! What the crate guarantees, before its API:
//! - **No bad version is published by a writer that asks first.** [`check`] judges a candidate
//!   version against the version it was prepared on, by named [`Invariant`]s (each documented
//!   with its spec sentence in `invariants.rs`). Every lancet write path calls it before its
//!   put-if-absent; a broken invariant is [`TxnError::Invalid`] naming the rule and the
//!   fragment or index entry, and the caller writes nothing visible.
//! - **A tree commit is judged by what it changes.** The rules are stated so that the changed
//!   fragments decide them (fresh fragment ids above `max_fragment_id`, row ids new to the
//!   changed fragments above `next_row_id`), so checking costs what the commit changes.
//! - **Lance's conflict table.** [`compatibility`] is Lance 14.0.2's answer for committing one
//!   operation over another published since; [`rebase`] rebuilds the caller's intent on the
//!   latest version and bounds the retries.
//! - **What an operation does** ([`build::plan`]): Lance 14's manifest build over one base
//!   version (fragment ids, index list, manifest fields), so a retry builds the same intent
//!   on the latest version.
//! - **The operation a version records** ([`operation`]) is what Lance would record for the
//!   same change, so pylance's conflict resolver judges lancet's commits.
//!
//! Pure: no I/O. Row-id sequences and deletion files are decoded by the caller (lancet-rowid)
//! and handed in as [`FragmentRowIds`].

// Stored bytes are hostile: no unwrap, expect or unchecked index outside tests.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod build;
pub mod columns;
pub mod compaction;
pub mod compaction_task;
mod conflict;
pub mod coverage;
mod error;
pub mod fields;
pub mod finish;
mod invariant;
mod invariants;
pub mod keys;
pub mod merge;
pub mod offsets;
pub mod operation;
pub mod protocol;
pub mod rebase;
pub mod replacement;

pub use conflict::{compatibility, remapping_rewrite_rule, Compatibility};
pub use error::{ErrorKind, Result, TxnError};
pub use invariants::{
    check, check_lineage, Candidate, DataFileFacts, FragmentRowIds, Invariant, RowIdChanges,
    StoredDataFile, Version, FRI_INDEX_NAME, STICKY_FLAGS,
};
pub use lancet_proto::{diff_fragments, FragmentChange};
