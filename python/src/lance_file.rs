//! Single Lance files outside a table (pylance's `lance.file`): a writer of batches with
//! schema metadata and global buffers, and a reader of all rows, a range, rows at offsets,
//! some columns, a global buffer and the file's summary. lancet-file does the reading and
//! writing (lance-file 14.0.2 underneath); the object store is lancet-paths', opened on the
//! file's directory as a table root would be.

use std::collections::HashMap;
use std::sync::Mutex;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::SchemaRef;
use bytes::Bytes;
use futures::TryStreamExt;
use lancet::file::{FileStore, FileVersion, LanceFile, StreamingWriter};
use lancet::paths::DatasetStore;
use object_store::path::Path;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::arrow_ffi::{batches, import_stream, ArrowStream};
use crate::errors::{invalid, IntoPy};
use crate::runtime::block_on;

/// The store of `uri`'s directory and the file's path in it (created for a writer).
fn locate(uri: &str, create: bool) -> lancet::Result<(FileStore, Path)> {
    let (dir, name) = match uri.rsplit_once('/') {
        Some((dir, name)) if !name.is_empty() => (if dir.is_empty() { "/" } else { dir }, name),
        _ if !uri.contains('/') => (".", uri),
        _ => {
            return Err(lancet::Error::InvalidArgument {
                what: format!("file {uri:?}"),
                reason: "a file's path ends in its name".into(),
            })
        }
    };
    let store = match create {
        true => DatasetStore::create(dir)?,
        false => DatasetStore::open(dir)?,
    };
    let path = store.path(name);
    Ok((lancet::file_store_for(&store)?, path))
}

fn version(name: Option<&str>) -> PyResult<FileVersion> {
    match name {
        None => Ok(FileVersion::V2_2),
        Some(v) => FileVersion::parse(v).ok_or_else(|| {
            invalid(format!(
                "lancet writes Lance files of versions 2.0, 2.1 and 2.2 (stable), not {v:?}"
            ))
        }),
    }
}

/// A Lance file being written; created when its schema is known (given, or the first
/// batch's).
#[pyclass(name = "_FileWriter")]
pub struct FileWriter {
    uri: String,
    version: FileVersion,
    writer: Mutex<Option<StreamingWriter>>,
    metadata: Mutex<HashMap<String, String>>,
    buffers: Mutex<Vec<Bytes>>,
}

impl FileWriter {
    fn create(&self, py: Python<'_>, schema: SchemaRef) -> PyResult<()> {
        let (uri, version) = (self.uri.clone(), self.version);
        let writer = block_on(py, async move {
            let (fs, path) = locate(&uri, true)?;
            Ok::<_, lancet::Error>(StreamingWriter::create(&fs, &path, &schema, version).await?)
        })
        .py_err()?;
        *self.writer.lock().map_err(|_| invalid("writer poisoned"))? = Some(writer);
        Ok(())
    }

    fn take(&self) -> PyResult<Option<StreamingWriter>> {
        Ok(self
            .writer
            .lock()
            .map_err(|_| invalid("writer poisoned"))?
            .take())
    }
}

#[pymethods]
impl FileWriter {
    #[new]
    #[pyo3(signature = (uri, schema=None, version=None))]
    fn new(
        py: Python<'_>,
        uri: String,
        schema: Option<&Bound<'_, PyAny>>,
        version: Option<&str>,
    ) -> PyResult<Self> {
        let out = FileWriter {
            uri,
            version: self::version(version)?,
            writer: Mutex::new(None),
            metadata: Mutex::new(HashMap::new()),
            buffers: Mutex::new(Vec::new()),
        };
        if let Some(schema) = schema {
            out.create(py, import_stream(schema)?.schema())?;
        }
        Ok(out)
    }

