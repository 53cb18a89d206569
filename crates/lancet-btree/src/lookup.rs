//! `page_lookup.lance` loaded and validated: one row per page, ascending by `min` with NULLs
//! first. Page selection binary-searches it; nothing here reads `page_data.lance`.

use std::collections::HashMap;
use std::ops::Range;

use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_ord::ord::{make_comparator, DynComparator};
use arrow_schema::{DataType, SortOptions};

use crate::error::{BTreeError, Result};
use crate::schema::{BATCH_SIZE_KEY, RANGE_PARTITIONED_KEY};

pub(crate) const NULLS_FIRST: SortOptions = SortOptions {
    descending: false,
    nulls_first: true,
};

#[derive(Debug, Clone)]
pub struct PageLookup {
    pub(crate) path: String,
    pub(crate) value_type: DataType,
    pub(crate) page_rows: u64,
    pub(crate) mins: ArrayRef,
    pub(crate) maxs: ArrayRef,
    pub(crate) null_counts: Vec<u32>,
    pub(crate) page_idx: Vec<u32>,
}

fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Option<&'a T> {
    batch.column_by_name(name)?.as_any().downcast_ref::<T>()
}

impl PageLookup {
    /// Validates a lookup batch (schema already checked exactly by the caller).
    ///
    /// Rules: `batch_size` present and a positive integer; not range-partitioned; `page_idx`
    /// a permutation of `0..pages`; `null_count` at most the page's rows; a page with NULL
    /// `min` and `max` holds only NULLs (its `null_count` is its row count: `batch_size`, or
    /// for the short last page what `check_data_rows` finds); a page with some NULLs has a NULL `min`; `min <=
    /// max`; `min` and `max` ascending over pages with NULLs first.
    pub fn from_batch(
        path: &str,
        batch: &RecordBatch,
        metadata: &HashMap<String, String>,
    ) -> Result<Self> {
        let corrupt = |rule: String| BTreeError::Corrupt {
            at: lancet_proto::ObjectRef::new(path.to_string()),
            rule,
        };
        let page_rows =
            match metadata.get(BATCH_SIZE_KEY) {
                None => return Err(corrupt("schema metadata has no batch_size".into())),
                Some(v) => v.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    corrupt(format!("batch_size {v:?} is not a positive integer"))
                })?,
            };
        if metadata.get(RANGE_PARTITIONED_KEY).map(String::as_str) == Some("true") {
            return Err(BTreeError::Unsupported {
                path: path.to_string(),
                rule: "range-partitioned (legacy merged) BTree segments".into(),
            });
        }
        let mins = batch
            .column_by_name("min")
            .ok_or_else(|| corrupt("no min column".into()))?;
        let maxs = batch
            .column_by_name("max")
            .ok_or_else(|| corrupt("no max column".into()))?;
        let nulls = column::<UInt32Array>(batch, "null_count")
            .ok_or_else(|| corrupt("null_count is not UInt32".into()))?;
        let idx = column::<UInt32Array>(batch, "page_idx")
            .ok_or_else(|| corrupt("page_idx is not UInt32".into()))?;
        let n = batch.num_rows();
        let mut seen = vec![false; n];
        for &p in idx.values() {
            match seen.get_mut(p as usize) {
                Some(s) if !*s => *s = true,
                Some(_) => return Err(corrupt(format!("page_idx {p} appears twice"))),
                None => return Err(corrupt(format!("page_idx {p} out of range for {n} pages"))),
            }
        }
        let lookup = Self {
            path: path.to_string(),
            value_type: mins.data_type().clone(),
            page_rows,
            mins: mins.clone(),
            maxs: maxs.clone(),
            null_counts: nulls.values().to_vec(),
            page_idx: idx.values().to_vec(),
        };
        lookup.check_order().map_err(corrupt)?;
        Ok(lookup)
    }

    fn check_order(&self) -> std::result::Result<(), String> {
        let cmp = |a: &ArrayRef, b: &ArrayRef| {
            make_comparator(a.as_ref(), b.as_ref(), NULLS_FIRST).map_err(|e| e.to_string())
        };
        let min_min = cmp(&self.mins, &self.mins)?;
        let max_max = cmp(&self.maxs, &self.maxs)?;
        let min_max = cmp(&self.mins, &self.maxs)?;
        for i in 0..self.num_pages() {
            let nulls = u64::from(self.null_counts.get(i).copied().unwrap_or(0));
            if nulls > self.page_rows {
                return Err(format!(
                    "page {i} has {nulls} NULLs but holds {} rows",
                    self.page_rows
                ));
            }
            let last_page = self.page_idx.get(i).map(|&p| p as usize + 1) == Some(self.num_pages());
            match (self.mins.is_null(i), self.maxs.is_null(i)) {
                (true, true) if nulls == 0 => {
                    return Err(format!("page {i} has NULL min and max but no NULLs"))
                }
                // Only the last data page may be short; its exact count is checked against
                // the data file (`check_data_rows`).
                (true, true) if nulls < self.page_rows && !last_page => {
                    return Err(format!(
                        "page {i} has NULL min and max but only {nulls} of its {} rows are NULL",
                        self.page_rows
                    ))
                }
                (false, true) => return Err(format!("page {i} has a NULL max but a min")),
                (false, false) if nulls > 0 => {
                    return Err(format!("page {i} has NULLs but a non-NULL min"))
                }
                (true, false) if nulls == 0 => {
                    return Err(format!("page {i} has a NULL min but no NULLs"))
                }
                (false, false) if min_max(i, i).is_gt() => {
                    return Err(format!("page {i} has min > max"))
                }
                _ => {}
            }
            if i > 0 {
                if min_min(i - 1, i).is_gt() {
                    return Err(format!("pages {} and {i} are not sorted by min", i - 1));
                }
                if max_max(i - 1, i).is_gt() {
                    return Err(format!("pages {} and {i} are not sorted by max", i - 1));
                }
            }
        }
        Ok(())
    }

    /// The `page_lookup.lance` this came from.
    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn num_pages(&self) -> usize {
        self.page_idx.len()
    }

    pub fn page_rows(&self) -> u64 {
        self.page_rows
    }

    pub fn value_type(&self) -> &DataType {
        &self.value_type
    }

    /// The smallest and largest values the segment can answer for, as one-row arrays: the
    /// `min` of the first page not wholly NULL and the `max` of the last page (what Lance
    /// 14.0.2's BTree statistics report; the `min` is NULL when that page holds NULLs too).
    /// `None` when every page is NULL or there is none.
    pub fn bounds(&self) -> Option<(ArrayRef, ArrayRef)> {
        let first = self.all_null_pages();
        let last = self.num_pages().checked_sub(1)?;
        (first <= last).then(|| (self.mins.slice(first, 1), self.maxs.slice(last, 1)))
    }

    /// Rows of data page `page` in `page_data.lance` of `data_rows` rows.
    pub(crate) fn data_rows_of(&self, page: u32, data_rows: u64) -> Range<u64> {
        let start = (u64::from(page) * self.page_rows).min(data_rows);
        start..(start + self.page_rows).min(data_rows)
    }

    /// Checks the lookup against the data file's row count: exactly `ceil(rows / batch_size)`
    /// pages, and NULL counts that fit the short last page.
    pub(crate) fn check_data_rows(&self, data_rows: u64) -> std::result::Result<(), String> {
        let pages = data_rows.div_ceil(self.page_rows);
        if pages != self.num_pages() as u64 {
            return Err(format!(
                "lookup lists {} pages but page_data.lance holds {data_rows} rows ({pages} pages of {})",
                self.num_pages(),
                self.page_rows
            ));
        }
        for (i, &p) in self.page_idx.iter().enumerate() {
            let rows = self.data_rows_of(p, data_rows);
            let n = u64::from(self.null_counts.get(i).copied().unwrap_or(0));
            if n > rows.end - rows.start {
                return Err(format!(
                    "page {p} has {n} NULLs in {} rows",
                    rows.end - rows.start
                ));
            }
            if self.mins.is_null(i) && self.maxs.is_null(i) && n != rows.end - rows.start {
                return Err(format!(
                    "page {p} has NULL min and max but only {n} of its {} rows are NULL",
                    rows.end - rows.start
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn comparator(&self, of_max: bool, scalar: &ArrayRef) -> Result<DynComparator> {
        let side = if of_max { &self.maxs } else { &self.mins };
        Ok(make_comparator(
            side.as_ref(),
            scalar.as_ref(),
            NULLS_FIRST,
        )?)
    }

    /// Lookup rows whose page holds NULLs: a prefix, since NULLs sort first.
    pub(crate) fn pages_with_nulls(&self) -> usize {
        self.null_counts.partition_point(|&n| n > 0)
    }

    /// Lookup rows whose page is entirely NULL: a prefix.
    pub(crate) fn all_null_pages(&self) -> usize {
        (0..self.num_pages())
            .take_while(|&i| self.maxs.is_null(i))
            .count()
    }
}
