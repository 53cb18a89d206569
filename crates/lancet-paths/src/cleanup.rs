//! Which versions a cleanup removes ([`Retention`], under a [`CleanupPolicy`]) and which objects
//! of a dataset it deletes: pure decisions over a listing.
//!
//! The caller (the facade's `Dataset::cleanup`) reads every manifest, decides which versions
//! are kept, and gathers two sets of [`References`]: **referenced** (named by a kept version's
//! resolved state) and **verified** (named only by versions being removed). [`plan`] then
//! classifies each listed object and decides, following Lance 14.0.2's
//! `cleanup_old_versions` (`docs/research/lance-cleanup-and-clone.md`), plus the fragment
//! tree's objects:
//!
//! | object (relative to the dataset root) | key | deleted when |
//! |---|---|---|
//! | `_versions/*.manifest` | its version | the version is removed |
//! | `_versions/.tmp*`, `data/**/.tmp*` | — | always unverified |
//! | `data/**.lance` | path | not referenced, and verified or old |
//! | `_deletions/**.{arrow,bin}` | path | same |
//! | `_transactions/**.txn` | path | same |
//! | `_indices/{uuid}/**` | uuid | same (the whole directory) |
//! | `_fri/{map_id}/**` | map id | same |
//! | `_bt/{root,node,leaf}/*` | path | same |
//! | anything else (`_refs/`, `tree/`, the hint, detached manifests, unknown files) | — | never |
//!
//! "Old" means last modified before `unverified_before`: an object no manifest names may
//! belong to a commit still in progress, and only age tells it from a failed attempt's
//! leftovers. A referenced object is never deleted, whatever its age.
//!
//! Cost: one hash lookup per listed object; the plan holds only what is deleted.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

use crate::layout;

/// What a deleted object was, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectKind {
    Manifest,
    Transaction,
    Data,
    Deletion,
    Index,
    RowMap,
    Tree,
    /// `.tmp` files of interrupted writes.
    Temporary,
}

impl ObjectKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Manifest => "manifest",
            Self::Transaction => "transaction",
            Self::Data => "data",
            Self::Deletion => "deletion",
            Self::Index => "index",
            Self::RowMap => "row_map",
            Self::Tree => "tree",
            Self::Temporary => "temporary",
        }
    }
}

/// How cleanup recognises one listed object.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Class<'a> {
    Manifest,
    Temporary,
    /// Referenced by its full relative path.
    Path(ObjectKind),
    /// Referenced by the index uuid of its `_indices/{uuid}/` directory.
    Index(&'a str),
    /// Referenced by the map id of its `_fri/{map_id}/` directory.
    RowMap(&'a str),
}

fn classify(path: &str) -> Option<Class<'_>> {
    let (top, rest) = path.split_once('/')?;
    let file_name = rest.rsplit('/').next().unwrap_or(rest);
    match top {
        "_versions" if !rest.contains('/') && file_name.starts_with(".tmp") => {
            Some(Class::Temporary)
        }
        "_versions"
            if !rest.contains('/')
                && crate::manifest::parse_manifest_name(file_name).is_some_and(|n| {
                    matches!(n, crate::manifest::ManifestName::Version { .. })
                }) =>
        {
            Some(Class::Manifest)
        }
        layout::DATA_DIR if file_name.starts_with(".tmp") => Some(Class::Temporary),
        layout::DATA_DIR if file_name.ends_with(".lance") => Some(Class::Path(ObjectKind::Data)),
        layout::DELETIONS_DIR if file_name.ends_with(".arrow") || file_name.ends_with(".bin") => {
            Some(Class::Path(ObjectKind::Deletion))
        }
        layout::TRANSACTIONS_DIR if file_name.ends_with(".txn") => {
            Some(Class::Path(ObjectKind::Transaction))
        }
        layout::INDICES_DIR => {
            let (uuid, file) = rest.split_once('/')?;
            (!uuid.is_empty() && !file.is_empty()).then_some(Class::Index(uuid))
        }
        layout::FRI_DIR => {
            let (map, file) = rest.split_once('/')?;
            (!map.is_empty() && !file.is_empty()).then_some(Class::RowMap(map))
        }
        crate::tree_paths::TREE_DIR if crate::tree_paths::validate_tree_path(path).is_ok() => {
            Some(Class::Path(ObjectKind::Tree))
        }
        _ => None,
    }
}

