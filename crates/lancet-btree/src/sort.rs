//! Sorting `(value, id)` pairs as the index stores them: in memory ([`sort_pairs`]) and, past
//! a memory budget, externally.
//!
//! Batches are buffered until they exceed the budget, then sorted and spilled as a run to a
//! temporary Lance file on local disk. `finish` merges the runs (and what is still buffered)
//! k-way on `arrow-row` keys, which order values exactly as the in-memory sort does (NULLs
//! first, floats in IEEE total order, ties by id), reading each run in chunks, and drops exact
//! duplicate `(value, id)` pairs. Memory stays near the budget plus one chunk per run.
//!
//! Choosing the next row scans the k run heads (O(k) per row); with the default budget k is
//! small. A heap would pay an owned-row copy per row instead.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow_row::{OwnedRow, RowConverter, Rows, SortField};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use arrow_select::interleave::interleave;
use arrow_select::take::take;
use lancet_file::{FileStore, FileVersion, LanceFile, StreamingWriter};
use object_store::path::Path;

use crate::error::{BTreeError, Result};
use crate::lookup::NULLS_FIRST;

/// Order-preserving u64 keys of a primitive column (signed: sign bit flipped; floats: IEEE
/// total order, NaN above +inf), or `None` for other types.
fn primitive_keys(values: &ArrayRef) -> Option<Vec<u64>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::DataType::*;
    fn signed(v: i64) -> u64 {
        (v as u64) ^ (1 << 63)
    }
    fn float(bits: u64) -> u64 {
        if bits >> 63 == 1 {
            !bits
        } else {
            bits | (1 << 63)
        }
    }
    let keys: Vec<u64> = match values.data_type() {
        Int8 => values
            .as_primitive::<Int8Type>()
            .values()
            .iter()
            .map(|v| signed(i64::from(*v)))
            .collect(),
        Int16 => values
            .as_primitive::<Int16Type>()
            .values()
            .iter()
            .map(|v| signed(i64::from(*v)))
            .collect(),
        Int32 | Date32 => values.to_data().buffers().first().map(|b| {
            b.typed_data::<i32>()
                .iter()
                .skip(values.offset())
                .take(values.len())
                .map(|v| signed(i64::from(*v)))
                .collect()
        })?,
        Int64 | Date64 | Timestamp(_, _) => values.to_data().buffers().first().map(|b| {
            b.typed_data::<i64>()
                .iter()
                .skip(values.offset())
                .take(values.len())
                .map(|v| signed(*v))
                .collect()
        })?,
        UInt8 => values
            .as_primitive::<UInt8Type>()
            .values()
            .iter()
            .map(|v| u64::from(*v))
            .collect(),
        UInt16 => values
            .as_primitive::<UInt16Type>()
            .values()
            .iter()
            .map(|v| u64::from(*v))
            .collect(),
        UInt32 => values
            .as_primitive::<UInt32Type>()
            .values()
            .iter()
            .map(|v| u64::from(*v))
            .collect(),
        UInt64 => values.as_primitive::<UInt64Type>().values().to_vec(),
        Float32 => values
            .as_primitive::<Float32Type>()
            .values()
            .iter()
            .map(|v| float(f64::from(*v).to_bits()))
            .collect(),
        Float64 => values
            .as_primitive::<Float64Type>()
            .values()
            .iter()
            .map(|v| float(v.to_bits()))
            .collect(),
        _ => return None,
    };
    Some(keys)
}

