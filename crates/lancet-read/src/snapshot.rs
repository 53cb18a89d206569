//! One version of one table as read ([`Snapshot`]): the manifest, its fragments, base paths,
//! stores, caches and clock, and the one place a fragment's row count is resolved.

use std::sync::Arc;

use lancet_file::FileStore;
use lancet_paths::clock::{Clock, SystemClock};
use lancet_paths::manifest::{self, NamingScheme};
use lancet_paths::{
    files, BaseTable, DatasetStore, ManifestFile, ObjectLocation, PathsError, ResolvedBase,
};
use lancet_proto::table::{DataFragment, IndexMetadata, Manifest};
use lancet_proto::{rows_unknown, FragmentSummary};

use lancet_tree::{OpenContext, StoreFetcher, TreeReader};

use crate::cache::CachedManifest;
use crate::error::{Error, Result};
use crate::session_caches::Caches;

/// One version of one table as read: its manifest, its fragments (the manifest's flat list or
/// a fragment tree), its base paths, the store and Lance-file store it lives in, the caches it
/// shares with every handle of the same table, and the clock its commits stamp by.
///
/// Every read and write of the facade starts from one: it is the only place a fragment's row
/// count is resolved ([`Snapshot::with_known_rows`]). The public `Dataset` wraps one.
#[derive(Debug, Clone)]
pub struct Snapshot {
    store: DatasetStore,
    file_store: FileStore,
    manifest: Arc<ManifestFile>,
    bases: BaseTable,
    caches: Arc<Caches>,
    source: FragmentSource,
    /// What commits stamp and age rules judge by; every handle derived from this one shares it.
    clock: Arc<dyn Clock>,
}

/// Where a version's fragment records are: the manifest's flat list, or a fragment tree.
/// Every fragment a caller sees comes through here, so a tree version answers exactly as the
/// same table flat.
#[derive(Debug, Clone)]
enum FragmentSource {
    /// The manifest's own list; the shared copy `fragments()` hands out is made on first use
    /// (a flat manifest of millions of fragments is not held twice until something asks).
    Flat(Arc<FlatList>),
    Tree(TreeReader),
}

/// A flat version's fragments, as the facade hands them out.
#[derive(Debug, Default)]
struct FlatList {
    /// The shared copy of the manifest's list, made on first use.
    shared: std::sync::OnceLock<Arc<[DataFragment]>>,
    /// Whether some record leaves its row count unknown (a legacy manifest).
    unknown_counts: std::sync::OnceLock<bool>,
}

/// The Lance-file store over a dataset store (sharing its object store): how a writer outside
/// a `Dataset` handle (before the table exists, or staging files for a distributed commit)
/// reads and writes Lance files where the table keeps them.
pub fn file_store_for(store: &DatasetStore) -> Result<FileStore> {
    let uri = if store.local_root().is_some() {
        // every read and write through the store, which keeps them inside the table
        "file-object-store:///".to_string()
    } else if store.uri().starts_with("memory://") {
        "memory:///".to_string()
    } else {
        store.uri().to_string()
    };
    Ok(FileStore::new(store.object_store().clone(), &uri)?)
}

impl Snapshot {
    /// Opens `version` (latest when `None`) of the table in `store`, sharing `caches`.
    pub async fn open(
        store: DatasetStore,
        version: Option<u64>,
        caches: Arc<Caches>,
    ) -> Result<Self> {
        let manifest = Self::load_manifest(&store, version, &caches).await?;
        Self::from_manifest(store, manifest, caches, None).await
    }

    /// Opens the latest version of the table at `uri` with default caches.
    pub async fn open_uri(uri: &str) -> Result<Self> {
        Self::open(
            DatasetStore::open(uri)?,
            None,
            Caches::new(Default::default()),
        )
        .await
    }

