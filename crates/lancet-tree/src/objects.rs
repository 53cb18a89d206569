//! Tree objects: fetching them by resolved location, decoding them, and the cache seam.
//!
//! An object is fetched whole with one GET, its length checked against the `object_size` of
//! its reference (no HEAD request). A `.node` (and the external `.root`) is a raw protobuf; a
//! `.lance` leaf is a Lance file decoded from the fetched bytes by lance-file. The kind comes
//! from the path suffix (decision 1). What decoding checks needs nothing but the object itself
//! (leaf schema and records, mutation payloads), so a decoded object can be cached and shared;
//! checks that depend on the parent (ranges, summaries, watermarks) run on every visit.
//!
//! [`NodeCache`] is the seam a cache plugs into: concurrent misses of one key must load once.
//! [`NoCache`] loads every time; the `lancet` facade backs it with moka.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::future::BoxFuture;
use lancet_paths::{DatasetStore, ObjectLocation, PathsError};
use lancet_proto::table::{DataFragment, FragmentTreeChild, FragmentTreeNode};
use object_store::path::Path;
use prost::Message;

use crate::error::{Result, Rule, TreeError};
use crate::leaf::{decode_records, leaf_schema};
use crate::mutation::Mutation;
use crate::records::{record_counts, Checked, Totals, Violation, WideTotals};

/// Reads whole objects by resolved location.
pub trait ObjectFetcher: Send + Sync + std::fmt::Debug {
    /// The bytes of the object at `location`. With `expected_size`, an object of another
    /// length is [`PathsError::SizeMismatch`].
    fn fetch<'a>(
        &'a self,
        location: &'a ObjectLocation,
        expected_size: Option<u64>,
    ) -> BoxFuture<'a, std::result::Result<Bytes, PathsError>>;

    /// The store path of `location`, for error messages.
    fn display_path(&self, location: &ObjectLocation) -> String {
        location.display_uri()
    }
}

/// Fetches from the current dataset's store, and from other datasets (reached through
/// `base_id`) by opening their URI once and keeping the handle.
#[derive(Debug)]
pub struct StoreFetcher {
    current: DatasetStore,
    others: Mutex<HashMap<String, DatasetStore>>,
}

impl StoreFetcher {
    pub fn new(current: DatasetStore) -> Self {
        Self {
            current,
            others: Mutex::new(HashMap::new()),
        }
    }

    /// Uses `store` for every location whose base URI is `uri` (a store that cannot be opened
    /// from its URI alone, such as an in-memory one).
    pub fn register(&self, uri: &str, store: DatasetStore) {
        if let Ok(mut others) = self.others.lock() {
            others.insert(uri.trim_end_matches('/').to_string(), store);
        }
    }

    fn store_for(
        &self,
        location: &ObjectLocation,
    ) -> std::result::Result<DatasetStore, PathsError> {
        if location.base.base_id.is_none() {
            return Ok(self.current.clone());
        }
        let uri = location.base.uri.as_str();
        let mut others = self.others.lock().map_err(|_| PathsError::InvalidUri {
            uri: uri.to_string(),
            reason: "store table poisoned".into(),
        })?;
        if let Some(store) = others.get(uri) {
            return Ok(store.clone());
        }
        let store = DatasetStore::open(uri)?;
        others.insert(uri.to_string(), store.clone());
        Ok(store)
    }
}

impl ObjectFetcher for StoreFetcher {
    fn fetch<'a>(
        &'a self,
        location: &'a ObjectLocation,
        expected_size: Option<u64>,
    ) -> BoxFuture<'a, std::result::Result<Bytes, PathsError>> {
        Box::pin(async move {
            let store = self.store_for(location)?;
            let path = store.path(&location.path);
            store.get(&path, expected_size).await
        })
    }

    fn display_path(&self, location: &ObjectLocation) -> String {
        match self.store_for(location) {
            Ok(store) => store.path(&location.path).to_string(),
            Err(_) => location.display_uri(),
        }
    }
}

