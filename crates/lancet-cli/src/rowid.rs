//! `lancet rowid`: the stable row id → address mapping of one version.

use std::io::Write;

use lancet::proto::table::data_fragment::RowIdSequence as PbRowIds;
use lancet::rowid::RowIdSequence;
use lancet::Dataset;
use lancet::RowAddress;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::CliError;

#[derive(Serialize)]
struct FragmentSegments {
    id: u64,
    segments: Vec<&'static str>,
    /// Whether re-encoding the decoded sequence gives the stored bytes.
    byte_identical: bool,
}

/// Every live `(row_id, address)` sorted by row id (the library says what `_rowid` is).
async fn mapping(ds: &Dataset) -> Result<Vec<(u64, u64)>, CliError> {
    Ok(ds.storage().live_row_ids().await?)
}

async fn lookups(ds: &Dataset, ids: &[u64]) -> Result<Vec<Option<u64>>, CliError> {
    Ok(ds.storage().lookup_row_ids(ids).await?)
}

async fn segments(ds: &Dataset) -> Result<Vec<FragmentSegments>, CliError> {
    let mut out = Vec::new();
    for f in ds.fragments().await?.iter() {
        let Some(seq) = ds.storage().row_id_sequence(f)? else {
            continue;
        };
        let stored = match &f.row_id_sequence {
            Some(PbRowIds::InlineRowIds(bytes)) => bytes.as_slice(),
            _ => &[],
        };
        out.push(FragmentSegments {
            id: f.id,
            segments: seq.segments().iter().map(|s| s.kind()).collect(),
            byte_identical: RowIdSequence::encode(&seq) == stored,
        });
    }
    Ok(out)
}

/// `(created_at, last_updated_at)` of each listed row, null where a fragment stores none.
async fn row_versions(
    ds: &Dataset,
    pairs: &[(u64, u64)],
) -> Result<(Vec<Value>, Vec<Value>), CliError> {
    let mut by_fragment = std::collections::HashMap::new();
    for f in ds.fragments().await?.iter() {
        by_fragment.insert(f.id, ds.storage().version_sequences(f)?);
    }
    let mut created = Vec::with_capacity(pairs.len());
    let mut updated = Vec::with_capacity(pairs.len());
    for (_, addr) in pairs {
        let (c, u) = by_fragment
            .get(&u64::from(RowAddress::from_u64(*addr).fragment()))
            .map_or((None, None), |(c, u)| {
                let offset = u64::from(RowAddress::from_u64(*addr).offset());
                let at = |s: &Option<lancet::rowid::VersionSequence>| {
                    s.as_ref().and_then(|s| s.version_at(offset))
                };
                (at(c), at(u))
            });
        created.push(c.map_or(Value::Null, Value::from));
        updated.push(u.map_or(Value::Null, Value::from));
    }
    Ok((created, updated))
}

pub async fn run(
    uri: &str,
    version: Option<u64>,
    json: bool,
    lookup: &[u64],
    with_segments: bool,
    with_versions: bool,
) -> Result<(), CliError> {
    let store = lancet::paths::DatasetStore::open(uri)?;
    let ds = Dataset::open_with(store, version, lancet::Caches::new(Default::default())).await?;
    let mut obj = Map::new();
    obj.insert("version".into(), ds.version().into());
    obj.insert(
        "stable_row_ids".into(),
        ds.storage().has_stable_row_ids().into(),
    );
    if !ds.storage().has_stable_row_ids() {
        obj.insert(
            "note".into(),
            "table has no stable row ids: _rowid is the row address".into(),
        );
    }
    if lookup.is_empty() {
        let pairs = mapping(&ds).await?;
        obj.insert(
            "row_ids".into(),
            pairs.iter().map(|p| p.0).collect::<Vec<_>>().into(),
        );
        obj.insert(
            "row_addrs".into(),
            pairs.iter().map(|p| p.1).collect::<Vec<_>>().into(),
        );
        if with_versions {
            let (created, updated) = row_versions(&ds, &pairs).await?;
            obj.insert("created_at".into(), created.into());
            obj.insert("last_updated_at".into(), updated.into());
        }
    } else {
        let found = lookups(&ds, lookup).await?;
        obj.insert(
            "lookups".into(),
            found
                .into_iter()
                .map(|a| a.map_or(Value::Null, Value::from))
                .collect::<Vec<_>>()
                .into(),
        );
    }
    if with_segments {
        obj.insert(
            "fragments".into(),
            serde_json::to_value(segments(&ds).await?).map_err(std::io::Error::other)?,
        );
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if json {
        serde_json::to_writer(&mut out, &Value::Object(obj)).map_err(std::io::Error::other)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(out, "version {}", ds.version())?;
    if let Some(note) = obj.get("note").and_then(Value::as_str) {
        writeln!(out, "{note}")?;
    }
    if let Some(ids) = obj.get("row_ids").and_then(Value::as_array) {
        writeln!(out, "{} live rows", ids.len())?;
    }
    if let Some(found) = obj.get("lookups").and_then(Value::as_array) {
        for (id, addr) in lookup.iter().zip(found) {
            match addr.as_u64() {
                Some(a) => writeln!(
                    out,
                    "row id {id} -> fragment {} offset {}",
                    RowAddress::from_u64(a).fragment(),
                    RowAddress::from_u64(a).offset()
                )?,
                None => writeln!(out, "row id {id} -> not live")?,
            }
        }
    }
    if let Some(frags) = obj.get("fragments").and_then(Value::as_array) {
        for f in frags {
            writeln!(
                out,
                "fragment {}: {} (byte identical: {})",
                f["id"], f["segments"], f["byte_identical"]
            )?;
        }
    }
    Ok(())
}
