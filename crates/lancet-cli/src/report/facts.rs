//! What the report shows, gathered from one opened version through the facade: each object
//! the version names read once (the tree walked once, the fragments resolved once), and the
//! history from the version listing plus the last [`HISTORY`] versions' manifests.

use std::collections::{BTreeMap, HashSet};

use lancet::proto::table::transaction::Operation;
use lancet::proto::table::DataFragment;
use lancet::reuse::Mapping;
use lancet::tree::TreeStats;
use lancet::{CompactionOptions, Dataset, ErrorKind, FragmentSummary};

use crate::error::CliError;

/// Versions whose manifests the history reads (older ones show only their manifest size).
pub const HISTORY: usize = 60;
/// Versions whose manifests and transactions are read at once.
const HISTORY_READS: usize = 16;

pub struct Facts {
    pub uri: String,
    pub version: u64,
    pub rows: Option<u64>,
    pub stable_row_ids: bool,
    pub manifest_bytes: u64,
    pub fragments: Vec<Fragment>,
    /// Fragment ids compaction's plan (Lance's default options) would rewrite, and its tasks.
    pub compacted: HashSet<u64>,
    pub compaction_tasks: usize,
    pub indexes: Vec<Coverage>,
    pub fri: Option<Vec<Transition>>,
    pub tree: Option<TreeStats>,
    pub versions: Vec<VersionFact>,
    /// The encodings of each fragment's row-id segments (stable row ids only).
    pub row_ids: Option<Vec<Vec<&'static str>>>,
}

pub struct Fragment {
    pub id: u64,
    pub physical_rows: Option<u64>,
    pub deleted_rows: Option<u64>,
    /// Sum of the data files' recorded sizes; `None` when a file records none.
    pub bytes: Option<u64>,
}

pub struct Coverage {
    pub name: String,
    pub columns: String,
    /// Covered fragment ids; `None` when the index records no bitmap.
    pub fragments: Option<HashSet<u64>>,
}

pub struct Transition {
    pub dataset_version: Option<u64>,
    pub sources: Vec<u64>,
    pub destinations: Vec<u64>,
    pub mapping: &'static str,
}

pub struct VersionFact {
    pub version: u64,
    pub manifest_bytes: u64,
    /// Read from the manifest for the last [`HISTORY`] versions.
    pub detail: Option<VersionDetail>,
}

pub struct VersionDetail {
    /// Seconds since the epoch.
    pub timestamp: Option<i64>,
    pub operation: String,
    /// Recorded sizes of the data files the operation adds.
    pub data_bytes: u64,
}

pub async fn gather(uri: &str, version: Option<u64>) -> Result<Facts, CliError> {
    let store = lancet::paths::DatasetStore::open(uri)?;
    let ds = Dataset::open_with(store, version, lancet::Caches::new(Default::default())).await?;
    let tree = match ds.storage().tree() {
        Some(reader) => Some(
            reader
                .walk()
                .await
                .map_err(lancet::Error::from)?
                .stats()
                .clone(),
        ),
        None => None,
    };
    let all = ds.fragments().await?;
    let tasks = (ds.optimize().compaction())
        .plan(&CompactionOptions::default())
        .await?;
    Ok(Facts {
        uri: uri.to_string(),
        version: ds.version(),
        rows: ds.num_rows(),
        stable_row_ids: ds.storage().has_stable_row_ids(),
        manifest_bytes: ds.storage().manifest_file().entry.size,
        fragments: all.iter().map(fragment).collect(),
        compacted: tasks
            .iter()
            .flat_map(|t| t.fragments.iter().copied())
            .collect(),
        compaction_tasks: tasks.len(),
        indexes: coverage(&ds)?,
        fri: transitions(&ds).await?,
        tree,
        versions: history(&ds).await?,
        row_ids: row_ids(&ds, &all)?,
    })
}

fn fragment(f: &DataFragment) -> Fragment {
    let summary = FragmentSummary::of(f);
    Fragment {
        id: f.id,
        physical_rows: summary.physical_rows,
        deleted_rows: summary.num_deleted_rows,
        bytes: (f.files.iter())
            .map(|d| (d.file_size_bytes > 0).then_some(d.file_size_bytes))
            .try_fold(0u64, |sum, b| Some(sum.saturating_add(b?))),
    }
}

/// The dotted path of each field id of the schema.
fn field_paths(ds: &Dataset) -> BTreeMap<i32, String> {
    let fields = &ds.storage().manifest().fields;
    let by_id: BTreeMap<i32, _> = fields.iter().map(|f| (f.id, f)).collect();
    let mut out = BTreeMap::new();
    for f in fields {
        let mut path = vec![f.name.as_str()];
        let mut parent = f.parent_id;
        // a hostile schema may name a parent cycle: at most one step per field
        for _ in 0..fields.len() {
            let Some(p) = by_id.get(&parent) else { break };
            path.push(p.name.as_str());
            parent = p.parent_id;
        }
        path.reverse();
        out.insert(f.id, path.join("."));
    }
    out
}

