//! `data_storage_version` as Python spells it.

use lancet::file::FileVersion;
use pyo3::prelude::*;

use crate::errors::invalid;

/// The file version `name` spells (`2.0`, `2.1`, `2.2` or `stable`), or the caller's error.
pub(crate) fn file_version(name: &str) -> PyResult<FileVersion> {
    FileVersion::parse(name).ok_or_else(|| {
        invalid(format!(
            "data_storage_version must be 2.0, 2.1, 2.2 or stable, not {name:?}"
        ))
    })
}
