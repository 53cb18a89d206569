//! What a cleanup did (or, dry, would do), and where it is while it runs.

use std::collections::BTreeMap;

use crate::cleanup::{Listed, ObjectKind};

/// Objects and bytes of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindTotals {
    pub objects: u64,
    pub bytes: u64,
}

/// What a cleanup did (or, dry, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupReport {
    pub dry_run: bool,
    pub kept_versions: Vec<u64>,
    pub removed_versions: Vec<u64>,
    /// Deleted (or, dry, to delete) per kind. A failed delete, and the objects not attempted
    /// because a manifest delete failed, are not counted.
    pub deleted: BTreeMap<ObjectKind, KindTotals>,
    /// Paths deleted (or, dry, to delete), relative to the dataset root, sorted.
    pub deleted_paths: Vec<String>,
    /// Objects no version names, kept as too young.
    pub kept_young: u64,
    /// Deletes that failed: path and error.
    pub failed: Vec<(String, String)>,
    /// Objects the listing reached through a symbolic link leading out of the table (or a
    /// declared base): never deleted, never counted (sorted; at most the first thousand).
    pub kept_outside: Vec<String>,
}

impl CleanupReport {
    /// Objects and bytes over every kind.
    pub fn total(&self) -> KindTotals {
        self.deleted
            .values()
            .fold(KindTotals::default(), |a, t| KindTotals {
                objects: a.objects + t.objects,
                bytes: a.bytes + t.bytes,
            })
    }

    /// Counts `deleted` (the objects removed) by kind, with their sorted paths.
    pub fn tally(&mut self, deleted: Vec<(Listed, ObjectKind)>) {
        for (o, kind) in &deleted {
            let t = self.deleted.entry(*kind).or_default();
            t.objects += 1;
            t.bytes += o.size;
        }
        self.deleted_paths = deleted.into_iter().map(|(o, _)| o.path).collect();
        self.deleted_paths.sort();
    }
}

/// Where a cleanup is, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanupProgress {
    /// Versions read (their manifests and what they reference).
    Reading { done: u64, total: u64 },
    /// Objects deleted.
    Deleting { done: u64, total: u64 },
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn deleted_objects_are_counted_by_kind_and_listed_sorted() {
        let listed = |path: &str, size| Listed {
            path: path.into(),
            size,
            last_modified_ms: 0,
        };
        let mut report = CleanupReport::default();
        report.tally(vec![
            (listed("data/b.lance", 10), ObjectKind::Data),
            (listed("data/a.lance", 5), ObjectKind::Data),
            (listed("_versions/1.manifest", 2), ObjectKind::Manifest),
        ]);
        assert_eq!(
            report.deleted[&ObjectKind::Data],
            KindTotals {
                objects: 2,
                bytes: 15
            }
        );
        assert_eq!(
            report.total(),
            KindTotals {
                objects: 3,
                bytes: 17
            }
        );
        assert_eq!(
            report.deleted_paths,
            ["_versions/1.manifest", "data/a.lance", "data/b.lance"]
        );
    }
}
