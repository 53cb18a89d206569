use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use bytes::Bytes;
use futures::FutureExt;
use futures::TryStreamExt;
use lance_core::cache::LanceCache;
use lance_encoding::decoder::{DecoderPlugins, FilterExpression};
use lance_file::reader::{FileReader, FileReaderOptions};
use lance_io::utils::CachedFileSize;
use lance_io::ReadBatchParams;
use object_store::path::Path;
use object_store::ObjectStoreExt;

use crate::checked_io::{CheckedIo, CompressedPages, ReadAhead, StoreIo};
use crate::error::{lance_err, FileError, Result};
use crate::footer::{check_offset_table, parse_footer, FOOTER_LEN};
use crate::schema::check_schema_exact;
use crate::store::FileStore;

const READ_BATCH_ROWS: u32 = 8192;

/// One shared zero-capacity lance cache. `LanceCache::no_cache()` builds a fresh moka cache
/// each call, and building and dropping one cost about a fifth of decoding a small file
/// (measured on 300 KB tree leaves); lancet caches decoded objects itself.
fn no_cache() -> &'static LanceCache {
    static NO_CACHE: std::sync::LazyLock<LanceCache> =
        std::sync::LazyLock::new(LanceCache::no_cache);
    &NO_CACHE
}
const READAHEAD: u32 = 4;

/// An open Lance v2 file.
pub struct LanceFile {
    path: Path,
    reader: FileReader,
    schema: SchemaRef,
    /// The field ids of the stored schema, nested fields included (pre-order).
    field_ids: Vec<i32>,
    /// Ids of fields with children (structs): in files of 2.1 and later they hold no column
    /// of their own, so a DataFile does not list them.
    parent_ids: Vec<i32>,
    /// Each top-level field's id and name.
    top_level: Vec<(i32, String)>,
    /// The file's compressed buffers, checked on every page read (`checked_io.rs`).
    pages: Arc<CompressedPages>,
    /// Whole-column reads fetch their pages in one request (see [`ReadAhead`]).
    ahead: Arc<ReadAhead>,
    /// The store the file is read from (`None` for a file held in memory).
    io: Option<Arc<dyn lance_encoding::EncodingsIo>>,
}

impl std::fmt::Debug for LanceFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LanceFile")
            .field("path", &self.path)
            .field("num_rows", &self.reader.num_rows())
            .finish()
    }
}

