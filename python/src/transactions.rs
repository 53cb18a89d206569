//! Transactions as pylance reads them (`read_transaction`, `get_transactions`): each
//! version's recorded operation decoded into the plain values `lancet/transaction.py` builds
//! pylance's `Transaction` and `LanceOperation` objects from. Fragments stay their
//! `DataFragment` protobuf bytes and schemas their `lance.file.Field` bytes (the Python
//! `FragmentMetadata` and `LanceSchema` decode them); everything else becomes dicts, lists,
//! numbers and strings.

use std::collections::BTreeMap;

use lancet::paths::ObjectUuid;
use lancet::proto::file::Field;
use lancet::proto::table::transaction::{Operation, UpdateMap};
use lancet::proto::table::{DataFragment, IndexMetadata};
use lancet::proto::StoredTransaction;
use lancet::{Dataset, ErrorKind};
use prost::Message;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::dataset::PyDataset;
use crate::errors::{raise, IntoPy};
use crate::fragments::data_file;
use crate::runtime::block_on;

/// The transaction that made `version` of this table, or `None` when it records none.
#[pyfunction]
pub fn read_transaction<'py>(
    py: Python<'py>,
    ds: &PyDataset,
    version: u64,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let handle = ds.handle().clone();
    let stored = block_on(py, async move {
        let at = handle.checkout(version).await?;
        at.storage().transaction().await
    })
    .py_err()?;
    stored.map(|t| transaction(py, &t, version)).transpose()
}

/// The transactions of this handle's version and the ones before it, newest first, as Lance
/// 14.0.2's `get_transactions`: at least one, at most `recent` (`None` for a version that
/// records none), stopping at the first version that is gone.
#[pyfunction]
pub fn get_transactions<'py>(
    py: Python<'py>,
    ds: &PyDataset,
    recent: usize,
) -> PyResult<Vec<Option<Bound<'py, PyDict>>>> {
    let handle = ds.handle().clone();
    let stored = block_on(py, async move { walk_back(handle, recent).await }).py_err()?;
    stored
        .into_iter()
        .map(|(v, t)| t.map(|t| transaction(py, &t, v)).transpose())
        .collect()
}

pub(crate) async fn walk_back(
    handle: Dataset,
    recent: usize,
) -> lancet::Result<Vec<(u64, Option<StoredTransaction>)>> {
    let mut out = Vec::new();
    let mut at = handle;
    loop {
        out.push((at.version(), at.storage().transaction().await?));
        if out.len() >= recent || at.version() <= 1 {
            return Ok(out);
        }
        match at.checkout(at.version() - 1).await {
            Ok(before) => at = before,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e),
        }
    }
}

/// `{read_version, uuid, transaction_properties, operation, args}`.
fn transaction<'py>(
    py: Python<'py>,
    t: &StoredTransaction,
    version: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("read_version", t.transaction.read_version)?;
    out.set_item("uuid", &t.transaction.uuid)?;
    out.set_item(
        "transaction_properties",
        t.transaction.transaction_properties.clone(),
    )?;
    let Some(op) = &t.transaction.operation else {
        return Err(raise(
            "UnsupportedError",
            format!(
                "version {version} records operation {}, which pylance has no LanceOperation for",
                t.operation_name()
            ),
        ));
    };
    out.set_item("operation", lancet::proto::transaction::operation_name(op))?;
    out.set_item("args", operation(py, op, version)?)?;
    Ok(out)
}

