//! The object-store handle lancet reads and writes a dataset through.
//!
//! Two guarantees matter to callers: reads can check an expected size (a reference that records
//! `file_size_bytes` or `object_size` must match the object), and the commit write is
//! put-if-absent (`PutMode::Create`), so two writers racing for one version cannot both win.
//! A local directory is reached only inside itself ([`crate::confine`]): no symbolic link in
//! the table leads a read, write, listing or delete out of it.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::confine::Confined;
use crate::error::{PathsError, Result};

/// The in-memory store named `name` (the authority of a `memory://NAME/...` URI): created
/// empty the first time the name is opened, then the same store for the rest of the process,
/// so a table written to `memory://NAME` is there for every handle opened on it later — what
/// a user of a storage library expects of a URI. (pylance 14.0.2 gives each handle a fresh
/// store, so its `dataset("memory://t")` never finds the table `write_dataset` wrote there;
/// `docs/decisions/0041-memory-stores-live-with-the-process.md`.) Nothing is ever evicted: the tables live as long
/// as the process, as on a disk that is wiped at exit.
pub fn memory_store(name: &str) -> Arc<dyn ObjectStore> {
    static STORES: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, Arc<dyn ObjectStore>>>,
    > = std::sync::OnceLock::new();
    let stores = STORES.get_or_init(Default::default);
    // a poisoned lock still holds a consistent map: insertion is the only write
    let mut stores = stores.lock().unwrap_or_else(|e| e.into_inner());
    stores
        .entry(name.to_string())
        .or_insert_with(|| Arc::new(InMemory::new()))
        .clone()
}