    /// The version `manifest` holds, checked as every open checks it (reader feature flags,
    /// base paths, the fragment tree's root): a candidate version is opened this way before
    /// it is published. `file_store`: the Lance-file store of another version of the same
    /// table, shared (its tails of files already opened or written stay warm); a new one when
    /// `None`.
    pub async fn from_manifest(
        store: DatasetStore,
        manifest: Arc<ManifestFile>,
        caches: Arc<Caches>,
        file_store: Option<FileStore>,
    ) -> Result<Self> {
        let unsupported = manifest.decoded.manifest.reader_feature_flags
            & !lancet_paths::flags::LANCET_READER_SUPPORTED;
        if unsupported != 0 {
            let names: Vec<String> = lancet_paths::flags::flag_names(unsupported)
                .into_iter()
                .map(|f| match f {
                    lancet_paths::flags::FlagName::Known(n) => n.to_string(),
                    lancet_paths::flags::FlagName::Unknown(bit) => bit.to_string(),
                })
                .collect();
            return Err(Error::Unsupported {
                uri: store.uri().to_string(),
                version: manifest.entry.version,
                rule: format!(
                    "reader feature flags lancet does not interpret: {}",
                    names.join(", ")
                ),
            });
        }
        let bases = BaseTable::new(&manifest.decoded.manifest.base_paths)?;
        let file_store = match file_store {
            Some(shared) => shared,
            None => file_store_for(&store)?,
        };
        let source = if lancet_tree::is_tree_manifest(&manifest.decoded.manifest) {
            let manifest_object = manifest.entry.path.to_string();
            lancet_tree::check_raw_arms(&manifest_object, &manifest.decoded.manifest_bytes)?;
            FragmentSource::Tree(
                TreeReader::open(
                    &manifest.decoded.manifest,
                    OpenContext {
                        manifest_object,
                        current: ResolvedBase::current_dataset(store.uri()),
                        fetcher: Arc::new(StoreFetcher::new(store.clone())),
                        cache: caches.tree_nodes.clone(),
                    },
                )
                .await?,
            )
        } else {
            FragmentSource::Flat(Arc::default())
        };
        Ok(Self {
            store,
            file_store,
            manifest,
            bases,
            caches,
            source,
            clock: Arc::new(SystemClock),
        })
    }

    /// Puts a manifest read elsewhere (by a commit reading what was published since) into
    /// the manifest cache.
    pub async fn cache_manifest(&self, file: ManifestFile) {
        let key = (self.store.uri().to_string(), file.entry.version);
        self.caches
            .manifests
            .insert(key, CachedManifest(Arc::new(file)))
            .await;
    }

    /// Drops a removed version's manifest from the manifest cache.
    pub async fn forget_manifest(&self, version: u64) {
        let key = (self.store.uri().to_string(), version);
        self.caches.manifests.invalidate(&key).await;
    }

    async fn load_manifest(
        store: &DatasetStore,
        version: Option<u64>,
        caches: &Caches,
    ) -> Result<Arc<ManifestFile>> {
        // "latest" is resolved by listing first, so the cache key is a concrete version, and
        // the listed entry is read as it is (no second lookup by name)
        let (version, listed) = match version {
            Some(v) => (v, None),
            None => {
                let entry = manifest::list_versions(store).await?.pop().ok_or_else(|| {
                    PathsError::NoVersions {
                        path: store.path(manifest::VERSIONS_DIR),
                    }
                })?;
                (entry.version, Some(entry))
            }
        };
        // Read outside the cache's loader so a corrupt manifest keeps its typed error (a
        // failed shared load reaches callers only as text).
        let key = (store.uri().to_string(), version);
        if let Some(cached) = caches.manifests.get(&key).await {
            return Ok(cached.0);
        }
        let manifest = Arc::new(match listed {
            Some(entry) => manifest::read_manifest_entry(store, &entry).await?,
            None => manifest::read_manifest(store, Some(version)).await?,
        });
        caches
            .manifests
            .insert(key, CachedManifest(manifest.clone()))
            .await;
        Ok(manifest)
    }

    /// Version `version` of this table, sharing this one's store, caches and clock.
    pub async fn checkout(&self, version: u64) -> Result<Self> {
        self.open_sibling(Some(version)).await
    }

    /// Version `version` of this table (the latest when `None`), sharing this handle's
    /// store, caches, Lance-file store and clock.
    pub async fn open_sibling(&self, version: Option<u64>) -> Result<Self> {
        let manifest = Self::load_manifest(&self.store, version, &self.caches).await?;
        Self::from_manifest(
            self.store.clone(),
            manifest,
            self.caches.clone(),
            Some(self.file_store.clone()),
        )
        .await
        .map(|d| d.with_clock(self.clock.clone()))
    }