/// The arguments of pylance's `LanceOperation` class of `op`, by its field names.
fn operation<'py>(py: Python<'py>, op: &Operation, version: u64) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match op {
        Operation::Append(a) => d.set_item("fragments", fragments(py, &a.fragments))?,
        Operation::Delete(x) => {
            d.set_item("updated_fragments", fragments(py, &x.updated_fragments))?;
            d.set_item("deleted_fragment_ids", x.deleted_fragment_ids.clone())?;
            d.set_item("predicate", &x.predicate)?;
        }
        Operation::Overwrite(o) => {
            d.set_item("new_schema", schema(py, &o.schema, &o.schema_metadata)?)?;
            d.set_item("fragments", fragments(py, &o.fragments))?;
        }
        Operation::CreateIndex(c) => {
            d.set_item("new_indices", indices(py, &c.new_indices)?)?;
            d.set_item("removed_indices", indices(py, &c.removed_indices)?)?;
        }
        Operation::Rewrite(r) => rewrite(py, &d, r)?,
        Operation::Merge(m) => {
            d.set_item("fragments", fragments(py, &m.fragments))?;
            d.set_item("schema", schema(py, &m.schema, &m.schema_metadata)?)?;
            d.set_item("preserves_nullability", m.preserves_nullability)?;
        }
        Operation::Project(p) => {
            d.set_item("schema", schema(py, &p.schema, &BTreeMap::new())?)?;
            d.set_item("preserves_nullability", p.preserves_nullability)?;
        }
        Operation::Restore(r) => d.set_item("version", r.version)?,
        Operation::Clone(c) => {
            d.set_item("is_shallow", c.is_shallow)?;
            d.set_item("ref_name", &c.ref_name)?;
            d.set_item("ref_version", c.ref_version)?;
            d.set_item("ref_path", &c.ref_path)?;
            d.set_item("branch_name", &c.branch_name)?;
        }
        Operation::Update(u) => {
            d.set_item("removed_fragment_ids", u.removed_fragment_ids.clone())?;
            d.set_item("updated_fragments", fragments(py, &u.updated_fragments))?;
            d.set_item("new_fragments", fragments(py, &u.new_fragments))?;
            d.set_item("fields_modified", u.fields_modified.clone())?;
            d.set_item(
                "fields_for_preserving_frag_bitmap",
                u.fields_for_preserving_frag_bitmap.clone(),
            )?;
            let mode = match u.update_mode() {
                lancet::proto::table::transaction::UpdateMode::RewriteRows => "rewrite_rows",
                lancet::proto::table::transaction::UpdateMode::RewriteColumns => "rewrite_columns",
            };
            d.set_item("update_mode", mode)?;
            // as pylance reads them back: the bytes per fragment, or None
            let offsets = lancet::txn::offsets::updated_offsets(u)
                .map_err(|e| raise("CorruptTableError", format!("version {version}: {e}")))?;
            let bytes = PyDict::new(py);
            for (id, bitmap) in &offsets {
                let mut b = Vec::with_capacity(bitmap.serialized_size());
                bitmap
                    .serialize_into(&mut b)
                    .map_err(|e| raise("InternalError", e.to_string()))?;
                bytes.set_item(id, PyBytes::new(py, &b))?;
            }
            d.set_item(
                "updated_fragment_offsets",
                (!offsets.is_empty()).then_some(bytes),
            )?;
        }
        Operation::UpdateConfig(u) => {
            let maps = lancet::txn::build::update_config_maps(u).map_err(|e| {
                raise("CorruptTableError", format!("version {version}: {e}"))
            })?;
            let map = |m: &Option<UpdateMap>| m.as_ref().map(|m| update_map(py, m)).transpose();
            d.set_item("config_updates", map(&maps.config)?)?;
            d.set_item("table_metadata_updates", map(&maps.table_metadata)?)?;
            d.set_item("schema_metadata_updates", map(&maps.schema_metadata)?)?;
            let fields = PyDict::new(py);
            for (id, m) in &maps.field_metadata {
                fields.set_item(id, update_map(py, m)?)?;
            }
            d.set_item(
                "field_metadata_updates",
                (!maps.field_metadata.is_empty()).then_some(fields),
            )?;
        }
        Operation::DataReplacement(r) => {
            let groups = PyList::empty(py);
            for g in &r.replacements {
                let group = PyDict::new(py);
                group.set_item("fragment_id", g.fragment_id)?;
                let file = g.new_file.as_ref().map(|f| data_file(py, f)).transpose()?;
                group.set_item("new_file", file)?;
                groups.append(group)?;
            }
            d.set_item("replacements", groups)?;
        }
        other => {
            return Err(raise(
                "UnsupportedError",
                format!(
                    "version {version} records a {} operation, which lancet does not read as a LanceOperation",
                    lancet::proto::transaction::operation_name(other)
                ),
            ))
        }
    }
    Ok(d)
}