/// What wraps every object store a [`DatasetStore`] is made over.
pub type StoreLayer = Box<dyn Fn(Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> + Send + Sync>;

static LAYER: std::sync::OnceLock<StoreLayer> = std::sync::OnceLock::new();

/// Wraps every object store this process makes a [`DatasetStore`] over from now on (each
/// dataset, base, branch and memory store) in `layer`: how a command is measured as if its
/// storage were slow (`lancet --store-latency`, [`crate::latency::LatencyStore`]). Once per
/// process; a second layer is refused (`false`) rather than stacked.
pub fn set_store_layer(layer: StoreLayer) -> bool {
    LAYER.set(layer).is_ok()
}

fn layered(store: Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> {
    match LAYER.get() {
        Some(layer) => layer(store),
        None => store,
    }
}

/// A dataset root (or any base directory) on an object store.
#[derive(Debug, Clone)]
pub struct DatasetStore {
    store: Arc<dyn ObjectStore>,
    root: Path,
    uri: String,
    local_root: Option<std::path::PathBuf>,
    /// The local file system confined to `local_root` (what `store` is, or wraps when a
    /// process-wide layer is set: [`set_store_layer`]).
    confined: Option<Arc<Confined>>,
}

/// A local path with a leading `~` (alone, or followed by `/`) under the home directory
/// (`$HOME`), as Lance 14.0.2's `expand_tilde_path` reads it; any other path as given.
pub fn expand_tilde(path: &str) -> std::path::PathBuf {
    if let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from) {
        if path == "~" {
            return home;
        }
        if let Some(rest) = path.strip_prefix("~/") {
            return home.join(rest);
        }
    }
    std::path::PathBuf::from(path)
}

impl DatasetStore {
    /// Opens a URI: a local path (`~` or `~/...` is under the home directory, as Lance expands
    /// it; a relative path is the working directory's), `file://...`, `memory://NAME/prefix`
    /// (an in-memory store that lives as long as the process, one per `NAME`: see
    /// `memory_store`), or `s3://bucket/prefix` with the `s3` feature. A local directory
    /// must exist.
    pub fn open(uri: &str) -> Result<Self> {
        Self::open_local_or_remote(uri, false)
    }

    /// Like [`DatasetStore::open`], but creates a missing local directory (for writers).
    pub fn create(uri: &str) -> Result<Self> {
        Self::open_local_or_remote(uri, true)
    }

    fn open_local_or_remote(uri: &str, create: bool) -> Result<Self> {
        let invalid = |reason: String| PathsError::InvalidUri {
            uri: uri.to_string(),
            reason,
        };
        if let Some(rest) = uri.strip_prefix("memory://") {
            let (name, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let root = Path::parse(prefix).map_err(|e| invalid(e.to_string()))?;
            return Ok(Self::from_store(memory_store(name), root, uri));
        }
        let local = if let Some(rest) = uri.strip_prefix("file://") {
            Some(std::path::PathBuf::from(rest))
        } else if !uri.contains("://") {
            Some(expand_tilde(uri))
        } else {
            None
        };
        if let Some(dir) = local {
            if create {
                std::fs::create_dir_all(&dir).map_err(|e| invalid(e.to_string()))?;
            }
            if !dir.is_dir() {
                return Err(PathsError::NoTable {
                    uri: uri.to_string(),
                    why: match dir.exists() {
                        true => "it is not a directory",
                        false => "no such directory",
                    },
                });
            }
            let dir = dir.canonicalize().map_err(|e| invalid(e.to_string()))?;
            // Object paths are absolute file-system paths (a store rooted at `/`), which is
            // also how lance-io addresses local files, so both see the same objects.
            let root = Path::from_absolute_path(&dir).map_err(|e| invalid(e.to_string()))?;
            // messages spell this dataset's objects with their leading `/`
            lancet_proto::register_local_root(root.as_ref());
            let confined = Arc::new(Confined::new(dir.clone()));
            let mut store = Self::from_store(confined.clone(), root, &dir.to_string_lossy());
            store.local_root = Some(dir);
            store.confined = Some(confined);
            return Ok(store);
        }
        let url = url::Url::parse(uri).map_err(|e| invalid(e.to_string()))?;
        if url.scheme() == "s3" {
            return Self::open_s3(uri, &url);
        }
        let (store, root) = object_store::parse_url(&url).map_err(|e| invalid(e.to_string()))?;
        Ok(Self::from_store(Arc::from(store), root, uri))
    }

    /// `s3://bucket/prefix`, configured from the usual environment variables
    /// (`AWS_ENDPOINT`, `AWS_ALLOW_HTTP`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_REGION`, ...). Put-if-absent is S3's conditional put (`If-None-Match: *`).
    #[cfg(feature = "s3")]
    fn open_s3(uri: &str, url: &url::Url) -> Result<Self> {
        let store = object_store::aws::AmazonS3Builder::from_env()
            .with_url(uri)
            .with_conditional_put(object_store::aws::S3ConditionalPut::ETagMatch)
            .build()
            .map_err(|e| PathsError::InvalidUri {
                uri: uri.to_string(),
                reason: e.to_string(),
            })?;
        let root = Path::parse(url.path()).map_err(|e| PathsError::InvalidUri {
            uri: uri.to_string(),
            reason: e.to_string(),
        })?;
        Ok(Self::from_store(Arc::new(store), root, uri))
    }

    #[cfg(not(feature = "s3"))]
    fn open_s3(uri: &str, _url: &url::Url) -> Result<Self> {
        Err(PathsError::InvalidUri {
            uri: uri.to_string(),
            reason: "this build of lancet has no S3 support (feature `s3`)".into(),
        })
    }

    /// A fresh, empty in-memory store no other handle sees (tests, scratch work), named
    /// `memory://` without being registered under that name.
    pub fn scratch() -> Self {
        Self::from_store(Arc::new(InMemory::new()), Path::default(), "memory://")
    }

    /// Wraps an existing store; `root` is the dataset's prefix in it.
    pub fn from_store(store: Arc<dyn ObjectStore>, root: Path, uri: &str) -> Self {
        Self {
            store: layered(store),
            root,
            uri: uri.trim_end_matches('/').to_string(),
            local_root: None,
            confined: None,
        }
    }

    /// The store of the directory `relative` below this one (a branch's dataset root): the
    /// same object store, confined as this one is. On a local disk the directory (or, when it
    /// does not exist yet, its nearest existing ancestor) must really lie inside this store's
    /// root: a link planted at `tree/NAME` is [`PathsError::OutsideTable`].
    pub fn below(&self, relative: &str) -> Result<Self> {
        let relative = relative.trim_matches('/');
        let mut store = Self {
            store: self.store.clone(),
            root: self.path(relative),
            uri: format!("{}/{relative}", self.uri),
            local_root: None,
            confined: self.confined.clone(),
        };
        if let Some(local) = &self.local_root {
            let dir = local.join(relative);
            let real = dir
                .ancestors()
                .find_map(|d| d.canonicalize().ok())
                .unwrap_or_default();
            if !real.starts_with(local) {
                return Err(PathsError::OutsideTable {
                    path: store.root.clone(),
                    outside: crate::confine::Outside {
                        path: store.root.to_string(),
                        real,
                        root: local.clone(),
                    },
                });
            }
            store.local_root = Some(dir);
        }
        Ok(store)
    }

    /// The URI this handle was opened with (no trailing `/`).
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The local directory, when the store is the local file system.
    pub fn local_root(&self) -> Option<&std::path::Path> {
        self.local_root.as_deref()
    }

    /// The objects this store refused to reach because their real location lies outside its
    /// root (see [`crate::confine`]): at most the first thousand, and how many in all. Always
    /// empty on an object store, which has no links.
    pub fn refused_outside(&self) -> (Vec<String>, u64) {
        self.confined
            .as_ref()
            .map_or_else(Default::default, |c| c.refused())
    }

    pub fn object_store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The store path of `relative` (a `/`-separated path below the dataset root).
    pub fn path(&self, relative: &str) -> Path {
        relative
            .split('/')
            .filter(|s| !s.is_empty())
            .fold(self.root.clone(), |p, part| p.join(part))
    }

    /// Reads a whole object. With `expected_size`, an object of any other size is an error.
    pub async fn get(&self, path: &Path, expected_size: Option<u64>) -> Result<Bytes> {
        let result = self
            .store
            .get(path)
            .await
            .map_err(|e| PathsError::store(path, e))?;
        let actual = result.meta.size;
        if let Some(expected) = expected_size {
            if expected != actual {
                return Err(PathsError::SizeMismatch {
                    path: path.clone(),
                    expected,
                    actual,
                });
            }
        }
        let bytes = result
            .bytes()
            .await
            .map_err(|e| PathsError::store(path, e))?;
        if bytes.len() as u64 != actual {
            return Err(PathsError::SizeMismatch {
                path: path.clone(),
                expected: actual,
                actual: bytes.len() as u64,
            });
        }
        tracing::debug!(path = %path, bytes = bytes.len(), "get");
        Ok(bytes)
    }

    /// Reads an object a listing just gave with size `listed`, as one ranged read (one
    /// request, and on a local store one open-and-read where a plain get takes two). When
    /// that read fails or comes back short, the object is read whole, so the error says what
    /// is wrong (missing, or another size). An object grown since the listing is read up to
    /// `listed`: only for objects never rewritten in place (manifests, reference files),
    /// whose decoders check their trailers; [`DatasetStore::get`] checks the size exactly.
    pub async fn get_listed(&self, path: &Path, listed: u64) -> Result<Bytes> {
        if listed == 0 {
            return self.get(path, Some(0)).await;
        }
        match self.store.get_range(path, 0..listed).await {
            Ok(bytes) if bytes.len() as u64 == listed => {
                tracing::debug!(path = %path, bytes = bytes.len(), "get");
                Ok(bytes)
            }
            Err(e @ object_store::Error::NotFound { .. }) => Err(PathsError::store(path, e)),
            _ => self.get(path, Some(listed)).await,
        }
    }

    /// Reads `range` of an object.
    pub async fn get_range(&self, path: &Path, range: Range<u64>) -> Result<Bytes> {
        let bytes = self
            .store
            .get_range(path, range.clone())
            .await
            .map_err(|e| PathsError::store(path, e))?;
        tracing::debug!(path = %path, start = range.start, bytes = bytes.len(), "get range");
        Ok(bytes)
    }

    /// Size of an object.
    pub async fn size(&self, path: &Path) -> Result<u64> {
        Ok(self
            .store
            .head(path)
            .await
            .map_err(|e| PathsError::store(path, e))?
            .size)
    }

    /// Writes an object, replacing any previous one. For immutable objects with fresh UUID names.
    pub async fn put(&self, path: &Path, bytes: Bytes) -> Result<()> {
        tracing::debug!(path = %path, bytes = bytes.len(), "put");
        self.store
            .put(path, PutPayload::from(bytes))
            .await
            .map_err(|e| PathsError::store(path, e))?;
        Ok(())
    }

    /// Writes an object only if nothing is there yet; otherwise `AlreadyExists`.
    pub async fn put_if_absent(&self, path: &Path, bytes: Bytes) -> Result<()> {
        tracing::debug!(path = %path, bytes = bytes.len(), "put if absent");
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        self.store
            .put_opts(path, PutPayload::from(bytes), opts)
            .await
            .map_err(|e| PathsError::store(path, e))?;
        Ok(())
    }

    /// Deletes an object (for cleanup of files no retained version references).
    pub async fn delete(&self, path: &Path) -> Result<()> {
        self.store
            .delete(path)
            .await
            .map_err(|e| PathsError::store(path, e))
    }

    /// Lists the objects below `prefix` (relative to the dataset root), recursively.
    pub async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        let path = self.path(prefix);
        self.store
            .list(Some(&path))
            .try_collect()
            .await
            .map_err(|e| PathsError::store(&path, e))
    }

    /// The object's path relative to the dataset root.
    pub fn relative(&self, path: &Path) -> Option<String> {
        let mut parts = path.parts();
        for root_part in self.root.parts() {
            if parts.next()? != root_part {
                return None;
            }
        }
        Some(
            parts
                .map(|p| p.as_ref().to_string())
                .collect::<Vec<_>>()
                .join("/"),
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_leading_tilde_is_the_home_directory_as_lance_reads_it() {
        let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from) else {
            return;
        };
        assert_eq!(super::expand_tilde("~"), home);
        assert_eq!(super::expand_tilde("~/t/a.lance"), home.join("t/a.lance"));
        assert_eq!(
            super::expand_tilde("~x/t"),
            std::path::PathBuf::from("~x/t")
        );
        assert_eq!(
            super::expand_tilde("rel/~/t"),
            std::path::PathBuf::from("rel/~/t")
        );
    }

    use super::*;
    use crate::testing::conformance;

    #[tokio::test]
    async fn memory_backend_conforms() {
        conformance(DatasetStore::scratch()).await;
        conformance(DatasetStore::open("memory://conforms/t").unwrap()).await;
        let prefixed = DatasetStore::from_store(
            Arc::new(InMemory::new()),
            Path::from("bucket/table"),
            "memory://bucket/table",
        );
        conformance(prefixed).await;
    }

    #[tokio::test]
    async fn a_named_memory_store_lives_as_long_as_the_process() {
        let first = DatasetStore::open("memory://lifetime/t").unwrap();
        first
            .put(&first.path("x"), Bytes::from_static(b"kept"))
            .await
            .unwrap();
        drop(first);
        // a later handle on the same URI, or on the store's other prefix, sees the object
        let again = DatasetStore::open("memory://lifetime/t").unwrap();
        assert_eq!(
            &again.get(&again.path("x"), None).await.unwrap()[..],
            b"kept"
        );
        let whole = DatasetStore::open("memory://lifetime").unwrap();
        assert_eq!(
            &whole.get(&whole.path("t/x"), None).await.unwrap()[..],
            b"kept"
        );
        // another name, or a scratch store, is another store
        for other in [
            DatasetStore::open("memory://elsewhere/t").unwrap(),
            DatasetStore::scratch(),
        ] {
            assert!(other.get(&other.path("x"), None).await.is_err());
        }
        assert!(matches!(
            DatasetStore::open("memory://lifetime/a//b"),
            Err(PathsError::InvalidUri { .. })
        ));
    }

    #[tokio::test]
    async fn local_backend_conforms() {
        let dir = tempfile::tempdir().unwrap();
        conformance(DatasetStore::open(dir.path().to_str().unwrap()).unwrap()).await;
        let missing = dir.path().join("missing");
        assert!(matches!(
            DatasetStore::open(missing.to_str().unwrap()),
            Err(PathsError::NoTable { .. })
        ));
        assert!(DatasetStore::create(missing.to_str().unwrap()).is_ok());
        let dir2 = tempfile::tempdir().unwrap();
        let uri = format!("file://{}", dir2.path().display());
        let s = DatasetStore::open(&uri).unwrap();
        assert!(s.local_root().is_some());
        conformance(s).await;
    }
}
