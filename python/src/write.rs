//! Writing tables: `write_dataset`'s modes and the distributed write of a new table.

use std::sync::Arc;

use arrow_array::RecordBatchReader;
use lancet::{AppendOptions, CreateOptions, Dataset, Layout};
use prost::Message;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::arrow_ffi::{batches, import_stream};
use crate::dataset::PyDataset;
use crate::errors::{invalid, IntoPy};
use crate::fragments::decode_fragments;
use crate::progress::{raised, PyProgress};
use crate::runtime::block_on;
use crate::storage_version::file_version;

/// How a table is created, from `write_dataset`'s arguments.
fn create_options(
    layout: &str,
    enable_stable_row_ids: bool,
    max_rows_per_file: u64,
    max_rows_per_group: u64,
    data_storage_version: &str,
) -> PyResult<CreateOptions> {
    let layout = match layout {
        "flat" => Layout::Flat,
        "tree" => Layout::Tree,
        other => {
            return Err(invalid(format!(
                "layout must be flat or tree, not {other:?}"
            )))
        }
    };
    let version = file_version(data_storage_version)?;
    if max_rows_per_file == 0 || max_rows_per_group == 0 {
        return Err(invalid(
            "max_rows_per_file and max_rows_per_group must be at least 1",
        ));
    }
    Ok(CreateOptions {
        stable_row_ids: enable_stable_row_ids,
        layout,
        data_storage_version: version,
        max_rows_per_file,
        max_rows_per_group,
        progress: Default::default(),
        transaction_properties: Default::default(),
    })
}

/// `write_dataset(data, uri, mode, ...)`: a new table, rows appended, or every row replaced.
#[pyfunction]
#[pyo3(signature = (data, uri, mode, layout, enable_stable_row_ids, max_rows_per_file, max_rows_per_group, data_storage_version, progress=None, transaction_properties=None))]
#[allow(clippy::too_many_arguments)]
pub fn write(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    uri: String,
    mode: &str,
    layout: &str,
    enable_stable_row_ids: bool,
    max_rows_per_file: u64,
    max_rows_per_group: u64,
    data_storage_version: Option<&str>,
    progress: Option<Py<PyAny>>,
    transaction_properties: Option<std::collections::BTreeMap<String, String>>,
) -> PyResult<PyDataset> {
    let (progress, observer) = PyProgress::of(progress);
    let properties = transaction_properties.unwrap_or_default();
    let mut options = create_options(
        layout,
        enable_stable_row_ids,
        max_rows_per_file,
        max_rows_per_group,
        data_storage_version.unwrap_or("stable"),
    )?;
    // an overwrite keeps the table's version unless one is asked for (Lance's rule)
    let requested = data_storage_version.map(|_| options.data_storage_version);
    options.progress = progress.clone();
    options.transaction_properties = properties.clone();
    let reader = import_stream(data)?;
    let schema = reader.schema();
    let append = AppendOptions {
        max_rows_per_file,
        max_rows_per_group,
        data_storage_version: requested,
        progress,
        transaction_properties: properties,
    };
    let ds = block_on(py, async move {
        let existing = match Dataset::open(&uri).await {
            Ok(ds) => Some(ds),
            Err(e) if e.kind() == lancet::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let committed = match (mode, existing) {
            ("create", None) | ("overwrite", None) | ("append", None) => {
                Dataset::create(&uri, schema, batches(reader), options).await?
            }
            ("create", Some(_)) => {
                return Err(lancet::Error::InvalidArgument {
                    what: format!("write_dataset(mode='create') to {uri}"),
                    reason: "a table exists there (mode='append' or 'overwrite')".into(),
                })
            }
            ("append", Some(ds)) => ds.append_with(batches(reader), &append).await?,
            ("overwrite", Some(ds)) => ds.overwrite(schema, batches(reader), &append).await?,
            (other, _) => {
                return Err(lancet::Error::InvalidArgument {
                    what: "write_dataset".into(),
                    reason: format!("mode must be create, append or overwrite, not {other:?}"),
                })
            }
        };
        Ok(committed.dataset)
    })
    .py_err();
    Ok(PyDataset::new(raised(ds, &observer)?))
}

/// Writes `data` as fragments of a table not yet created at `uri`, uncommitted; returns each
/// fragment's `DataFragment` protobuf.
#[pyfunction]
#[pyo3(signature = (data, uri, max_rows_per_file, max_rows_per_group, data_storage_version, progress=None))]
pub fn write_new_fragments<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    uri: String,
    max_rows_per_file: u64,
    max_rows_per_group: u64,
    data_storage_version: &str,
    progress: Option<Py<PyAny>>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let (progress, observer) = PyProgress::of(progress);
    let mut options = create_options(
        "flat",
        false,
        max_rows_per_file,
        max_rows_per_group,
        data_storage_version,
    )?;
    options.progress = progress;
    let reader = import_stream(data)?;
    let schema = reader.schema();
    let written = block_on(py, async move {
        lancet::write_new_fragments(&uri, schema, batches(reader), options).await
    })
    .py_err();
    let written = raised(written, &observer)?;
    Ok(written
        .iter()
        .map(|f| PyBytes::new(py, &f.encode_to_vec()))
        .collect())
}

/// Creates the table at `uri` from fragments `write_new_fragments` wrote with `schema`
/// (an Arrow stream whose schema is the table's) in one Overwrite.
#[pyfunction]
#[pyo3(signature = (uri, schema, fragments, layout, enable_stable_row_ids, data_storage_version, transaction_properties=None))]
#[allow(clippy::too_many_arguments)]
pub fn create_from_fragments(
    py: Python<'_>,
    uri: String,
    schema: &Bound<'_, PyAny>,
    fragments: Vec<Vec<u8>>,
    layout: &str,
    enable_stable_row_ids: bool,
    data_storage_version: &str,
    transaction_properties: Option<std::collections::BTreeMap<String, String>>,
) -> PyResult<PyDataset> {
    let mut options = create_options(layout, enable_stable_row_ids, 1, 1, data_storage_version)?;
    options.transaction_properties = transaction_properties.unwrap_or_default();
    let schema = import_stream(schema)?.schema();
    let fragments = decode_fragments(&fragments)?;
    let ds = block_on(py, async move {
        lancet::create_from_fragments(&uri, Arc::clone(&schema), fragments, options).await
    })
    .py_err()?;
    Ok(PyDataset::new(ds.dataset))
}
