//! Manifest files: `_versions/*.manifest` naming, the on-disk layout, reading and committing.
//!
//! Layout of one manifest object (FORMAT-FACTS §3), as lancet writes it:
//!
//! ```text
//! [u32 LE length][IndexSection protobuf]      <- Manifest.index_section = offset of this prefix
//! [u32 LE length][Manifest protobuf]          <- footer position = offset of this prefix
//! [i64 LE position][i16 LE 0][i16 LE 2]["LANC"]   16-byte footer
//! ```
//!
//! Readers require the footer magic, a position inside the file and a manifest length that
//! reaches exactly to the footer; every offset and length is bounds-checked before use, and
//! nothing is allocated from a length field before it has been checked against the object size.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::ops::Range;

use bytes::Bytes;
use lancet_proto::table::{IndexMetadata, IndexSection, Manifest, Transaction};
use lancet_proto::wire;
use object_store::path::Path;
use prost::Message;

use crate::error::{PathsError, Result};
use crate::flags::{self, validate_flags};
use crate::store::DatasetStore;

/// Directory of manifest files, relative to the dataset root.
pub const VERSIONS_DIR: &str = "_versions";
/// Optional `{"version": N}` hint for stores without ordered listing.
pub const LATEST_HINT: &str = "_versions/latest_version_hint.json";
/// Footer magic of manifest and Lance files.
pub const MAGIC: &[u8; 4] = b"LANC";
const FOOTER_LEN: usize = 16;
/// Footer version numbers Lance 14 writers put (lance-file's 0.2); readers check only the magic.
const FOOTER_MAJOR: i16 = 0;
const FOOTER_MINOR: i16 = 2;
/// Bit 63 marks a detached version (`_versions/d{n}.manifest`).
pub const DETACHED_VERSION_MASK: u64 = 0x8000_0000_0000_0000;

/// Manifest fields lancet models; every other field is kept raw (see [`DecodedManifest::unknown_fields`]).
const KNOWN_MANIFEST_FIELDS: [u32; 23] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 21, 22, 23, 24,
];
const FRAGMENTS_FIELD: u32 = 2;

/// How version numbers map to manifest file names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamingScheme {
    /// `_versions/{n}.manifest`
    V1,
    /// `_versions/{u64::MAX - n:020}.manifest`, so that lexical listing puts the newest first.
    V2,
}

impl NamingScheme {
    /// File name of `version` in this scheme.
    pub fn file_name(self, version: u64) -> String {
        match self {
            Self::V1 => format!("{version}.manifest"),
            Self::V2 => format!("{:020}.manifest", u64::MAX - version),
        }
    }

    /// Path of `version`, relative to the dataset root.
    pub fn relative_path(self, version: u64) -> String {
        format!("{VERSIONS_DIR}/{}", self.file_name(version))
    }
}

/// A parsed manifest file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestName {
    Version {
        version: u64,
        scheme: NamingScheme,
    },
    /// `d{n}.manifest`: detached versions are not part of the version list.
    Detached {
        version: u64,
    },
}

/// Parses a file name under `_versions/` the way Lance 14 detects schemes: `d…` is detached; a
/// 29-character `….manifest` name is V2; any other `{digits}.manifest` is V1.
pub fn parse_manifest_name(name: &str) -> Option<ManifestName> {
    if !name.ends_with(".manifest") {
        return None;
    }
    let (stem, _) = name.split_once('.')?;
    if let Some(digits) = stem.strip_prefix('d') {
        let version: u64 = digits.parse().ok()?;
        return Some(ManifestName::Detached { version });
    }
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let number: u64 = stem.parse().ok()?;
    if name.len() == 29 {
        Some(ManifestName::Version {
            version: u64::MAX - number,
            scheme: NamingScheme::V2,
        })
    } else {
        Some(ManifestName::Version {
            version: number,
            scheme: NamingScheme::V1,
        })
    }
}

/// A decoded manifest object.
#[derive(Debug, Clone)]
pub struct DecodedManifest {
    pub manifest: Manifest,
    /// The index section's entries; empty when the manifest has none.
    pub indices: Vec<IndexMetadata>,
    /// Raw bytes (tags included) of manifest fields lancet does not model, in stored order.
    pub unknown_fields: Vec<u8>,
    /// The Manifest protobuf as stored.
    pub manifest_bytes: Bytes,
    /// Span of each fragment's `DataFragment` bytes in `manifest_bytes`, in stored order.
    pub fragment_spans: Vec<Range<usize>>,
    /// The inline transaction section's bytes (field 23, else 21), undecoded: Lance opens a
    /// manifest whose transaction does not decode, so only readers of the transaction fail.
    /// `Err` says why the section's offset or length is out of bounds.
    pub transaction_section: Option<std::result::Result<Bytes, SectionOutOfBounds>>,
    /// [`DecodedManifest::unmodelled_fragments`], walked once.
    unmodelled: std::sync::OnceLock<Vec<UnmodelledFragment>>,
}