impl LanceFile {
    /// Opens `path`. With `known_size`, lance-io skips a HEAD request.
    ///
    /// The footer and offset tables are checked by lancet first (see `footer.rs`); anything
    /// lance-file still cannot decode is a [`FileError::Lance`] or [`FileError::Corrupt`], never a
    /// panic.
    pub async fn open(fs: &FileStore, path: &Path, known_size: Option<u64>) -> Result<Self> {
        // one request: the tail (and the size, when unknown) with the footer, both offset
        // tables and usually all metadata, which lance-file's own reads then find in memory
        let tail = fs
            .tails
            .tail(path, known_size)
            .await
            .map_err(|e| FileError::Store {
                path: path.clone(),
                source: e.into(),
            })?;
        let size = tail.size();
        if known_size.is_some_and(|k| k != size) {
            return Err(FileError::Corrupt {
                at: lancet_proto::ObjectRef::new(path.to_string()),
                rule: format!("the file is {size} bytes, its record says {known_size:?}"),
            });
        }
        check_footer(fs, path, size, &tail).await?;
        let file = fs
            .scheduler
            .open_file(path, &CachedFileSize::new(size))
            .await
            .map_err(lance_err(path))?;
        let reader = guard(
            path,
            FileReader::try_open(
                file,
                None,
                Arc::<DecoderPlugins>::default(),
                no_cache(),
                FileReaderOptions::default(),
            ),
        )
        .await?
        .map_err(lance_err(path))?;
        // Every page read from here on goes through the compressed-buffer check.
        let pages = Arc::new(CompressedPages::of_pages(
            reader
                .metadata()
                .column_infos
                .iter()
                .enumerate()
                .flat_map(|(c, col)| {
                    col.page_infos
                        .iter()
                        .enumerate()
                        .map(move |(p, page)| (c, p, page))
                }),
        ));
        let ahead = Arc::new(ReadAhead::default());
        let io: Arc<dyn lance_encoding::EncodingsIo> = Arc::new(StoreIo {
            store: fs.raw.clone(),
            path: path.clone(),
        });
        let reader = reader.with_scheduler(Arc::new(CheckedIo {
            inner: io.clone(),
            pages: pages.clone(),
            ahead: ahead.clone(),
        }));
        let lance_schema = reader.schema().clone();
        // lance-core unwraps on a logical type it does not know; bytes decide the type.
        let converted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Schema::from(lance_schema.as_ref())
        }));
        let mut schema = converted.map_err(|_| FileError::Corrupt {
            at: lancet_proto::ObjectRef::new(path.to_string()),
            rule: "the file's schema names a type Lance does not know".into(),
        })?;
        schema.metadata = lance_schema.metadata.clone();
        let field_ids = lance_schema.fields_pre_order().map(|f| f.id).collect();
        let parent_ids = parent_ids(lance_schema.as_ref());
        let top_level = lance_schema
            .fields
            .iter()
            .map(|f| (f.id, f.name.clone()))
            .collect();
        Ok(Self {
            path: path.clone(),
            reader,
            schema: Arc::new(schema),
            field_ids,
            parent_ids,
            top_level,
            pages,
            ahead,
            io: Some(io),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn num_rows(&self) -> u64 {
        self.reader.num_rows()
    }

    /// The stored Arrow schema, with the file's schema metadata.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The field ids the stored schema holds, nested fields included, in pre-order (what a
    /// fragment's `DataFile.fields` lists for the file).
    pub fn field_ids(&self) -> &[i32] {
        &self.field_ids
    }

    /// The ids of fields with children (structs) in the file's schema.
    pub fn parent_field_ids(&self) -> &[i32] {
        &self.parent_ids
    }

    /// The stored name of the top-level field with id `id` (a table's data file records its
    /// columns' manifest ids).
    pub fn top_level_name(&self, id: i32) -> Option<&str> {
        self.top_level
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, n)| n.as_str())
    }

    /// The file's schema metadata.
    pub fn metadata(&self) -> &HashMap<String, String> {
        &self.schema.metadata
    }

    /// Fails with `SchemaMismatch` unless the stored schema is exactly `expected`.
    pub fn check_schema(&self, expected: &Schema) -> Result<()> {
        check_schema_exact(&self.schema, expected).map_err(|e| FileError::SchemaMismatch {
            path: self.path.clone(),
            rule: e.rule,
        })
    }

    /// Reads every row.
    pub async fn read_all(&self) -> Result<RecordBatch> {
        self.read_range(0..self.num_rows()).await
    }

    /// Reads rows `range`.
    pub async fn read_range(&self, range: Range<u64>) -> Result<RecordBatch> {
        self.check_range(&range)?;
        if range.is_empty() {
            return Ok(RecordBatch::new_empty(self.schema.clone()));
        }
        let columns = self.all_columns();
        match range == (0..self.num_rows()) {
            true => self.prefetch(&columns, None).await?,
            false => {
                self.prefetch(&columns, Some(std::slice::from_ref(&range)))
                    .await?
            }
        }
        let read = self
            .collect(ReadBatchParams::Range(range_usize(&range)?), None)
            .await;
        self.ahead.clear();
        read
    }

    /// Every column of the file (what a read without a projection decodes).
    fn all_columns(&self) -> Vec<u32> {
        let n = self.reader.metadata().column_infos.len();
        (0..u32::try_from(n).unwrap_or(u32::MAX)).collect()
    }

    /// Reads several row ranges with one request set (lance-io merges adjacent ranges into
    /// shared reads) and returns their rows concatenated in the order given.
    pub async fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<RecordBatch> {
        for r in ranges {
            self.check_range(r)?;
        }
        let ranges: Arc<[Range<u64>]> = ranges.iter().filter(|r| !r.is_empty()).cloned().collect();
        if ranges.is_empty() {
            return Ok(RecordBatch::new_empty(self.schema.clone()));
        }
        self.prefetch(&self.all_columns(), Some(&ranges)).await?;
        let read = self.collect(ReadBatchParams::Ranges(ranges), None).await;
        self.ahead.clear();
        read
    }

    /// Reads the rows at `rows` (strictly increasing, each below [`Self::num_rows`], as
    /// lance-encoding's take requires) as one batch. A take, unlike a range read, decodes on
    /// the calling task: for a few rows that is cheaper than lance-encoding's per-batch
    /// decode task.
    pub async fn take_rows(&self, rows: &[u64]) -> Result<RecordBatch> {
        let indices = self.check_rows(rows)?;
        if rows.is_empty() {
            return Ok(RecordBatch::new_empty(self.schema.clone()));
        }
        self.collect(ReadBatchParams::Indices(indices), None).await
    }

    /// Reads only the columns `names` of rows `range` (all rows when `None`).
    pub async fn read_columns(
        &self,
        names: &[&str],
        range: Option<Range<u64>>,
    ) -> Result<RecordBatch> {
        let range = range.unwrap_or(0..self.num_rows());
        self.check_range(&range)?;
        let (projection, schema) = self.projection(names)?;
        if range.is_empty() {
            return Ok(RecordBatch::new_empty(schema));
        }
        let params = ReadBatchParams::Range(range_usize(&range)?);
        // every row of the columns: every buffer of their pages in one request; some rows:
        // the small buffers of the pages holding them (what lance-file reads before it knows
        // which chunks to read), so the pages cost one more request
        let whole = range == (0..self.num_rows());
        match whole {
            true => self.prefetch(&projection.column_indices, None).await?,
            false => {
                self.prefetch(
                    &projection.column_indices,
                    Some(std::slice::from_ref(&range)),
                )
                .await?
            }
        }
        let read = self.collect(params, Some((projection, schema))).await;
        self.ahead.clear();
        read
    }

    /// Fetches, in one request held until the read that wants them is done, buffers of the
    /// columns `columns`: with `rows` `None` every buffer (column-level and page buffers);
    /// otherwise the pages holding any of the row spans `rows`: whole when at most
    /// [`SMALL_PAGE`] bytes, else their small buffers (at most [`SMALL_BUFFER`] bytes each).
    async fn prefetch(&self, columns: &[u32], rows: Option<&[Range<u64>]>) -> Result<()> {
        let Some(io) = &self.io else {
            return Ok(());
        };
        let infos = &self.reader.metadata().column_infos;
        let mut ranges: Vec<Range<u64>> = Vec::new();
        for c in columns {
            let Some(info) = usize::try_from(*c).ok().and_then(|c| infos.get(c)) else {
                continue;
            };
            let Some(rows) = rows else {
                let buffers = info.buffer_offsets_and_sizes.iter().chain(
                    info.page_infos
                        .iter()
                        .flat_map(|p| p.buffer_offsets_and_sizes.iter()),
                );
                ranges.extend(buffers.map(|(at, len)| *at..at.saturating_add(*len)));
                continue;
            };
            let small = |(at, len): &(u64, u64)| {
                (*len <= SMALL_BUFFER).then(|| *at..at.saturating_add(*len))
            };
            ranges.extend(info.buffer_offsets_and_sizes.iter().filter_map(small));
            let mut start = 0u64;
            for page in info.page_infos.iter() {
                let span = start..start.saturating_add(page.num_rows);
                start = span.end;
                let holds = rows
                    .iter()
                    .any(|r| r.start < span.end && span.start < r.end);
                if !holds {
                    continue;
                }
                let page_bytes: u64 = page.buffer_offsets_and_sizes.iter().map(|(_, l)| l).sum();
                if page_bytes <= SMALL_PAGE {
                    // the whole page: lance-file's data request is then served too
                    ranges.extend(
                        page.buffer_offsets_and_sizes
                            .iter()
                            .map(|(at, len)| *at..at.saturating_add(*len)),
                    );
                } else {
                    ranges.extend(page.buffer_offsets_and_sizes.iter().filter_map(small));
                }
            }
        }
        ranges.sort_by_key(|r| r.start);
        ranges.dedup();
        self.ahead
            .prefetch(io.as_ref(), ranges)
            .await
            .map_err(lance_err(&self.path))
    }

    /// Reads only the columns `names` of the rows at `rows` (strictly increasing, each below
    /// [`Self::num_rows`]).
    pub async fn take_columns(&self, names: &[&str], rows: &[u64]) -> Result<RecordBatch> {
        let indices = self.check_rows(rows)?;
        let (projection, schema) = self.projection(names)?;
        if rows.is_empty() {
            return Ok(RecordBatch::new_empty(schema));
        }
        let spans: Vec<Range<u64>> = rows.iter().map(|r| *r..r.saturating_add(1)).collect();
        self.prefetch(&projection.column_indices, Some(&spans))
            .await?;
        let read = self
            .collect(
                ReadBatchParams::Indices(indices),
                Some((projection, schema)),
            )
            .await;
        self.ahead.clear();
        read
    }

    fn projection(
        &self,
        names: &[&str],
    ) -> Result<(lance_file::reader::ReaderProjection, SchemaRef)> {
        let projection = lance_file::versions::reader_projection_from_column_names(
            self.reader.version(),
            self.reader.schema(),
            names,
        )
        .map_err(lance_err(&self.path))?;
        let schema = Arc::new(Schema::from(projection.schema.as_ref()));
        Ok((projection, schema))
    }

    /// `rows` as take indices: strictly increasing, each a row of the file.
    fn check_rows(&self, rows: &[u64]) -> Result<arrow_array::UInt32Array> {
        if rows.windows(2).any(|w| matches!(w, [a, b] if a >= b)) {
            return Err(FileError::InvalidInput {
                path: self.path.clone(),
                rule: "rows to take must be strictly increasing".into(),
            });
        }
        if let Some(&row) = rows.iter().find(|&&r| r >= self.num_rows()) {
            return Err(FileError::OutOfRange {
                path: self.path.clone(),
                rule: format!("row {row} outside 0..{}", self.num_rows()),
            });
        }
        rows.iter()
            .map(|&r| u32::try_from(r))
            .collect::<std::result::Result<Vec<u32>, _>>()
            .map(arrow_array::UInt32Array::from)
            .map_err(|_| FileError::OutOfRange {
                path: self.path.clone(),
                rule: "a row number does not fit u32".into(),
            })
    }

    /// Reads global buffer `index` (0 is the file descriptor).
    pub async fn global_buffer(&self, index: u32) -> Result<Bytes> {
        guard(&self.path, self.reader.read_global_buffer(index))
            .await?
            .map_err(|e| FileError::OutOfRange {
                path: self.path.clone(),
                rule: format!("global buffer {index}: {e}"),
            })
    }

    fn check_range(&self, range: &Range<u64>) -> Result<()> {
        if range.start > range.end || range.end > self.num_rows() {
            return Err(FileError::OutOfRange {
                path: self.path.clone(),
                rule: format!("rows {range:?} outside 0..{}", self.num_rows()),
            });
        }
        Ok(())
    }

    /// Reads `params` (all columns, or a projection with its Arrow schema) into one batch.
    async fn collect(
        &self,
        params: ReadBatchParams,
        projection: Option<(lance_file::reader::ReaderProjection, SchemaRef)>,
    ) -> Result<RecordBatch> {
        let (projection, schema) = match projection {
            Some((p, s)) => (Some(p), s),
            None => (None, self.schema.clone()),
        };
        let read = async {
            let stream = match projection {
                Some(p) => {
                    self.reader
                        .read_stream_projected(
                            params,
                            READ_BATCH_ROWS,
                            READAHEAD,
                            p,
                            FilterExpression::no_filter(),
                        )
                        .await?
                }
                None => {
                    self.reader
                        .read_stream(
                            params,
                            READ_BATCH_ROWS,
                            READAHEAD,
                            FilterExpression::no_filter(),
                        )
                        .await?
                }
            };
            stream.try_collect::<Vec<RecordBatch>>().await
        };
        let batches = guard(&self.path, read)
            .await?
            .map_err(lance_err(&self.path))?;
        let schema = batches.first().map_or(schema, |b| b.schema());
        arrow_select::concat::concat_batches(&schema, &batches).map_err(|e| FileError::Lance {
            path: self.path.clone(),
            source: lance_core::Error::from(e).into(),
        })
    }
}

