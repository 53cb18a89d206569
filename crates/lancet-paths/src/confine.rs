//! A table on a local disk is reached only inside its root.
//!
//! object_store's `LocalFileSystem` follows symbolic links: a listing walks into a linked
//! directory and reports what it holds as if it lay in the table, and a read, write or delete
//! goes through the link. A link planted in a table (`_indices/<uuid> -> /elsewhere`) would let
//! a plain cleanup delete files of `/elsewhere` (pylance 14.0.2 does), and a crafted table read
//! or overwrite files anywhere. [`Confined`] wraps the local file system so that nothing of the
//! kind happens: every object it reads, writes, copies, renames or deletes must really lie under
//! the table's root, with links resolved. Its directory is resolved (the nearest existing
//! ancestor, for a write that creates directories); for a read, the object too, when it is
//! itself a link. A call that would leave the root fails with `PermissionDenied` whose source is
//! an [`Outside`] (lancet-paths reports it as `PathsError::OutsideTable`); a listing skips such
//! objects. Everything refused is remembered ([`Confined::refused`]) so that a command can report
//! it.
//!
//! Links that stay inside the root are followed as before. Directories found inside are
//! remembered, so a table's few directories are resolved once rather than once per read. The
//! guard is against links planted in a table, not against a writer swapping a directory for a
//! link between the check and the use: that writer can already change the table itself.

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
pub use lancet_proto::Outside;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

/// How many refused paths are remembered for a report (the first ones; a count is kept of all).
const REMEMBERED: usize = 1_000;
/// How many directories known to lie inside are remembered before the memory starts over.
const KNOWN_DIRS: usize = 100_000;

/// The local file system, confined to one directory (see the module docs).
#[derive(Debug)]
pub struct Confined {
    inner: Arc<LocalFileSystem>,
    guard: Arc<Guard>,
}

#[derive(Debug)]
struct Guard {
    /// Canonical: every real location must start with it.
    root: PathBuf,
    fs: LocalFileSystem,
    known_inside: Mutex<HashSet<PathBuf>>,
    refused: Mutex<Refused>,
}

#[derive(Debug, Default)]
struct Refused {
    first: BTreeSet<String>,
    count: u64,
}

impl Confined {
    /// Confines the local file system to `root`, which must be canonical (as
    /// `std::fs::canonicalize` returns it).
    pub fn new(root: PathBuf) -> Self {
        Self {
            inner: Arc::new(LocalFileSystem::new()),
            guard: Arc::new(Guard {
                root,
                fs: LocalFileSystem::new(),
                known_inside: Mutex::default(),
                refused: Mutex::default(),
            }),
        }
    }

    /// The objects refused so far (at most the first thousand, sorted) and how many in all.
    pub fn refused(&self) -> (Vec<String>, u64) {
        let refused = self
            .guard
            .refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        (refused.first.iter().cloned().collect(), refused.count)
    }
}

impl Guard {
    fn local(&self, location: &Path) -> Result<PathBuf> {
        self.fs.path_to_filesystem(location)
    }

    /// `Ok` when the directory of `location` (its nearest existing ancestor) lies inside.
    fn writable(&self, location: &Path) -> Result<()> {
        let file = self.local(location)?;
        match file.parent() {
            Some(dir) => self.dir_inside(location, dir),
            None => Err(self.refuse(location, file)),
        }
    }

    /// [`Guard::writable`], and when the object itself is a link, its target lies inside.
    fn readable(&self, location: &Path) -> Result<()> {
        self.writable(location)?;
        let file = self.local(location)?;
        let is_link = std::fs::symlink_metadata(&file).is_ok_and(|m| m.file_type().is_symlink());
        if is_link {
            // a dangling link is left to the read, which finds nothing
            if let Ok(real) = std::fs::canonicalize(&file) {
                if !real.starts_with(&self.root) {
                    return Err(self.refuse(location, real));
                }
            }
        }
        Ok(())
    }

    fn dir_inside(&self, location: &Path, dir: &std::path::Path) -> Result<()> {
        let known = |d: &std::path::Path| {
            self.known_inside
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(d)
        };
        if known(dir) {
            return Ok(());
        }
        let mut probe = dir;
        let real = loop {
            match std::fs::canonicalize(probe) {
                Ok(real) => break real,
                Err(_) => match probe.parent() {
                    Some(up) => probe = up,
                    None => return Err(self.refuse(location, dir.to_path_buf())),
                },
            }
        };
        if !real.starts_with(&self.root) {
            return Err(self.refuse(location, real));
        }
        if probe == dir {
            let mut known = self
                .known_inside
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if known.len() >= KNOWN_DIRS {
                known.clear();
            }
            known.insert(dir.to_path_buf());
        }
        Ok(())
    }