/// Objects a set of versions names in this dataset: paths relative to the dataset root,
/// index directories by uuid, row-map directories by map id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct References {
    paths: HashSet<String>,
    indices: HashSet<String>,
    row_maps: HashSet<String>,
}

impl References {
    /// A file by its path relative to the dataset root (`data/x.lance`, `_bt/leaf/u.lance`).
    pub fn add_path(&mut self, relative: impl Into<String>) {
        self.paths.insert(relative.into());
    }

    /// An index directory `_indices/{uuid}/`.
    pub fn add_index(&mut self, uuid: impl Into<String>) {
        self.indices.insert(uuid.into());
    }

    /// A row-map directory `_fri/{map_id}/`.
    pub fn add_row_map(&mut self, map_id: impl Into<String>) {
        self.row_maps.insert(map_id.into());
    }

    /// Everything `other` names, too.
    pub fn extend(&mut self, other: References) {
        self.paths.extend(other.paths);
        self.indices.extend(other.indices);
        self.row_maps.extend(other.row_maps);
    }

    pub fn len(&self) -> usize {
        self.paths.len() + self.indices.len() + self.row_maps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn names(&self, path: &str, class: &Class<'_>) -> bool {
        match class {
            Class::Path(_) => self.paths.contains(path),
            Class::Index(uuid) => self.indices.contains(*uuid),
            Class::RowMap(map) => self.row_maps.contains(*map),
            Class::Manifest | Class::Temporary => false,
        }
    }
}

/// One listed object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Relative to the dataset root.
    pub path: String,
    pub size: u64,
    /// Milliseconds since the Unix epoch.
    pub last_modified_ms: i64,
}

/// What the cleanup decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Objects to delete, with their kind, in listing order.
    pub delete: Vec<(Listed, ObjectKind)>,
    /// Objects no manifest names, kept because they are younger than the threshold.
    pub kept_young: u64,
}

impl Plan {
    /// Count and bytes per kind.
    pub fn totals(&self) -> BTreeMap<ObjectKind, (u64, u64)> {
        let mut out: BTreeMap<ObjectKind, (u64, u64)> = BTreeMap::new();
        for (o, kind) in &self.delete {
            let e = out.entry(*kind).or_default();
            e.0 += 1;
            e.1 += o.size;
        }
        out
    }
}

/// The inputs of a decision besides the listing.
#[derive(Debug, Clone, Copy)]
pub struct Decide<'a> {
    pub referenced: &'a References,
    pub verified: &'a References,
    /// Manifest paths (relative) of the versions being removed.
    pub removed_manifests: &'a HashSet<String>,
    /// Objects no version names are deleted only when last modified before this
    /// (milliseconds since the epoch).
    pub unverified_before_ms: i64,
}

/// Decides, for each listed object, whether it is deleted (module docs).
pub fn plan(listing: impl IntoIterator<Item = Listed>, decide: Decide<'_>) -> Plan {
    let mut out = Plan::default();
    for object in listing {
        let Some(class) = classify(&object.path) else {
            continue;
        };
        let kind = match &class {
            Class::Manifest => {
                if decide.removed_manifests.contains(&object.path) {
                    out.delete.push((object, ObjectKind::Manifest));
                }
                continue;
            }
            Class::Temporary => ObjectKind::Temporary,
            Class::Path(kind) => *kind,
            Class::Index(_) => ObjectKind::Index,
            Class::RowMap(_) => ObjectKind::RowMap,
        };
        if decide.referenced.names(&object.path, &class) {
            continue;
        }
        let old = object.last_modified_ms < decide.unverified_before_ms;
        if decide.verified.names(&object.path, &class) || old {
            out.delete.push((object, kind));
        } else {
            out.kept_young += 1;
        }
    }
    out
}