/// Maps a fetch failure to the rule it breaks (a missing object, a wrong size) or to I/O.
pub(crate) fn fetch_error(object: &str, e: PathsError) -> TreeError {
    match e {
        PathsError::NotFound { .. } => TreeError::corrupt(
            object,
            Rule::ObjectMissing,
            "a referenced tree object does not exist",
        ),
        PathsError::SizeMismatch {
            expected, actual, ..
        } => TreeError::corrupt(
            object,
            Rule::ObjectSize,
            format!("object_size is {expected}, the object is {actual} bytes"),
        ),
        e => TreeError::Io {
            object: object.to_string(),
            source: Arc::new(e),
        },
    }
}

/// Cache key of a decoded object: where it lives (URI, path), under which base id its
/// records were resolved, and its size.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    pub uri: String,
    pub base_id: Option<u32>,
    pub path: String,
    pub size: u64,
}

/// A decoded interior: its raw child list (checked against its parent on every visit) and
/// its checked buffer.
#[derive(Debug)]
pub struct DecodedNode {
    pub children: Vec<FragmentTreeChild>,
    pub buffer: Vec<Mutation>,
    /// Sum of the buffer's deltas.
    pub(crate) buffer_deltas: WideTotals,
    pub size: u64,
    /// The buffer's sequences: lowest, highest, and whether any repeats.
    pub(crate) sequences: SequenceSpan,
    /// The last context this node was checked in, and the checked children it gave: a node
    /// read again under the same reference, base paths and bounds is not checked again.
    pub(crate) checked: std::sync::Mutex<Option<Box<CheckMemo>>>,
}

/// A context a node was checked in, and the checked children it gave.
pub(crate) type CheckMemo = (CheckContext, Arc<[crate::routing::ChildRef]>);

/// The span of a buffer's sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SequenceSpan {
    pub min: u64,
    pub max: u64,
    pub repeats: bool,
}

impl SequenceSpan {
    pub fn of(buffer: &[Mutation]) -> Option<Self> {
        let min = buffer.iter().map(|m| m.sequence).min()?;
        let max = buffer.iter().map(|m| m.sequence).max()?;
        let mut set = crate::sequences::SequenceSet::default();
        let repeats = !buffer.iter().all(|m| set.insert(m.sequence));
        Some(Self { min, max, repeats })
    }

    pub fn overlaps(&self, other: &Self) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

/// Everything a node's context-dependent checks depend on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CheckContext {
    pub reference: crate::routing::ChildRef,
    pub bases: u64,
    pub root_next: u64,
    pub max_fragment_id: Option<u32>,
}

/// A decoded leaf: its checked records in id order and what they add up to.
#[derive(Debug)]
pub struct DecodedLeaf {
    pub records: Vec<DataFragment>,
    pub totals: Totals,
    pub size: u64,
}

impl DecodedLeaf {
    pub fn first_id(&self) -> Option<u64> {
        self.records.first().map(|f| f.id)
    }

    pub fn last_id(&self) -> Option<u64> {
        self.records.last().map(|f| f.id)
    }

    /// The record with `id`, if the leaf holds one.
    pub fn get(&self, id: u64) -> Option<&DataFragment> {
        self.records
            .binary_search_by_key(&id, |f| f.id)
            .ok()
            .and_then(|i| self.records.get(i))
    }
}

/// A decoded object, shared through the cache.
#[derive(Debug)]
pub enum TreeObject {
    Node(DecodedNode),
    Leaf(DecodedLeaf),
}

impl TreeObject {
    /// Bytes the object keeps resident, roughly: its stored size (what a cache should weigh).
    pub fn weight_bytes(&self) -> u64 {
        match self {
            Self::Node(n) => n.size,
            Self::Leaf(l) => l.size,
        }
    }
}