    fn refuse(&self, location: &Path, real: PathBuf) -> object_store::Error {
        tracing::warn!(path = %location, real = %real.display(), "refused: outside the table");
        let mut refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        refused.count += 1;
        if refused.first.len() < REMEMBERED {
            refused.first.insert(location.to_string());
        }
        object_store::Error::PermissionDenied {
            path: location.to_string(),
            source: Box::new(Outside {
                path: location.to_string(),
                real,
                root: self.root.clone(),
            }),
        }
    }
}

impl fmt::Display for Confined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Confined({})", self.guard.root.display())
    }
}

#[async_trait]
impl ObjectStore for Confined {
    async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
        self.guard.writable(l)?;
        self.inner.put_opts(l, p, o).await
    }

    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.guard.writable(l)?;
        self.inner.put_multipart_opts(l, o).await
    }

    async fn get_opts(&self, l: &Path, o: GetOptions) -> Result<GetResult> {
        self.guard.readable(l)?;
        self.inner.get_opts(l, o).await
    }

    async fn get_ranges(&self, l: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.guard.readable(l)?;
        self.inner.get_ranges(l, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let guard = self.guard.clone();
        let checked = locations
            .map(move |l| l.and_then(|l| guard.writable(&l).map(|()| l)))
            .boxed();
        self.inner.delete_stream(checked)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let guard = self.guard.clone();
        self.inner
            .list(prefix)
            .try_filter(move |meta| futures::future::ready(guard.writable(&meta.location).is_ok()))
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let mut listed = self.inner.list_with_delimiter(prefix).await?;
        let guard = &self.guard;
        listed
            .objects
            .retain(|meta| guard.writable(&meta.location).is_ok());
        // a common prefix is a directory: it lies inside when something in it could
        listed
            .common_prefixes
            .retain(|dir| guard.writable(&dir.clone().join("_")).is_ok());
        Ok(listed)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.guard.readable(from)?;
        self.guard.writable(to)?;
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.guard.writable(from)?;
        self.guard.writable(to)?;
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;

    fn canonical(p: &std::path::Path) -> PathBuf {
        std::fs::canonicalize(p).unwrap()
    }

    #[tokio::test]
    async fn a_link_out_of_the_root_is_neither_listed_read_written_nor_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("t");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(root.join("data")).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("sentinel"), b"keep").unwrap();
        std::fs::write(root.join("data/inside"), b"in").unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("linked")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("sentinel"), root.join("data/file-link"))
            .unwrap();
        let root = canonical(&root);
        let store = Confined::new(root.clone());
        let at = |rel: &str| Path::from_absolute_path(root.join(rel)).unwrap();

        let listed: Vec<Path> = store
            .list(Some(&Path::from_absolute_path(&root).unwrap()))
            .map_ok(|m| m.location)
            .try_collect()
            .await
            .unwrap();
        assert!(listed.contains(&at("data/inside")));
        assert!(!listed.iter().any(|p| p.as_ref().contains("linked")));

        let outside = |e: object_store::Error| match e {
            object_store::Error::PermissionDenied { source, .. } => source.is::<Outside>(),
            _ => false,
        };
        assert!(outside(
            store.get(&at("linked/sentinel")).await.unwrap_err()
        ));
        assert!(outside(store.get(&at("data/file-link")).await.unwrap_err()));
        assert!(outside(
            store.delete(&at("linked/sentinel")).await.unwrap_err()
        ));
        assert!(outside(
            store
                .put(&at("linked/new"), PutPayload::from_static(b"x"))
                .await
                .unwrap_err()
        ));
        assert!(outside(
            store
                .put(&at("linked/deeper/new"), PutPayload::from_static(b"x"))
                .await
                .unwrap_err()
        ));
        assert_eq!(std::fs::read(elsewhere.join("sentinel")).unwrap(), b"keep");
        assert!(!elsewhere.join("new").exists() && !elsewhere.join("deeper").exists());
        let (refused, count) = store.refused();
        assert!(count >= 5 && refused.iter().any(|p| p.contains("linked/sentinel")));

        // inside the root everything works as before, in directories that do not exist yet too
        store
            .put(&at("data/sub/new"), PutPayload::from_static(b"y"))
            .await
            .unwrap();
        let got = store.get(&at("data/sub/new")).await.unwrap();
        assert_eq!(got.bytes().await.unwrap().as_ref(), b"y");
        store.delete(&at("data/sub/new")).await.unwrap();
        // deleting a linked file removes the link only
        store.delete(&at("data/file-link")).await.unwrap();
        assert_eq!(std::fs::read(elsewhere.join("sentinel")).unwrap(), b"keep");
    }

    #[tokio::test]
    async fn a_link_that_stays_inside_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = canonical(dir.path());
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::fs::write(root.join("real/f"), b"z").unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("alias")).unwrap();
        let store = Confined::new(root.clone());
        let p = Path::from_absolute_path(root.join("alias/f")).unwrap();
        assert_eq!(
            store.get(&p).await.unwrap().bytes().await.unwrap().as_ref(),
            b"z"
        );
    }
}
