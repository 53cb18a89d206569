//! A Python `FragmentWriteProgress` (pylance's `lance.progress`) as the observer lancet's
//! writers tell of each fragment: `begin` and `complete` are called with the fragment's
//! `FragmentMetadata`, under the GIL, from the write's task. An exception the observer
//! raises stops the write and is raised again, unchanged, from the call that wrote.

use std::sync::{Arc, Mutex};

use lancet::file::{Progress, WriteProgress};
use lancet::proto::table::DataFragment;
use prost::Message;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The Python observer, and the exception it raised, if any.
pub struct PyProgress {
    observer: Py<PyAny>,
    raised: Mutex<Option<PyErr>>,
}

impl PyProgress {
    /// The observer `progress` (a `FragmentWriteProgress`, or `None`), as the writers take
    /// it, and the handle that gives back what it raised.
    pub fn of(progress: Option<Py<PyAny>>) -> (Progress, Option<Arc<PyProgress>>) {
        match progress {
            None => (Progress::default(), None),
            Some(observer) => {
                let p = Arc::new(PyProgress {
                    observer,
                    raised: Mutex::new(None),
                });
                (Progress::to(p.clone()), Some(p))
            }
        }
    }

    fn tell(&self, method: &str, fragment: &DataFragment) -> Result<(), String> {
        Python::with_gil(|py| {
            let told = py
                .import("lancet.fragment")
                .and_then(|m| m.getattr("FragmentMetadata"))
                .and_then(|cls| {
                    cls.call_method1(
                        "_from_bytes",
                        (PyBytes::new(py, &fragment.encode_to_vec()),),
                    )
                })
                .and_then(|meta| self.observer.call_method1(py, method, (meta,)));
            told.map(drop).map_err(|e| {
                let said = e.to_string();
                if let Ok(mut raised) = self.raised.lock() {
                    raised.get_or_insert(e);
                }
                said
            })
        })
    }
}

impl WriteProgress for PyProgress {
    fn begin(&self, fragment: &DataFragment) -> Result<(), String> {
        self.tell("begin", fragment)
    }

    fn complete(&self, fragment: &DataFragment) -> Result<(), String> {
        self.tell("complete", fragment)
    }
}

/// `result` of a write told to `progress`: when it failed because the observer raised,
/// the observer's exception.
pub fn raised<T>(result: PyResult<T>, progress: &Option<Arc<PyProgress>>) -> PyResult<T> {
    let stashed = progress
        .as_ref()
        .and_then(|p| p.raised.lock().ok().and_then(|mut r| r.take()));
    match (result, stashed) {
        (Err(_), Some(e)) => Err(e),
        (result, _) => result,
    }
}