fn range_usize(range: &Range<u64>) -> Result<Range<usize>> {
    let conv = |v: u64| {
        usize::try_from(v).map_err(|_| FileError::InvalidInput {
            path: Path::default(),
            rule: format!("row {v} does not fit usize"),
        })
    };
    Ok(conv(range.start)?..conv(range.end)?)
}

/// Runs a lance-file future, turning a panic inside it into `FileError::Corrupt`. lance-file
/// and lance-encoding are third-party decoders; lancet's contract is "no panic on any bytes".
pub(crate) async fn guard<T>(path: &Path, fut: impl std::future::Future<Output = T>) -> Result<T> {
    std::panic::AssertUnwindSafe(fut)
        .catch_unwind()
        .await
        .map_err(|panic| {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "the decoder gave up on the input".to_string());
            FileError::Corrupt {
                at: lancet_proto::ObjectRef::new(path.to_string()),
                rule: format!("lance-file could not decode the file: {msg}"),
            }
        })
}

/// Page buffers up to this size are fetched ahead of a partial read (see
/// [`LanceFile::prefetch`]): metadata, chunk tables and repetition indexes.
const SMALL_BUFFER: u64 = 4096;

/// A page up to this size is fetched whole ahead of a partial read that touches it: one
/// request instead of two (its metadata, then its chunks), for a few KiB more.
const SMALL_PAGE: u64 = 256 * 1024;

