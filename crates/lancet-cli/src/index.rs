//! `lancet index list|search|build`: BTree indexes of a table.

use std::io::Write;
use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::DataType;
use lancet::btree::{NullableIdSet, Query};
use lancet::Dataset;
use lancet::RowAddress;
use roaring::RoaringTreemap;
use serde_json::{json, Value};
use std::ops::Bound;

use crate::error::CliError;
use crate::filter::{self, Expr, Leaf, Lit, Op};

async fn open(uri: &str, version: Option<u64>) -> Result<Dataset, CliError> {
    let store = lancet::paths::DatasetStore::open(uri)?;
    Ok(Dataset::open_with(store, version, lancet::Caches::new(Default::default())).await?)
}

pub async fn list(uri: &str, version: Option<u64>, json_out: bool) -> Result<(), CliError> {
    let ds = open(uri, version).await?;
    let mut out = Vec::new();
    for s in ds.index_summaries()? {
        out.push(json!({
            "name": s.name,
            "type": s.index_type,
            "columns": s.columns,
            "segments": s.segments,
            "index_version": s.index_version,
            "dataset_version": s.dataset_version,
            "fragment_ids": s.fragments.iter().collect::<Vec<_>>(),
            "answered_by_lancet": s.answered_by_lancet,
        }));
    }
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    if json_out {
        writeln!(w, "{}", json!({ "indices": out }))?;
    } else if out.is_empty() {
        writeln!(w, "no indexes")?;
    } else {
        for i in &out {
            let answered = if i["answered_by_lancet"] == json!(true) {
                "answered through it"
            } else {
                "not used by lancet"
            };
            writeln!(
                w,
                "{} ({}) on {} ({} segment(s), built at version {}, {} fragments; {answered})",
                i["name"].as_str().unwrap_or(""),
                i["type"].as_str().unwrap_or(""),
                i["columns"],
                i["segments"],
                i["dataset_version"],
                i["fragment_ids"].as_array().map_or(0, Vec::len)
            )?;
        }
    }
    Ok(())
}

fn cast_to(arr: ArrayRef, t: &DataType, what: &Lit) -> Result<ArrayRef, CliError> {
    let opts = CastOptions {
        safe: false,
        ..Default::default()
    };
    cast_with_options(&arr, t, &opts)
        .map_err(|e| CliError::Usage(format!("literal {what:?} does not fit a {t} column: {e}")))
}

/// The literal as a one-element array of the column's type.
fn scalar(lit: &Lit, t: &DataType) -> Result<ArrayRef, CliError> {
    let arr: ArrayRef = match lit {
        Lit::Null => return Ok(new_null_array(t, 1)),
        Lit::Int(i) if t.is_floating() => Arc::new(Float64Array::from(vec![*i as f64])),
        Lit::Int(i) => Arc::new(Int64Array::from(vec![*i])),
        Lit::Float(f) if t.is_integer() => {
            if f.fract() != 0.0 {
                return Err(CliError::Usage(format!(
                    "literal {f} is not an integer but the column is {t}"
                )));
            }
            Arc::new(Int64Array::from(vec![*f as i64]))
        }
        Lit::Float(f) => Arc::new(Float64Array::from(vec![*f])),
        Lit::Str(s) => Arc::new(StringArray::from(vec![s.as_str()])),
        Lit::Bool(b) => Arc::new(BooleanArray::from(vec![*b])),
    };
    cast_to(arr, t, lit)
}