/// The cache seam for decoded objects.
pub trait NodeCache: Send + Sync + std::fmt::Debug {
    /// The object under `key`, or the result of `load` (cached on success). Concurrent
    /// callers of one missing key should share one load.
    fn get_or_load<'a>(
        &'a self,
        key: ObjectKey,
        load: BoxFuture<'a, Result<Arc<TreeObject>>>,
    ) -> BoxFuture<'a, Result<Arc<TreeObject>>>;

    /// The object under `key` when it is cached, without loading it. The default caches
    /// nothing.
    fn peek<'a>(&'a self, _key: &'a ObjectKey) -> BoxFuture<'a, Option<Arc<TreeObject>>> {
        Box::pin(async { None })
    }

    /// The [`lancet_file::FileOutline`] kept for the leaf under `key`, if any: a point read
    /// of a cold leaf whose outline is kept opens the leaf's bytes without reading its
    /// footer, metadata and schema again (~0.2 ms of a ~0.5 ms point read). The default
    /// keeps none.
    fn outline<'a>(
        &'a self,
        _key: &'a ObjectKey,
    ) -> BoxFuture<'a, Option<lancet_file::FileOutline>> {
        Box::pin(async { None })
    }

    /// Keeps `outline` for the leaf under `key` (outlines are small: a leaf's metadata
    /// sections, ~11 KB for 4096 records). The default keeps nothing.
    fn keep_outline<'a>(
        &'a self,
        _key: ObjectKey,
        _outline: lancet_file::FileOutline,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// How many bytes (by [`TreeObject::weight_bytes`]) the cache holds at most. A writer
    /// decodes and caches whole leaves while a tree's leaves fit, and point-reads the one
    /// record it needs from a cold leaf when they do not. The default caches nothing.
    fn capacity_bytes(&self) -> u64 {
        0
    }
}

/// No caching: every visit loads.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoCache;

impl NodeCache for NoCache {
    fn get_or_load<'a>(
        &'a self,
        _key: ObjectKey,
        load: BoxFuture<'a, Result<Arc<TreeObject>>>,
    ) -> BoxFuture<'a, Result<Arc<TreeObject>>> {
        load
    }
}

/// Decodes a buffer of mutations, each checked; null base ids inherit `base`.
pub(crate) fn decode_buffer(
    buffer: &[lancet_proto::table::FragmentTreeMutation],
    base: Option<u32>,
) -> std::result::Result<(Vec<Mutation>, WideTotals), Violation> {
    let mut sum = WideTotals::default();
    let mut out = Vec::with_capacity(buffer.len());
    for m in buffer {
        let m = Mutation::decode(m, base)?;
        sum.add_deltas(m.deltas);
        out.push(m);
    }
    Ok((out, sum))
}

/// The buffered mutations of the encoded object `container` (field `buffer_field`) hold only
/// fields lancet models ([`Rule::MutationField`]).
pub(crate) fn modelled_mutations(container: &[u8], buffer_field: u32) -> Checked<()> {
    let name = if buffer_field == 3 {
        "mutations_since_root"
    } else {
        "buffer"
    };
    let fields = lancet_proto::modelled::unmodelled_mutation_fields(container, buffer_field, name)
        .map_err(|e| Violation::new(Rule::ObjectDecode, e.to_string()))?;
    match fields.is_empty() {
        true => Ok(()),
        false => Err(Violation::new(
            Rule::MutationField,
            format!(
                "fields lancet does not model, which a rewrite would drop: {}",
                fields.join(", ")
            ),
        )),
    }
}

/// Decodes a `.node` object's bytes.
pub(crate) fn decode_node(object: &str, bytes: &[u8], base: Option<u32>) -> Result<DecodedNode> {
    let node = FragmentTreeNode::decode(bytes).map_err(|e| {
        TreeError::corrupt(
            object,
            Rule::ObjectDecode,
            format!("FragmentTreeNode protobuf does not decode: {e}"),
        )
    })?;
    modelled_mutations(bytes, 2).map_err(|v| v.at(object))?;
    let (buffer, buffer_deltas) = decode_buffer(&node.buffer, base).map_err(|v| v.at(object))?;
    Ok(DecodedNode {
        children: node.children,
        sequences: SequenceSpan::of(&buffer).unwrap_or(SequenceSpan {
            min: u64::MAX,
            max: 0,
            repeats: false,
        }),
        buffer,
        buffer_deltas,
        size: bytes.len() as u64,
        checked: std::sync::Mutex::new(None),
    })
}

/// Runs `work` as a task of the current multi-threaded tokio runtime, so that leaves fetched
/// together (a walk's read-ahead, a commit's prior records) decode on every worker instead of
/// one after another in the caller's task. Elsewhere it runs inline.
async fn on_pool<T: Send + 'static>(
    work: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            match handle.spawn(work).await {
                Ok(done) => done,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => Err(TreeError::InvalidInput(
                    "the tokio runtime shut down while a leaf was decoding".into(),
                )),
            }
        }
        _ => work.await,
    }
}

