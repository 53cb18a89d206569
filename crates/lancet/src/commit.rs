//! Publishing versions: one commit path for flat and tree tables, flat → tree conversion and
//! back.
//!
//! Protocol (single writer): every new object (tree nodes and leaves, index files, row maps)
//! is written first; the manifest of version N+1 is written last with put-if-absent, which is
//! the visibility boundary. Losing that race is [`Error::CommitConflict`] and nothing is
//! overwritten; the objects written before it are unreachable and left for cleanup.
//!
//! Storage actions (`(fragment id, Action)`) are applied with the fragment tree's semantics
//! either way: on a tree version by lancet-tree's writer (mutations, flushes,
//! materializations), on a flat version to the manifest's fragment list directly.

use lancet_paths::flags;
use lancet_paths::manifest;
use lancet_paths::PathsError;
use lancet_proto::table::{DataFragment, IndexMetadata, Manifest};
use lancet_tree::{Action, Deltas, Mutation, TreeWriter, TreeWriterConfig};

use crate::error::{Error, Result};
use crate::Dataset;

/// A published version and what publishing it wrote.
#[derive(Debug, Clone)]
pub struct Committed {
    pub dataset: Dataset,
    /// Objects written: tree objects and the manifest.
    pub objects_written: u64,
    /// Their bytes.
    pub bytes_written: u64,
}

impl Dataset {
    /// Commits `manifest` as the next version (this version + 1) with put-if-absent, keeping
    /// the fields lancet does not model from this version's manifest. On a tree version the
    /// manifest's tree is kept as it is (the fragments do not change).
    pub async fn commit(&self, manifest: Manifest, indices: &[IndexMetadata]) -> Result<Self> {
        self.commit_with_actions(manifest, indices, &[], &TreeWriterConfig::default())
            .await
    }

    /// Commits `actions` on the fragments, with `manifest` (this version's, with any other
    /// change the caller makes) and `indices` as the rest of the next version. On a tree the
    /// writer's `config` decides what objects are written.
    pub async fn commit_with_actions(
        &self,
        manifest: Manifest,
        indices: &[IndexMetadata],
        actions: &[(u64, Action)],
        config: &TreeWriterConfig,
    ) -> Result<Self> {
        use tracing::Instrument;
        let span = tracing::info_span!(
            "commit",
            uri = %self.uri(),
            version = self.version() + 1,
            actions = actions.len()
        );
        self.commit_measured(manifest, indices, actions, config)
            .instrument(span)
            .await
            .map(|c| c.dataset)
    }

    /// [`Dataset::commit_with_actions`], also reporting the objects and bytes it wrote.
    pub async fn commit_measured(
        &self,
        manifest: Manifest,
        indices: &[IndexMetadata],
        actions: &[(u64, Action)],
        config: &TreeWriterConfig,
    ) -> Result<Committed> {
        self.commit_inner(manifest, indices, actions, config).await
    }

    async fn commit_inner(
        &self,
        mut manifest: Manifest,
        indices: &[IndexMetadata],
        actions: &[(u64, Action)],
        config: &TreeWriterConfig,
    ) -> Result<Committed> {
        let (mut objects, mut bytes) = (0, 0);
        if actions
            .iter()
            .any(|(_, a)| matches!(a, Action::AddDeletionFile(_)))
            || actions
                .iter()
                .any(|(_, a)| matches!(a, Action::Upsert(f) if f.deletion_file.is_some()))
        {
            manifest.reader_feature_flags |= flags::DELETION_FILES;
            manifest.writer_feature_flags |= flags::DELETION_FILES;
        }
        match self.tree() {
            Some(reader) => {
                if !actions.is_empty() {
                    let writer = TreeWriter::new(self.store().clone(), config.clone());
                    let commit = writer.commit(reader, actions).await?;
                    objects += commit.written.len() as u64;
                    bytes += commit.object_bytes();
                    manifest.fragment_tree = Some(commit.metadata);
                    manifest.max_fragment_id = manifest.max_fragment_id.max(commit.max_fragment_id);
                }
                manifest.fragments.clear();
            }
            None => {
                apply_flat(&mut manifest, actions)?;
            }
        }
        let (dataset, manifest_bytes) = self.publish_sized(manifest, indices).await?;
        Ok(Committed {
            dataset,
            objects_written: objects + 1,
            bytes_written: bytes + manifest_bytes,
        })
    }

    /// Writes `manifest` as version N+1 with put-if-absent.
    async fn publish(&self, manifest: Manifest, indices: &[IndexMetadata]) -> Result<Self> {
        self.publish_sized(manifest, indices).await.map(|(d, _)| d)
    }

    /// [`Dataset::publish`], also returning the manifest's size.
    async fn publish_sized(
        &self,
        mut manifest: Manifest,
        indices: &[IndexMetadata],
    ) -> Result<(Self, u64)> {
        manifest.version = self.version() + 1;
        let written = manifest::write_manifest(
            self.store(),
            &manifest,
            indices,
            &self.manifest_file().decoded.unknown_fields,
            self.naming_scheme(),
        )
        .await;
        let size = match written {
            Ok(entry) => entry.size,
            Err(PathsError::AlreadyExists { .. }) => {
                return Err(Error::CommitConflict {
                    uri: self.uri().to_string(),
                    version: manifest.version,
                })
            }
            Err(e) => return Err(e.into()),
        };
        tracing::info!(version = manifest.version, bytes = size, "committed");
        Ok((self.checkout(manifest.version).await?, size))
    }

