//! Lance schemas from Python (pylance's `LanceSchema`): a recorded field list read as Arrow
//! (lance-core's conversion, as a table's schema is read), each field's Lance facts, and an
//! Arrow schema numbered as a new table's fields.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::RecordBatchReader;
use arrow_schema::Schema;
use lancet::proto::file::Field;
use prost::Message;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::arrow_ffi::{import_stream, ArrowStream};
use crate::errors::{invalid, to_py};

fn decode(field: &[u8]) -> PyResult<Field> {
    Field::decode(field).map_err(|e| invalid(format!("not a Lance field: {e}")))
}

/// The Arrow schema of `fields` (each a `lance.file.Field`'s bytes) with `metadata`, as an
/// empty stream.
#[pyfunction]
pub fn schema_to_arrow(
    fields: Vec<Vec<u8>>,
    metadata: HashMap<String, Vec<u8>>,
) -> PyResult<ArrowStream> {
    let fields = fields
        .iter()
        .map(|f| decode(f))
        .collect::<PyResult<Vec<_>>>()?;
    let columns = lancet::file::table_schema(&fields, "a Lance schema")
        .map_err(|e| to_py(lancet::Error::File(e)))?;
    let metadata = metadata
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
        .collect();
    let schema = Schema::new_with_metadata(
        columns.into_iter().map(|c| c.field).collect::<Vec<_>>(),
        metadata,
    );
    Ok(ArrowStream::of_batches(Arc::new(schema), vec![]))
}

/// The Lance fields (each a `lance.file.Field`'s bytes) a new table records for the Arrow
/// schema of `data` (an empty table of it): ids depth-first from 0, Lance's type names.
#[pyfunction]
pub fn schema_from_arrow<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let schema = import_stream(data)?.schema();
    let fields =
        lancet::file::manifest_fields(&schema).map_err(|e| to_py(lancet::Error::File(e)))?;
    Ok(fields
        .iter()
        .map(|f| PyBytes::new(py, &f.encode_to_vec()))
        .collect())
}

/// A Lance field's facts, by pylance's `LanceField` names.
#[pyfunction]
pub fn field_info<'py>(py: Python<'py>, field: Vec<u8>) -> PyResult<Bound<'py, PyDict>> {
    let f = decode(&field)?;
    let d = PyDict::new(py);
    d.set_item("name", &f.name)?;
    d.set_item("id", f.id)?;
    d.set_item("parent_id", f.parent_id)?;
    d.set_item("logical_type", &f.logical_type)?;
    d.set_item("nullable", f.nullable)?;
    let metadata = PyDict::new(py);
    for (k, v) in &f.metadata {
        metadata.set_item(k, PyBytes::new(py, v))?;
    }
    d.set_item("metadata", metadata)?;
    // as lance-file 14.0.2 reads them: a primary-key position from 1, or 0 when only the
    // flag is set; a clustering-key position from 1 (its flag alone is no position)
    let pk = match (f.unenforced_primary_key_position, f.unenforced_primary_key) {
        (0, false) => None,
        (at, _) => Some(at),
    };
    d.set_item("unenforced_primary_key_position", pk)?;
    let ck =
        (f.unenforced_clustering_key_position > 0).then_some(f.unenforced_clustering_key_position);
    d.set_item("unenforced_clustering_key_position", ck)?;
    Ok(d)
}

/// The unenforced primary and clustering keys of `fields`, as field ids in key order
/// (lancet-txn's `keys`, Lance 14.0.2's order).
#[pyfunction]
pub fn key_fields(fields: Vec<Vec<u8>>) -> PyResult<(Vec<i32>, Vec<i32>)> {
    let fields = fields
        .iter()
        .map(|f| decode(f))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((
        lancet::txn::keys::primary_key(&fields),
        lancet::txn::keys::clustering_key(&fields),
    ))
}

/// The fields (each a `lance.file.Field`'s bytes) and schema metadata this version records:
/// pylance's `LanceDataset.lance_schema`.
#[pyfunction]
pub fn table_fields<'py>(
    py: Python<'py>,
    ds: &crate::dataset::PyDataset,
) -> (
    Vec<Bound<'py, PyBytes>>,
    HashMap<String, Bound<'py, PyBytes>>,
) {
    let m = ds.handle().storage().manifest();
    let fields = m
        .fields
        .iter()
        .map(|f| PyBytes::new(py, &f.encode_to_vec()))
        .collect();
    let metadata = m
        .schema_metadata
        .iter()
        .map(|(k, v)| (k.clone(), PyBytes::new(py, v)))
        .collect();
    (fields, metadata)
}