/// [`decode_leaf`] on the runtime's workers (see [`on_pool`]).
pub(crate) async fn decode_leaf_on_pool(
    object: String,
    bytes: Bytes,
    base: Option<u32>,
) -> Result<DecodedLeaf> {
    on_pool(async move { decode_leaf(&object, bytes, base).await }).await
}

/// What a point read of a leaf checks it against: the reference's inherited id range and
/// the manifest's `max_fragment_id`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeafBounds {
    pub range: crate::routing::KeyRange,
    pub max_fragment_id: Option<u32>,
    /// The record count the leaf's child reference states (its summary's `fragments`): a
    /// hint only, used to guess where a record sits (see [`point_read_leaf`]).
    pub records: u64,
}

/// The record with `id` in a leaf's bytes, reading only the `id` column and that one row
/// (on the runtime's workers). Checked: the exact schema; ids present, strictly increasing,
/// inside `bounds`; and every rule of [`decode_records`] and [`record_counts`] on the row.
/// Not checked: the other rows and the leaf's summary, which the next whole read of the
/// leaf (a reader's resolve or walk, or the writer materializing it) checks.
///
/// Dense leaves skip the `id` column: when the reference says the leaf holds as many
/// records as its range holds ids (and the file as many rows), record `id` can only be row
/// `id - lo`. That row is read and checked like any; if it is not `id` (the hint was
/// wrong), the `id` column is searched as for any leaf.
///
/// Cost: the file's metadata, one `u64` column and one row, instead of every row of the
/// leaf (about a tenth of a whole 4096-record decode); a dense leaf, the metadata and one row.
/// With `outline` (kept by the node cache from an earlier point read of this leaf, whose
/// open checked the footer and exact schema) the metadata is not read again: the bytes are
/// reopened from it (0.01 ms instead of 0.2). The outline is returned for the cache to keep.
pub(crate) async fn point_read_leaf(
    object: String,
    bytes: Bytes,
    base: Option<u32>,
    id: u64,
    bounds: LeafBounds,
    outline: Option<lancet_file::FileOutline>,
) -> Result<(Option<DataFragment>, lancet_file::FileOutline)> {
    on_pool(async move { point_read(&object, bytes, base, id, bounds, outline).await }).await
}

fn leaf_file_error(object: &str, e: lancet_file::FileError) -> TreeError {
    match e {
        lancet_file::FileError::SchemaMismatch { rule, .. } => {
            TreeError::corrupt(object, Rule::LeafSchema, rule)
        }
        e => TreeError::corrupt(object, Rule::LeafFile, e.to_string()),
    }
}

async fn point_read(
    object: &str,
    bytes: Bytes,
    base: Option<u32>,
    id: u64,
    bounds: LeafBounds,
    outline: Option<lancet_file::FileOutline>,
) -> Result<(Option<DataFragment>, lancet_file::FileOutline)> {
    let path = Path::from(object);
    // A kept outline is this leaf's, from an open that checked its footer and exact schema.
    let file = match &outline {
        Some(outline) => lancet_file::reopen_bytes(&path, bytes, outline).await,
        None => lancet_file::open_bytes_exact(&path, bytes, &leaf_schema()).await,
    }
    .map_err(|e| leaf_file_error(object, e))?;
    let outline = outline.unwrap_or_else(|| file.outline());
    let record = point_read_open(object, &file, base, id, bounds).await?;
    Ok((record, outline))
}

/// [`point_read`] on the opened leaf.
async fn point_read_open(
    object: &str,
    file: &lancet_file::LanceFile,
    base: Option<u32>,
    id: u64,
    bounds: LeafBounds,
) -> Result<Option<DataFragment>> {
    let span = bounds.range.hi.saturating_sub(bounds.range.lo);
    let dense = bounds.records == span && file.num_rows() == span;
    if dense && bounds.range.contains(id) {
        let row = id - bounds.range.lo;
        if let Some(f) = read_record(object, file, row, base).await? {
            if f.id == id {
                return Ok(Some(f));
            }
        }
    }
    let Some(row) = find_row(object, file, id, &bounds).await? else {
        return Ok(None);
    };
    let f = read_record(object, file, row, base).await?;
    match f {
        Some(f) if f.id == id => Ok(Some(f)),
        _ => Err(TreeError::corrupt(
            object,
            Rule::LeafValues,
            format!("row {row} is not fragment {id}"),
        )),
    }
}