pub use lancet_proto::modelled::UnmodelledFragment;

/// A manifest's inline transaction section lies outside the object (its offset or length
/// is out of bounds). Kept on [`DecodedManifest`] rather than refusing the manifest, as Lance
/// opens it; reading the transaction fails with this rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{rule}")]
pub struct SectionOutOfBounds {
    pub rule: String,
}

impl DecodedManifest {
    /// The exact stored `DataFragment` bytes of fragment `i` (in stored order).
    pub fn fragment_bytes(&self, i: usize) -> Option<&[u8]> {
        self.manifest_bytes.get(self.fragment_spans.get(i)?.clone())
    }

    /// The stored fragments that hold fields lancet does not model (walked once per decoded
    /// manifest): a writer that would re-encode them refuses instead of dropping the fields.
    pub fn unmodelled_fragments(&self) -> &[UnmodelledFragment] {
        self.unmodelled.get_or_init(|| {
            let mut out = Vec::new();
            for (i, f) in self.manifest.fragments.iter().enumerate() {
                let bytes = self.fragment_bytes(i).unwrap_or_default();
                let fields = match lancet_proto::modelled::unmodelled_fragment_fields(bytes) {
                    Ok(fields) => fields,
                    Err(e) => vec![format!("(malformed: {e})")],
                };
                if !fields.is_empty() {
                    out.push(UnmodelledFragment { id: f.id, fields });
                }
            }
            out
        })
    }
}

/// Decodes one manifest object. Pure: no I/O, so fuzz targets call it directly.
pub fn decode_manifest(path: &Path, bytes: Bytes) -> Result<DecodedManifest> {
    let corrupt = |rule: String| PathsError::corrupt(path, rule);
    let size = bytes.len();
    if size < FOOTER_LEN {
        return Err(corrupt(format!(
            "file is {size} bytes, shorter than the 16-byte footer"
        )));
    }
    let footer_start = size - FOOTER_LEN;
    let footer = bytes
        .get(footer_start..)
        .ok_or_else(|| corrupt("footer out of range".into()))?;
    if footer.get(12..16) != Some(MAGIC.as_slice()) {
        return Err(corrupt("footer magic is not \"LANC\"".into()));
    }
    let pos =
        lancet_proto::le::i64_at(footer, 0).ok_or_else(|| corrupt("footer out of range".into()))?;
    let pos = usize::try_from(pos)
        .ok()
        .filter(|p| p.checked_add(4).is_some_and(|end| end <= footer_start))
        .ok_or_else(|| {
            corrupt(format!(
                "manifest position {pos} is outside the file (footer at {footer_start})"
            ))
        })?;
    let len = lancet_proto::le::u32_at(&bytes, pos)
        .ok_or_else(|| corrupt("manifest length out of range".into()))?;
    let expected = footer_start - pos - 4;
    if len as usize != expected {
        return Err(corrupt(format!(
            "manifest length prefix is {len} but {expected} bytes lie between it and the footer"
        )));
    }
    let manifest_bytes = bytes.slice(pos + 4..footer_start);
    let manifest = Manifest::decode(manifest_bytes.clone())
        .map_err(|e| corrupt(format!("Manifest protobuf does not decode: {e}")))?;

    let mut fragment_spans = Vec::with_capacity(manifest.fragments.len());
    for field in wire::fields(&manifest_bytes) {
        let field = field.map_err(|e| corrupt(format!("Manifest protobuf: {e}")))?;
        if field.number == FRAGMENTS_FIELD {
            fragment_spans.push(field.value);
        }
    }
    let unknown_fields = wire::unknown_fields(&manifest_bytes, &KNOWN_MANIFEST_FIELDS)
        .map_err(|e| corrupt(format!("Manifest protobuf: {e}")))?;

    let indices = match manifest.index_section {
        None => Vec::new(),
        Some(offset) => decode_index_section(&bytes, offset, pos).map_err(corrupt)?,
    };
    check_contents(&manifest, &indices).map_err(corrupt)?;
    let transaction_section = manifest
        .transaction_section
        .or(manifest.transaction_section_deprecated)
        .map(|offset| {
            section_bytes(&bytes, offset, pos, "transaction")
                .map_err(|rule| SectionOutOfBounds { rule })
        });
    Ok(DecodedManifest {
        unmodelled: Default::default(),
        manifest,
        indices,
        unknown_fields,
        manifest_bytes,
        fragment_spans,
        transaction_section,
    })
}