/// The BTree queries of one leaf, to be combined with AND (BETWEEN with a NULL end is
/// `x >= a AND x <= b`).
fn queries(leaf: &Leaf, t: &DataType) -> Result<Vec<Query>, CliError> {
    let q = match leaf {
        Leaf::Cmp(_, Lit::Null) => Query::Equals(new_null_array(t, 1)),
        Leaf::Cmp(op, v) => {
            let s = scalar(v, t)?;
            match op {
                Op::Eq => Query::Equals(s),
                Op::Lt => Query::Range(Bound::Unbounded, Bound::Excluded(s)),
                Op::LtEq => Query::Range(Bound::Unbounded, Bound::Included(s)),
                Op::Gt => Query::Range(Bound::Excluded(s), Bound::Unbounded),
                Op::GtEq => Query::Range(Bound::Included(s), Bound::Unbounded),
            }
        }
        Leaf::Between(a, b) if *a == Lit::Null || *b == Lit::Null => {
            let mut out = queries(&Leaf::Cmp(Op::GtEq, a.clone()), t)?;
            out.extend(queries(&Leaf::Cmp(Op::LtEq, b.clone()), t)?);
            return Ok(out);
        }
        Leaf::Between(a, b) => Query::Range(
            Bound::Included(scalar(a, t)?),
            Bound::Included(scalar(b, t)?),
        ),
        Leaf::In(values) => {
            let arrays = values
                .iter()
                .map(|v| scalar(v, t))
                .collect::<Result<Vec<_>, _>>()?;
            let refs: Vec<&dyn arrow_array::Array> = arrays.iter().map(|a| a.as_ref()).collect();
            Query::IsIn(
                arrow_select::concat::concat(&refs)
                    .map_err(lancet::btree::BTreeError::from)
                    .map_err(lancet::Error::from)?,
            )
        }
        Leaf::IsNull => Query::IsNull,
        Leaf::Prefix(p) if matches!(t, DataType::Utf8 | DataType::LargeUtf8) => {
            Query::LikePrefix(p.clone())
        }
        Leaf::Prefix(_) => {
            return Err(CliError::Usage(format!(
                "LIKE/starts_with need a string column, not {t}"
            )))
        }
    };
    Ok(vec![q])
}

struct Search<'a> {
    ds: &'a Dataset,
    /// Every physical row address of the version: the domain NOT complements in.
    universe: RoaringTreemap,
    row_ids: Option<Arc<lancet::rowid::RowIdIndex>>,
    /// Fragments read directly because no segment answers for them (summed over leaves).
    scanned: std::cell::Cell<u64>,
}

impl Search<'_> {
    async fn leaf(&self, column: &str, leaf: &Leaf) -> Result<NullableIdSet, CliError> {
        let field = self
            .ds
            .manifest()
            .fields
            .iter()
            .find(|f| f.name == column && f.parent_id == -1)
            .ok_or_else(|| CliError::Usage(format!("no column {column:?}")))?;
        let name = self
            .ds
            .btree_on_field(field.id)
            .ok_or_else(|| CliError::Usage(format!("column {column:?} has no BTree index")))?;
        let segments = self.ds.btree_segments(&name).await?;
        let value_type = segments
            .first()
            .map(|s| s.index.lookup().value_type().clone())
            .ok_or_else(|| CliError::Usage(format!("index {name} has no segments")))?;
        let mut result: Option<NullableIdSet> = None;
        for q in queries(leaf, &value_type)? {
            let mut part = NullableIdSet::default();
            for seg in &segments {
                let r = seg.index.search(&q).await.map_err(lancet::Error::from)?;
                let mut r = self.ds.segment_answer(seg, r).await?;
                if !seg.ids_are_addresses(self.ds.has_stable_row_ids()) {
                    r = self.ids_to_addresses(&r)?;
                }
                // translated answers of two segments may share a destination fragment
                part = part.or(&r);
            }
            let covered = self.ds.answered_fragments(&segments).await?;
            let scanned = self
                .ds
                .fragments()
                .await?
                .iter()
                .filter(|f| u32::try_from(f.id).is_ok_and(|id| !covered.contains(id)))
                .count();
            self.scanned.set(self.scanned.get() + scanned as u64);
            part = part.or(&self.ds.scan_unindexed(field.id, &covered, &q).await?);
            // Entries for rows no longer in this version are not answers.
            part.true_ids &= &self.universe;
            part.null_ids &= &self.universe;
            result = Some(match result {
                None => part,
                Some(prev) => prev.and(&part),
            });
        }
        Ok(result.unwrap_or_default())
    }

    /// Legacy segments (index_version 0 on stable-row-id tables) store row ids.
    fn ids_to_addresses(&self, r: &NullableIdSet) -> Result<NullableIdSet, CliError> {
        let index = self
            .row_ids
            .as_ref()
            .ok_or_else(|| CliError::Usage("row id index missing".into()))?;
        let map = |ids: &RoaringTreemap| ids.iter().filter_map(|id| index.get(id)).collect();
        Ok(NullableIdSet::new(map(&r.true_ids), map(&r.null_ids)))
    }

    fn eval<'b>(
        &'b self,
        e: &'b Expr,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<NullableIdSet, CliError>> + 'b>>
    {
        Box::pin(async move {
            Ok(match e {
                Expr::Leaf { column, leaf } => self.leaf(column, leaf).await?,
                Expr::Not(inner) => self.eval(inner).await?.not(&self.universe),
                Expr::And(a, b) => self.eval(a).await?.and(&self.eval(b).await?),
                Expr::Or(a, b) => self.eval(a).await?.or(&self.eval(b).await?),
            })
        })
    }
}

