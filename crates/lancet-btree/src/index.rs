//! An opened BTree segment: the lookup in memory, `page_data.lance` opened on the first cache
//! miss, selected pages read in one coalesced request set and kept in a byte-weighted cache.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::{Array, UInt64Array};
use arrow_schema::DataType;
use lancet_file::{FileStore, LanceFile};
use object_store::path::Path;
use tokio::sync::{Mutex, OnceCell};

use crate::error::{BTreeError, Result};
use crate::lookup::PageLookup;
use crate::page::{IdLists, Page};
use crate::query::Query;
use crate::schema::{page_data_schema, page_lookup_schema, PAGE_DATA_FILE, PAGE_LOOKUP_FILE};
use crate::select::{select, PageMatch};
use lancet_filter::NullableIdSet;

/// Cache key of one page: the segment (its directory) and the data page number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    pub segment: Arc<str>,
    pub page: u32,
}

/// Where decoded pages are kept between searches. The facade backs it with moka.
pub trait PageCache: Send + Sync {
    fn get(&self, key: &PageKey) -> Option<Arc<Page>>;
    fn insert(&self, key: PageKey, page: Arc<Page>);
    /// [`Self::get`] again for a page that missed, after waiting for the segment's load lock
    /// (another search may have loaded it meanwhile). A cache with statistics counts a page
    /// found here as a hit and does not count a second miss. The default is `get`.
    fn recheck(&self, key: &PageKey) -> Option<Arc<Page>> {
        self.get(key)
    }
}

/// A cache that keeps nothing.
#[derive(Debug, Default)]
pub struct NoCache;

impl PageCache for NoCache {
    fn get(&self, _: &PageKey) -> Option<Arc<Page>> {
        None
    }
    fn insert(&self, _: PageKey, _: Arc<Page>) {}
}

/// One BTree segment (one `_indices/{uuid}/` directory).
pub struct BTreeIndex {
    key: Arc<str>,
    fs: FileStore,
    data_path: Path,
    data_size: Option<u64>,
    lookup: PageLookup,
    data: OnceCell<(LanceFile, u64)>,
    cache: Arc<dyn PageCache>,
    /// Serializes cold loads so concurrent searches load a page once.
    load: Mutex<()>,
    pages_read: AtomicU64,
}

impl std::fmt::Debug for BTreeIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BTreeIndex")
            .field("segment", &self.key)
            .field("pages", &self.lookup.num_pages())
            .finish()
    }
}

/// `page_data.lance` checked against the lookup: its schema, and the rows the lookup's pages
/// hold.
fn check_data(lookup: &PageLookup, path: &Path, file: LanceFile) -> Result<(LanceFile, u64)> {
    file.check_schema(&page_data_schema(lookup.value_type()))?;
    let rows = file.num_rows();
    lookup
        .check_data_rows(rows)
        .map_err(|rule| BTreeError::Corrupt {
            at: lancet_proto::ObjectRef::new(path.to_string()),
            rule,
        })?;
    Ok((file, rows))
}

impl BTreeIndex {
    /// Opens the segment in `dir`: reads and validates `page_lookup.lance` (on an object store
    /// also the tail of `page_data.lance`, at the same time). `sizes` are
    /// the recorded file sizes (from `IndexMetadata.files`), when known.
    pub async fn open(
        fs: &FileStore,
        dir: &Path,
        cache: Arc<dyn PageCache>,
        sizes: &HashMap<String, u64>,
    ) -> Result<Self> {
        let lookup_path = dir.clone().join(PAGE_LOOKUP_FILE);
        let data_path = dir.clone().join(PAGE_DATA_FILE);
        let data_size = sizes.get(PAGE_DATA_FILE).copied();
        // On an object store the page data's tail comes with the lookup, in one round trip
        // instead of two: a search that finds a page reads it next. A failure here is left
        // for the read that needs the page data to meet again.
        let open_lookup = LanceFile::open(fs, &lookup_path, sizes.get(PAGE_LOOKUP_FILE).copied());
        let (file, data_file) = match fs.is_remote() {
            true => {
                let (file, data) =
                    futures::join!(open_lookup, LanceFile::open(fs, &data_path, data_size));
                (file?, data.ok())
            }
            false => (open_lookup.await?, None),
        };
        let value_type = file
            .schema()
            .field_with_name("min")
            .map_err(|_| BTreeError::Corrupt {
                at: lancet_proto::ObjectRef::new(lookup_path.to_string()),
                rule: "page_lookup.lance has no min column".into(),
            })?
            .data_type()
            .clone();
        if !crate::schema::is_supported(&value_type) {
            return Err(BTreeError::Unsupported {
                path: lookup_path.to_string(),
                rule: format!("value type {value_type}"),
            });
        }
        file.check_schema(&page_lookup_schema(&value_type))?;
        let batch = file.read_all().await?;
        let lookup = PageLookup::from_batch(lookup_path.as_ref(), &batch, file.metadata())?;
        let data = OnceCell::new();
        if let Some(opened) = data_file {
            // checked as `data` checks a file it opens; refused, it is opened again there
            if let Ok(checked) = check_data(&lookup, &data_path, opened) {
                let _ = data.set(checked);
            }
        }
        Ok(Self {
            key: Arc::from(dir.as_ref()),
            fs: fs.clone(),
            data_path,
            data_size,
            lookup,
            data,
            cache,
            load: Mutex::new(()),
            pages_read: AtomicU64::new(0),
        })
    }

