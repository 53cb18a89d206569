//! Which objects of a dataset a cleanup deletes: a pure decision over a listing.
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

use std::collections::{BTreeMap, HashSet};

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
        "data" if file_name.starts_with(".tmp") => Some(Class::Temporary),
        "data" if file_name.ends_with(".lance") => Some(Class::Path(ObjectKind::Data)),
        "_deletions" if file_name.ends_with(".arrow") || file_name.ends_with(".bin") => {
            Some(Class::Path(ObjectKind::Deletion))
        }
        "_transactions" if file_name.ends_with(".txn") => {
            Some(Class::Path(ObjectKind::Transaction))
        }
        "_indices" => {
            let (uuid, file) = rest.split_once('/')?;
            (!uuid.is_empty() && !file.is_empty()).then_some(Class::Index(uuid))
        }
        "_fri" => {
            let (map, file) = rest.split_once('/')?;
            (!map.is_empty() && !file.is_empty()).then_some(Class::RowMap(map))
        }
        "_bt" if crate::tree_paths::validate_tree_path(path).is_ok() => {
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
}
