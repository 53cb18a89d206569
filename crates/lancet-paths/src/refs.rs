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
//! A tag's type holds the fields cleanup and cloning need; a branch's holds every field
//! pylance's `branches.list()` shows (those missing read as empty). A document that is not
//! JSON, or lacks `version` / `parentVersion`, is a
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
pub use crate::layout::BRANCH_TREES_DIR;

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
    /// Lance's branch identifier: `(version, id)` of each fork from the main line down to
    /// this branch.
    pub identifier: Vec<(u64, String)>,
    /// When the branch was created (seconds since the epoch; 0 when not recorded).
    pub create_at: u64,
    /// The size of the manifest it forked from (0 when not recorded).
    pub manifest_size: u64,
    pub metadata: std::collections::BTreeMap<String, String>,
}

impl Branch {
    /// The branch's dataset root, relative to the main dataset's root.
    pub fn root(&self) -> String {
        crate::layout::branch_root(&self.name)
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
    #[serde(default)]
    identifier: BranchIdentifier,
    #[serde(default)]
    create_at: u64,
    #[serde(default)]
    manifest_size: u64,
    #[serde(default)]
    metadata: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
struct BranchIdentifier {
    #[serde(default)]
    version_mapping: Vec<(u64, String)>,
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
        identifier: file.identifier.version_mapping,
        create_at: file.create_at,
        manifest_size: file.manifest_size,
        metadata: file.metadata,
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

/// Whether `name` may name a tag, by Lance 14.0.2's rules (`check_valid_tag`): not empty;
/// only letters, digits, `.`, `-` and `_`; no leading or trailing dot, no `..`, not ending in
/// `.lock`. Refused names are [`PathsError::InvalidRef`].
pub fn check_tag_name(name: &str) -> Result<()> {
    let rule = if name.is_empty() {
        Some("a tag name cannot be empty")
    } else if !name
        .chars()
        .all(|c| c.is_alphanumeric() || c == '.' || c == '-' || c == '_')
    {
        Some("a tag name holds only letters, digits, '.', '-' and '_'")
    } else if name.starts_with('.') {
        Some("a tag name cannot begin with a dot")
    } else if name.ends_with('.') {
        Some("a tag name cannot end with a dot")
    } else if name.ends_with(".lock") {
        Some("a tag name cannot end with .lock")
    } else if name.contains("..") {
        Some("a tag name cannot hold two consecutive dots")
    } else {
        None
    };
    match rule {
        Some(rule) => Err(PathsError::InvalidRef {
            name: name.to_string(),
            rule,
        }),
        None => Ok(()),
    }
}

fn tag_path(store: &DatasetStore, name: &str) -> Result<object_store::path::Path> {
    check_tag_name(name)?;
    Ok(store.path(&format!("{TAGS_DIR}/{name}.json")))
}

/// The bytes of tag file `path` (a missing one is [`PathsError::RefNotFound`], one over
/// [`MAX_REF_BYTES`] corrupt and not read).
async fn read_tag_file(
    store: &DatasetStore,
    name: &str,
    path: &object_store::path::Path,
) -> Result<Bytes> {
    let size = match store.size(path).await {
        Ok(size) => size,
        Err(PathsError::NotFound { .. }) => {
            return Err(PathsError::RefNotFound {
                what: "tag",
                name: name.to_string(),
            })
        }
        Err(e) => return Err(e),
    };
    if size > MAX_REF_BYTES {
        return Err(corrupt(
            path,
            format!("{size} bytes, more than a reference holds ({MAX_REF_BYTES})"),
        ));
    }
    store.get(path, Some(size)).await
}

/// Tag `name`, read (a missing one is [`PathsError::RefNotFound`]).
pub async fn get_tag(store: &DatasetStore, name: &str) -> Result<Tag> {
    let path = tag_path(store, name)?;
    let bytes = read_tag_file(store, name, &path).await?;
    decode_tag(name, &path, &bytes)
}

/// Creates tag `name` on `version` of the main line, whose manifest is `manifest_size`
/// bytes (put-if-absent: an existing tag is [`PathsError::RefExists`]), in the JSON Lance
/// writes. The caller checks that the version exists.
pub async fn create_tag(
    store: &DatasetStore,
    name: &str,
    version: u64,
    manifest_size: u64,
) -> Result<Tag> {
    let path = tag_path(store, name)?;
    let now = chrono_like_now();
    let body = tag_json(name, version, manifest_size, now.clone(), now, None)?;
    match store.put_if_absent(&path, Bytes::from(body)).await {
        Err(PathsError::AlreadyExists { .. }) => {
            return Err(PathsError::RefExists {
                what: "tag",
                name: name.to_string(),
            })
        }
        other => other?,
    };
    Ok(Tag {
        name: name.to_string(),
        version,
        branch: None,
    })
}

/// Moves tag `name` to `version` (its creation time and metadata kept, its update time now),
/// as Lance's `tags.update`; a missing tag is [`PathsError::RefNotFound`].
pub async fn update_tag(
    store: &DatasetStore,
    name: &str,
    version: u64,
    manifest_size: u64,
) -> Result<Tag> {
    let path = tag_path(store, name)?;
    let bytes = read_tag_file(store, name, &path).await?;
    let old: TagFile = serde_json::from_slice(&bytes)
        .map_err(|e| corrupt(&path, format!("not a tag document: {e}")))?;
    let created = old.created_at.clone().unwrap_or_else(chrono_like_now);
    let body = tag_json(
        name,
        version,
        manifest_size,
        created,
        chrono_like_now(),
        Some(old.metadata),
    )?;
    store.put(&path, Bytes::from(body)).await?;
    Ok(Tag {
        name: name.to_string(),
        version,
        branch: None,
    })
}

/// Deletes tag `name` (a missing one is [`PathsError::RefNotFound`]), as Lance's
/// `tags.delete`: the version it named is then kept only by the cleanup policy.
pub async fn delete_tag(store: &DatasetStore, name: &str) -> Result<()> {
    let path = tag_path(store, name)?;
    read_tag_file(store, name, &path).await?;
    store.delete(&path).await
}

fn tag_json(
    name: &str,
    version: u64,
    manifest_size: u64,
    created: String,
    updated: String,
    metadata: Option<serde_json::Map<String, serde_json::Value>>,
) -> Result<Vec<u8>> {
    serde_json::to_vec_pretty(&TagFile {
        branch: None,
        version,
        created_at: Some(created),
        updated_at: Some(updated),
        manifest_size: Some(manifest_size),
        metadata: metadata.unwrap_or_default(),
    })
    .map_err(|e| PathsError::InvalidUri {
        uri: name.to_string(),
        reason: format!("tag JSON: {e}"),
    })
}

/// Whether `name` may name a branch, by Lance 14.0.2's rules (`check_valid_branch`):
/// `/`-separated segments of letters, digits, `.`, `-` and `_`, none empty, no `..`, not ending
/// in `.lock`, and not `main` (the default branch).
pub fn check_branch_name(name: &str) -> Result<()> {
    let bad = |rule: &'static str| {
        Err(PathsError::InvalidRef {
            name: name.to_string(),
            rule,
        })
    };
    if name.is_empty() {
        return bad("a branch name cannot be empty");
    }
    if name.contains("..") || name.contains('\\') {
        return bad("a branch name cannot hold '..' or '\\'");
    }
    for segment in name.split('/') {
        if segment.is_empty() {
            return bad("a branch name cannot have empty segments between '/'");
        }
        if !segment
            .chars()
            .all(|c| c.is_alphanumeric() || c == '.' || c == '-' || c == '_')
        {
            return bad("a branch name holds only letters, digits, '.', '-', '_' and '/'");
        }
    }
    if name.ends_with(".lock") {
        return bad("a branch name cannot end with .lock");
    }
    if name == "main" {
        return bad("\"main\" is reserved for the default branch");
    }
    Ok(())
}

/// Where branch `name`'s reference file lives.
pub fn branch_ref_path(store: &DatasetStore, name: &str) -> Result<object_store::path::Path> {
    check_branch_name(name)?;
    Ok(store.path(&format!("{BRANCHES_DIR}/{name}.json")))
}

/// Records branch `name`, forked from `parent_version` of `parent_branch` (the main line
/// when `None`) whose manifest is `manifest_size` bytes, in the JSON Lance writes: its
/// identifier is the parent's version mapping with this fork appended, as Lance's
/// `BranchIdentifier::new` builds it (put-if-absent: an existing branch is
/// [`PathsError::RefExists`]; a missing parent branch [`PathsError::RefNotFound`]). The
/// branch's versions are written under [`Branch::root`] by the caller.
pub async fn create_branch_ref(
    store: &DatasetStore,
    name: &str,
    parent_branch: Option<&str>,
    parent_version: u64,
    manifest_size: u64,
) -> Result<Branch> {
    let path = branch_ref_path(store, name)?;
    let fresh = crate::ObjectUuid::new_v4().as_bytes().iter().fold(
        String::with_capacity(32),
        |mut s, b| {
            s.push_str(&format!("{b:02x}"));
            s
        },
    );
    let mut mapping: Vec<serde_json::Value> = match parent_branch {
        None => Vec::new(),
        Some(parent) => {
            let parent_path = branch_ref_path(store, parent)?;
            let bytes = match store.get(&parent_path, None).await {
                Err(PathsError::NotFound { .. }) => {
                    return Err(PathsError::RefNotFound {
                        what: "branch",
                        name: parent.to_string(),
                    })
                }
                other => other?,
            };
            let parent_json: serde_json::Value =
                serde_json::from_slice(&bytes).map_err(|e| PathsError::InvalidUri {
                    uri: parent.to_string(),
                    reason: format!("branch JSON: {e}"),
                })?;
            parent_json
                .pointer("/identifier/version_mapping")
                .and_then(|m| m.as_array())
                .cloned()
                .unwrap_or_default()
        }
    };
    mapping.push(serde_json::json!([parent_version, fresh]));
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let body = serde_json::json!({
        "parentBranch": parent_branch,
        "identifier": {"version_mapping": mapping},
        "parentVersion": parent_version,
        "createAt": secs,
        "manifestSize": manifest_size,
        "metadata": {},
    });
    let bytes = serde_json::to_vec_pretty(&body).map_err(|e| PathsError::InvalidUri {
        uri: name.to_string(),
        reason: format!("branch JSON: {e}"),
    })?;
    let branch = decode_branch(name, &path, &bytes)?;
    match store.put_if_absent(&path, Bytes::from(bytes)).await {
        Err(PathsError::AlreadyExists { .. }) => Err(PathsError::RefExists {
            what: "branch",
            name: name.to_string(),
        }),
        Err(e) => Err(e),
        Ok(_) => Ok(branch),
    }
}

/// Deletes branch `name`'s reference (a missing one is [`PathsError::RefNotFound`]), as
/// Lance's `branches.delete` does first; its versions under [`Branch::root`] are the caller's
/// to delete.
pub async fn delete_branch_ref(store: &DatasetStore, name: &str) -> Result<()> {
    let path = branch_ref_path(store, name)?;
    match store.size(&path).await {
        Ok(_) => store.delete(&path).await,
        Err(PathsError::NotFound { .. }) => Err(PathsError::RefNotFound {
            what: "branch",
            name: name.to_string(),
        }),
        Err(e) => Err(e),
    }
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
        assert_eq!(b.identifier, [(2, "fc5b".to_string())]);
        assert_eq!((b.create_at, b.manifest_size), (1796116035, 459));
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
    fn tag_names_follow_lances_rules() {
        for ok in ["v1", "release-1.0", "a_b", "é"] {
            assert!(check_tag_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "a/b", "../x", ".a", "a.", "a.lock", "a..b", "a b", "a\\b",
        ] {
            let e = check_tag_name(bad).unwrap_err();
            assert!(matches!(e, PathsError::InvalidRef { .. }), "{bad}");
            assert_eq!(e.kind(), lancet_proto::ErrorKind::InvalidInput);
        }
    }

    #[test]
    fn branch_names_follow_lances_rules() {
        for ok in ["dev", "feature/x-1", "a.b_c"] {
            assert!(check_branch_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "main", "/a", "a/", "a//b", "a..b", "a b", "x.lock", "a\\b",
        ] {
            let e = check_branch_name(bad).unwrap_err();
            assert!(matches!(e, PathsError::InvalidRef { .. }), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_branch_is_recorded_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = DatasetStore::open(dir.path().to_str().unwrap()).unwrap();
        create_branch_ref(&store, "dev", None, 3, 100)
            .await
            .unwrap();
        let e = create_branch_ref(&store, "dev", None, 4, 100)
            .await
            .unwrap_err();
        assert!(
            matches!(e, PathsError::RefExists { what: "branch", .. }),
            "{e}"
        );
        let listed = list_branches(&store).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            (listed[0].parent_version, listed[0].root()),
            (3, "tree/dev".into())
        );
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
        create_tag(&store, "release-1.0", 3, 100).await.unwrap();
        create_tag(&store, "a", 1, 100).await.unwrap();
        assert!(matches!(
            create_tag(&store, "a", 2, 100).await,
            Err(PathsError::RefExists { .. })
        ));
        let tags = list_tags(&store).await.unwrap();
        let names: Vec<_> = tags.iter().map(|t| (t.name.as_str(), t.version)).collect();
        assert_eq!(names, [("a", 1), ("release-1.0", 3)]);
        // moved, read, deleted; a missing tag is NotFound
        update_tag(&store, "a", 2, 120).await.unwrap();
        assert_eq!(get_tag(&store, "a").await.unwrap().version, 2);
        delete_tag(&store, "a").await.unwrap();
        for missing in [
            get_tag(&store, "a").await.map(|_| ()),
            delete_tag(&store, "a").await,
            update_tag(&store, "a", 1, 1).await.map(|_| ()),
        ] {
            let e = missing.unwrap_err();
            assert!(matches!(e, PathsError::RefNotFound { .. }), "{e}");
            assert_eq!(e.kind(), lancet_proto::ErrorKind::NotFound);
        }
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
