//! The Lance 14 Fragment Reuse Index (`fragment-reuse-index.md`, FORMAT-FACTS §9).
//!
//! - [`details`]: the `__lance_frag_reuse` entry, inline or external histories.
//! - [`ledger`]: v0 legacy versions and v1 transitions decoded field by field; unsupported
//!   transitions skipped and flagged; every transition's digests and mapping checked.
//! - [`history::History`]: the lineage graph (one producer and one consumer per fragment,
//!   row counts agree, acyclic) and translation of old row addresses through it: one by one
//!   in input order (`translate`), or a whole set such as an index segment's ids
//!   (`translate_set`, index reuse) with `covered_after` saying where the translated set is
//!   complete; `needed_for` and `with_ancestors` drive trimming.
//! - [`counts`] and [`rowmap`]: stable-partition row maps (`_fri/{map_id}/stable_partition.lance`)
//!   and their LSPC counts buffer; opening reads no labels, translation reads each needed block
//!   once.
//! - [`writer`]: writing a stable-partition row map and its counts in one pass; [`publish`]:
//!   a history as a tagged (v1) entry. Recording a rewrite and committing it lives in the
//!   facade (`lancet::Dataset::commit_rewrite`, `trim_fri`), which owns manifests.

// Stored bytes are hostile: no unwrap, expect or unchecked index outside tests (a local
// `allow` states the invariant that bounds it).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod counts;
pub mod details;
pub mod error;
pub mod history;
pub mod ledger;
mod ordered;
pub mod publish;
pub mod rowmap;
mod runs;
pub mod writer;

pub use error::{Result, ReuseError};
pub use history::{History, Translation};
pub use ledger::{Digest, Ledger, Mapping, Transition};