    /// This handle with `clock` as the time its commits stamp and its age rules (cleanup,
    /// `fri unreferenced`) judge by; the system clock otherwise.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    pub fn uri(&self) -> &str {
        self.store.uri()
    }

    pub fn version(&self) -> u64 {
        self.manifest.entry.version
    }

    pub fn manifest_file(&self) -> &ManifestFile {
        &self.manifest
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest.decoded.manifest
    }

    /// Path of this version's manifest object, relative to the dataset root.
    pub fn manifest_path(&self) -> String {
        self.store
            .relative(&self.manifest.entry.path)
            .unwrap_or_else(|| self.manifest.entry.path.to_string())
    }

    /// This version's manifest object, for errors about what it holds.
    pub fn manifest_ref(&self) -> lancet_proto::ObjectRef {
        lancet_proto::ObjectRef::new(self.manifest.entry.path.to_string())
    }

    pub fn naming_scheme(&self) -> NamingScheme {
        self.manifest.entry.scheme
    }

    /// Every fragment of the version, in id order: the manifest's flat list, or every record
    /// of the fragment tree resolved through its buffered mutations (the whole tree is read
    /// and checked; the result is kept in the index cache for this version).
    pub async fn fragments(&self) -> Result<Arc<[DataFragment]>> {
        match &self.source {
            FragmentSource::Flat(flat) => Ok(flat
                .shared
                .get_or_init(|| self.manifest().fragments.as_slice().into())
                .clone()),
            FragmentSource::Tree(reader) => {
                let key = crate::cache::StructureKey::TreeFragments {
                    uri: self.uri().to_string(),
                    version: self.version(),
                };
                self.caches
                    .structure(
                        key,
                        Box::pin(async {
                            let all: Vec<DataFragment> = reader.all_fragments().await?;
                            Ok(Arc::<[DataFragment]>::from(all))
                        }),
                    )
                    .await
            }
        }
    }

    /// `fragments` with every physical row count known. A legacy flat manifest records 0
    /// ("unknown" to Lance 14) for fragments written before Lance recorded counts; there
    /// the count is the first data file's row count, read from its footer, as Lance 14's
    /// `FileFragment::physical_rows` reads it. This is the one place a read path resolves a
    /// fragment's row count: scans, searches (and so `count_rows`) take their fragments
    /// from here, so a fragment of unknown count is never taken as empty. The records are
    /// otherwise as stored, and the same list comes back when no count is unknown.
    pub async fn with_known_rows(
        &self,
        fragments: Arc<[DataFragment]>,
    ) -> Result<Arc<[DataFragment]>> {
        // a tree counts every record's rows; a flat list is looked at once per version
        let unknown = match &self.source {
            FragmentSource::Tree(_) => false,
            FragmentSource::Flat(flat) => *flat
                .unknown_counts
                .get_or_init(|| self.manifest().fragments.iter().any(rows_unknown)),
        };
        if !unknown || !fragments.iter().any(rows_unknown) {
            return Ok(fragments);
        }
        let mut out = fragments.to_vec();
        for f in out.iter_mut().filter(|f| rows_unknown(f)) {
            f.physical_rows = self.physical_rows_read(f).await?;
        }
        Ok(out.into())
    }

    /// `fragment` with its physical row count known ([`Snapshot::with_known_rows`]).
    pub async fn with_known_row_count(&self, fragment: DataFragment) -> Result<DataFragment> {
        let mut f = fragment;
        if rows_unknown(&f) {
            f.physical_rows = self.physical_rows_read(&f).await?;
        }
        Ok(f)
    }

    /// The row count of `fragment`'s first data file, read from its footer.
    pub async fn physical_rows_read(&self, fragment: &DataFragment) -> Result<u64> {
        let loc = self
            .data_file_locations(fragment)?
            .into_iter()
            .next()
            .ok_or_else(|| Error::InvalidArgument {
                what: format!("fragment {}", fragment.id),
                reason: "it has no data file to count its rows in".into(),
            })?;
        let store = self.store_for(&loc.base)?;
        let fs = file_store_for(&store)?;
        let file = lancet_file::LanceFile::open(&fs, &store.path(&loc.path), None).await?;
        Ok(file.num_rows())
    }

    /// The object store of the base a resolved location lives in.
    pub fn store_for(&self, base: &lancet_paths::ResolvedBase) -> Result<DatasetStore> {
        if base.base_id.is_none() {
            Ok(self.store().clone())
        } else {
            Ok(DatasetStore::open(&base.uri)?)
        }
    }

    /// The fragment with `id`, if the version has one. On a tree only its routing path is read.
    pub async fn fragment(&self, id: u64) -> Result<Option<DataFragment>> {
        match &self.source {
            FragmentSource::Flat(_) => {
                let fragments = &self.manifest().fragments;
                Ok(lancet_proto::fragment_by_id(fragments, id).cloned())
            }
            FragmentSource::Tree(reader) => Ok(reader.fragment(id).await?),
        }
    }

    /// The fragments with `ids`, in id order (each looked up alone: on a tree only their
    /// routing paths are read). An id the version does not have is refused.
    pub async fn fragments_with_ids(&self, ids: &[u64]) -> Result<Arc<[DataFragment]>> {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            match self.fragment(id).await? {
                Some(f) => out.push(f),
                None => {
                    return Err(Error::InvalidArgument {
                        what: format!("fragment {id}"),
                        reason: format!("version {} has no fragment {id}", self.version()),
                    })
                }
            }
        }
        Ok(out.into())
    }

    /// The fragment tree of this version, when it has one.
    pub fn tree(&self) -> Option<&TreeReader> {
        match &self.source {
            FragmentSource::Tree(reader) => Some(reader),
            FragmentSource::Flat(_) => None,
        }
    }

    /// Refuses to read column data of `fragment` through data overlay files (flag 64), which
    /// lancet passes through but does not apply. `what` names the operation in the error.
    pub fn require_no_overlays(&self, fragment: &DataFragment, what: &str) -> Result<()> {
        if !fragment.overlays.is_empty() {
            return Err(Error::Unsupported {
                uri: self.uri().to_string(),
                version: self.version(),
                rule: format!(
                    "{what} would read column data of fragment {} through data overlay files, which lancet does not apply",
                    fragment.id
                ),
            });
        }
        Ok(())
    }

    pub fn indices(&self) -> &[IndexMetadata] {
        &self.manifest.decoded.indices
    }

    pub fn store(&self) -> &DatasetStore {
        &self.store
    }

    /// How many independent objects to fetch at once: `local` on a local disk or in memory,
    /// where a read costs no round trip; more on an object store, where each costs one.
    pub fn fanout(&self, local: usize) -> usize {
        if self.file_store().is_remote() {
            local.max(64)
        } else {
            local
        }
    }

    pub fn file_store(&self) -> &FileStore {
        &self.file_store
    }

    pub fn bases(&self) -> &BaseTable {
        &self.bases
    }

    pub fn caches(&self) -> &Arc<Caches> {
        &self.caches
    }

    /// This dataset as a resolved base, for references with no `base_id`.
    pub fn root(&self) -> ResolvedBase {
        ResolvedBase::current_dataset(self.store.uri())
    }

    pub fn has_stable_row_ids(&self) -> bool {
        lancet_txn::protocol::has_stable_row_ids(self.manifest())
    }

    /// Visible rows of the version, when every fragment's counts are known (always on a
    /// tree, whose counts are derived from the root without reading further).
    pub fn num_rows(&self) -> Option<u64> {
        match &self.source {
            // saturating: a hostile manifest's counts never overflow
            FragmentSource::Flat(_) => self.manifest().fragments.iter().try_fold(0u64, |t, f| {
                Some(t.saturating_add(FragmentSummary::of(f).visible_rows()?))
            }),
            FragmentSource::Tree(reader) => Some(reader.totals().visible_rows),
        }
    }

    /// Where each data file of `fragment` lives.
    pub fn data_file_locations(&self, fragment: &DataFragment) -> Result<Vec<ObjectLocation>> {
        fragment
            .files
            .iter()
            .map(|f| Ok(files::data_file_location(f, &self.bases, &self.root())?))
            .collect()
    }

    /// Where the deletion file of `fragment` lives, if it has one.
    pub fn deletion_file_location(
        &self,
        fragment: &DataFragment,
    ) -> Result<Option<ObjectLocation>> {
        fragment
            .deletion_file
            .as_ref()
            .map(|d| files::deletion_file_location(fragment.id, d, &self.bases, &self.root()))
            .transpose()
            .map_err(Error::from)
    }
}
