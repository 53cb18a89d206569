//! One scan's own counters, for pylance's `scan_stats_callback` (`lancet/scan_stats.py`).

use std::sync::Arc;

use lancet::ScanMetrics;
use pyo3::prelude::*;

/// The counters of one scan (`PyDataset.scan(counters=...)`): what its filter and rows read.
#[pyclass(module = "lancet._lancet", frozen)]
#[derive(Default)]
pub struct ScanCounters {
    pub(crate) metrics: Arc<ScanMetrics>,
}

#[pymethods]
impl ScanCounters {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// `(index pages read, fragments a filter read directly, fragments read)`.
    fn counts(&self) -> (u64, u64, u64) {
        let m = &self.metrics;
        (m.pages_read(), m.scanned_fragments(), m.fragments_read())
    }

    /// The names of the indexes that answered the scan's filter.
    fn indexes(&self) -> Vec<String> {
        self.metrics.indexed_fragments().into_keys().collect()
    }
}