/// Validates the footer and both offset tables before lance-file trusts them.
async fn check_footer(
    fs: &FileStore,
    path: &Path,
    size: u64,
    tail: &crate::tail::Tail,
) -> Result<()> {
    let corrupt = |rule: String| FileError::Corrupt {
        at: lancet_proto::ObjectRef::new(path.to_string()),
        rule,
    };
    if size < FOOTER_LEN {
        return Err(corrupt(format!(
            "file is {size} bytes, shorter than the 40-byte v2 footer"
        )));
    }
    let store_err = |e: object_store::Error| FileError::Store {
        path: path.clone(),
        source: e.into(),
    };
    let footer_bytes = match tail.slice(&(size - FOOTER_LEN..size)) {
        Some(b) => b,
        None => fs
            .raw
            .get_range(path, size - FOOTER_LEN..size)
            .await
            .map_err(store_err)?,
    };
    let footer = parse_footer(&footer_bytes, size).map_err(corrupt)?;
    // Both tables sit between cmo_table_start and the footer; parse_footer bounded them by size.
    let tables_range = footer.cmo_table_start..size - FOOTER_LEN;
    let tables = match tail.slice(&tables_range) {
        Some(b) => b,
        None => fs
            .raw
            .get_range(path, tables_range)
            .await
            .map_err(store_err)?,
    };
    let split = usize::try_from(footer.gbo_table_start - footer.cmo_table_start)
        .map_err(|_| corrupt("offset tables too large".into()))?;
    let (cmo, gbo) = tables
        .split_at_checked(split)
        .ok_or_else(|| corrupt("offset tables truncated".into()))?;
    check_offset_table(cmo, footer.cmo_table_start, "column metadata").map_err(corrupt)?;
    check_offset_table(gbo, footer.cmo_table_start, "global buffer").map_err(corrupt)?;
    Ok(())
}