pub async fn search(
    uri: &str,
    version: Option<u64>,
    filter_text: &str,
    json_out: bool,
    no_deletions: bool,
) -> Result<(), CliError> {
    let expr = filter::push_not(filter::parse(filter_text)?);
    let ds = open(uri, version).await?;
    let row_ids = if ds.has_stable_row_ids() {
        Some(ds.row_id_index().await?)
    } else {
        None
    };
    let search = Search {
        ds: &ds,
        universe: ds.row_addresses(|_| true).await?,
        row_ids,
        scanned: std::cell::Cell::new(0),
    };
    let mut result = search.eval(&expr).await?;
    if !no_deletions {
        let mut deleted = RoaringTreemap::new();
        for (f, d) in ds
            .fragments()
            .await?
            .iter()
            .zip(ds.deletion_vectors().await?)
        {
            if let (Some(d), Ok(id)) = (d, u32::try_from(f.id)) {
                deleted.extend(d.iter().map(|o| RowAddress::new(id, o).as_u64()));
            }
        }
        result.true_ids -= &deleted;
        result.null_ids -= &deleted;
    }
    let to_row_ids = |addrs: &RoaringTreemap| -> Vec<u64> {
        match &search.row_ids {
            Some(index) => {
                let mut ids: Vec<u64> = addrs.iter().filter_map(|a| index.row_id_at(a)).collect();
                ids.sort_unstable();
                ids
            }
            None => addrs.iter().collect(),
        }
    };
    let mut pages_read = 0;
    for (name, _) in ds.btree_indices() {
        for seg in ds.btree_segments(&name).await? {
            pages_read += seg.index.pages_read();
        }
    }
    let out = json!({
        "row_ids": to_row_ids(&result.true_ids),
        "null_row_ids": to_row_ids(&result.null_ids),
        "pages_read": pages_read,
        "scanned_fragments": search.scanned.get(),
    });
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    if json_out {
        writeln!(w, "{out}")?;
    } else {
        writeln!(
            w,
            "{} rows match, {} rows are NULL for the filter, {} pages read",
            result.true_ids.len(),
            result.null_ids.len(),
            pages_read
        )?;
        let shown: Vec<&Value> = out["row_ids"]
            .as_array()
            .map(|a| a.iter().take(20).collect())
            .unwrap_or_default();
        writeln!(w, "first row ids: {shown:?}")?;
    }
    Ok(())
}

pub async fn build(uri: &str, column: &str, zone_size: u64) -> Result<(), CliError> {
    let ds = open(uri, None).await?;
    let next = ds.build_btree(column, zone_size).await?;
    println!(
        "built BTree {column}_idx ({zone_size}-row pages) and committed version {}",
        next.version()
    );
    Ok(())
}
