//! The Lance 14 Fragment Reuse Index (`fragment-reuse-index.md`, FORMAT-FACTS §9).
//!
//! - [`is_fri_entry`], [`content_location`]: the `__lance_frag_reuse` entry, inline or
//!   external histories.
//! - [`Ledger`] ([`decode_inline`], [`check`]): v0 legacy versions and v1 transitions decoded
//!   field by field; unsupported transitions skipped and flagged; every transition's digests
//!   and mapping checked.
//! - [`History`]: the lineage graph (one producer and one consumer per fragment,
//!   row counts agree, acyclic) and translation of old row addresses through it: one by one
//!   in input order (`translate`), or a whole set such as an index segment's ids
//!   (`translate_set`, index reuse) with `covered_after` saying where the translated set is
//!   complete; `needed_for` and `with_ancestors` drive trimming.
//! - [`Counts`] and [`RowMap`]: stable-partition row maps (`_fri/{map_id}/stable_partition.lance`)
//!   and their LSPC counts buffer; opening reads no labels, translation reads each needed block
//!   once.
//! - [`write_row_map`]: writing a stable-partition row map and its counts in one pass; [`publish`]:
//!   a history as a tagged (v1) entry; [`rules`]: what a writer of histories keeps (entry
//!   flags, which histories may be extended, destinations, recording a transition,
//!   trimming). Committing a rewrite lives in the facade (`lancet::Dataset::commit_rewrite`,
//!   `trim_fri`), which owns manifests and composes these rules.

// Stored bytes are hostile: no unwrap, expect or unchecked index outside tests (a local
// `allow` states the invariant that bounds it).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod counts;
mod details;
mod error;
mod history;
mod ledger;
mod ordered;
pub mod publish;
mod rowmap;
pub mod rules;
mod runs;
mod translation;
mod writer;

pub use counts::{Counts, DEFAULT_BLOCK_ROWS, MAX_DESTINATIONS};
pub use details::{content_location, is_fri_entry, read_external, ContentLocation};
pub use error::{Result, ReuseError};
pub use history::{History, Translation};
pub use ledger::{check, decode_inline, Digest, Ledger, Mapping, Transition};
pub use ordered::CompactionRemap;
pub use rowmap::{row_map_path, row_map_schema, RowMap, COUNTS_BUFFER_KEY, ROW_MAP_FILE};
pub use writer::{write_row_map, SourceRows};