/// The map id of a `_fri/{map_id}/...` object (relative to the dataset root): the directory
/// a row map and everything written with it live in.
pub fn row_map_id(path: &str) -> Option<&str> {
    match classify(path)? {
        Class::RowMap(map) => Some(map),
        _ => None,
    }
}

// ---- Retention: which versions a cleanup removes -------------------------------------------

/// Lance's default age when the policy names neither an age nor a count.
pub const DEFAULT_OLDER_THAN: Duration = Duration::from_secs(14 * 24 * 3600);
/// Objects no version names are kept while younger than this: an in-progress commit's.
pub const DEFAULT_UNVERIFIED_OLDER_THAN: Duration = Duration::from_secs(7 * 24 * 3600);

/// The directories a cleanup lists (relative to the dataset root); nothing elsewhere is ever
/// a candidate ([`plan`] decides within them).
pub const LISTED_DIRS: [&str; 7] = [
    crate::manifest::VERSIONS_DIR,
    layout::TRANSACTIONS_DIR,
    layout::DATA_DIR,
    layout::DELETIONS_DIR,
    layout::INDICES_DIR,
    layout::FRI_DIR,
    crate::tree_paths::TREE_DIR,
];

/// What a cleanup removes, and how fast it deletes.
///
/// A version is removed when it is older than `older_than` **and** outside the last
/// `retain_versions` (Lance 14's `cleanup_old_versions`); the latest version, the cleaning
/// handle's, tagged versions and versions a branch forked from always stay. The default is
/// Lance's: versions older than 14 days ([`DEFAULT_OLDER_THAN`]), so on a table younger than
/// that it removes nothing. `older_than: Some(Duration::ZERO)` removes every other version
/// now; `retain_versions: Some(n)` alone keeps the newest `n` whatever their age.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanupPolicy {
    /// Remove versions committed longer ago than this (by the manifest's timestamp). `None`:
    /// no age rule when `retain_versions` is set, else Lance's 14 days.
    pub older_than: Option<Duration>,
    /// Keep at least the last this many versions (at least 1). `None`: no count rule.
    pub retain_versions: Option<u64>,
    /// Objects no version names are deleted only when older than this.
    pub unverified_older_than: Duration,
    /// Decide and report, delete nothing.
    pub dry_run: bool,
    /// At most this many deletes in flight.
    pub delete_concurrency: usize,
    /// At most this many deletes started per second (`None`: no limit).
    pub deletes_per_second: Option<u32>,
}

impl Default for CleanupPolicy {
    fn default() -> Self {
        Self {
            older_than: None,
            retain_versions: None,
            unverified_older_than: DEFAULT_UNVERIFIED_OLDER_THAN,
            dry_run: false,
            delete_concurrency: 16,
            deletes_per_second: None,
        }
    }
}

impl CleanupPolicy {
    /// Why the policy cannot run, if it cannot: the latest version is always kept, and
    /// deletes need a concurrency and a rate above 0.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.retain_versions == Some(0) {
            return Err("retain_versions must be at least 1 (the latest version is always kept)");
        }
        if self.delete_concurrency == 0 || self.deletes_per_second == Some(0) {
            return Err("deletes need a concurrency and a rate above 0");
        }
        Ok(())
    }

    /// Objects no version names are deleted when last modified before this, at `now_ms`.
    pub fn unverified_before_ms(&self, now_ms: i64) -> i64 {
        now_ms.saturating_sub(crate::clock::millis(self.unverified_older_than))
    }
}