/// The body of the u32-prefixed section at `offset`, which must lie wholly before the
/// manifest's length prefix at `manifest_pos`.
fn section_bytes(
    bytes: &Bytes,
    offset: u64,
    manifest_pos: usize,
    what: &str,
) -> std::result::Result<Bytes, String> {
    let start = usize::try_from(offset)
        .ok()
        .filter(|s| s.checked_add(4).is_some_and(|e| e <= manifest_pos))
        .ok_or_else(|| {
            format!("{what} section offset {offset} is not before the manifest at {manifest_pos}")
        })?;
    let len = lancet_proto::le::u32_at(bytes, start)
        .ok_or_else(|| format!("{what} section length out of range"))? as usize;
    let end = start
        .checked_add(4)
        .and_then(|b| b.checked_add(len))
        .filter(|e| *e <= manifest_pos)
        .ok_or_else(|| format!("{what} section of {len} bytes at {start} overlaps the manifest"))?;
    Ok(bytes.slice(start + 4..end))
}

/// The index section must lie wholly before the manifest's length prefix.
fn decode_index_section(
    bytes: &[u8],
    offset: u64,
    manifest_pos: usize,
) -> std::result::Result<Vec<IndexMetadata>, String> {
    let start = usize::try_from(offset)
        .ok()
        .filter(|s| s.checked_add(4).is_some_and(|e| e <= manifest_pos))
        .ok_or_else(|| {
            format!("index_section offset {offset} is not before the manifest at {manifest_pos}")
        })?;
    let len =
        lancet_proto::le::u32_at(bytes, start).ok_or("index section length out of range")? as usize;
    let body = bytes
        .get(start + 4..)
        .and_then(|b| b.get(..len))
        .filter(|_| start + 4 + len <= manifest_pos)
        .ok_or_else(|| format!("index section of {len} bytes at {start} overlaps the manifest"))?;
    let section = IndexSection::decode(body)
        .map_err(|e| format!("IndexSection protobuf does not decode: {e}"))?;
    for (i, index) in section.indices.iter().enumerate() {
        let uuid = index
            .uuid
            .as_ref()
            .ok_or_else(|| format!("index {i} ({:?}) has no uuid", index.name))?;
        if uuid.uuid.len() != 16 {
            return Err(format!(
                "index {i} ({:?}) uuid is {} bytes, not 16",
                index.name,
                uuid.uuid.len()
            ));
        }
    }
    Ok(section.indices)
}

/// Rules on a decoded manifest's contents that Lance 14 and the tree spec impose.
fn check_contents(m: &Manifest, _indices: &[IndexMetadata]) -> std::result::Result<(), String> {
    validate_flags(m)?;
    if m.reader_feature_flags & flags::STABLE_ROW_IDS != 0 {
        if let Some(f) = m.fragments.iter().find(|f| f.row_id_sequence.is_none()) {
            return Err(format!(
                "stable row ids are enabled but fragment {} has no row id sequence",
                f.id
            ));
        }
    }
    for pair in m.fragments.windows(2) {
        if let [a, b] = pair {
            if a.id >= b.id {
                return Err(format!(
                    "fragment ids must strictly increase, found {} then {}",
                    a.id, b.id
                ));
            }
        }
    }
    Ok(())
}

/// Encodes a manifest object in Lance 14's order: the index section when `indices` is
/// non-empty, the transaction section when `transaction` is given (the encoded
/// `Transaction`), then the Manifest protobuf with `unknown_fields` (from
/// [`DecodedManifest::unknown_fields`]) appended so fields lancet does not model survive,
/// then the footer. Section offsets are set to what this object holds (field 21 is never
/// written), so offsets inherited from an older manifest never are.
///
/// Fails with [`PathsError::TooLarge`] when a section or the manifest exceeds the 4 GiB its
/// u32 length prefix can state.
pub fn encode_manifest(
    manifest: &Manifest,
    indices: &[IndexMetadata],
    unknown_fields: &[u8],
    transaction: Option<&[u8]>,
) -> Result<Vec<u8>> {
    let too_large = |what: &'static str, bytes: usize| PathsError::TooLarge { what, bytes };
    let mut m = manifest.clone();
    m.transaction_section = None;
    m.transaction_section_deprecated = None;
    let mut out = Vec::new();
    if indices.is_empty() {
        m.index_section = None;
    } else {
        let section = IndexSection {
            indices: indices.to_vec(),
        }
        .encode_to_vec();
        let len =
            u32::try_from(section.len()).map_err(|_| too_large("index section", section.len()))?;
        m.index_section = Some(0);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&section);
    }
    if let Some(section) = transaction {
        let len = u32::try_from(section.len())
            .map_err(|_| too_large("transaction section", section.len()))?;
        m.transaction_section = Some(out.len() as u64);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(section);
    }
    let body_len = m.encoded_len() + unknown_fields.len();
    let len = u32::try_from(body_len).map_err(|_| too_large("manifest", body_len))?;
    let pos = out.len() as i64;
    out.extend_from_slice(&len.to_le_bytes());
    // Encoding into a Vec cannot run out of room.
    m.encode(&mut out)
        .map_err(|_| too_large("manifest", body_len))?;
    out.extend_from_slice(unknown_fields);
    out.extend_from_slice(&pos.to_le_bytes());
    out.extend_from_slice(&FOOTER_MAJOR.to_le_bytes());
    out.extend_from_slice(&FOOTER_MINOR.to_le_bytes());
    out.extend_from_slice(MAGIC);
    Ok(out)
}

