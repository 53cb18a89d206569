//! Lance 14 references: tags (`_refs/tags/{name}.json`) and branches
//! (`_refs/branches/{name}.json`, whose versions live under `tree/{name}/`).
//!
//! Both are small JSON documents Lance writes (observed with pylance 14.0.2,
//! `docs/research/lance-cleanup-and-clone.md`):
//! - a tag: `{"branch": null | "name", "version": N, "createdAt", "updatedAt",
//!   "manifestSize": bytes, "metadata": {}}`;
//! - a branch: `{"parentBranch": null | "name", "parentVersion": N, "identifier": {...},
//!   "createAt", "manifestSize", "metadata": {}}`.
//!
//! Only the fields cleanup and cloning need are read; the others are kept out of the types
//! and ignored. A document that is not JSON, or lacks `version` / `parentVersion`, is a
//! [`PathsError::CorruptRef`] naming the file: a cleanup must not guess which versions a
//! broken tag protects.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::error::{PathsError, Result};
use crate::store::DatasetStore;

/// Directory of tag files, relative to the dataset root.
pub const TAGS_DIR: &str = "_refs/tags";
/// Directory of branch files, relative to the dataset root.
pub const BRANCHES_DIR: &str = "_refs/branches";
/// Directory under which each branch keeps its own dataset (`tree/{name}/_versions/`, ...).
pub const BRANCH_TREES_DIR: &str = "tree";

/// A named version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub name: String,
    pub version: u64,
    /// The branch the version belongs to; `None` for the main line.
    pub branch: Option<String>,
}

/// A branch: its own versions under `tree/{name}/`, forked from `parent_version` of
/// `parent_branch` (`None`: the main line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Branch {
    pub name: String,
    pub parent_branch: Option<String>,
    pub parent_version: u64,
}