/// Sorts `(values, ids)` the way the index stores them: NULLs first, floats in IEEE total
/// order, ties by id. Primitive columns sort order-preserving u64 keys directly; other types
/// use Arrow's lexicographic sort.
pub fn sort_pairs(values: &ArrayRef, ids: &UInt64Array) -> Result<(ArrayRef, UInt64Array)> {
    let id_values = ids.values();
    let order: UInt32Array = match primitive_keys(values) {
        Some(keys) => {
            // NULL rows first, by id; then (key, id). The index breaks no ties: (key, id)
            // pairs are unique within one build.
            let mut nulls: Vec<(u64, u32)> = Vec::new();
            let mut rows: Vec<(u64, u64, u32)> = Vec::with_capacity(values.len());
            for (i, (key, id)) in keys.iter().zip(id_values.iter()).enumerate() {
                if values.is_null(i) {
                    nulls.push((*id, i as u32));
                } else {
                    rows.push((*key, *id, i as u32));
                }
            }
            nulls.sort_unstable();
            rows.sort_unstable();
            UInt32Array::from_iter_values(
                nulls
                    .into_iter()
                    .map(|n| n.1)
                    .chain(rows.into_iter().map(|r| r.2)),
            )
        }
        None => {
            let columns = [
                arrow_ord::sort::SortColumn {
                    values: values.clone(),
                    options: Some(NULLS_FIRST),
                },
                arrow_ord::sort::SortColumn {
                    values: Arc::new(ids.clone()),
                    options: Some(NULLS_FIRST),
                },
            ];
            arrow_ord::sort::lexsort_to_indices(&columns, None)?
        }
    };
    let values = take(values.as_ref(), &order, None)?;
    let ids = take(ids, &order, None)?;
    let ids = ids
        .as_any()
        .downcast_ref::<UInt64Array>()
        .cloned()
        .ok_or_else(|| BTreeError::InvalidInput("ids are not UInt64".into()))?;
    Ok((values, ids))
}

/// Rows read from a spilled run at a time.
const RUN_CHUNK_ROWS: u64 = 64 * 1024;

fn pair_schema(value_type: &DataType) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("value", value_type.clone(), true),
        Field::new("id", DataType::UInt64, false),
    ]))
}

/// Buffers, spills and merges `(value, id)` batches.
pub struct ExternalSorter {
    value_type: DataType,
    budget_bytes: usize,
    buffered: Vec<RecordBatch>,
    buffered_bytes: usize,
    spill: Option<(tempfile::TempDir, FileStore)>,
    runs: Vec<Path>,
}

impl ExternalSorter {
    pub fn new(value_type: DataType, budget_bytes: usize) -> Self {
        Self {
            value_type,
            budget_bytes,
            buffered: Vec::new(),
            buffered_bytes: 0,
            spill: None,
            runs: Vec::new(),
        }
    }

    /// Number of runs spilled so far.
    pub fn spilled_runs(&self) -> usize {
        self.runs.len()
    }

    /// Adds a batch of `(value, id: UInt64 non-null)`.
    pub async fn push(&mut self, batch: RecordBatch) -> Result<()> {
        if batch.num_columns() != 2
            || batch.column(0).data_type() != &self.value_type
            || batch.column(1).data_type() != &DataType::UInt64
            || batch.column(1).null_count() > 0
        {
            return Err(BTreeError::InvalidInput(format!(
                "batches must be (value: {}, id: UInt64 not null), got {}",
                self.value_type,
                batch.schema()
            )));
        }
        let batch = RecordBatch::try_new(
            pair_schema(&self.value_type),
            vec![batch.column(0).clone(), batch.column(1).clone()],
        )?;
        self.buffered_bytes += batch.get_array_memory_size();
        self.buffered.push(batch);
        if self.buffered_bytes > self.budget_bytes {
            self.spill_buffer().await?;
        }
        Ok(())
    }

    fn sorted_buffer(&mut self) -> Result<Option<RecordBatch>> {
        if self.buffered.is_empty() {
            return Ok(None);
        }
        let schema = pair_schema(&self.value_type);
        let all = arrow_select::concat::concat_batches(&schema, &self.buffered)?;
        self.buffered.clear();
        self.buffered_bytes = 0;
        let ids = all
            .column(1)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .cloned()
            .ok_or_else(|| BTreeError::InvalidInput("ids are not UInt64".into()))?;
        let (values, ids) = sort_pairs(all.column(0), &ids)?;
        Ok(Some(RecordBatch::try_new(
            schema,
            vec![values, Arc::new(ids)],
        )?))
    }