/// Each user index (Lance's system indexes, named `__lance_*`, left out) with its fragments.
fn coverage(ds: &Dataset) -> Result<Vec<Coverage>, CliError> {
    let paths = field_paths(ds);
    let mut out = Vec::new();
    for index in ds.storage().indices() {
        if index.name.starts_with("__lance_") {
            continue;
        }
        let fragments = if index.fragment_bitmap.is_empty() {
            None
        } else {
            let bitmap = lancet::proto::roaring_wire::decode_roaring32(&index.fragment_bitmap)
                .map_err(|e| {
                    CliError::Usage(format!(
                        "index {:?}: fragment_bitmap is not a Roaring bitmap: {e}",
                        index.name
                    ))
                })?;
            Some(bitmap.iter().map(u64::from).collect())
        };
        let columns = (index.fields.iter())
            .map(|id| {
                paths
                    .get(id)
                    .cloned()
                    .unwrap_or_else(|| format!("field {id}"))
            })
            .collect::<Vec<_>>()
            .join(", ");
        out.push(Coverage {
            name: index.name.clone(),
            columns,
            fragments,
        });
    }
    Ok(out)
}

async fn transitions(ds: &Dataset) -> Result<Option<Vec<Transition>>, CliError> {
    let Some(history) = ds.storage().fri_history().await? else {
        return Ok(None);
    };
    let ids = |list: &[lancet::reuse::Digest]| list.iter().map(|d| u64::from(d.id)).collect();
    Ok(Some(
        (history.ledger.transitions.iter())
            .map(|t| Transition {
                dataset_version: t.dataset_version,
                sources: ids(&t.sources),
                destinations: ids(&t.destinations),
                mapping: match t.mapping {
                    Mapping::OrderedCompaction { .. } => "ordered compaction",
                    Mapping::StablePartition { .. } => "stable partition",
                },
            })
            .collect(),
    ))
}

/// Every listed version with its manifest size; the last [`HISTORY`] (up to this one) with
/// their time, operation and the data bytes their transaction adds, in version order. A
/// version cleaned up between the listing and its read is left out.
async fn history(ds: &Dataset) -> Result<Vec<VersionFact>, CliError> {
    use futures::{StreamExt, TryStreamExt};
    let listed = lancet::paths::manifest::list_versions(ds.storage().store()).await?;
    let listed: Vec<_> = listed
        .into_iter()
        .filter(|e| e.version <= ds.version())
        .collect();
    let detailed_from = listed.len().saturating_sub(HISTORY);
    // the detailed versions read HISTORY_READS at a time: on an object store a history is a
    // few rounds of round trips, not two per version one after another
    let facts: Vec<Option<VersionFact>> = futures::stream::iter(listed.into_iter().enumerate())
        .map(|(i, entry)| async move {
            let detail = if i < detailed_from {
                None
            } else if entry.version == ds.version() {
                Some(detail(ds).await?)
            } else {
                match ds.checkout(entry.version).await {
                    Ok(at) => Some(detail(&at).await?),
                    Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(CliError::from(e)),
                }
            };
            Ok(Some(VersionFact {
                version: entry.version,
                manifest_bytes: entry.size,
                detail,
            }))
        })
        .buffered(HISTORY_READS)
        .try_collect()
        .await?;
    Ok(facts.into_iter().flatten().collect())
}

async fn detail(at: &Dataset) -> Result<VersionDetail, CliError> {
    let timestamp = (at.storage().manifest().timestamp.as_ref()).map(|t| t.seconds);
    Ok(match at.storage().transaction().await {
        Ok(Some(t)) => VersionDetail {
            timestamp,
            operation: t.operation_name(),
            data_bytes: t.transaction.operation.as_ref().map_or(0, added_bytes),
        },
        Ok(None) => VersionDetail {
            timestamp,
            operation: "unrecorded".into(),
            data_bytes: 0,
        },
        Err(_) => VersionDetail {
            timestamp,
            operation: "unreadable".into(),
            data_bytes: 0,
        },
    })
}

/// The recorded sizes of the data files of the fragments an operation adds (appended,
/// written by an overwrite, a compaction's outputs, an update's rewritten rows). Deletion
/// files and indexes record no size and are not counted.
fn added_bytes(op: &Operation) -> u64 {
    let sum = |fragments: &[DataFragment]| -> u64 {
        (fragments.iter())
            .flat_map(|f| f.files.iter())
            .map(|d| d.file_size_bytes)
            .fold(0, u64::saturating_add)
    };
    match op {
        Operation::Append(a) => sum(&a.fragments),
        Operation::Overwrite(o) => sum(&o.fragments),
        Operation::Update(u) => sum(&u.new_fragments),
        Operation::Rewrite(r) => (r.groups.iter())
            .map(|g| sum(&g.new_fragments))
            .fold(sum(&r.new_fragments), u64::saturating_add),
        _ => 0,
    }
}

/// The segment encodings of each fragment's row ids, on a stable-row-id table.
fn row_ids(
    ds: &Dataset,
    fragments: &[DataFragment],
) -> Result<Option<Vec<Vec<&'static str>>>, CliError> {
    if !ds.storage().has_stable_row_ids() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(fragments.len());
    for f in fragments {
        let kinds = match ds.storage().row_id_sequence(f)? {
            Some(seq) => seq.segments().iter().map(|s| s.kind()).collect(),
            None => Vec::new(),
        };
        out.push(kinds);
    }
    Ok(Some(out))
}
