//! `lancet inspect`: one version of a table as JSON or a short summary.

use std::io::Write;

use base64::Engine;
use lancet::paths::flags::{flag_names, FlagName};
use lancet::paths::ObjectLocation;
use lancet::proto::prost::Message;
use lancet::proto::table::IndexMetadata;
use lancet::{Dataset, FragmentSummary};
use serde::Serialize;
use serde_json::Value;

use crate::error::CliError;

#[derive(Serialize)]
pub struct Report {
    pub version: u64,
    pub manifest_path: String,
    pub reader_feature_flags: Vec<Value>,
    pub writer_feature_flags: Vec<Value>,
    pub max_fragment_id: Option<u32>,
    pub next_row_id: u64,
    pub stable_row_ids: bool,
    /// Visible rows; null when a fragment's counts are unknown.
    pub num_rows: Option<u64>,
    /// What the commit that made this version did (its Lance transaction).
    pub transaction: Option<TransactionReport>,
    /// Why the transaction could not be read (the version still opens, as in Lance).
    pub transaction_error: Option<String>,
    pub fragments: Vec<FragmentReport>,
    pub indices: Vec<IndexReport>,
}

#[derive(Serialize)]
pub struct TransactionReport {
    /// Lance's operation name (`Append`, `CreateIndex`, ..., `Unknown(n)`).
    pub operation: String,
    pub read_version: u64,
    pub uuid: String,
}

#[derive(Serialize)]
pub struct FragmentReport {
    pub id: u64,
    pub physical_rows: Option<u64>,
    pub num_deleted_rows: Option<u64>,
    /// Stored `DataFile.path`s, in order.
    pub files: Vec<String>,
    /// Dataset-relative path (a full URI when it lives in another base), or null.
    pub deletion_file: Option<String>,
    /// The fragment's exact stored `DataFragment` bytes, base64.
    pub proto_b64: String,
}

#[derive(Serialize)]
pub struct IndexReport {
    pub name: String,
    pub uuid: String,
    pub fields: Vec<i32>,
    pub index_version: i32,
    pub type_url: Option<String>,
    pub dataset_version: u64,
    /// Covered fragment ids; null when the bitmap is empty (unknown).
    pub fragment_ids: Option<Vec<u32>>,
}

fn flags_json(word: u64) -> Vec<Value> {
    flag_names(word)
        .into_iter()
        .map(|f| match f {
            FlagName::Known(name) => Value::from(name),
            FlagName::Unknown(bit) => Value::from(bit),
        })
        .collect()
}

fn location_text(loc: &ObjectLocation) -> String {
    if loc.base.base_id.is_none() {
        loc.path.clone()
    } else {
        loc.display_uri()
    }
}

fn index_report(index: &IndexMetadata) -> Result<IndexReport, CliError> {
    let uuid = index
        .uuid
        .as_ref()
        .map(|u| lancet::paths::ObjectUuid::from_slice(&u.uuid))
        .transpose()?
        .map(|u| u.to_string())
        .unwrap_or_default();
    let fragment_ids = if index.fragment_bitmap.is_empty() {
        None
    } else {
        let bitmap = lancet::proto::roaring_wire::decode_roaring32(&index.fragment_bitmap)
            .map_err(|e| {
                CliError::Usage(format!(
                    "index {:?}: fragment_bitmap is not a Roaring bitmap: {e}",
                    index.name
                ))
            })?;
        Some(bitmap.iter().collect())
    };
    Ok(IndexReport {
        name: index.name.clone(),
        uuid,
        fields: index.fields.clone(),
        index_version: index.index_version.unwrap_or(0),
        type_url: index.index_details.as_ref().map(|a| a.type_url.clone()),
        dataset_version: index.dataset_version,
        fragment_ids,
    })
}