    async fn spill_buffer(&mut self) -> Result<()> {
        let Some(sorted) = self.sorted_buffer()? else {
            return Ok(());
        };
        if self.spill.is_none() {
            let dir = tempfile::tempdir()
                .map_err(|e| BTreeError::InvalidInput(format!("no temporary directory: {e}")))?;
            let fs = FileStore::new(
                Arc::new(object_store::local::LocalFileSystem::new()),
                "file:///",
            )?;
            self.spill = Some((dir, fs));
        }
        let Some((dir, fs)) = &self.spill else {
            return Ok(());
        };
        let path =
            Path::from_absolute_path(dir.path().join(format!("run-{}.lance", self.runs.len())))
                .map_err(|e| BTreeError::InvalidInput(e.to_string()))?;
        let schema = pair_schema(&self.value_type);
        let mut w = StreamingWriter::create(fs, &path, &schema, FileVersion::V2_1).await?;
        w.write(&sorted).await?;
        w.finish(&Default::default(), &[]).await?;
        self.runs.push(path);
        Ok(())
    }

    /// Merges everything pushed into one sorted, duplicate-free stream.
    pub async fn finish(mut self) -> Result<SortedStream> {
        let converter = RowConverter::new(vec![
            SortField::new_with_options(self.value_type.clone(), NULLS_FIRST),
            SortField::new(DataType::UInt64),
        ])?;
        let mut cursors = Vec::new();
        if let Some(last) = self.sorted_buffer()? {
            cursors.push(Cursor::new(Source::Memory(Some(last))));
        }
        if let Some((_, fs)) = &self.spill {
            for path in &self.runs {
                let file = LanceFile::open(fs, path, None).await?;
                cursors.push(Cursor::new(Source::Run {
                    file: Box::new(file),
                    next: 0,
                }));
            }
        }
        let mut stream = SortedStream {
            schema: pair_schema(&self.value_type),
            converter,
            cursors,
            last_at: None,
            last_owned: None,
            _spill: self.spill.take(),
        };
        for k in 0..stream.cursors.len() {
            stream.refill(k).await?;
        }
        Ok(stream)
    }
}

enum Source {
    Memory(Option<RecordBatch>),
    Run { file: Box<LanceFile>, next: u64 },
}

struct Cursor {
    source: Source,
    batch: Option<RecordBatch>,
    rows: Option<Rows>,
    pos: usize,
}

impl Cursor {
    fn new(source: Source) -> Self {
        Self {
            source,
            batch: None,
            rows: None,
            pos: 0,
        }
    }
}

/// The merged output of an [`ExternalSorter`].
pub struct SortedStream {
    schema: SchemaRef,
    converter: RowConverter,
    cursors: Vec<Cursor>,
    /// The last emitted row, by position while its chunk is loaded...
    last_at: Option<(usize, usize)>,
    /// ...and copied out when that chunk is replaced.
    last_owned: Option<OwnedRow>,
    _spill: Option<(tempfile::TempDir, FileStore)>,
}