/// Lance 14's rule for which versions a cleanup removes: a version goes when it is older than
/// the policy's age (14 days when the policy names neither an age nor a count) **and** outside
/// the last `retain_versions`; it always stays when it is the cleaning handle's version or
/// newer, or is pinned (a tag names it, a branch forked from it).
#[derive(Debug, Clone)]
pub struct Retention {
    age_cutoff_ms: Option<i64>,
    version_cutoff: Option<u64>,
    current: u64,
    pinned: BTreeSet<u64>,
}

impl Retention {
    /// The rule of `policy` over `versions` (every listed version, ascending) at `now_ms`,
    /// run from version `current`.
    pub fn new(
        policy: &CleanupPolicy,
        versions: &[u64],
        now_ms: i64,
        current: u64,
        pinned: BTreeSet<u64>,
    ) -> Self {
        let age = match (policy.older_than, policy.retain_versions) {
            (None, None) => Some(DEFAULT_OLDER_THAN),
            (age, _) => age,
        };
        let version_cutoff = policy.retain_versions.and_then(|n| {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            versions.get(versions.len().saturating_sub(n)).copied()
        });
        Self {
            age_cutoff_ms: age.map(|a| now_ms.saturating_sub(crate::clock::millis(a))),
            version_cutoff,
            current,
            pinned,
        }
    }

