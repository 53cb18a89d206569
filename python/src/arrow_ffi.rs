//! Arrow data across the boundary, without copies: the Arrow PyCapsule stream interface
//! (`__arrow_c_stream__`, capsules named `arrow_array_stream`) both ways.
//!
//! This module holds the crate's only `unsafe`: taking the C stream out of a capsule a
//! Python producer made. The capsule's pointer is the producer's `ArrowArrayStream`, valid
//! while the capsule lives; `FFI_ArrowArrayStream::from_raw` moves it out (leaving the
//! released, empty struct the interface prescribes), so the stream has one owner.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::sync::{Arc, Mutex};

use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use futures::stream::{BoxStream, StreamExt};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::invalid;
use crate::runtime::spawn;

const STREAM: &str = "arrow_array_stream";

/// The Arrow stream `obj` exports (anything with `__arrow_c_stream__`: a pyarrow Table,
/// RecordBatchReader, Polars frame, ...).
pub fn import_stream(obj: &Bound<'_, PyAny>) -> PyResult<ArrowArrayStreamReader> {
    if !obj.hasattr("__arrow_c_stream__")? {
        return Err(invalid(format!(
            "expected Arrow data (an object with __arrow_c_stream__), got {}",
            obj.get_type().name()?
        )));
    }
    let capsule = obj.call_method0("__arrow_c_stream__")?;
    let capsule = capsule
        .downcast::<PyCapsule>()
        .map_err(|_| invalid("__arrow_c_stream__ did not return a capsule"))?;
    match capsule.name()? {
        Some(name) if name.to_bytes() == STREAM.as_bytes() => {}
        _ => return Err(invalid("the capsule is not an arrow_array_stream")),
    }
    let pointer = capsule.pointer() as *mut FFI_ArrowArrayStream;
    if pointer.is_null() {
        return Err(invalid("the arrow_array_stream capsule is empty"));
    }
    // SAFETY: a capsule named arrow_array_stream holds a valid ArrowArrayStream (the
    // interface's contract), alive while `capsule` is; from_raw moves it out and marks the
    // producer's struct released, so it is consumed exactly once.
    let stream = unsafe { FFI_ArrowArrayStream::from_raw(pointer) };
    ArrowArrayStreamReader::try_new(stream).map_err(|e| invalid(format!("Arrow stream: {e}")))
}

/// The batches of an imported stream as the facade's input.
pub fn batches(
    reader: ArrowArrayStreamReader,
) -> impl futures::Stream<Item = lancet::Result<RecordBatch>> + Send {
    futures::stream::iter(reader.map(|b| {
        b.map_err(|e| lancet::Error::InvalidArgument {
            what: "Arrow data".into(),
            reason: e.to_string(),
        })
    }))
}

/// A one-shot Arrow stream for Python: `pyarrow.RecordBatchReader.from_stream(s)` (or any
/// consumer of the PyCapsule interface) takes it.
#[pyclass(module = "lancet._lancet")]
pub struct ArrowStream {
    reader: Mutex<Option<Box<dyn RecordBatchReader + Send>>>,
    /// The error that ended the stream, typed (a C stream carries only its text): the
    /// `lancet.errors` class name and message, for the Python half to raise.
    error: Arc<Mutex<Option<(&'static str, String)>>>,
}

impl ArrowStream {
    /// A stream of `batches` already in memory.
    pub fn of_batches(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
        Self::of_reader(Box::new(reader))
    }

    /// A stream of `reader`'s batches, as it yields them.
    pub fn of_reader(reader: Box<dyn RecordBatchReader + Send>) -> Self {
        ArrowStream {
            reader: Mutex::new(Some(reader)),
            error: Arc::default(),
        }
    }

    /// A stream of the facade's `stream`, read ahead on the shared runtime (a task drives
    /// it into a channel of [`READ_AHEAD`] batches) while the consumer takes batches.
    pub fn of_stream(
        schema: SchemaRef,
        stream: BoxStream<'static, lancet::Result<RecordBatch>>,
    ) -> Self {
        let (tx, rx) = tokio::sync::mpsc::channel(READ_AHEAD);
        spawn(async move {
            let mut stream = stream;
            while let Some(batch) = stream.next().await {
                if tx.send(batch).await.is_err() {
                    break; // the consumer dropped the stream
                }
            }
        });
        let error = Arc::default();
        ArrowStream {
            reader: Mutex::new(Some(Box::new(Pulled {
                schema,
                rx,
                error: Arc::clone(&error),
            }))),
            error,
        }
    }
}

#[pymethods]
impl ArrowStream {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // the stream's own schema is the one offered
        let reader = self
            .reader
            .lock()
            .map_err(|_| invalid("the stream's lock is poisoned"))?
            .take()
            .ok_or_else(|| invalid("this Arrow stream was already consumed"))?;
        let stream = FFI_ArrowArrayStream::new(reader);
        let name = CString::new(STREAM).map_err(|e| invalid(e.to_string()))?;
        PyCapsule::new(py, stream, Some(name))
    }

    /// The error that ended the stream, as `(lancet.errors class name, message)`; `None`
    /// while it has not failed.
    fn error(&self) -> Option<(&'static str, String)> {
        self.error.lock().ok().and_then(|e| e.clone())
    }
}

/// Batches a scan reads ahead of its consumer.
const READ_AHEAD: usize = 4;

/// A facade stream's batches as they arrive from the task driving it.
struct Pulled {
    schema: SchemaRef,
    rx: tokio::sync::mpsc::Receiver<lancet::Result<RecordBatch>>,
    error: Arc<Mutex<Option<(&'static str, String)>>>,
}

impl Iterator for Pulled {
    type Item = Result<RecordBatch, ArrowError>;

    /// Waits for the next batch. The consumer may be a Python thread, or lancet itself on
    /// the shared runtime (a table written from another lancet table's scan): there the wait
    /// leaves the runtime's context first (`block_in_place`), so it never nests a runtime.
    fn next(&mut self) -> Option<Self::Item> {
        let next = match tokio::runtime::Handle::try_current() {
            Ok(_) => tokio::task::block_in_place(|| self.rx.blocking_recv()),
            Err(_) => self.rx.blocking_recv(),
        };
        next.map(|b| {
            b.map_err(|e| {
                if let Ok(mut slot) = self.error.lock() {
                    *slot = Some((crate::errors::class_name(&e), e.to_string()));
                }
                ArrowError::ExternalError(Box::new(e))
            })
        })
    }
}

impl RecordBatchReader for Pulled {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
