//! The fragment metadata tree of Lance tables (`../shared/spec/fragment-metadata-tree.md`):
//! fragment records in immutable Lance-file leaves under `_bt/`, routing nodes with buffered
//! mutations, and an inline or external root named by the manifest.
//!
//! Released Lance only reserves these protobufs, so this reader is the reference: every
//! "must" and "reject" of the spec and of lancet's decisions page is checked before a decoded
//! value is used, and a corrupt snapshot is a [`TreeError::Corrupt`] naming the object and the
//! [`Rule`] — never an empty table.
//!
//! - [`TreeReader`]: open a version ([`TreeReader::open`]: the manifest and at most one
//!   external root), resolve fragments by id (only the routing path is read), walk every
//!   fragment in id order, verify everything reachable.
//! - [`leaf`]: the leaf schema and records ⇄ record batches.
//! - [`Mutation`] / [`Action`]: buffered storage actions and their exact semantics.
//! - [`TreeWriter`]: actions to mutations, flushes, materialization, splits and merges; each
//!   commit returns the manifest's new tree and what it wrote.
//! - [`clone_tree`]: a shallow clone's own root over the source's shared subtrees.
//! - [`NodeCache`] / [`ObjectFetcher`]: where a cache and a store plug in.
//! - `testing` (feature): a builder that writes valid trees for tests.
//!
//! Hand-written rather than a crate: the routing checks are a sorted child list with a binary
//! search (what `rangemap` would give, but every range must also be checked against its
//! parent's, which a map cannot express), and the walk is a plain loop over levels.

// Stored bytes are hostile: no unwrap, expect or unchecked index outside tests (a local
// `allow` states the invariant that bounds it).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod apply;
mod clone;
mod error;
mod flat;
mod invariants;
pub mod leaf;
mod mutation;
mod objects;
mod reader;
mod records;
mod routing;
mod sequences;
mod snapshot;
#[cfg(feature = "testing")]
pub mod testing;
mod writer;

pub use apply::{apply_actions, Applied};
pub use clone::{clone_tree, point_mutations_at, point_root_at};
pub use error::{Result, Rule, TreeError};
pub use flat::apply_flat;
pub use mutation::{actions_between, change_actions, Action, Mutation};
pub use objects::{
    DecodedLeaf, DecodedNode, NoCache, NodeCache, ObjectFetcher, ObjectKey, StoreFetcher,
    TreeObject,
};
pub use reader::{NodeShape, OpenContext, RootInfo, TreeReader, TreeStats, Walk};
pub use records::{Checked, Deltas, Totals, Violation};
pub use routing::{KeyRange, KEY_END, MAX_HEIGHT};
pub use snapshot::{check_raw_arms, is_tree_manifest};
pub use writer::{
    allocate_ids, empty_tree, FragmentChange, TreeCommit, TreeWriter, TreeWriterConfig,
};