/// Builds the report of one opened version. On a tree version every fragment is resolved
/// (the whole tree is read and checked) and `proto_b64` is the resolved `DataFragment`.
pub async fn report(ds: &Dataset) -> Result<Report, CliError> {
    let m = ds.storage().manifest();
    let decoded = &ds.storage().manifest_file().decoded;
    let b64 = base64::engine::general_purpose::STANDARD;
    let all = ds.fragments().await?;
    let mut fragments = Vec::with_capacity(all.len());
    for (i, f) in all.iter().enumerate() {
        let summary = FragmentSummary::of(f);
        let deletion_file = ds
            .storage()
            .deletion_file_location(f)?
            .map(|loc| location_text(&loc));
        fragments.push(FragmentReport {
            id: f.id,
            physical_rows: summary.physical_rows,
            num_deleted_rows: summary.num_deleted_rows,
            files: f.files.iter().map(|d| d.path.clone()).collect(),
            deletion_file,
            proto_b64: if ds.storage().tree().is_some() {
                b64.encode(f.encode_to_vec())
            } else {
                b64.encode(decoded.fragment_bytes(i).unwrap_or_default())
            },
        });
    }
    let indices = ds
        .storage()
        .indices()
        .iter()
        .map(index_report)
        .collect::<Result<_, _>>()?;
    let (transaction, transaction_error) = match ds.storage().transaction().await {
        Ok(t) => (
            t.map(|t| TransactionReport {
                operation: t.operation_name(),
                read_version: t.transaction.read_version,
                uuid: t.transaction.uuid.clone(),
            }),
            None,
        ),
        Err(e) => (None, Some(e.to_string())),
    };
    Ok(Report {
        transaction,
        transaction_error,
        version: ds.version(),
        manifest_path: ds.storage().manifest_path(),
        reader_feature_flags: flags_json(m.reader_feature_flags),
        writer_feature_flags: flags_json(m.writer_feature_flags),
        max_fragment_id: m.max_fragment_id,
        next_row_id: m.next_row_id,
        stable_row_ids: ds.storage().has_stable_row_ids(),
        num_rows: ds.num_rows(),
        fragments,
        indices,
    })
}

fn summary(r: &Report, out: &mut impl Write) -> std::io::Result<()> {
    let names = |v: &[Value]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.iter()
                .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    writeln!(out, "version         {} ({})", r.version, r.manifest_path)?;
    writeln!(
        out,
        "rows            {}",
        r.num_rows.map_or("unknown".into(), |n| n.to_string())
    )?;
    match (&r.transaction, &r.transaction_error) {
        (Some(t), _) => writeln!(
            out,
            "operation       {} (read version {})",
            t.operation, t.read_version
        )?,
        (None, Some(e)) => writeln!(out, "operation       unreadable: {e}")?,
        (None, None) => writeln!(out, "operation       none recorded")?,
    }
    writeln!(out, "fragments       {}", r.fragments.len())?;
    writeln!(out, "reader flags    {}", names(&r.reader_feature_flags))?;
    writeln!(out, "writer flags    {}", names(&r.writer_feature_flags))?;
    writeln!(out, "stable row ids  {}", r.stable_row_ids)?;
    for f in r.fragments.iter().take(20) {
        writeln!(
            out,
            "  fragment {:>6}: {} rows, {} deleted, {} file(s){}",
            f.id,
            f.physical_rows.map_or("?".into(), |n| n.to_string()),
            f.num_deleted_rows.map_or("?".into(), |n| n.to_string()),
            f.files.len(),
            f.deletion_file
                .as_ref()
                .map_or(String::new(), |d| format!(", deletions in {d}"))
        )?;
    }
    if r.fragments.len() > 20 {
        writeln!(out, "  ... {} more fragments", r.fragments.len() - 20)?;
    }
    for i in &r.indices {
        writeln!(
            out,
            "  index {:?} ({}) on fields {:?}, built at version {}",
            i.name,
            i.type_url.as_deref().unwrap_or("?"),
            i.fields,
            i.dataset_version
        )?;
    }
    Ok(())
}

pub async fn run(uri: &str, version: Option<u64>, json: bool) -> Result<(), CliError> {
    let store = lancet::paths::DatasetStore::open(uri)?;
    let ds = Dataset::open_with(store, version, lancet::Caches::new(Default::default())).await?;
    let report = report(&ds).await?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if json {
        serde_json::to_writer(&mut out, &report).map_err(std::io::Error::other)?;
        writeln!(out)?;
    } else {
        summary(&report, &mut out)?;
    }
    Ok(())
}