/// Reads every row of a Lance file held in memory (an object fetched whole, its length already
/// checked by the caller) and checks its schema is exactly `expected` first.
///
/// The bytes are served to lance-file from a private in-memory store under `path` (which only
/// names the object in errors), so the file's footer, offset tables and pages go through the
/// same checks as [`LanceFile::open`] and no further request reaches the real store.
pub async fn read_bytes_exact(path: &Path, bytes: Bytes, expected: &Schema) -> Result<RecordBatch> {
    open_bytes_exact(path, bytes, expected)
        .await?
        .read_all()
        .await
}

/// [`read_bytes_exact`] without reading any rows yet: the open file, its schema checked, for
/// reading some columns or rows (a point read of one record of a leaf).
pub async fn open_bytes_exact(path: &Path, bytes: Bytes, expected: &Schema) -> Result<LanceFile> {
    let memory = Arc::new(object_store::memory::InMemory::new());
    let size = bytes.len() as u64;
    memory
        .put(path, bytes.clone().into())
        .await
        .map_err(|e| FileError::Store {
            path: path.clone(),
            source: e.into(),
        })?;
    let fs = FileStore::new(memory, "memory:///")?;
    let mut file = LanceFile::open(&fs, path, Some(size)).await?;
    file.check_schema(expected)?;
    // Pages are served straight from `bytes` from here on: lance-io's scan scheduler (an I/O
    // task, channels, a wakeup per request) costs more than decoding one row of a leaf.
    file.reader = file.reader.with_scheduler(Arc::new(CheckedIo {
        inner: Arc::new(MemoryIo { bytes }),
        pages: file.pages.clone(),
        ahead: Default::default(),
    }));
    Ok(file)
}