    pub fn lookup(&self) -> &PageLookup {
        &self.lookup
    }

    /// Pages read from storage so far (cache misses).
    pub fn pages_read(&self) -> u64 {
        self.pages_read.load(Ordering::Relaxed)
    }

    async fn data(&self) -> Result<&(LanceFile, u64)> {
        self.data
            .get_or_try_init(|| async {
                let file = LanceFile::open(&self.fs, &self.data_path, self.data_size).await?;
                check_data(&self.lookup, &self.data_path, file)
            })
            .await
    }

    /// Bytes of `page_data.lance`, when the index metadata records them.
    pub fn data_bytes(&self) -> Option<u64> {
        self.data_size
    }

    /// Rows in `page_data.lance`.
    pub async fn data_rows(&self) -> Result<u64> {
        Ok(self.data().await?.1)
    }

    /// Rows `range` of `page_data.lance` (sorted values and their ids), bypassing the cache.
    pub async fn read_rows(
        &self,
        range: std::ops::Range<u64>,
    ) -> Result<(arrow_array::ArrayRef, UInt64Array)> {
        let (file, _) = self.data().await?;
        let batch = file.read_range(range).await?;
        let ids = batch
            .column(1)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .cloned()
            .ok_or_else(|| BTreeError::Corrupt {
                at: lancet_proto::ObjectRef::new(self.data_path.to_string()),
                rule: "ids column is not UInt64".into(),
            })?;
        Ok((batch.column(0).clone(), ids))
    }

    fn key(&self, page: u32) -> PageKey {
        PageKey {
            segment: self.key.clone(),
            page,
        }
    }

    /// The data pages `pages`, from the cache or read together in one coalesced request set.
    async fn pages(&self, pages: &[u32]) -> Result<HashMap<u32, Arc<Page>>> {
        let mut out = HashMap::with_capacity(pages.len());
        let mut missing: Vec<u32> = Vec::new();
        for &p in pages {
            match self.cache.get(&self.key(p)) {
                Some(page) => {
                    out.insert(p, page);
                }
                None => missing.push(p),
            }
        }
        if missing.is_empty() {
            return Ok(out);
        }
        let _guard = self.load.lock().await;
        // Another search may have loaded some of them while we waited.
        missing.retain(|p| match self.cache.recheck(&self.key(*p)) {
            Some(page) => {
                out.insert(*p, page);
                false
            }
            None => true,
        });
        if missing.is_empty() {
            return Ok(out);
        }
        missing.sort_unstable();
        let (file, rows) = self.data().await?;
        let ranges: Vec<_> = missing
            .iter()
            .map(|p| self.lookup.data_rows_of(*p, *rows))
            .collect();
        let batch = file.read_ranges(&ranges).await?;
        let ids = batch
            .column(1)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .ok_or_else(|| BTreeError::Corrupt {
                at: lancet_proto::ObjectRef::new(self.data_path.to_string()),
                rule: "ids column is not UInt64".into(),
            })?;
        if ids.null_count() > 0 {
            return Err(BTreeError::Corrupt {
                at: lancet_proto::ObjectRef::new(self.data_path.to_string()),
                rule: "ids column has NULLs".into(),
            });
        }
        // Every page is sliced out of the batch below: it must hold exactly the rows asked
        // for (a decoder returning fewer would make `slice` panic).
        let expected: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        if batch.num_rows() as u64 != expected {
            return Err(BTreeError::Corrupt {
                at: lancet_proto::ObjectRef::new(self.data_path.to_string()),
                rule: format!(
                    "reading {expected} rows of pages {missing:?} returned {}",
                    batch.num_rows()
                ),
            });
        }
        let mut offset = 0usize;
        for (p, r) in missing.iter().zip(&ranges) {
            let n = (r.end - r.start) as usize;
            let page = Arc::new(Page::new_index_page(
                batch.column(0).slice(offset, n),
                Arc::new(ids.slice(offset, n)),
            ));
            offset += n;
            self.cache.insert(self.key(*p), page.clone());
            out.insert(*p, page);
        }
        self.pages_read
            .fetch_add(missing.len() as u64, Ordering::Relaxed);
        Ok(out)
    }