/// One listed version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionEntry {
    pub version: u64,
    pub scheme: NamingScheme,
    pub path: Path,
    pub size: u64,
}

/// A manifest read from a store.
#[derive(Debug, Clone)]
pub struct ManifestFile {
    pub entry: VersionEntry,
    pub decoded: DecodedManifest,
}

/// Lists the dataset's versions, ascending. Detached versions and other files are skipped.
pub async fn list_versions(store: &DatasetStore) -> Result<Vec<VersionEntry>> {
    let mut out = Vec::new();
    for meta in store.list(VERSIONS_DIR).await? {
        let Some(name) = meta.location.filename() else {
            continue;
        };
        if let Some(ManifestName::Version { version, scheme }) = parse_manifest_name(name) {
            out.push(VersionEntry {
                version,
                scheme,
                path: meta.location.clone(),
                size: meta.size,
            });
        }
    }
    out.sort_by_key(|e| e.version);
    if let Some(pair) = out
        .windows(2)
        .find(|w| matches!(w, [a, b] if a.version == b.version))
    {
        if let Some(dup) = pair.first() {
            return Err(PathsError::corrupt(
                &dup.path,
                format!(
                    "version {} is stored under both naming schemes",
                    dup.version
                ),
            ));
        }
    }
    Ok(out)
}

/// Reads version `version`, or the latest when `None`.
pub async fn read_manifest(store: &DatasetStore, version: Option<u64>) -> Result<ManifestFile> {
    let (entry, bytes) = match version {
        None => {
            let versions = list_versions(store).await?;
            let entry = versions
                .last()
                .cloned()
                .ok_or_else(|| PathsError::NoVersions {
                    path: store.path(VERSIONS_DIR),
                })?;
            let bytes = store.get_listed(&entry.path, entry.size).await?;
            (entry, bytes)
        }
        // A known version is read by name, without listing `_versions/` (whose length grows
        // with the table's history): the V2 name first, then the V1 name.
        Some(v) => read_by_name(store, v).await?,
    };
    decode_listed(entry, bytes)
}

/// Decodes the manifest a name or a listing found, checking the version its name says.
fn decode_listed(entry: VersionEntry, bytes: Bytes) -> Result<ManifestFile> {
    let decoded = decode_manifest(&entry.path, bytes)?;
    if decoded.manifest.version != entry.version {
        return Err(PathsError::corrupt(
            &entry.path,
            format!(
                "file name says version {} but the manifest says {}",
                entry.version, decoded.manifest.version
            ),
        ));
    }
    Ok(ManifestFile { entry, decoded })
}

/// Every version of `entries` read, in their order, several at once; `own` (a version the
/// caller holds) is not read again. A corrupt manifest is an error.
pub async fn read_all(
    store: &DatasetStore,
    entries: &[VersionEntry],
    own: &ManifestFile,
) -> Result<Vec<ManifestFile>> {
    use futures::{StreamExt, TryStreamExt};
    futures::stream::iter(entries.iter())
        .map(|e| async move {
            match e == &own.entry {
                true => Ok(own.clone()),
                false => read_manifest_entry(store, e).await,
            }
        })
        .buffered(READ_ALL_CONCURRENCY)
        .try_collect()
        .await
}

/// Manifests [`read_all`] reads at once.
const READ_ALL_CONCURRENCY: usize = 16;

/// Reads the manifest a listing found (one GET of the listed size, no probing by name).
pub async fn read_manifest_entry(
    store: &DatasetStore,
    entry: &VersionEntry,
) -> Result<ManifestFile> {
    let bytes = store.get_listed(&entry.path, entry.size).await?;
    decode_listed(entry.clone(), bytes)
}

/// Now by the system clock, as the manifest's `timestamp` field (7) holds it: the commit time
/// Lance's cleanup judges a version's age by ([`crate::clock::Clock::timestamp`] for another
/// clock).
pub fn now_timestamp() -> lancet_proto::prost_types::Timestamp {
    use crate::clock::Clock;
    crate::clock::SystemClock.timestamp()
}