/// What opening a file established, kept to open the same file's bytes again
/// ([`reopen_bytes`]) without reading and checking its footer, metadata and schema a second
/// time: lance-file's decoded metadata, the compressed-buffer table and the Arrow schema.
///
/// For immutable objects (tree leaves are named by a fresh UUID and never rewritten), where a
/// reader reads one file many times. Small next to the file: its weight is
/// [`FileOutline::size_bytes`].
#[derive(Clone)]
pub struct FileOutline {
    metadata: Arc<lance_file::reader::CachedFileMetadata>,
    pages: Arc<CompressedPages>,
    schema: SchemaRef,
    file_size: u64,
}

impl std::fmt::Debug for FileOutline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileOutline")
            .field("file_size", &self.file_size)
            .field("num_rows", &self.metadata.num_rows)
            .finish()
    }
}

impl FileOutline {
    /// The outline's weight for a cache: the stored size of the file's metadata sections
    /// (column and page descriptions, global buffers, offset tables) and a little per schema
    /// field. Their decoded form takes more memory than that (protobuf structs and vectors),
    /// so a cache of outlines holds a small multiple of its byte budget; the weight is
    /// proportional, which is what keeps such a cache bounded.
    pub fn size_bytes(&self) -> u64 {
        let sections = self.metadata.num_column_metadata_bytes
            + self.metadata.num_global_buffer_bytes
            + self.metadata.num_footer_bytes;
        sections + 64 * self.schema.fields().len() as u64 + 256
    }
}

/// What a Lance file's footer and metadata say about it, for tools (pylance's
/// `LanceFileMetadata` without the page layouts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSummary {
    pub major_version: u16,
    pub minor_version: u16,
    pub num_rows: u64,
    pub num_data_bytes: u64,
    pub num_column_metadata_bytes: u64,
    pub num_global_buffer_bytes: u64,
    /// Each global buffer's `(position, size)`; buffer 0 is the file's schema.
    pub global_buffers: Vec<(u64, u64)>,
    /// The number of columns the file stores (leaf and parent fields that own one).
    pub num_columns: usize,
}

impl FileSummary {
    /// `(major, minor)` as a `DataFile` records the file's version (2.0 files: `(0, 3)`).
    pub fn version(&self) -> (u32, u32) {
        (u32::from(self.major_version), u32::from(self.minor_version))
    }
}

impl LanceFile {
    /// What the file's footer and metadata say about it.
    pub fn summary(&self) -> FileSummary {
        let m = self.reader.metadata();
        FileSummary {
            major_version: m.major_version,
            minor_version: m.minor_version,
            num_rows: m.num_rows,
            num_data_bytes: m.num_data_bytes,
            num_column_metadata_bytes: m.num_column_metadata_bytes,
            num_global_buffer_bytes: m.num_global_buffer_bytes,
            global_buffers: m
                .file_buffers
                .iter()
                .map(|b| (b.position, b.size))
                .collect(),
            num_columns: m.column_infos.len(),
        }
    }

    /// The field ids a `DataFile` holding this whole file records, and the column index of
    /// each as Lance 14.0.2's reader projects the whole schema (`create_from_file`): every
    /// field's id in pre-order; columns as the file's version lays them out (in 2.1 and
    /// later only leaves own one).
    pub fn whole_file_columns(&self) -> (Vec<i32>, Vec<i32>) {
        let schema = self.reader.schema();
        let projection = lance_file::versions::reader_projection_from_whole_schema(
            schema,
            self.reader.metadata().version,
        );
        let columns = (projection.column_indices.iter())
            .map(|c| i32::try_from(*c).unwrap_or(i32::MAX))
            .collect();
        (schema.field_ids(), columns)
    }

    /// The file's size in bytes, as its store reported it.
    pub fn size_bytes(&self) -> u64 {
        self.reader.metadata().file_size_bytes
    }