impl Branch {
    /// The branch's dataset root, relative to the main dataset's root.
    pub fn root(&self) -> String {
        format!("{BRANCH_TREES_DIR}/{}", self.name)
    }
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct TagFile {
    #[serde(default)]
    branch: Option<String>,
    version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_at: Option<String>,
    #[serde(default)]
    manifest_size: Option<u64>,
    #[serde(default)]
    metadata: serde_json::Map<String, serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BranchFile {
    #[serde(default)]
    parent_branch: Option<String>,
    parent_version: u64,
}

/// The largest tag or branch file read (Lance's are a few hundred bytes).
pub const MAX_REF_BYTES: u64 = 1 << 20;

/// `name` of `{dir}/{name}.json`, for every JSON file below `dir` (names may hold `/`). A file
/// over [`MAX_REF_BYTES`] is corrupt, and not read.
async fn json_files(
    store: &DatasetStore,
    dir: &str,
) -> Result<Vec<(String, object_store::path::Path)>> {
    let mut out = Vec::new();
    for meta in store.list(dir).await? {
        let Some(rel) = store.relative(&meta.location) else {
            continue;
        };
        let Some(name) = rel
            .strip_prefix(dir)
            .and_then(|r| r.strip_prefix('/'))
            .and_then(|r| r.strip_suffix(".json"))
        else {
            continue;
        };
        if meta.size > MAX_REF_BYTES {
            return Err(corrupt(
                &meta.location,
                format!(
                    "{} bytes, more than a reference holds ({MAX_REF_BYTES})",
                    meta.size
                ),
            ));
        }
        if !name.is_empty() {
            out.push((name.to_string(), meta.location));
        }
    }
    out.sort();
    Ok(out)
}

fn corrupt(path: &object_store::path::Path, rule: String) -> PathsError {
    PathsError::CorruptRef {
        at: lancet_proto::ObjectRef::new(path.to_string()),
        rule,
    }
}

/// Decodes one tag file.
pub fn decode_tag(name: &str, path: &object_store::path::Path, bytes: &[u8]) -> Result<Tag> {
    let file: TagFile = serde_json::from_slice(bytes)
        .map_err(|e| corrupt(path, format!("tag is not Lance's tag JSON: {e}")))?;
    Ok(Tag {
        name: name.to_string(),
        version: file.version,
        branch: file.branch,
    })
}

/// Decodes one branch file.
pub fn decode_branch(name: &str, path: &object_store::path::Path, bytes: &[u8]) -> Result<Branch> {
    let file: BranchFile = serde_json::from_slice(bytes)
        .map_err(|e| corrupt(path, format!("branch is not Lance's branch JSON: {e}")))?;
    Ok(Branch {
        name: name.to_string(),
        parent_branch: file.parent_branch,
        parent_version: file.parent_version,
    })
}

/// Every tag of the dataset, by name.
pub async fn list_tags(store: &DatasetStore) -> Result<Vec<Tag>> {
    let mut out = Vec::new();
    for (name, path) in json_files(store, TAGS_DIR).await? {
        let bytes = store.get(&path, None).await?;
        out.push(decode_tag(&name, &path, &bytes)?);
    }
    Ok(out)
}

/// Every branch of the dataset, by name.
pub async fn list_branches(store: &DatasetStore) -> Result<Vec<Branch>> {
    let mut out = Vec::new();
    for (name, path) in json_files(store, BRANCHES_DIR).await? {
        let bytes = store.get(&path, None).await?;
        out.push(decode_branch(&name, &path, &bytes)?);
    }
    Ok(out)
}

/// Creates tag `name` on `version` of the main line (put-if-absent: an existing tag is
/// [`PathsError::AlreadyExists`]), in the JSON Lance writes.
pub async fn create_tag(
    store: &DatasetStore,
    name: &str,
    version: u64,
    manifest_size: u64,
) -> Result<Tag> {
    if name.is_empty() || name.contains("..") || name.starts_with('/') || name.contains('\\') {
        return Err(PathsError::InvalidRelativePath {
            path: name.to_string(),
            rule: "a tag name is a non-empty relative name",
        });
    }
    let now = chrono_like_now();
    let body = serde_json::to_vec_pretty(&TagFile {
        branch: None,
        version,
        created_at: Some(now.clone()),
        updated_at: Some(now),
        manifest_size: Some(manifest_size),
        metadata: serde_json::Map::new(),
    })
    .map_err(|e| PathsError::InvalidUri {
        uri: name.to_string(),
        reason: format!("tag JSON: {e}"),
    })?;
    let path = store.path(&format!("{TAGS_DIR}/{name}.json"));
    store.put_if_absent(&path, Bytes::from(body)).await?;
    Ok(Tag {
        name: name.to_string(),
        version,
        branch: None,
    })
}

/// RFC 3339 UTC time of now, with seconds precision (what Lance's `createdAt` holds).
fn chrono_like_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn p(s: &str) -> object_store::path::Path {
        object_store::path::Path::from(s)
    }

    #[test]
    fn reads_what_pylance_writes() {
        let tag = br#"{"branch": null, "version": 2, "createdAt": "2026-12-01T09:04:13.120019853Z",
            "updatedAt": "2026-12-01T09:04:13.120019853Z", "manifestSize": 459, "metadata": {}}"#;
        let t = decode_tag("t2", &p("_refs/tags/t2.json"), tag).unwrap();
        assert_eq!((t.name.as_str(), t.version, t.branch), ("t2", 2, None));
        let branch = br#"{"parentBranch": null, "identifier": {"version_mapping": [[2, "fc5b"]]},
            "parentVersion": 2, "createAt": 1796116035, "manifestSize": 459, "metadata": {}}"#;
        let b = decode_branch("dev", &p("_refs/branches/dev.json"), branch).unwrap();
        assert_eq!(b.parent_version, 2);
        assert_eq!(b.root(), "tree/dev");
    }

    #[test]
    fn broken_refs_are_corrupt_not_ignored() {
        for bytes in [
            &b"not json"[..],
            br#"{"branch": null}"#,
            br#"{"version": -1}"#,
        ] {
            assert!(matches!(
                decode_tag("x", &p("_refs/tags/x.json"), bytes),
                Err(PathsError::CorruptRef { .. })
            ));
        }
        assert!(matches!(
            decode_branch(
                "x",
                &p("_refs/branches/x.json"),
                br#"{"parentBranch": null}"#
            ),
            Err(PathsError::CorruptRef { .. })
        ));
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_788), (2026, 12, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[tokio::test]
    async fn tags_round_trip_and_are_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let store = DatasetStore::open(dir.path().to_str().unwrap()).unwrap();
        assert!(list_tags(&store).await.unwrap().is_empty());
        create_tag(&store, "release/1", 3, 100).await.unwrap();
        create_tag(&store, "a", 1, 100).await.unwrap();
        assert!(matches!(
            create_tag(&store, "a", 2, 100).await,
            Err(PathsError::AlreadyExists { .. })
        ));
        assert!(create_tag(&store, "../x", 2, 100).await.is_err());
        let tags = list_tags(&store).await.unwrap();
        let names: Vec<_> = tags.iter().map(|t| (t.name.as_str(), t.version)).collect();
        assert_eq!(names, [("a", 1), ("release/1", 3)]);
        assert!(list_branches(&store).await.unwrap().is_empty());
        // an oversized reference is corrupt, never read whole
        let big = store.path("_refs/tags/big.json");
        store
            .put(&big, Bytes::from(vec![b' '; (MAX_REF_BYTES + 1) as usize]))
            .await
            .unwrap();
        assert!(matches!(
            list_tags(&store).await,
            Err(PathsError::CorruptRef { .. })
        ));
    }
}
