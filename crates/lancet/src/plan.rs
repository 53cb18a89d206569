//! A change planned on one version: the manifest, index list and storage actions it makes
//! there, the data files it adds and the reserved fragment ids its new fragments take. The
//! commit loop plans a change again on every version it is prepared on.

use lancet_proto::table::transaction::Operation;
use lancet_proto::table::DataFragment;
use lancet_tree::Action;
use lancet_txn::build::Change;
use lancet_txn::finish;
use lancet_txn::{DataFileFacts, TxnError};
use roaring::RoaringBitmap;
use tracing::Instrument;

use lancet_read::error::{Error, Result};
use lancet_read::history;
use lancet_read::indexes;
use lancet_read::snapshot::Snapshot;
use lancet_read::verify;

/// An operation applied to one version, ready for the commit loop.
pub(crate) struct Built {
    pub manifest: lancet_proto::table::Manifest,
    pub indices: Vec<lancet_proto::table::IndexMetadata>,
    pub actions: Vec<(u64, Action)>,
    /// The data files the operation adds, as stored.
    pub data_files: Vec<DataFileFacts>,
    /// Reserved ids its new fragments take (see [`Dataset::reserved_ids`]).
    pub reserved: Vec<u64>,
    /// The manifest holds the change's own fragments or tree (a restore, a conversion).
    pub replaces_content: bool,
}

/// Fragment `id` of this version, or the operation's typed error naming it.
pub(crate) async fn require_fragment(
    snap: &Snapshot,
    id: u64,
    operation: &'static str,
) -> Result<DataFragment> {
    snap.fragment(id)
        .await?
        .ok_or_else(|| not_in(snap, id, operation))
}

/// `change` planned on this version: lancet-txn's plan, finished over the records and facts
/// it names (read here, each once), row ids and version sequences given by lancet-rowid, the
/// storage actions of the records it writes, and the facts of the data files it adds.
pub(crate) async fn build(snap: &Snapshot, change: &Change) -> Result<Built> {
    let base = lancet_txn::Version {
        manifest: snap.manifest(),
        indices: snap.indices(),
    };
    let operation = &change.operation;
    let plan = lancet_txn::build::plan_change(base, change)?;
    if plan.replaces_content {
        return Ok(Built {
            manifest: plan.manifest,
            indices: plan.indices,
            actions: Vec::new(),
            data_files: Vec::new(),
            reserved: Vec::new(),
            replaces_content: true,
        });
    }
    let needs = finish::needs(&plan, snap.manifest());
    let (all, records, held, reserved) = read_needs(snap, &needs).await?;
    let facts = finish::Facts {
        version: snap.version(),
        all: all.as_deref(),
        records: &records,
        held: &held,
        reserved: &reserved,
    };
    let mut finished = finish::finish(plan, operation, facts)?;
    // a rewrite's destinations carry the rows' ids and versions as the rewrite wrote them
    if snap.has_stable_row_ids() && !matches!(operation, Operation::Rewrite(_)) {
        let version = snap.version() + 1;
        let moved_only =
            lancet_rowid::assign::stamp_change(&mut finished, version, &snap.manifest_path())?;
        if let Operation::Update(u) = operation {
            lancet_txn::build::cover_moved_rows(&mut finished.indices, u, &moved_only)?;
        }
    }
    let added = finished.added_files();
    let span = tracing::debug_span!("data_file_facts", files = added.len());
    let data_files = verify::data_file_facts(snap, &added)
        .instrument(span)
        .await?;
    let removed = finished.removed_all.iter().copied();
    let removed = removed.chain(finished.removed.iter().map(|f| f.id));
    let actions = lancet_tree::change_actions(removed, &finished.updated, finished.created);
    Ok(Built {
        manifest: finished.manifest,
        indices: finished.indices,
        actions,
        data_files,
        reserved: finished.reserved,
        replaces_content: false,
    })
}

/// What `needs` names, read from this version: every fragment (when the change needs them
/// all), else the records it touches; which of its explicit ids the version holds; and, when
/// it holds none of them, which are reserved.
async fn read_needs(snap: &Snapshot, needs: &finish::Needs) -> Result<Read> {
    let all = match needs.all_fragments {
        true => Some(snap.fragments().await?),
        false => None,
    };
    let mut records = Vec::with_capacity(needs.records.len());
    if all.is_none() {
        for id in &needs.records {
            records.extend(snap.fragment(*id).await?);
        }
    }
    let mut held = Vec::new();
    for id in &needs.explicit_ids {
        if snap.fragment(*id).await?.is_some() {
            held.push(*id);
        }
    }
    let reserved = match needs.explicit_ids.is_empty() || !held.is_empty() {
        true => Vec::new(),
        false => reserved_ids(snap, &needs.explicit_ids).await?,
    };
    Ok((all, records, held, reserved))
}

/// Every fragment (or none), the records, the held ids and the reserved ids.
type Read = (
    Option<std::sync::Arc<[DataFragment]>>,
    Vec<DataFragment>,
    Vec<u64>,
    Vec<u64>,
);

/// Those of `ids` (each at or below `max_fragment_id`, none in this version) that a
/// ReserveFragments reserved and nothing used since: the version that raised
/// `max_fragment_id` over the id recorded a ReserveFragments, no version since held the
/// id, and no index entry of this version names it. Looked for at most
/// [`RESERVATION_LOOKBACK`] versions back; an id not found so is left out (and the
/// invariants refuse a fragment that takes it).
pub(crate) async fn reserved_ids(snap: &Snapshot, ids: &[u64]) -> Result<Vec<u64>> {
    let mut named = RoaringBitmap::new();
    for m in snap.indices() {
        named |= indexes::index_fragments(snap, m)?.unwrap_or_default();
    }
    let mut out = Vec::new();
    'ids: for &id in ids {
        if u32::try_from(id).is_ok_and(|i| named.contains(i)) {
            continue;
        }
        let mut newer = snap.clone();
        for _ in 0..RESERVATION_LOOKBACK {
            let v = newer.version();
            if v <= 1 {
                continue 'ids;
            }
            let older = match snap.checkout(v - 1).await {
                Ok(d) => d,
                // a cleaned-up version: the reservation cannot be established
                Err(_) => continue 'ids,
            };
            let below = older
                .manifest()
                .max_fragment_id
                .is_none_or(|m| u64::from(m) < id);
            if below {
                let reserved = history::transaction(&newer).await?.is_some_and(|t| {
                    matches!(
                        t.transaction.operation,
                        Some(Operation::ReserveFragments(_))
                    )
                });
                if reserved {
                    out.push(id);
                }
                continue 'ids;
            }
            if older.fragment(id).await?.is_some() {
                continue 'ids;
            }
            newer = older;
        }
    }
    Ok(out)
}

/// The operation's error for a fragment `ds` does not have.
fn not_in(ds: &Snapshot, id: u64, operation: &'static str) -> Error {
    Error::Txn(TxnError::Operation {
        operation,
        reason: format!("fragment {id} is not in version {}", ds.version()),
    })
}

/// How many versions back [`Dataset::reserved_ids`] looks for the ReserveFragments that
/// reserved an id.
const RESERVATION_LOOKBACK: usize = 256;
