//! A table's indexes from Python beyond building them: pylance's `drop_index` and
//! `describe_indices`.

use lancet::proto::table::IndexMetadata;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::dataset::PyDataset;
use crate::errors::IntoPy;
use crate::runtime::block_on;

/// Drops index `name` (every segment) in one CreateIndex; returns the new handle. No index
/// of that name is `lancet.errors.IndexNotFoundError` (a `RuntimeError`, as pylance's).
#[pyfunction]
pub fn drop_index(py: Python<'_>, ds: &PyDataset, name: String) -> PyResult<PyDataset> {
    let handle = ds.handle().clone();
    let committed =
        block_on(py, async move { handle.storage().drop_index(&name).await }).py_err()?;
    Ok(ds.after(committed.dataset))
}

/// Every index of this version as pylance's `describe_indices` describes it, by name: type URL,
/// type, rows indexed, keyed fields, and each segment (pylance's `IndexSegmentDescription`
/// fields and those of its `Index` entry).
#[pyfunction]
pub fn describe_indices<'py>(py: Python<'py>, ds: &PyDataset) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let handle = ds.handle().clone();
    let mut names: Vec<String> = (handle.storage().index_summaries().py_err()?)
        .into_iter()
        .map(|s| s.name)
        .collect();
    names.sort();
    let counted = {
        let (handle, names) = (handle.clone(), names.clone());
        block_on(py, async move {
            let mut rows = Vec::with_capacity(names.len());
            for name in &names {
                rows.push(handle.storage().rows_indexed(name).await?);
            }
            Ok(rows)
        })
        .py_err()?
    };
    let mut out = Vec::with_capacity(names.len());
    for (name, rows) in names.iter().zip(counted) {
        let segments: Vec<&IndexMetadata> = handle
            .storage()
            .indices()
            .iter()
            .filter(|m| &m.name == name)
            .collect();
        let Some(first) = segments.first() else {
            continue;
        };
        let d = PyDict::new(py);
        d.set_item("name", name)?;
        let type_url = first
            .index_details
            .as_ref()
            .map_or("", |a| a.type_url.as_str());
        d.set_item("type_url", type_url)?;
        let index_type = if name == lancet::txn::FRI_INDEX_NAME {
            "FragmentReuse".to_string()
        } else {
            lancet::proto::index_type_name(type_url).unwrap_or_else(|| "Unknown".into())
        };
        d.set_item("index_type", index_type)?;
        d.set_item("num_rows_indexed", rows)?;
        // the keyed prefix: `fields` less the covering fields carried after it
        let keyed = first
            .fields
            .len()
            .saturating_sub(first.covering_fields.len());
        d.set_item(
            "fields",
            first.fields.get(..keyed).unwrap_or_default().to_vec(),
        )?;
        let described = segments
            .iter()
            .map(|m| crate::transactions::index(py, m))
            .collect::<PyResult<Vec<_>>>()?;
        d.set_item("segments", described)?;
        let total: Option<u64> = segments
            .iter()
            .map(|m| {
                (!m.files.is_empty()).then(|| m.files.iter().map(|f| f.size_bytes).sum::<u64>())
            })
            .sum();
        d.set_item("total_size_bytes", total)?;
        out.push(d);
    }
    Ok(out)
}

/// The statistics of each segment of BTree index `name`, as Lance 14.0.2's `index_stats`
/// reports them, by segment uuid: the smallest value it answers for (the first page not
/// wholly NULL's `min`), the largest (the last page's `max`), both as text (None when every
/// page is NULL), and its number of pages.
#[pyfunction]
pub fn btree_statistics<'py>(
    py: Python<'py>,
    ds: &PyDataset,
    name: String,
) -> PyResult<Bound<'py, PyDict>> {
    let handle = ds.handle().clone();
    let segments = block_on(
        py,
        async move { handle.storage().btree_segments(&name).await },
    )
    .py_err()?;
    let out = PyDict::new(py);
    for segment in segments.iter() {
        let lookup = segment.index.lookup();
        let (min, max) = match lookup.bounds() {
            Some((min, max)) => (Some(shown(&min)?), Some(shown(&max)?)),
            None => (None, None),
        };
        let uuid = segment
            .metadata
            .uuid
            .as_ref()
            .map(crate::transactions::uuid_text);
        out.set_item(uuid, (min, max, lookup.num_pages()))?;
    }
    Ok(out)
}

/// The value of a one-row array as text (a NULL is `NULL`, as Lance shows it).
fn shown(value: &arrow_array::ArrayRef) -> PyResult<String> {
    let options = arrow_cast::display::FormatOptions::default().with_null("NULL");
    let formatter = arrow_cast::display::ArrayFormatter::try_new(value.as_ref(), &options)
        .map_err(|e| crate::errors::invalid(e.to_string()))?;
    Ok(formatter.value(0).to_string())
}

/// pylance's `prewarm_index`: every page of the BTree `name` read into the session's page
/// cache (each segment's pages holding values, then those holding NULLs), so later searches
/// of this table's handles read none; the pages read. No BTree of that name is
/// `IndexNotFoundError`.
#[pyfunction]
pub fn prewarm_index(py: Python<'_>, ds: &PyDataset, name: String) -> PyResult<u64> {
    use lancet::btree::Query;
    use std::ops::Bound::Unbounded;
    let handle = ds.handle().clone();
    block_on(py, async move {
        let segments = handle.storage().btree_segments(&name).await?;
        let mut pages = 0;
        for s in segments.iter() {
            let before = s.index.pages_read();
            s.index.search(&Query::Range(Unbounded, Unbounded)).await?;
            s.index.search(&Query::IsNull).await?;
            pages += s.index.pages_read().saturating_sub(before);
        }
        Ok::<_, lancet::Error>(pages)
    })
    .py_err()
}
