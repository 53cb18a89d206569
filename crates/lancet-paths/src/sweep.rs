//! Carrying out a cleanup's plan: deleting what [`crate::cleanup::plan`] decided (manifests
//! first, at a bounded concurrency and rate), and telling which resolved bases lie inside the
//! dataset being cleaned ([`Places`]), so that objects of another dataset are never counted or
//! deleted.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use object_store::path::Path;
use tracing::Instrument;

use crate::cleanup::{CleanupPolicy, Listed, ObjectKind, References, LISTED_DIRS};
use crate::{DatasetStore, ObjectLocation, PathsError, Result};

/// Deletes `doomed`: the manifests first, then (only when every manifest went) the objects,
/// at most `delete_concurrency` at once and `deletes_per_second` started per second. Each is
/// deleted at the location the listing gave. Returns the failures and how many of `doomed`
/// (from its start) were attempted.
pub async fn delete_planned(
    store: &DatasetStore,
    locations: &HashMap<String, Path>,
    doomed: &[(Listed, ObjectKind)],
    policy: &CleanupPolicy,
    progress: &(impl Fn(u64, u64) + Send + Sync),
) -> (Vec<(String, String)>, usize) {
    let total = doomed.len() as u64;
    let manifests = doomed
        .iter()
        .take_while(|(_, k)| *k == ObjectKind::Manifest)
        .count();
    let (first, rest) = doomed.split_at(manifests);
    let pace = policy.deletes_per_second.map(|r| {
        Arc::new(tokio::sync::Mutex::new(tokio::time::interval(
            Duration::from_secs_f64(1.0 / f64::from(r)),
        )))
    });
    let mut failed = Vec::new();
    let mut done = 0u64;
    let mut attempted = 0;
    for (phase, objects) in [("manifests", first), ("objects", rest)] {
        if !failed.is_empty() {
            // a version whose manifest could not be deleted is still listed: everything it
            // names must stay
            tracing::warn!(
                skipped = objects.len(),
                "manifest deletes failed; objects kept"
            );
            break;
        }
        attempted += objects.len();
        let span = tracing::debug_span!("delete", phase, objects = objects.len());
        let mut results = futures::stream::iter(objects.iter())
            .map(|(o, _)| {
                let pace = pace.clone();
                let path = locations
                    .get(&o.path)
                    .cloned()
                    .unwrap_or_else(|| store.path(&o.path));
                async move {
                    if let Some(p) = pace {
                        p.lock().await.tick().await;
                    }
                    match store.delete(&path).await {
                        Ok(()) | Err(PathsError::NotFound { .. }) => Ok(()),
                        Err(e) => Err((o.path.clone(), e.to_string())),
                    }
                }
                .instrument(span.clone())
            })
            .buffer_unordered(policy.delete_concurrency);
        while let Some(r) = results.next().await {
            done += 1;
            if let Err(f) = r {
                tracing::warn!(path = %f.0, error = %f.1, "delete failed");
                failed.push(f);
            }
            progress(done, total);
        }
    }
    failed.sort();
    (failed, attempted)
}

/// On a local disk, `_indices/{uuid}/` directories the deletes emptied are removed too
/// (as Lance does); object stores have no directories.
pub fn remove_empty_index_dirs(store: &DatasetStore, doomed: &[(Listed, ObjectKind)]) {
    let Some(root) = store.local_root() else {
        return;
    };
    let dirs: BTreeSet<&str> = doomed
        .iter()
        .filter(|(_, k)| *k == ObjectKind::Index)
        .filter_map(|(o, _)| o.path.rsplit_once('/').map(|(d, _)| d))
        .collect();
    for dir in dirs.into_iter().rev() {
        // only empty directories go; a failure leaves a harmless empty directory
        let _ = std::fs::remove_dir(root.join(dir));
    }
}

/// Removes `dir` and the directories below it that hold nothing (bottom up); a directory
/// still holding a file (a nested branch's) stays, as does anything that cannot be read.
pub fn remove_empty_dirs(dir: &std::path::Path) {
    // a link is not followed: what it leads to is not this table's
    if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        return;
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_empty_dirs(&entry.path());
            }
        }
    }
    // fails, harmlessly, when the directory is not empty
    let _ = std::fs::remove_dir(dir);
}

