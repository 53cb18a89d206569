//! [`ObjectRef`]: where a corruption is, in every crate's `Corrupt` error; and [`shown`], how
//! every error spells a store path.
//!
//! On a local file system a store path is the object's absolute path without its leading `/`
//! (object_store's `LocalFileSystem` is rooted at `/`), which no reader recognizes as a path.
//! The stores of local datasets register their roots ([`register_local_root`]: lancet-paths
//! does when it opens one), and messages spell the objects below them with the `/`. A path
//! in any other store is shown as it is. Display only: the stored paths do not change.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::RwLock;

static LOCAL_ROOTS: RwLock<BTreeSet<String>> = RwLock::new(BTreeSet::new());

/// Records `root` (a local directory's store path: its absolute path without the leading `/`)
/// as a local file-system root, for [`shown`].
pub fn register_local_root(root: &str) {
    let root = root.trim_matches('/');
    if root.is_empty() {
        return;
    }
    let mut roots = LOCAL_ROOTS.write().unwrap_or_else(|p| p.into_inner());
    if !roots.contains(root) {
        roots.insert(root.to_string());
    }
}

/// `path` as a message shows it: with its leading `/` when it lies below a registered local
/// root, as it is otherwise.
pub fn shown(path: &str) -> Cow<'_, str> {
    if path.starts_with('/') {
        return Cow::Borrowed(path);
    }
    let roots = LOCAL_ROOTS.read().unwrap_or_else(|p| p.into_inner());
    let local = roots.iter().any(|root| {
        path.strip_prefix(root.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    match local {
        true => Cow::Owned(format!("/{path}")),
        false => Cow::Borrowed(path),
    }
}

/// The stored object a rule was broken in (its path in the store, or a URI) and, when the
/// rule concerns one part of it, which part ("fragment 7", "page 3", "field 12").
///
/// Every crate's `Corrupt` variant carries one, so a caller finds the object to repair (or to
/// report) the same way whichever subsystem decoded it: `lancet::Error::object()`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    /// The object's path in its store, or a URI.
    pub object: String,
    /// The part of the object the rule is about, when narrower than the whole object.
    pub within: Option<String>,
}

impl ObjectRef {
    /// The whole object at `object`.
    pub fn new(object: impl Into<String>) -> Self {
        Self {
            object: object.into(),
            within: None,
        }
    }

    /// The same object, narrowed to `part`.
    pub fn within(mut self, part: impl Into<String>) -> Self {
        self.within = Some(part.into());
        self
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let object = shown(&self.object);
        match &self.within {
            None => write!(f, "{object}"),
            Some(part) => write!(f, "{object} ({part})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_the_object_and_the_part() {
        assert_eq!(
            ObjectRef::new("t/_versions/1.manifest").to_string(),
            "t/_versions/1.manifest"
        );
        let r = ObjectRef::new("t/_indices/u/page_lookup.lance").within("page 3");
        assert_eq!(r.to_string(), "t/_indices/u/page_lookup.lance (page 3)");
        assert_eq!(r.within.as_deref(), Some("page 3"));
    }

    #[test]
    fn paths_below_a_local_root_keep_their_leading_slash() {
        register_local_root("srv/lancet-test-root");
        let local = ObjectRef::new("srv/lancet-test-root/_versions/1.manifest");
        assert_eq!(
            local.to_string(),
            "/srv/lancet-test-root/_versions/1.manifest"
        );
        assert_eq!(shown("srv/lancet-test-root"), "/srv/lancet-test-root");
        // a sibling that merely shares the prefix, and a remote key, are shown as they are
        assert_eq!(shown("srv/lancet-test-rootx/a"), "srv/lancet-test-rootx/a");
        assert_eq!(
            shown("bucket/t/_versions/1.manifest"),
            "bucket/t/_versions/1.manifest"
        );
        assert_eq!(shown("/already/absolute"), "/already/absolute");
    }
}