    /// Whether version `version`, committed at `committed_ms`, is removed.
    pub fn removes(&self, version: u64, committed_ms: i64) -> bool {
        let old = self.age_cutoff_ms.is_none_or(|c| committed_ms < c);
        let outside = self.version_cutoff.is_none_or(|c| version < c);
        version < self.current && old && outside && !self.pinned.contains(&version)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn listed(path: &str, age: i64) -> Listed {
        Listed {
            path: path.into(),
            size: 10,
            last_modified_ms: 1_000 - age,
        }
    }

    #[test]
    fn classifies_what_lance_cleans_and_nothing_else() {
        let kinds = classify;
        assert_eq!(kinds("_versions/1.manifest"), Some(Class::Manifest));
        assert_eq!(kinds("_versions/.tmp_abc"), Some(Class::Temporary));
        assert_eq!(kinds("_versions/latest_version_hint.json"), None);
        assert_eq!(kinds("_versions/d12.manifest"), None, "detached");
        assert_eq!(kinds("data/a.lance"), Some(Class::Path(ObjectKind::Data)));
        assert_eq!(
            kinds("data/sub/a.lance"),
            Some(Class::Path(ObjectKind::Data))
        );
        assert_eq!(kinds("data/sub/.tmp_x"), Some(Class::Temporary));
        assert_eq!(kinds("data/a.txt"), None);
        assert_eq!(
            kinds("_deletions/1-2-3.arrow"),
            Some(Class::Path(ObjectKind::Deletion))
        );
        assert_eq!(kinds("_deletions/1-2-3.foo"), None);
        assert_eq!(
            kinds("_transactions/1-u.txn"),
            Some(Class::Path(ObjectKind::Transaction))
        );
        assert_eq!(kinds("_indices/u/page_data.lance"), Some(Class::Index("u")));
        assert_eq!(kinds("_indices/u/deep/x"), Some(Class::Index("u")));
        assert_eq!(kinds("_indices/u"), None);
        assert_eq!(
            kinds("_fri/m/stable_partition.lance"),
            Some(Class::RowMap("m"))
        );
        assert_eq!(
            kinds("_bt/leaf/00000000-0000-4000-8000-000000000000.lance"),
            Some(Class::Path(ObjectKind::Tree))
        );
        assert_eq!(kinds("_bt/leaf/x.txt"), None);
        for never in [
            "_refs/tags/t.json",
            "tree/dev/data/a.lance",
            "a.lance",
            "other/x.lance",
        ] {
            assert_eq!(kinds(never), None, "{never}");
        }
    }

    #[test]
    fn referenced_is_kept_verified_is_deleted_unverified_waits_for_age() {
        let mut referenced = References::default();
        referenced.add_path("data/keep.lance");
        referenced.add_index("i1");
        referenced.add_row_map("m1");
        let mut verified = References::default();
        verified.add_path("data/old.lance");
        verified.add_path("data/keep.lance");
        verified.add_index("i2");
        let removed: HashSet<String> = ["_versions/1.manifest".to_string()].into();
        let listing = vec![
            listed("_versions/1.manifest", 0),
            listed("_versions/2.manifest", 900),
            listed("data/keep.lance", 900),
            listed("data/old.lance", 0),
            listed("data/young_orphan.lance", 10),
            listed("data/old_orphan.lance", 500),
            listed("_indices/i1/a", 900),
            listed("_indices/i2/a", 0),
            listed("_indices/i2/b", 0),
            listed("_fri/m1/x", 900),
            listed("_fri/m2/x", 500),
            listed("_refs/tags/t.json", 900),
        ];
        let p = plan(
            listing,
            Decide {
                referenced: &referenced,
                verified: &verified,
                removed_manifests: &removed,
                unverified_before_ms: 1_000 - 100,
            },
        );
        let deleted: Vec<&str> = p.delete.iter().map(|(o, _)| o.path.as_str()).collect();
        assert_eq!(
            deleted,
            [
                "_versions/1.manifest",
                "data/old.lance",
                "data/old_orphan.lance",
                "_indices/i2/a",
                "_indices/i2/b",
                "_fri/m2/x"
            ]
        );
        assert_eq!(p.kept_young, 1);
        let totals = p.totals();
        assert_eq!(totals[&ObjectKind::Index], (2, 20));
        assert_eq!(totals[&ObjectKind::Manifest], (1, 10));
    }

    #[test]
    fn retention_keeps_the_current_newer_pinned_young_and_last_n() {
        let day = 24 * 3600 * 1000;
        let now = 100 * day;
        let versions = [1, 2, 3, 4, 5];
        let committed = |v: u64| now - (10 - v as i64) * 3 * day; // v1 27 days ago .. v5 15
        let default = Retention::new(&CleanupPolicy::default(), &versions, now, 5, [2].into());
        let removed: Vec<u64> = versions
            .iter()
            .copied()
            .filter(|&v| default.removes(v, committed(v)))
            .collect();
        assert_eq!(
            removed,
            vec![1, 3, 4],
            "14 days by default; 2 pinned; 5 current"
        );
        let last_two = CleanupPolicy {
            retain_versions: Some(2),
            ..Default::default()
        };
        let r = Retention::new(&last_two, &versions, now, 5, BTreeSet::new());
        let removed: Vec<u64> = versions
            .iter()
            .copied()
            .filter(|&v| r.removes(v, now))
            .collect();
        assert_eq!(removed, vec![1, 2, 3], "a count alone ignores age");
        let young = CleanupPolicy {
            older_than: Some(Duration::from_secs(20 * 24 * 3600)),
            ..Default::default()
        };
        let r = Retention::new(&young, &versions, now, 4, BTreeSet::new());
        let removed: Vec<u64> = versions
            .iter()
            .copied()
            .filter(|&v| r.removes(v, committed(v)))
            .collect();
        assert_eq!(
            removed,
            vec![1, 2, 3],
            "older than 20 days, below the handle's version"
        );
        assert!(CleanupPolicy {
            retain_versions: Some(0),
            ..Default::default()
        }
        .check()
        .is_err());
        assert!(CleanupPolicy {
            delete_concurrency: 0,
            ..Default::default()
        }
        .check()
        .is_err());
        assert_eq!(row_map_id("_fri/m1/stable_partition.lance"), Some("m1"));
        assert_eq!(row_map_id("_fri/m1"), None);
        assert_eq!(row_map_id("data/m1/x.lance"), None);
    }
}