/// The objects under the directories cleanup sweeps ([`LISTED_DIRS`]), each relative to
/// the dataset root, with where it is stored. What a listing reaches through a link leading
/// out of the table is not listed (the store refuses it: [`DatasetStore::refused_outside`]).
pub async fn list_objects(store: &DatasetStore) -> Result<(Vec<Listed>, HashMap<String, Path>)> {
    let mut listing = Vec::new();
    let mut locations = HashMap::new();
    for prefix in LISTED_DIRS {
        for meta in store.list(prefix).await? {
            let Some(path) = store.relative(&meta.location) else {
                continue;
            };
            listing.push(Listed {
                path: path.clone(),
                size: meta.size,
                last_modified_ms: meta.last_modified.timestamp_millis(),
            });
            locations.insert(path, meta.location);
        }
    }
    Ok((listing, locations))
}

/// References being collected from one version, normalized to the form the store lists
/// objects in, and only those that lie in this dataset.
pub struct Collector<'a> {
    pub out: References,
    pub places: Places,
    store: &'a DatasetStore,
}

impl<'a> Collector<'a> {
    pub fn new(store: &'a DatasetStore, root: &str) -> Self {
        Self {
            out: References::default(),
            places: Places::new(root),
            store,
        }
    }

    /// A path relative to the dataset root, as a listing spells it (object stores keep some
    /// characters percent-encoded).
    pub fn path(&mut self, relative: String) {
        let listed = self
            .store
            .relative(&self.store.path(&relative))
            .unwrap_or(relative);
        self.out.add_path(listed);
    }

    /// A resolved object: referenced when it lies in this dataset.
    pub fn location(&mut self, location: &ObjectLocation) -> Result<()> {
        if let Some(p) = self.places.local(location)? {
            self.path(p);
        }
        Ok(())
    }
}

/// Which resolved bases lie inside this dataset, and where. A base is compared by its
/// canonical location: Lance writes `BasePath.path` as the user spelled it (relative,
/// `file://`, a trailing `/`), so on a local disk both sides are canonicalized (once per
/// distinct base). A base in another dataset is foreign: what it names is neither deleted nor
/// counted here. A local base that cannot be found cannot be placed at all, and stops the
/// cleanup: guessing "foreign" could let this dataset's objects named through it go.
pub struct Places {
    root: String,
    known: HashMap<String, Option<String>>,
}

impl Places {
    pub fn new(root: &str) -> Self {
        Self {
            root: canonical(root).unwrap_or_else(|| normalize(root).to_string()),
            known: Default::default(),
        }
    }

    /// The path of `location` relative to this dataset's root, when it lies in this dataset.
    pub fn local(&mut self, location: &ObjectLocation) -> Result<Option<String>> {
        let uri = &location.base.uri;
        if !self.known.contains_key(uri) {
            let Some(base) = canonical(uri) else {
                return Err(PathsError::InvalidUri {
                    uri: uri.clone(),
                    reason: "a version names objects there, and it cannot be found from here; cleanup cannot tell whether they are this dataset's".into(),
                });
            };
            let root = &self.root;
            let prefix = if &base == root {
                Some(String::new())
            } else {
                base.strip_prefix(&format!("{root}/"))
                    .map(|p| format!("{p}/"))
            };
            self.known.insert(uri.clone(), prefix);
        }
        Ok(self
            .known
            .get(uri)
            .and_then(|p| p.as_ref())
            .map(|prefix| format!("{prefix}{}", location.path)))
    }
}

/// A location written without scheme noise: no `file://`, no trailing `/`.
fn normalize(uri: &str) -> &str {
    uri.strip_prefix("file://")
        .unwrap_or(uri)
        .trim_end_matches('/')
}

/// `uri` normalized; a local path canonicalized (`None` when it does not exist).
fn canonical(uri: &str) -> Option<String> {
    let plain = normalize(uri);
    if plain.contains("://") {
        return Some(plain.to_string());
    }
    std::fs::canonicalize(plain)
        .ok()
        .and_then(|p| p.to_str().map(str::to_string))
}