/// A manifest's commit time in milliseconds since the epoch (0 when it records none).
pub fn timestamp_ms(manifest: &Manifest) -> i64 {
    manifest.timestamp.as_ref().map_or(0, |t| {
        t.seconds
            .saturating_mul(1000)
            .saturating_add(i64::from(t.nanos) / 1_000_000)
    })
}

/// Reads version `version` under one naming scheme only (a table keeps one scheme): what a
/// writer probing for versions after its own uses, one request per probe.
pub async fn read_manifest_named(
    store: &DatasetStore,
    version: u64,
    scheme: NamingScheme,
) -> Result<ManifestFile> {
    let (entry, bytes) = read_by_name_in(store, version, &[scheme]).await?;
    let decoded = decode_manifest(&entry.path, bytes)?;
    if decoded.manifest.version != entry.version {
        return Err(PathsError::corrupt(
            &entry.path,
            format!(
                "file name says version {} but the manifest says {}",
                entry.version, decoded.manifest.version
            ),
        ));
    }
    Ok(ManifestFile { entry, decoded })
}

async fn read_by_name(store: &DatasetStore, version: u64) -> Result<(VersionEntry, Bytes)> {
    read_by_name_in(store, version, &[NamingScheme::V2, NamingScheme::V1]).await
}

async fn read_by_name_in(
    store: &DatasetStore,
    version: u64,
    schemes: &[NamingScheme],
) -> Result<(VersionEntry, Bytes)> {
    for &scheme in schemes {
        let path = store.path(&scheme.relative_path(version));
        match store.get(&path, None).await {
            Ok(bytes) => {
                let entry = VersionEntry {
                    version,
                    scheme,
                    path,
                    size: bytes.len() as u64,
                };
                return Ok((entry, bytes));
            }
            Err(PathsError::NotFound { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(PathsError::VersionNotFound {
        path: store.path(VERSIONS_DIR),
        version,
    })
}

/// Commits `manifest` as its `version` with put-if-absent, then updates the latest-version
/// hint. Losing the race to another writer gives `AlreadyExists`.
///
/// With `transaction`, the version records what it did as Lance 14 does: the transaction
/// is written to `_transactions/{read_version}-{uuid}.txn` first, named by
/// `transaction_file`, and inlined in the manifest object; with writer flag 32
/// (`DISABLE_TRANSACTION_FILE`) it is inlined only. Without, `transaction_file` is cleared: a
/// version never names another version's transaction.
///
/// This is the raw storage action: it publishes what it is given, and tests use it to write
/// corrupt versions. lancet's write paths publish through [`prepare_manifest`] (the object
/// decoded as a reader decodes it, then judged by lancet-txn's invariants) and
/// [`publish_prepared`].
pub async fn write_manifest(
    store: &DatasetStore,
    content: &ManifestContent<'_>,
) -> Result<VersionEntry> {
    let (entry, objects) = encode_for(store, content)?;
    put_manifest(store, &entry, objects).await?;
    Ok(entry)
}

/// What a manifest object holds besides its bytes' layout: the manifest (its `version` names
/// the object), the index section, the unmodelled top-level fields carried over, the naming
/// scheme and the transaction. [`ManifestContent::new`] is a manifest alone: no indices, no
/// unknown fields, the V2 scheme, no transaction.
#[derive(Debug, Clone, Copy)]
pub struct ManifestContent<'a> {
    pub manifest: &'a Manifest,
    pub indices: &'a [IndexMetadata],
    pub unknown_fields: &'a [u8],
    pub scheme: NamingScheme,
    pub transaction: Option<&'a Transaction>,
}

impl<'a> ManifestContent<'a> {
    pub fn new(manifest: &'a Manifest) -> Self {
        Self {
            manifest,
            indices: &[],
            unknown_fields: &[],
            scheme: NamingScheme::V2,
            transaction: None,
        }
    }
}

/// A manifest object ready to publish: its bytes, and the same bytes decoded as a reader
/// decodes them (so the caller can judge exactly what will be stored).
#[derive(Debug, Clone)]
pub struct PreparedManifest {
    pub file: ManifestFile,
    pub bytes: Bytes,
    /// The transaction, encoded, for its `_transactions/` file.
    pub transaction: Option<(String, Bytes)>,
}

/// Encodes `manifest` as version `manifest.version` (see [`write_manifest`]) and decodes the
/// result with [`decode_manifest`]'s rules. Pure: nothing is written. Fails with the rule
/// the object breaks, naming the path it would have.
pub fn prepare_manifest(
    store: &DatasetStore,
    content: &ManifestContent<'_>,
) -> Result<PreparedManifest> {
    let (entry, encoded) = encode_for(store, content)?;
    let file = decode_listed(entry, encoded.manifest.clone())?;
    Ok(PreparedManifest {
        file,
        bytes: encoded.manifest,
        transaction: encoded.transaction,
    })
}

/// A manifest object's bytes and its transaction file's name and bytes.
#[derive(Debug, Clone)]
struct EncodedObjects {
    manifest: Bytes,
    transaction: Option<(String, Bytes)>,
}

fn encode_for(
    store: &DatasetStore,
    content: &ManifestContent<'_>,
) -> Result<(VersionEntry, EncodedObjects)> {
    let ManifestContent {
        manifest,
        indices,
        unknown_fields,
        scheme,
        transaction,
    } = *content;
    let path = store.path(&scheme.relative_path(manifest.version));
    let mut manifest = manifest.clone();
    let encoded = transaction.map(|t| t.encode_to_vec());
    // Lance's writer flag 32: the transaction is inlined only, no `_transactions/` file.
    let inline_only = manifest.writer_feature_flags & crate::flags::DISABLE_TRANSACTION_FILE != 0;
    manifest.transaction_file = match transaction {
        Some(t) if !inline_only => crate::layout::transaction_file_name(t),
        _ => String::new(),
    };
    let bytes = Bytes::from(encode_manifest(
        &manifest,
        indices,
        unknown_fields,
        encoded.as_deref(),
    )?);
    let entry = VersionEntry {
        version: manifest.version,
        scheme,
        path,
        size: bytes.len() as u64,
    };
    let transaction = encoded
        .filter(|_| !inline_only)
        .map(|e| (manifest.transaction_file.clone(), Bytes::from(e)));
    Ok((
        entry,
        EncodedObjects {
            manifest: bytes,
            transaction,
        },
    ))
}

/// Publishes a prepared manifest: its transaction file, then the manifest with
/// put-if-absent (the visibility boundary), then the latest-version hint.
pub async fn publish_prepared(store: &DatasetStore, prepared: &PreparedManifest) -> Result<()> {
    put_manifest(
        store,
        &prepared.file.entry,
        EncodedObjects {
            manifest: prepared.bytes.clone(),
            transaction: prepared.transaction.clone(),
        },
    )
    .await
}

async fn put_manifest(
    store: &DatasetStore,
    entry: &VersionEntry,
    objects: EncodedObjects,
) -> Result<()> {
    if let Some((name, bytes)) = objects.transaction {
        let path = store.path(&crate::layout::transaction_path(&name));
        store.put(&path, bytes).await?;
    }
    store.put_if_absent(&entry.path, objects.manifest).await?;
    write_latest_hint(store, entry.version).await
}

#[derive(serde::Serialize, serde::Deserialize)]
struct LatestHint {
    version: u64,
}

/// Writes `{"version": N}` to the hint file.
pub async fn write_latest_hint(store: &DatasetStore, version: u64) -> Result<()> {
    let body = serde_json::to_vec(&LatestHint { version }).unwrap_or_default();
    store.put(&store.path(LATEST_HINT), Bytes::from(body)).await
}

/// Reads the hint; `None` when absent. A hint that does not parse is corrupt.
pub async fn read_latest_hint(store: &DatasetStore) -> Result<Option<u64>> {
    let path = store.path(LATEST_HINT);
    match store.get(&path, None).await {
        Ok(bytes) => serde_json::from_slice::<LatestHint>(&bytes)
            .map(|h| Some(h.version))
            .map_err(|e| PathsError::corrupt(&path, format!("hint is not {{\"version\":N}}: {e}"))),
        Err(PathsError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;
    use lancet_proto::table::{DataFragment, Uuid};

    fn sample() -> Manifest {
        Manifest {
            version: 3,
            fragments: vec![
                DataFragment {
                    id: 0,
                    physical_rows: 10,
                    ..Default::default()
                },
                DataFragment {
                    id: 4,
                    physical_rows: 20,
                    ..Default::default()
                },
            ],
            max_fragment_id: Some(4),
            ..Default::default()
        }
    }

    fn index() -> IndexMetadata {
        IndexMetadata {
            uuid: Some(Uuid { uuid: vec![7; 16] }),
            name: "idx".into(),
            fields: vec![0],
            ..Default::default()
        }
    }

    fn path() -> Path {
        Path::from("_versions/3.manifest")
    }

    #[test]
    fn names_both_schemes() {
        assert_eq!(NamingScheme::V1.file_name(5), "5.manifest");
        assert_eq!(
            NamingScheme::V2.file_name(1),
            "18446744073709551614.manifest"
        );
        for v in [0u64, 1, 42, 10_000_000_000_000_000_000 - 1, u64::MAX - 1] {
            for s in [NamingScheme::V1, NamingScheme::V2] {
                if s == NamingScheme::V1 && v >= 10_000_000_000_000_000_000 {
                    // A 20-digit V1 name is 29 characters long, which Lance's detection reads
                    // as V2: such versions are only representable in V2.
                    assert!(matches!(
                        parse_manifest_name(&s.file_name(v)),
                        Some(ManifestName::Version {
                            scheme: NamingScheme::V2,
                            ..
                        })
                    ));
                    continue;
                }
                assert_eq!(
                    parse_manifest_name(&s.file_name(v)),
                    Some(ManifestName::Version {
                        version: v,
                        scheme: s
                    }),
                    "{s:?} {v}"
                );
            }
        }
        let detached = DETACHED_VERSION_MASK | 9;
        assert_eq!(
            parse_manifest_name(&format!("d{detached}.manifest")),
            Some(ManifestName::Detached { version: detached })
        );
        assert_eq!(parse_manifest_name("latest_version_hint.json"), None);
        assert_eq!(parse_manifest_name("x.manifest"), None);
        assert_eq!(parse_manifest_name("-1.manifest"), None);
    }

    #[test]
    fn round_trips_with_index_section_and_unknown_fields() {
        // field 26 (max_clustering_id) = 5, which lancet does not model
        let unknown = vec![0xd0, 0x01, 0x05];
        let bytes = encode_manifest(&sample(), &[index()], &unknown, None).unwrap();
        let d = decode_manifest(&path(), Bytes::from(bytes)).unwrap();
        assert_eq!(d.manifest.fragments, sample().fragments);
        assert_eq!(d.indices, vec![index()]);
        assert_eq!(d.unknown_fields, unknown);
        assert_eq!(d.fragment_spans.len(), 2);
        let f1 = DataFragment::decode(d.fragment_bytes(1).unwrap()).unwrap();
        assert_eq!(f1.id, 4);
        assert_eq!(d.manifest.index_section, Some(0));
    }

    fn expect_corrupt(bytes: Vec<u8>, needle: &str) {
        match decode_manifest(&path(), Bytes::from(bytes)) {
            Err(PathsError::CorruptManifest { at, rule }) => {
                assert_eq!(at.object, path().to_string());
                assert!(rule.contains(needle), "{rule:?} should mention {needle:?}");
            }
            other => panic!("expected CorruptManifest({needle}), got {other:?}"),
        }
    }

    #[test]
    fn rejects_bad_footers_and_lengths() {
        let good = encode_manifest(&sample(), &[index()], &[], None).unwrap();
        expect_corrupt(good[..10].to_vec(), "shorter than the 16-byte footer");
        let mut bad_magic = good.clone();
        let n = bad_magic.len();
        bad_magic[n - 1] = b'X';
        expect_corrupt(bad_magic, "magic");
        // position past the footer
        let mut far = good.clone();
        far[n - 16..n - 8].copy_from_slice(&(n as i64).to_le_bytes());
        expect_corrupt(far, "outside the file");
        let mut negative = good.clone();
        negative[n - 16..n - 8].copy_from_slice(&(-4i64).to_le_bytes());
        expect_corrupt(negative, "outside the file");
        // truncated: drop a byte from the middle of the manifest
        let mut truncated = good.clone();
        let pos = i64::from_le_bytes(good[n - 16..n - 8].try_into().unwrap()) as usize;
        truncated.remove(pos + 6);
        let m = truncated.len();
        truncated[m - 16..m - 8].copy_from_slice(&(pos as i64).to_le_bytes());
        expect_corrupt(truncated, "length prefix");
        // a length prefix that does not reach the footer
        let mut short = good.clone();
        let len = u32::from_le_bytes(good[pos..pos + 4].try_into().unwrap());
        short[pos..pos + 4].copy_from_slice(&(len - 1).to_le_bytes());
        expect_corrupt(short, "length prefix");
    }

    #[test]
    fn rejects_bad_index_sections_and_contents() {
        let mut m = sample();
        // index section offset past the manifest
        m.index_section = Some(1_000_000);
        let mut bytes = Vec::new();
        let body = m.encode_to_vec();
        bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&body);
        bytes.extend_from_slice(&0i64.to_le_bytes());
        bytes.extend_from_slice(&[0, 0, 2, 0]);
        bytes.extend_from_slice(MAGIC);
        expect_corrupt(bytes, "index_section offset");

        let no_uuid = IndexMetadata {
            uuid: None,
            ..index()
        };
        expect_corrupt(
            encode_manifest(&sample(), &[no_uuid], &[], None).unwrap(),
            "has no uuid",
        );
        let short_uuid = IndexMetadata {
            uuid: Some(Uuid { uuid: vec![1; 15] }),
            ..index()
        };
        expect_corrupt(
            encode_manifest(&sample(), &[short_uuid], &[], None).unwrap(),
            "not 16",
        );

        let mut unsorted = sample();
        unsorted.fragments.reverse();
        expect_corrupt(
            encode_manifest(&unsorted, &[], &[], None).unwrap(),
            "strictly increase",
        );
        let mut stable = sample();
        stable.reader_feature_flags = flags::STABLE_ROW_IDS;
        stable.writer_feature_flags = flags::STABLE_ROW_IDS;
        expect_corrupt(
            encode_manifest(&stable, &[], &[], None).unwrap(),
            "no row id sequence",
        );
        let mut one_sided = sample();
        one_sided.reader_feature_flags = flags::FRAGMENT_REUSE_INDEX;
        expect_corrupt(encode_manifest(&one_sided, &[], &[], None).unwrap(), "both");
    }

    #[test]
    fn transaction_section_follows_the_index_section() {
        let txn = b"\x08\x07".to_vec();
        let bytes = encode_manifest(&sample(), &[index()], &[], Some(&txn)).unwrap();
        let d = decode_manifest(&path(), Bytes::from(bytes)).unwrap();
        assert_eq!(d.indices.len(), 1);
        assert!(d.manifest.transaction_section.unwrap() > 0);
        assert_eq!(d.transaction_section.unwrap().unwrap().as_ref(), &txn[..]);
    }

    #[test]
    fn out_of_bounds_transaction_section_opens_but_does_not_read() {
        let mut m = sample();
        m.transaction_section = Some(1 << 40);
        // encode clears offsets, so write the field by hand after the fact
        let mut body = m.encode_to_vec();
        let _ = &mut body;
        let bytes = {
            let mut out = Vec::new();
            out.extend_from_slice(&(body.len() as u32).to_le_bytes());
            out.extend_from_slice(&body);
            out.extend_from_slice(&0i64.to_le_bytes());
            out.extend_from_slice(&0i16.to_le_bytes());
            out.extend_from_slice(&2i16.to_le_bytes());
            out.extend_from_slice(b"LANC");
            out
        };
        let d = decode_manifest(&path(), Bytes::from(bytes)).unwrap();
        let err = d.transaction_section.unwrap().unwrap_err();
        assert!(err.rule.contains("not before the manifest"), "{err}");
    }

    #[tokio::test]
    async fn commit_list_read_and_race() {
        let store = DatasetStore::scratch();
        assert!(matches!(
            read_manifest(&store, None).await,
            Err(PathsError::NoVersions { .. })
        ));
        let mut m = sample();
        for v in 1..=3 {
            m.version = v;
            write_manifest(&store, &ManifestContent::new(&m))
                .await
                .unwrap();
        }
        assert!(matches!(
            write_manifest(&store, &ManifestContent::new(&m)).await,
            Err(PathsError::AlreadyExists { .. })
        ));
        let versions: Vec<u64> = list_versions(&store)
            .await
            .unwrap()
            .iter()
            .map(|e| e.version)
            .collect();
        assert_eq!(versions, vec![1, 2, 3]);
        assert_eq!(read_manifest(&store, None).await.unwrap().entry.version, 3);
        assert_eq!(
            read_manifest(&store, Some(2))
                .await
                .unwrap()
                .decoded
                .manifest
                .version,
            2
        );
        assert!(matches!(
            read_manifest(&store, Some(9)).await,
            Err(PathsError::VersionNotFound { version: 9, .. })
        ));
        assert_eq!(read_latest_hint(&store).await.unwrap(), Some(3));

        // a file whose name and content disagree
        let mut wrong = sample();
        wrong.version = 7;
        let bytes = encode_manifest(&wrong, &[], &[], None).unwrap();
        store
            .put(
                &store.path(&NamingScheme::V1.relative_path(8)),
                Bytes::from(bytes),
            )
            .await
            .unwrap();
        let says = |r: Result<ManifestFile>| match r {
            Err(e @ PathsError::CorruptManifest { .. }) => e.to_string(),
            other => panic!("expected CorruptManifest, got {other:?}"),
        };
        for err in [
            says(read_manifest(&store, Some(8)).await),
            // the latest by listing is version 8 too
            says(read_manifest(&store, None).await),
            says(read_manifest_named(&store, 8, NamingScheme::V1).await),
        ] {
            assert!(
                err.contains("file name says version 8 but the manifest says 7"),
                "{err}"
            );
        }
        // under the V2 name as well
        wrong.version = 3;
        let bytes = encode_manifest(&wrong, &[], &[], None).unwrap();
        store
            .put(
                &store.path(&NamingScheme::V2.relative_path(9)),
                Bytes::from(bytes),
            )
            .await
            .unwrap();
        let err = says(read_manifest_named(&store, 9, NamingScheme::V2).await);
        assert!(
            err.contains("says version 9 but the manifest says 3"),
            "{err}"
        );
        store
            .put(&store.path(LATEST_HINT), Bytes::from_static(b"{"))
            .await
            .unwrap();
        assert!(read_latest_hint(&store).await.is_err());
    }
}
