//! The Lance 14 scalar BTree index: `page_lookup.lance` (one row per page: min, max,
//! null_count, page_idx) and `page_data.lance` (every `(value, id)` sorted, NULLs first).
//!
//! - [`train()`]: sort pairs (spilling sorted runs to temporary files past a memory budget, see
//!   [`ExternalSorter`]) and write both files, usable by pylance in place of its own.
//! - [`merge()`]: a segment plus new pairs (old ids remapped, e.g. through an FRI) into a new
//!   segment with no duplicate `(value, id)`.
//! - [`BTreeIndex`]: open a segment (the lookup only), select pages by binary search, read the
//!   selected pages in one coalesced request set through a [`PageCache`], and evaluate exactly
//!   with Arrow kernels; whole-page matches skip per-row comparison.
//! - [`NullableIdSet`]: SQL three-valued results (TRUE ids and NULL ids) with Kleene AND, OR
//!   and NOT.
//!
//! Floats order as IEEE total order (NaN above +inf), with -0.0 = +0.0 for comparisons, which
//! is what pylance's filters answer.

// Stored bytes are hostile: no unwrap, expect or unchecked index outside tests (a local
// `allow` states the invariant that bounds it).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod error;
mod idset;
mod index;
mod leaf;
mod lookup;
mod merge;
mod page;
mod query;
mod schema;
mod select;
mod sort;
mod train;
mod unindexed;

pub use error::{BTreeError, Result};
pub use index::{btree_on_field, segments_by_name, BTreeIndex, NoCache, PageCache, PageKey};
pub use lancet_filter::NullableIdSet;
pub use leaf::{
    evaluate_filter, evaluate_leaf, evaluate_leaves, index_may_answer, index_queries,
    intersect_ranges, leaf_queries, LeafQueries,
};
pub use merge::merge;
pub use page::{IdLists, Page};
pub use query::Query;
pub use schema::{page_data_schema, page_lookup_schema, DEFAULT_PAGE_ROWS};
pub use sort::ExternalSorter;
pub use train::{fragment_pairs, train, write_sorted, EntryFields, TrainOptions, TrainedIndex};

/// First `i` in `0..n` for which `pred(i)` is false, given `pred` is true then false.
pub(crate) fn partition_point(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}