impl SortedStream {
    /// Loads cursor `k`'s next non-empty chunk once its current one is used up; a cursor with
    /// no rows left holds no batch.
    async fn refill(&mut self, k: usize) -> Result<()> {
        // The last emitted row may live in the chunk about to be replaced: keep a copy.
        if let Some((lk, lp)) = self.last_at {
            if lk == k {
                if let Some(rows) = self.cursors.get(k).and_then(|c| c.rows.as_ref()) {
                    if lp < rows.num_rows() {
                        self.last_owned = Some(rows.row(lp).owned());
                    }
                }
                self.last_at = None;
            }
        }
        loop {
            let Some(c) = self.cursors.get_mut(k) else {
                return Ok(());
            };
            if c.batch.as_ref().is_some_and(|b| c.pos < b.num_rows()) {
                return Ok(());
            }
            let next = match &mut c.source {
                Source::Memory(b) => b.take(),
                Source::Run { file, next } => {
                    let end = (*next + RUN_CHUNK_ROWS).min(file.num_rows());
                    if *next >= end {
                        None
                    } else {
                        let b = file.read_range(*next..end).await?;
                        *next = end;
                        Some(b)
                    }
                }
            };
            let Some(batch) = next else {
                c.batch = None;
                c.rows = None;
                return Ok(());
            };
            c.rows = Some(self.converter.convert_columns(batch.columns())?);
            c.batch = Some(batch);
            c.pos = 0;
        }
    }

    /// Up to `max_rows` next rows, or `None` at the end.
    ///
    /// Every `cursors[k]` and `arena_of[k]` index comes from enumerating `cursors` (and
    /// `arena_of` has one slot per cursor), and `last_at` only ever holds such a `k`.
    #[allow(clippy::indexing_slicing)]
    pub async fn next_batch(&mut self, max_rows: usize) -> Result<Option<RecordBatch>> {
        // Output rows as (arena batch, row); the arena keeps batches alive until the flush.
        let mut arena: Vec<RecordBatch> = Vec::new();
        let mut arena_of: Vec<Option<usize>> = vec![None; self.cursors.len()];
        let mut picks: Vec<(usize, usize)> = Vec::with_capacity(max_rows);
        while picks.len() < max_rows {
            let mut best: Option<usize> = None;
            for (k, c) in self.cursors.iter().enumerate() {
                let (Some(rows), Some(_)) = (&c.rows, &c.batch) else {
                    continue;
                };
                let row = rows.row(c.pos);
                best = match best {
                    Some(b) => {
                        let bc = &self.cursors[b];
                        let brow = bc.rows.as_ref().map(|r| r.row(bc.pos));
                        if brow.is_some_and(|br| row < br) {
                            Some(k)
                        } else {
                            Some(b)
                        }
                    }
                    None => Some(k),
                };
            }
            let Some(k) = best else { break };
            let duplicate = {
                let c = &self.cursors[k];
                let row = c.rows.as_ref().map(|r| r.row(c.pos));
                let last = match self.last_at {
                    Some((lk, lp)) => self.cursors[lk].rows.as_ref().map(|r| r.row(lp)),
                    None => self.last_owned.as_ref().map(|o| o.row()),
                };
                matches!((last, row), (Some(a), Some(b)) if a == b)
            };
            if !duplicate {
                let slot = match arena_of[k] {
                    Some(s) => s,
                    None => {
                        let batch = self.cursors[k].batch.clone().ok_or_else(|| {
                            BTreeError::InvalidInput("merge cursor lost its batch".into())
                        })?;
                        arena.push(batch);
                        arena_of[k] = Some(arena.len() - 1);
                        arena.len() - 1
                    }
                };
                picks.push((slot, self.cursors[k].pos));
                self.last_at = Some((k, self.cursors[k].pos));
            }
            self.cursors[k].pos += 1;
            let exhausted = self.cursors[k]
                .batch
                .as_ref()
                .is_none_or(|b| self.cursors[k].pos >= b.num_rows());
            if exhausted {
                arena_of[k] = None;
                self.refill(k).await?;
            }
        }
        if picks.is_empty() {
            return Ok(None);
        }
        let column = |i: usize| -> Result<ArrayRef> {
            let arrays: Vec<&dyn Array> = arena.iter().map(|b| b.column(i).as_ref()).collect();
            Ok(interleave(&arrays, &picks)?)
        };
        Ok(Some(RecordBatch::try_new(
            self.schema.clone(),
            vec![column(0)?, column(1)?],
        )?))
    }
}
