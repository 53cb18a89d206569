//! Stable row ids of Lance 14 tables.
//!
//! - [`U64Segment`] and [`EncodedArray`]: the five segment encodings and Lance's byte-cost rule
//!   for choosing one, so sequences lancet writes are the ones pylance would write, and stored
//!   sequences re-encode byte for byte.
//! - [`RowIdSequence`]: the ids of one fragment's physical rows; strict decoding, `get`,
//!   `position`, `extend`, `slice`, `mask`, and [`rechunk`] for compaction.
//! - [`VersionSequence`]: `_row_created_at_version` / `_row_last_updated_at_version` runs.
//! - [`deletion`]: `.arrow` and `.bin` deletion files as roaring bitmaps of offsets.
//! - [`RowIdIndex`]: row id → row address, built from runs rather than rows.
//! - [`assign`]: the writer side: ids from `next_row_id` as `Range` segments, version
//!   sequences for the rows a commit writes.
//!
//! The bitmap with rank/select is hand-written (the `bitmap` module) because its wire layout must
//! round-trip exactly; everything else leans on `roaring`, `prost` and `rayon`.

// Stored bytes are hostile: no unwrap, expect or unchecked index outside tests (a local
// `allow` states the invariant that bounds it).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod assign;
mod bitmap;
pub mod changes;
pub mod deletion;
mod encoded;
mod error;
mod fragment;
mod index;
mod lazy;
pub mod live;
mod segment;
mod sequence;
mod strict;
mod version;

pub use encoded::EncodedArray;
pub use error::{DecodeError, Result, RowIdError};
pub use fragment::{row_ids_of, versions_of};
pub use index::{row_address, FragmentRowIds, RowIdIndex};
pub use lazy::{LazyFragment, LazyRowIds, LOAD_CONCURRENCY};
pub use segment::U64Segment;
pub use sequence::{rechunk, RowIdSequence};
pub use version::VersionSequence;
