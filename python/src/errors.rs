//! lancet's errors as the typed exceptions of `lancet.errors` (defined in Python, so that
//! each can also be the built-in exception a pylance script catches: `ValueError` for bad
//! input, `FileNotFoundError` for a missing table, `OSError` for an unavailable store).

use lancet::{Error, ErrorKind};
use pyo3::prelude::*;

/// The exception class of `lancet.errors` for `e`.
pub fn class_name(e: &Error) -> &'static str {
    match e {
        Error::CommitConflict { retryable, .. } => match retryable {
            true => "RetryableCommitConflict",
            false => "IncompatibleCommitConflict",
        },
        Error::SchemaMismatch { .. } => "SchemaMismatchError",
        Error::IndexNotFound { .. } => "IndexNotFoundError",
        Error::Paths(lancet::paths::PathsError::RefNotFound { .. }) => "RefNotFoundError",
        e => match e.kind() {
            ErrorKind::InvalidInput => "InvalidInputError",
            ErrorKind::NotFound => "NotFoundError",
            ErrorKind::Corrupt => "CorruptTableError",
            ErrorKind::Unsupported => "UnsupportedError",
            ErrorKind::Conflict => "IncompatibleCommitConflict",
            ErrorKind::Unavailable => "UnavailableError",
            _ => "InternalError",
        },
    }
}

/// `e` as a Python exception.
pub fn to_py(e: Error) -> PyErr {
    raise(class_name(&e), e.to_string())
}

/// An exception of `lancet.errors` named `class` saying `message`.
pub fn raise(class: &str, message: String) -> PyErr {
    Python::with_gil(|py| {
        let made = py
            .import("lancet.errors")
            .and_then(|m| m.getattr(class))
            .and_then(|cls| cls.call1((message.clone(),)));
        match made {
            Ok(value) => PyErr::from_value(value),
            Err(e) => e,
        }
    })
}

/// Bad input from Python (`lancet.errors.InvalidInputError`).
pub fn invalid(message: impl Into<String>) -> PyErr {
    raise("InvalidInputError", message.into())
}

/// `Result` of the facade as a Python result.
pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for lancet::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
