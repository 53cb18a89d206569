//! Object paths, UUID object names, `base_id` resolution, the object-store handle and manifest
//! files of Lance 14 tables.
//!
//! - [`tree_paths`]: `_bt/{root,node,leaf}/{uuid}.{root,node,lance}` and the path rules a stored
//!   tree reference must obey.
//! - [`BaseTable`], [`ResolvedBase`]: `BasePath` lookup by id and inheritance of an absent
//!   `base_id`.
//! - [`cleanup`]: the retention policy, which versions it removes, and which listed objects a
//!   cleanup deletes, given what versions name.
//! - [`sweep`]: carrying out a cleanup's plan: deletes, and which bases lie inside the dataset.
//! - [`clock`]: the injectable time commits stamp and age rules judge by.
//! - [`clone`]: a shallow clone's base paths and the references it points at its source.
//! - [`files`]: where data, deletion, external and index files live.
//! - [`DatasetStore`]: reads with size checks and the put-if-absent commit write; on a local
//!   disk [`confine`]d to the table's root (no symbolic link leads out of it).
//! - [`manifest`]: naming schemes, the manifest layout, listing, reading and committing versions.
//! - [`flags`]: feature-flag names and the pairing rules.
//! - [`refs`]: tags and branches (`_refs/`).
//! - [`transaction`]: Lance transactions: `_transactions/*.txn`, the inline section, decoding.

// Stored bytes are hostile: no unwrap, expect or unchecked index outside tests (a local
// `allow` states the invariant that bounds it).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod bases;
pub mod cleanup;
pub mod cleanup_report;
pub mod clock;
pub mod clone;
pub mod confine;
#[cfg(feature = "testing")]
pub mod counting;
mod error;
#[cfg(feature = "testing")]
pub mod fault;
pub mod files;
pub mod latency;
pub mod layout;
pub use lancet_proto::flags;
pub mod manifest;
mod object_uuid;
pub mod refs;
mod store;
pub mod sweep;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod transaction;
pub mod tree_paths;

pub use bases::{BaseRequirement, BaseTable, ResolvedBase};
pub use error::{PathsError, Result};
pub use files::ObjectLocation;
pub use manifest::{DecodedManifest, ManifestFile, NamingScheme, VersionEntry};
pub use object_uuid::ObjectUuid;
pub use store::{set_store_layer, DatasetStore, StoreLayer};
pub use transaction::StoredTransaction;
pub use tree_paths::{validate_tree_path, TreeObjectKind};