    /// Exact answer of `query` over every row of this segment.
    pub async fn search(&self, query: &Query) -> Result<NullableIdSet> {
        if let Query::Range(lo, hi) = query {
            for b in [lo, hi] {
                if let std::ops::Bound::Included(v) | std::ops::Bound::Excluded(v) = b {
                    self.check_scalar(v)?;
                }
            }
        }
        if let Query::Equals(v) | Query::IsIn(v) = query {
            self.check_scalar(v)?;
        }
        if let Query::IsIn(values) = query {
            let float = matches!(
                values.data_type(),
                DataType::Float16 | DataType::Float32 | DataType::Float64
            );
            if values.null_count() == 0 && !float {
                return self.search_in(values).await;
            }
        }
        let selection = select(&self.lookup, query)?;
        let data_pages: Vec<u32> = selection
            .keys()
            .filter_map(|&i| self.lookup.page_idx.get(i).copied())
            .collect();
        let pages = self.pages(&data_pages).await?;
        // Every row lives on one page: gather ids from all pages, build the sets once.
        let rows: usize = data_pages
            .iter()
            .filter_map(|p| pages.get(p))
            .map(|page| page.ids().len())
            .sum();
        let mut ids = IdLists::with_capacity(rows);
        for (&i, &m) in &selection {
            let Some(page) = self.lookup.page_idx.get(i).and_then(|p| pages.get(p)) else {
                continue;
            };
            page.evaluate_into(self.lookup.value_type(), query, m, &mut ids)?;
        }
        Ok(ids.into_set())
    }

    /// `IN` a long list: sorted once, each page evaluated against the values within its
    /// `[min, max]` only (a merge_insert asks for a hundred thousand keys at once).
    async fn search_in(&self, values: &arrow_array::ArrayRef) -> Result<NullableIdSet> {
        let sorted = arrow_ord::sort::sort(values.as_ref(), None)?;
        let parts = crate::select::select_in(&self.lookup, &sorted)?;
        let data_pages: Vec<u32> = parts
            .iter()
            .filter_map(|(i, _)| self.lookup.page_idx.get(*i).copied())
            .collect();
        let pages = self.pages(&data_pages).await?;
        let mut ids = IdLists::default();
        for (i, range) in parts {
            let Some(page) = self.lookup.page_idx.get(i).and_then(|p| pages.get(p)) else {
                continue;
            };
            let part = Query::IsIn(sorted.slice(range.start, range.len()));
            page.evaluate_into(self.lookup.value_type(), &part, PageMatch::Some, &mut ids)?;
        }
        Ok(ids.into_set())
    }

    fn check_scalar(&self, v: &arrow_array::ArrayRef) -> Result<()> {
        if v.data_type() != self.lookup.value_type() {
            return Err(BTreeError::InvalidInput(format!(
                "query value of type {} against an index of {}",
                v.data_type(),
                self.lookup.value_type()
            )));
        }
        Ok(())
    }
}

/// The BTree entries of an index list, grouped by name in list order: one entry per segment
/// of each index (an entry is a BTree by its details type URL).
pub fn segments_by_name(
    indices: &[lancet_proto::table::IndexMetadata],
) -> Vec<(String, Vec<&lancet_proto::table::IndexMetadata>)> {
    let mut by_name: Vec<(String, Vec<&lancet_proto::table::IndexMetadata>)> = Vec::new();
    for m in indices {
        let is_btree = m
            .index_details
            .as_ref()
            .is_some_and(|d| lancet_proto::is_btree_type_url(&d.type_url));
        if !is_btree {
            continue;
        }
        match by_name.iter_mut().find(|(n, _)| *n == m.name) {
            Some((_, v)) => v.push(m),
            None => by_name.push((m.name.clone(), vec![m])),
        }
    }
    by_name
}

/// The name of the BTree index on field `field_id` alone (every segment on exactly that
/// field), if the list has one.
pub fn btree_on_field(
    indices: &[lancet_proto::table::IndexMetadata],
    field_id: i32,
) -> Option<String> {
    segments_by_name(indices)
        .into_iter()
        .find(|(_, segs)| segs.iter().all(|m| m.fields == [field_id]))
        .map(|(n, _)| n)
}

#[cfg(test)]
mod entry_tests {
    use super::*;
    use lancet_proto::table::IndexMetadata;

    fn entry(name: &str, type_url: &str, fields: &[i32]) -> IndexMetadata {
        IndexMetadata {
            name: name.into(),
            fields: fields.to_vec(),
            index_details: Some(lancet_proto::prost_types::Any {
                type_url: type_url.into(),
                value: vec![],
            }),
            ..Default::default()
        }
    }

    #[test]
    fn btree_segments_are_grouped_by_name_and_found_by_field() {
        let btree = lancet_proto::BTREE_DETAILS_TYPE_URL;
        let list = [
            entry("a", btree, &[1]),
            entry("bm", "/lance.table.BitmapIndexDetails", &[2]),
            entry("b", btree, &[2, 3]),
            entry("a", btree, &[1]),
        ];
        let grouped = segments_by_name(&list);
        let names: Vec<(&str, usize)> =
            grouped.iter().map(|(n, s)| (n.as_str(), s.len())).collect();
        assert_eq!(
            names,
            vec![("a", 2), ("b", 1)],
            "the bitmap index is not a BTree"
        );
        assert_eq!(btree_on_field(&list, 1).as_deref(), Some("a"));
        assert_eq!(
            btree_on_field(&list, 2),
            None,
            "b covers two fields; bm is no BTree"
        );
    }
}