    /// This file's [`FileOutline`], to [`reopen_bytes`] it later.
    pub fn outline(&self) -> FileOutline {
        FileOutline {
            metadata: self.reader.metadata().clone(),
            pages: self.pages.clone(),
            schema: self.schema.clone(),
            file_size: self.reader.metadata().file_size_bytes,
        }
    }
}

/// Opens a file's `bytes` with the [`FileOutline`] an earlier open of the same file gave:
/// no footer, metadata or schema is read again, only the pages a read needs. The bytes must
/// have the outlined file's length; every page read is still checked against the
/// compressed-buffer table and the bytes' bounds, so different bytes under the same name
/// give errors, never a panic or an unbounded allocation.
pub async fn reopen_bytes(path: &Path, bytes: Bytes, outline: &FileOutline) -> Result<LanceFile> {
    if bytes.len() as u64 != outline.file_size {
        return Err(FileError::Corrupt {
            at: lancet_proto::ObjectRef::new(path.to_string()),
            rule: format!(
                "the file is {} bytes, not the {} bytes it had when first opened",
                bytes.len(),
                outline.file_size
            ),
        });
    }
    let io = Arc::new(CheckedIo {
        inner: Arc::new(MemoryIo { bytes }),
        pages: outline.pages.clone(),
        ahead: Default::default(),
    });
    let reader = guard(
        path,
        FileReader::try_open_with_file_metadata(
            io,
            path.clone(),
            None,
            Arc::<DecoderPlugins>::default(),
            outline.metadata.clone(),
            no_cache(),
            FileReaderOptions::default(),
        ),
    )
    .await?
    .map_err(lance_err(path))?;
    let field_ids = reader.schema().fields_pre_order().map(|f| f.id).collect();
    let parent_ids = parent_ids(reader.schema());
    let top_level = reader
        .schema()
        .fields
        .iter()
        .map(|f| (f.id, f.name.clone()))
        .collect();
    Ok(LanceFile {
        path: path.clone(),
        reader,
        schema: outline.schema.clone(),
        field_ids,
        parent_ids,
        top_level,
        pages: outline.pages.clone(),
        ahead: Default::default(),
        io: None,
    })
}

/// Serves lance-encoding's page reads from a file held in memory, synchronously: every
/// request is a slice of `bytes` (bounds-checked: a range past the end is an error, as a
/// short object would be).
#[derive(Debug)]
struct MemoryIo {
    bytes: Bytes,
}

impl lance_encoding::EncodingsIo for MemoryIo {
    fn submit_request(
        &self,
        ranges: Vec<Range<u64>>,
        _priority: u64,
    ) -> futures::future::BoxFuture<'static, lance_core::Result<Vec<Bytes>>> {
        let len = self.bytes.len() as u64;
        let slices = ranges
            .into_iter()
            .map(|r| {
                if r.start <= r.end && r.end <= len {
                    // In bounds of a `usize`-sized buffer, so both ends fit `usize`.
                    Ok(self.bytes.slice(r.start as usize..r.end as usize))
                } else {
                    Err(lance_core::Error::invalid_input(format!(
                        "read of bytes {r:?} past the end of a {len}-byte file"
                    )))
                }
            })
            .collect();
        futures::future::ready(slices).boxed()
    }
}

/// Ids of the fields of `schema` that have children.
fn parent_ids(schema: &lance_core::datatypes::Schema) -> Vec<i32> {
    (schema.fields_pre_order())
        .filter(|f| !f.children.is_empty())
        .map(|f| f.id)
        .collect()
}

#[cfg(test)]
mod tests {
    use lance_encoding::EncodingsIo;

    use super::*;

    #[tokio::test]
    async fn memory_io_serves_slices_and_refuses_reads_past_the_end() {
        let io = MemoryIo {
            bytes: Bytes::from_static(b"0123456789"),
        };
        let got = io.submit_request(vec![2..5, 7..7, 9..10], 0).await.unwrap();
        assert_eq!(
            got,
            vec![
                Bytes::from_static(b"234"),
                Bytes::new(),
                Bytes::from_static(b"9")
            ]
        );
        assert!(io.submit_request(vec![0..2, 8..11], 0).await.is_err());
        let (start, end) = (5, 4);
        assert!(io.submit_request(vec![0..1, start..end], 0).await.is_err());
    }
}