/// Searches a leaf's `id` column for `id`, checking the column: no nulls, strictly
/// increasing, inside the inherited range and below the manifest's `max_fragment_id`.
async fn find_row(
    object: &str,
    file: &lancet_file::LanceFile,
    id: u64,
    bounds: &LeafBounds,
) -> Result<Option<u64>> {
    use arrow_array::{Array, UInt64Array};
    let corrupt = |rule, detail: String| TreeError::corrupt(object, rule, detail);
    let column = file
        .read_columns(&["id"], None)
        .await
        .map_err(|e| leaf_file_error(object, e))?;
    let ids = column
        .columns()
        .first()
        .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
        .ok_or_else(|| corrupt(Rule::LeafSchema, "the id column is not UInt64".into()))?;
    if ids.null_count() > 0 {
        return Err(corrupt(Rule::LeafValues, "id holds a null".into()));
    }
    let ids = ids.values();
    let (Some(&first), Some(&last)) = (ids.first(), ids.last()) else {
        return Err(corrupt(Rule::LeafEmpty, "a leaf holds no records".into()));
    };
    if let Some(row) = ids.windows(2).position(|w| matches!(w, [a, b] if a >= b)) {
        return Err(corrupt(
            Rule::LeafIdOrder,
            format!("row {}: id does not exceed the previous id", row + 1),
        ));
    }
    if !bounds.range.contains(first) || !bounds.range.contains(last) {
        return Err(corrupt(
            Rule::LeafIdRange,
            format!(
                "ids {first}..={last} leave the inherited range {}..{}",
                bounds.range.lo, bounds.range.hi
            ),
        ));
    }
    check_leaf_max_id(bounds.max_fragment_id, last).map_err(|v| v.at(object))?;
    Ok(ids.binary_search(&id).ok().map(|row| row as u64))
}

/// Row `row` of a leaf as a record, checked by every rule of [`decode_records`] and
/// [`record_counts`], with the leaf's inherited `base_id` applied. `None` when the file
/// has no such row.
async fn read_record(
    object: &str,
    file: &lancet_file::LanceFile,
    row: u64,
    base: Option<u32>,
) -> Result<Option<DataFragment>> {
    if row >= file.num_rows() {
        return Ok(None);
    }
    let batch = file
        .take_rows(&[row])
        .await
        .map_err(|e| leaf_file_error(object, e))?;
    let mut records = decode_records(&batch).map_err(|v| v.at(object))?;
    let (Some(mut f), true) = (records.pop(), records.is_empty()) else {
        return Err(TreeError::corrupt(
            object,
            Rule::LeafValues,
            format!("reading row {row} gave {} records", batch.num_rows()),
        ));
    };
    record_counts(&f).map_err(|v| v.at(object))?;
    crate::records::inherit_base(&mut f, base);
    Ok(Some(f))
}

fn check_leaf_max_id(max: Option<u32>, id: u64) -> std::result::Result<(), Violation> {
    match max {
        Some(max) if id <= u64::from(max) => Ok(()),
        _ => Err(Violation::new(
            Rule::MaxFragmentId,
            format!("fragment id {id} exceeds max_fragment_id {max:?}"),
        )),
    }
}

/// Decodes a `.lance` leaf's bytes: exact schema, then the records (see [`crate::leaf`]).
pub(crate) async fn decode_leaf(
    object: &str,
    bytes: Bytes,
    base: Option<u32>,
) -> Result<DecodedLeaf> {
    let size = bytes.len() as u64;
    let batch = lancet_file::read_bytes_exact(&Path::from(object), bytes, &leaf_schema())
        .await
        .map_err(|e| leaf_file_error(object, e))?;
    let mut records = decode_records(&batch).map_err(|v| v.at(object))?;
    let mut sum = WideTotals::default();
    for f in &mut records {
        let (total, visible) = record_counts(f).map_err(|v| v.at(object))?;
        sum.add_totals(Totals {
            fragments: 1,
            total_rows: total,
            visible_rows: visible,
        });
        crate::records::inherit_base(f, base);
    }
    let totals = sum
        .to_totals()
        .map_err(|d| TreeError::corrupt(object, Rule::LeafSummary, d))?;
    Ok(DecodedLeaf {
        records,
        totals,
        size,
    })
}