    /// Writes the batches of an Arrow stream; each must have the file's schema exactly.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let reader = import_stream(data)?;
        if self
            .writer
            .lock()
            .map_err(|_| invalid("writer poisoned"))?
            .is_none()
        {
            self.create(py, reader.schema())?;
        }
        let mut writer = self.take()?.ok_or_else(|| invalid("the file is closed"))?;
        let (writer, written) = block_on(py, async move {
            let parts: Vec<RecordBatch> = match batches(reader).try_collect().await {
                Ok(parts) => parts,
                Err(e) => return (writer, Err(e)),
            };
            for b in &parts {
                if let Err(e) = writer.write(b).await {
                    return (writer, Err(e.into()));
                }
            }
            (writer, Ok(()))
        });
        *self.writer.lock().map_err(|_| invalid("writer poisoned"))? = Some(writer);
        written.py_err()
    }

    fn add_schema_metadata(&self, key: String, value: String) -> PyResult<()> {
        self.metadata
            .lock()
            .map_err(|_| invalid("writer poisoned"))?
            .insert(key, value);
        Ok(())
    }

    /// Adds a global buffer, written when the file is closed; its index (1 for the first:
    /// buffer 0 is the file's schema).
    fn add_global_buffer(&self, data: Vec<u8>) -> PyResult<u32> {
        let mut buffers = self
            .buffers
            .lock()
            .map_err(|_| invalid("writer poisoned"))?;
        buffers.push(Bytes::from(data));
        u32::try_from(buffers.len()).map_err(|_| invalid("too many global buffers"))
    }

    /// Closes the file: `(rows, bytes)`. A file that never learnt its schema (no schema
    /// given, no batch written) is refused, as pylance refuses it.
    fn finish(&self, py: Python<'_>) -> PyResult<(u64, u64)> {
        let writer = self.take()?.ok_or_else(|| {
            invalid("no schema: give LanceFileWriter a schema or write a batch before closing")
        })?;
        let metadata = self
            .metadata
            .lock()
            .map_err(|_| invalid("writer poisoned"))?
            .clone();
        let buffers = self
            .buffers
            .lock()
            .map_err(|_| invalid("writer poisoned"))?
            .clone();
        let written = block_on(py, async move { writer.finish(&metadata, &buffers).await });
        let written = written.map_err(lancet::Error::from).py_err()?;
        Ok((written.num_rows, written.size_bytes))
    }
}

/// An open Lance file.
#[pyclass(name = "_FileReader")]
pub struct FileReader {
    file: std::sync::Arc<LanceFile>,
    columns: Option<Vec<String>>,
}

impl FileReader {
    fn rows(&self, py: Python<'_>, which: Which) -> PyResult<ArrowStream> {
        let (file, columns) = (self.file.clone(), self.columns.clone());
        let batch = block_on(py, async move {
            let names: Option<Vec<&str>> = columns
                .as_ref()
                .map(|c| c.iter().map(String::as_str).collect());
            let read = match (which, names) {
                (Which::Range(r), None) => file.read_range(r).await,
                (Which::Range(r), Some(n)) => file.read_columns(&n, Some(r)).await,
                (Which::At(rows), None) => file.take_rows(&rows).await,
                (Which::At(rows), Some(n)) => file.take_columns(&n, &rows).await,
            };
            read.map_err(lancet::Error::from)
        })
        .py_err()?;
        Ok(ArrowStream::of_batches(batch.schema(), vec![batch]))
    }
}

enum Which {
    Range(std::ops::Range<u64>),
    At(Vec<u64>),
}

#[pymethods]
impl FileReader {
    #[new]
    #[pyo3(signature = (uri, columns=None))]
    fn new(py: Python<'_>, uri: String, columns: Option<Vec<String>>) -> PyResult<Self> {
        let file = block_on(py, async move {
            let (fs, path) = locate(&uri, false)?;
            Ok::<_, lancet::Error>(LanceFile::open(&fs, &path, None).await?)
        })
        .py_err()?;
        Ok(FileReader {
            file: std::sync::Arc::new(file),
            columns,
        })
    }

    fn num_rows(&self) -> u64 {
        self.file.num_rows()
    }

    /// Rows `start..start + n` (every row: `0, num_rows`); a range past the end is refused.
    fn read_range(&self, py: Python<'_>, start: u64, n: u64) -> PyResult<ArrowStream> {
        self.rows(py, Which::Range(start..start.saturating_add(n)))
    }

    /// The rows at `rows` (increasing offsets).
    fn take_rows(&self, py: Python<'_>, rows: Vec<u64>) -> PyResult<ArrowStream> {
        self.rows(py, Which::At(rows))
    }

    fn read_global_buffer<'py>(
        &self,
        py: Python<'py>,
        index: u32,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let file = self.file.clone();
        let data = block_on(py, async move { file.global_buffer(index).await })
            .map_err(lancet::Error::from)
            .py_err()?;
        Ok(PyBytes::new(py, &data))
    }

    /// The file's summary (`lancet_file::FileSummary`) and its schema as an Arrow stream.
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyDict>, ArrowStream)> {
        let s = self.file.summary();
        let out = PyDict::new(py);
        out.set_item("major_version", s.major_version)?;
        out.set_item("minor_version", s.minor_version)?;
        out.set_item("num_rows", s.num_rows)?;
        out.set_item("num_data_bytes", s.num_data_bytes)?;
        out.set_item("num_column_metadata_bytes", s.num_column_metadata_bytes)?;
        out.set_item("num_global_buffer_bytes", s.num_global_buffer_bytes)?;
        out.set_item("global_buffers", s.global_buffers)?;
        out.set_item("num_columns", s.num_columns)?;
        let schema = self.file.schema().clone();
        Ok((out, ArrowStream::of_batches(schema, Vec::new())))
    }
}