    /// Publishes version N+1 of this flat table with its fragments moved into a fragment
    /// tree: `Manifest.fragments` empty, flag 4096 in both words, every other field carried
    /// over. Counts a flat manifest leaves unknown (`physical_rows` or `num_deleted_rows` 0)
    /// are read from the data and deletion files. `progress` is told how many fragments are
    /// ready, as counts are resolved.
    pub async fn convert_to_tree(
        &self,
        config: &TreeWriterConfig,
        progress: impl Fn(usize, usize),
    ) -> Result<Self> {
        if self.tree().is_some() {
            return Err(invalid(
                self,
                "the version already keeps its fragments in a tree",
            ));
        }
        let fragments = self.fragments().await?;
        let mut records = Vec::with_capacity(fragments.len());
        for (i, f) in fragments.iter().enumerate() {
            records.push(self.known_counts(f).await?);
            if i % 4096 == 4095 {
                progress(i + 1, fragments.len());
            }
        }
        progress(fragments.len(), fragments.len());
        let writer = TreeWriter::new(self.store().clone(), config.clone());
        let commit = writer.bulk_load(&records).await?;
        let mut manifest = self.manifest().clone();
        manifest.fragments.clear();
        manifest.fragment_tree = Some(commit.metadata);
        manifest.max_fragment_id = manifest.max_fragment_id.max(commit.max_fragment_id);
        manifest.reader_feature_flags |= flags::FRAGMENT_TREE;
        manifest.writer_feature_flags |= flags::FRAGMENT_TREE;
        let indices = self.indices().to_vec();
        self.publish(manifest, &indices).await
    }

    /// Publishes version N+1 of this tree table as a flat manifest listing every fragment
    /// (what Lance 14 reads).
    pub async fn flatten(&self) -> Result<Self> {
        if self.tree().is_none() {
            return Err(invalid(self, "the version is flat already"));
        }
        let fragments = self.fragments().await?;
        let mut manifest = self.manifest().clone();
        manifest.fragment_tree = None;
        manifest.fragments = fragments.to_vec();
        manifest.reader_feature_flags &= !flags::FRAGMENT_TREE;
        manifest.writer_feature_flags &= !flags::FRAGMENT_TREE;
        let indices = self.indices().to_vec();
        self.publish(manifest, &indices).await
    }

    /// `fragment` with `physical_rows` and `num_deleted_rows` known: read from its first data
    /// file and its deletion file where the flat manifest stores 0 ("unknown" to Lance 14).
    async fn known_counts(&self, fragment: &DataFragment) -> Result<DataFragment> {
        let mut f = fragment.clone();
        if f.physical_rows == 0 {
            let loc = self
                .data_file_locations(&f)?
                .into_iter()
                .next()
                .ok_or_else(|| {
                    invalid(
                        self,
                        &format!("fragment {} has no data file to count", f.id),
                    )
                })?;
            let store = self.store_for(&loc.base)?;
            let fs = Dataset::file_store_for(&store)?;
            let file = lancet_file::LanceFile::open(&fs, &store.path(&loc.path), None).await?;
            f.physical_rows = file.num_rows();
        }
        if f.deletion_file.is_some_and(|d| d.num_deleted_rows == 0) {
            let deleted = self.deletion_vector(&f).await?.map_or(0, |d| d.len());
            if let Some(d) = &mut f.deletion_file {
                d.num_deleted_rows = deleted;
            }
            if deleted == 0 {
                return Err(invalid(
                    self,
                    &format!(
                        "fragment {} has a deletion file that deletes nothing; a tree cannot record it",
                        f.id
                    ),
                ));
            }
        }
        Ok(f)
    }
}

fn invalid(ds: &Dataset, rule: &str) -> Error {
    Error::Unsupported {
        uri: ds.uri().to_string(),
        version: ds.version(),
        rule: rule.to_string(),
    }
}

/// Applies actions to a flat fragment list with the tree's semantics (kept in id order).
fn apply_flat(manifest: &mut Manifest, actions: &[(u64, Action)]) -> Result<()> {
    for (i, (id, action)) in actions.iter().enumerate() {
        let pos = manifest.fragments.binary_search_by_key(id, |f| f.id);
        let prior = pos.ok().and_then(|p| manifest.fragments.get(p)).cloned();
        let mut m = Mutation {
            sequence: 1,
            target: *id,
            action: action.clone(),
            deltas: Deltas::default(),
        };
        let bad = |v: lancet_tree::Violation| {
            Error::from(lancet_tree::TreeError::InvalidInput(format!(
                "action {i} ({}): {}",
                action.name(),
                v.detail
            )))
        };
        m.deltas = m.deltas_on(prior.as_ref()).map_err(bad)?;
        let after = m.apply(prior).map_err(bad)?;
        match (pos, after) {
            (Ok(p), Some(f)) => {
                if let Some(slot) = manifest.fragments.get_mut(p) {
                    *slot = f;
                }
            }
            (Ok(p), None) => {
                manifest.fragments.remove(p);
            }
            (Err(p), Some(f)) => {
                let id32 = u32::try_from(f.id).ok();
                manifest.max_fragment_id = manifest.max_fragment_id.max(id32);
                manifest.fragments.insert(p, f);
            }
            (Err(_), None) => {}
        }
    }
    Ok(())
}