fn rewrite<'py>(
    py: Python<'py>,
    d: &Bound<'py, PyDict>,
    r: &lancet::proto::table::transaction::Rewrite,
) -> PyResult<()> {
    let groups = PyList::empty(py);
    // the legacy form (fragments beside the groups) reads as one group, as Lance reads it
    if !r.old_fragments.is_empty() || !r.new_fragments.is_empty() {
        let g = PyDict::new(py);
        g.set_item("old_fragments", fragments(py, &r.old_fragments))?;
        g.set_item("new_fragments", fragments(py, &r.new_fragments))?;
        groups.append(g)?;
    }
    for group in &r.groups {
        let g = PyDict::new(py);
        g.set_item("old_fragments", fragments(py, &group.old_fragments))?;
        g.set_item("new_fragments", fragments(py, &group.new_fragments))?;
        groups.append(g)?;
    }
    d.set_item("groups", groups)?;
    let rewritten = PyList::empty(py);
    for i in &r.rewritten_indices {
        let x = PyDict::new(py);
        x.set_item("old_id", i.old_id.as_ref().map(uuid_text))?;
        x.set_item("new_id", i.new_id.as_ref().map(uuid_text))?;
        let (url, value) = match &i.new_index_details {
            Some(a) => (a.type_url.clone(), a.value.clone()),
            None => (String::new(), Vec::new()),
        };
        x.set_item("new_details_type_url", url)?;
        x.set_item("new_details_value", PyBytes::new(py, &value))?;
        x.set_item("new_index_version", i.new_index_version)?;
        rewritten.append(x)?;
    }
    d.set_item("rewritten_indices", rewritten)?;
    Ok(())
}

/// Each fragment as its `DataFragment` protobuf bytes.
fn fragments<'py>(py: Python<'py>, list: &[DataFragment]) -> Vec<Bound<'py, PyBytes>> {
    list.iter()
        .map(|f| PyBytes::new(py, &f.encode_to_vec()))
        .collect()
}

/// `{fields: [lance.file.Field bytes], metadata: {key: bytes}}`.
fn schema<'py>(
    py: Python<'py>,
    fields: &[Field],
    metadata: &BTreeMap<String, Vec<u8>>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let encoded: Vec<Bound<'py, PyBytes>> = fields
        .iter()
        .map(|f| PyBytes::new(py, &f.encode_to_vec()))
        .collect();
    out.set_item("fields", encoded)?;
    let meta = PyDict::new(py);
    for (k, v) in metadata {
        meta.set_item(k, PyBytes::new(py, v))?;
    }
    out.set_item("metadata", meta)?;
    Ok(out)
}

/// pylance's `Index` fields of each entry.
fn indices<'py>(py: Python<'py>, list: &[IndexMetadata]) -> PyResult<Vec<Bound<'py, PyDict>>> {
    list.iter().map(|m| index(py, m)).collect()
}

pub fn index<'py>(py: Python<'py>, m: &IndexMetadata) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("uuid", m.uuid.as_ref().map(uuid_text))?;
    d.set_item("name", &m.name)?;
    d.set_item("fields", m.fields.clone())?;
    d.set_item("dataset_version", m.dataset_version)?;
    let covered = lancet::proto::roaring_wire::decode_roaring32(&m.fragment_bitmap)
        .map_err(|e| raise("CorruptTableError", format!("index {:?}: {e}", m.name)))?;
    d.set_item("fragment_ids", covered.iter().collect::<Vec<u32>>())?;
    d.set_item("index_version", m.index_version.unwrap_or(0))?;
    d.set_item("created_at", m.created_at)?;
    d.set_item("base_id", m.base_id)?;
    let files: Vec<(String, u64)> = m
        .files
        .iter()
        .map(|f| (f.path.clone(), f.size_bytes))
        .collect();
    d.set_item("files", (!files.is_empty()).then_some(files))?;
    let details = m
        .index_details
        .as_ref()
        .map(|a| (a.type_url.clone(), PyBytes::new(py, &a.value)));
    d.set_item("index_details", details)?;
    d.set_item("covering_fields", m.covering_fields.clone())?;
    Ok(d)
}

/// `{updates: {key: value or None}, replace}`.
fn update_map<'py>(py: Python<'py>, m: &UpdateMap) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let updates = PyDict::new(py);
    for e in &m.update_entries {
        updates.set_item(&e.key, &e.value)?;
    }
    d.set_item("updates", updates)?;
    d.set_item("replace", m.replace)?;
    Ok(d)
}

/// A stored UUID as pylance prints it (hyphenated); bytes of another length as hex.
pub(crate) fn uuid_text(u: &lancet::proto::table::Uuid) -> String {
    match ObjectUuid::from_slice(&u.uuid) {
        Ok(id) => id.to_string(),
        Err(_) => u.uuid.iter().map(|b| format!("{b:02x}")).collect(),
    }
}
