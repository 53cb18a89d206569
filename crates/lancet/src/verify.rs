//! `Dataset::verify`: every rule lancet knows, checked over one version without opening data
//! or deletion files.
//!
//! A tree version is walked whole by lancet-tree (every object reachable, every rule). A flat
//! version's manifest rules were checked when it was decoded; here each index entry's
//! `fragment_bitmap` and each fragment's inline row-id sequence are decoded too. Then every
//! fragment is judged by lancet-txn's invariants as if the version created it (ids within
//! `max_fragment_id`, known `base_id`s, deletions within rows, needed flags, index entries)
//! and, with stable row ids, every live row id is checked to be live once and below
//! `next_row_id` (deletion files are read for that; data files never). A broken invariant is
//! `Corrupt` naming it. With a
//! previous version, `max_fragment_id` must not decrease (decision 16: a lineage rule, so
//! never part of a plain open).

use lancet_proto::roaring_wire::decode_roaring32;
use lancet_tree::TreeStats;
use lancet_txn::{Candidate, FragmentChange, RowIdChanges, TxnError};

use crate::error::{Error, Result};
use crate::Dataset;

/// What a successful verify saw.
#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    pub version: u64,
    pub fragments: u64,
    /// The tree's statistics, for a tree version.
    pub tree: Option<TreeStats>,
}

/// A rule one version breaks against the version before it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{rule} in {object}: {detail}")]
pub struct LineageViolation {
    pub rule: &'static str,
    pub object: String,
    pub detail: String,
}

impl Dataset {
    /// Checks every rule on this version (see the module doc).
    pub async fn verify(&self) -> Result<VerifyReport> {
        let tree = match self.tree() {
            Some(reader) => Some(reader.verify().await?),
            None => None,
        };
        for index in self.indices() {
            if !index.fragment_bitmap.is_empty() {
                decode_roaring32(&index.fragment_bitmap).map_err(|e| Error::Corrupt {
                    at: self.manifest_ref(),
                    rule: format!("index {:?}: fragment_bitmap: {e}", index.name),
                })?;
            }
        }
        let fragments = self.fragments().await?;
        for f in fragments.iter() {
            self.row_id_sequence(f)?;
        }
        self.check_invariants(&fragments).await?;
        Ok(VerifyReport {
            version: self.version(),
            fragments: fragments.len() as u64,
            tree,
        })
    }

    /// lancet-txn's invariants over every fragment of the version, as created by it.
    async fn check_invariants(
        &self,
        fragments: &[lancet_proto::table::DataFragment],
    ) -> Result<()> {
        let changes: Vec<FragmentChange> = fragments
            .iter()
            .map(|f| FragmentChange {
                id: f.id,
                before: None,
                after: Some(f.clone()),
            })
            .collect();
        let mut rows = RowIdChanges::default();
        if self.has_stable_row_ids() {
            for f in fragments {
                if let Some(ids) = crate::publish::fragment_row_ids(self, f).await? {
                    rows.after.push(ids);
                }
            }
        }
        let candidate = Candidate {
            version: self.version(),
            previous: None,
            next: lancet_txn::Version {
                manifest: self.manifest(),
                indices: self.indices(),
            },
            changes: &changes,
            row_ids: Some(&rows),
            operation: None,
        };
        lancet_txn::check(&candidate).map_err(|e| match e {
            TxnError::Invalid {
                invariant,
                subject,
                detail,
                ..
            } => Error::Corrupt {
                at: self.manifest_ref().within(subject),
                rule: format!("{invariant} ({}): {detail}", invariant.rule()),
            },
            other => Error::Txn(other),
        })
    }

    /// `max_fragment_id` of this version against `previous`: it never decreases, and is never
    /// dropped once set.
    pub fn check_lineage(&self, previous: &Dataset) -> std::result::Result<(), LineageViolation> {
        let (now, before) = (
            self.manifest().max_fragment_id,
            previous.manifest().max_fragment_id,
        );
        let decreased = match (before, now) {
            (Some(b), Some(n)) => n < b,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if decreased {
            return Err(LineageViolation {
                rule: "max-fragment-id-decreased",
                object: self.manifest_file().entry.path.to_string(),
                detail: format!(
                    "max_fragment_id {now:?} is below version {}'s {before:?}",
                    previous.version()
                ),
            });
        }
        Ok(())
    }
}
