//! A fragment's rows: the data files of one fragment read together, and new fragments written
//! from a stream of batches.
//!
//! Rules kept from Lance 14.0.2 (each checked against pylance in the interop tests):
//! - a fragment's columns are spread over its data files, each `DataFile` listing the field
//!   ids it holds; a field no data file holds reads as NULL (a column added after the fragment
//!   was written, until it is backfilled);
//! - a table's data file records its columns with the manifest's field ids, under `data/` as
//!   `{uuid}.lance`, and its `DataFile` names it relative to `data/` with the file format
//!   version, size and column indices;
//! - a writer starts a new file, and so a new fragment, every `max_rows_per_file` rows.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch};
use arrow_schema::{FieldRef, Schema, SchemaRef};
use futures::{Stream, StreamExt};
use lancet_proto::table::{DataFile, DataFragment};
use object_store::path::Path;

use crate::error::{FileError, Result};
use crate::file_task::{Closed, FileTask, InFlight};
use crate::legacy::LegacyRows;
use crate::progress::Progress;
use crate::read::LanceFile;
use crate::store::FileStore;
use crate::write::{FileVersion, StreamingWriter, WrittenFile};

/// One data file of a fragment, located by the caller (who resolves its base).
#[derive(Debug, Clone)]
pub struct DataFileAt {
    pub store: FileStore,
    pub path: Path,
    /// The size its `DataFile` records (saves a request), if any.
    pub size: Option<u64>,
    /// The field ids its `DataFile` lists.
    pub fields: Vec<i32>,
    /// A legacy v1 file (`DataFile` version 0.1 or 0.2: [`crate::legacy`]).
    pub legacy: bool,
}

/// A top-level column of a table: its Arrow field, and its field id followed by its
/// descendants' (pre-order). A data file holds the column when its `DataFile` lists any of
/// them (files of 2.1 and later list only the leaves that own columns).
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub ids: Vec<i32>,
    pub field: FieldRef,
}

impl Column {
    /// The column's own field id.
    pub fn id(&self) -> i32 {
        self.ids.first().copied().unwrap_or(-1)
    }
}

/// Which rows of a fragment to read.
#[derive(Debug, Clone)]
pub enum Rows<'a> {
    /// Every physical row.
    All,
    /// The rows in this range.
    Range(std::ops::Range<u64>),
    /// The rows at these offsets, strictly increasing.
    At(&'a [u64]),
}

/// The columns `projection` (top-level fields of the table, each with its manifest field id)
/// of one fragment with `physical_rows` rows, read from the `files` that hold them (the last
/// file listing a field holds it); a field no file holds is NULL. The batch has exactly the
/// projection's fields.
pub async fn read_fragment(
    files: &[DataFileAt],
    projection: &[Column],
    physical_rows: u64,
    rows: Rows<'_>,
) -> Result<RecordBatch> {
    let schema: SchemaRef = Arc::new(Schema::new(
        projection
            .iter()
            .map(|c| c.field.clone())
            .collect::<Vec<_>>(),
    ));
    let n = match &rows {
        Rows::All => physical_rows,
        Rows::Range(r) => r.end.saturating_sub(r.start),
        Rows::At(offsets) => offsets.len() as u64,
    };
    let n = usize::try_from(n).map_err(|_| FileError::InvalidInput {
        path: Path::default(),
        rule: format!("{n} rows do not fit in memory"),
    })?;
    // which file holds each projected field
    let holder: Vec<Option<usize>> = projection
        .iter()
        .map(|c| {
            files
                .iter()
                .rposition(|f| f.fields.iter().any(|id| c.ids.contains(id)))
        })
        .collect();
    let mut columns: Vec<Option<ArrayRef>> = vec![None; projection.len()];
    let mut reads = Vec::new();
    for (k, file) in files.iter().enumerate() {
        let wanted: Vec<usize> = (0..projection.len())
            .filter(|&p| holder.get(p).copied().flatten() == Some(k))
            .collect();
        if !wanted.is_empty() {
            reads.push(read_file_columns(
                file,
                projection,
                wanted,
                physical_rows,
                rows.clone(),
            ));
        }
    }
    for read in futures::future::try_join_all(reads).await? {
        for (p, array) in read {
            if let Some(slot) = columns.get_mut(p) {
                *slot = Some(array);
            }
        }
    }
    let arrays: Vec<ArrayRef> = columns
        .into_iter()
        .zip(projection)
        .map(|(a, c)| match a {
            Some(a) => relabelled(a, c.field.data_type()),
            None => Ok(new_null_array(c.field.data_type(), n)),
        })
        .collect::<std::result::Result<_, String>>()
        .map_err(|e| FileError::Corrupt {
            at: lancet_proto::ObjectRef::new(
                files.first().map_or(String::new(), |f| f.path.to_string()),
            ),
            rule: format!("the fragment's columns do not form the table's rows: {e}"),
        })?;
    RecordBatch::try_new_with_options(
        schema,
        arrays,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)),
    )
    .map_err(|e| FileError::Corrupt {
        at: lancet_proto::ObjectRef::new(
            files.first().map_or(String::new(), |f| f.path.to_string()),
        ),
        rule: format!("the fragment's columns do not form the table's rows: {e}"),
    })
}

/// The projected fields at positions `wanted` that `file` holds, by position.
async fn read_file_columns(
    file: &DataFileAt,
    projection: &[Column],
    wanted: Vec<usize>,
    physical_rows: u64,
    rows: Rows<'_>,
) -> Result<Vec<(usize, ArrayRef)>> {
    if file.legacy {
        return read_legacy_file_columns(file, projection, wanted, physical_rows, rows).await;
    }
    let lance = LanceFile::open(&file.store, &file.path, file.size).await?;
    if lance.num_rows() != physical_rows {
        return Err(FileError::Corrupt {
            at: lancet_proto::ObjectRef::new(file.path.to_string()),
            rule: format!(
                "holds {} rows; its fragment has {physical_rows}",
                lance.num_rows()
            ),
        });
    }
    let mut names = Vec::with_capacity(wanted.len());
    for &p in &wanted {
        let column = projection.get(p).ok_or_else(|| FileError::InvalidInput {
            path: file.path.clone(),
            rule: format!("no projected field {p}"),
        })?;
        let id = column.id();
        let name = lance.top_level_name(id).ok_or_else(|| FileError::Corrupt {
            at: lancet_proto::ObjectRef::new(file.path.to_string()),
            rule: format!(
                "its DataFile lists field {id} ({:?}), which the file's schema does not hold",
                column.field.name()
            ),
        })?;
        names.push(name.to_string());
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let batch = match rows {
        Rows::All => lance.read_columns(&names, None).await?,
        Rows::Range(r) => lance.read_columns(&names, Some(r)).await?,
        // offsets dense in their span (a fragment's live rows, a batch of them): every page
        // of the span is read anyway, so the span is read as a range (one request for its
        // pages) and the rows kept by a mask the filter kernel copies in runs
        Rows::At(offsets) if dense(offsets) => {
            let (first, span) = match (offsets.first(), offsets.last()) {
                (Some(a), Some(z)) => (*a, z.saturating_sub(*a).saturating_add(1)),
                _ => (0, 0),
            };
            let range = first..first.saturating_add(span);
            let bad_offset = |o: u64| FileError::InvalidInput {
                path: file.path.clone(),
                rule: format!("row {o} to read is past the file's {physical_rows} rows"),
            };
            if range.end > physical_rows {
                return Err(bad_offset(range.end - 1));
            }
            let all = lance.read_columns(&names, Some(range)).await?;
            let n = all.num_rows();
            let mut mask = arrow_buffer::BooleanBufferBuilder::new(n);
            mask.append_n(n, false);
            for &o in offsets {
                match usize::try_from(o - first).ok().filter(|o| *o < n) {
                    Some(o) => mask.set_bit(o, true),
                    None => return Err(bad_offset(o)),
                }
            }
            let mask = arrow_array::BooleanArray::new(mask.finish(), None);
            arrow_select::filter::filter_record_batch(&all, &mask).map_err(|e| {
                FileError::InvalidInput {
                    path: file.path.clone(),
                    rule: format!("rows to read: {e}"),
                }
            })?
        }
        Rows::At(offsets) => lance.take_columns(&names, offsets).await?,
    };
    Ok(wanted
        .into_iter()
        .zip(batch.columns().iter().cloned())
        .collect())
}

/// Whether strictly increasing `offsets` hold at least half the rows of their span.
fn dense(offsets: &[u64]) -> bool {
    let (Some(first), Some(last)) = (offsets.first(), offsets.last()) else {
        return false;
    };
    let span = last.saturating_sub(*first).saturating_add(1);
    offsets.len() as u64 * 2 >= span && offsets.windows(2).all(|w| w.first() < w.get(1))
}

/// [`read_file_columns`] of a legacy v1 file, through [`crate::legacy`].
async fn read_legacy_file_columns(
    file: &DataFileAt,
    projection: &[Column],
    wanted: Vec<usize>,
    physical_rows: u64,
    rows: Rows<'_>,
) -> Result<Vec<(usize, ArrayRef)>> {
    let mut fields = Vec::with_capacity(wanted.len());
    let mut ids = Vec::new();
    for &p in &wanted {
        let column = projection.get(p).ok_or_else(|| FileError::InvalidInput {
            path: file.path.clone(),
            rule: format!("no projected field {p}"),
        })?;
        fields.push(column.field.clone());
        ids.extend_from_slice(&column.ids);
    }
    let rows = match rows {
        Rows::All => LegacyRows::Range(0..physical_rows),
        Rows::Range(r) => LegacyRows::Range(r),
        Rows::At(offsets) => LegacyRows::At(offsets),
    };
    let columns = Schema::new(fields);
    let read = crate::legacy::read_legacy(
        &file.store,
        &file.path,
        &file.fields,
        (&columns, &ids),
        physical_rows,
        rows,
    );
    let batch = Box::pin(read).await?;
    Ok(wanted
        .into_iter()
        .zip(batch.columns().iter().cloned())
        .collect())
}

/// How new fragments are written.
#[derive(Debug, Clone)]
pub struct FragmentOptions {
    /// The table's data file version.
    pub version: FileVersion,
    /// A new file (and fragment) starts after this many rows (Lance's default: 1,048,576).
    pub max_rows_per_file: u64,
    /// Lance's row-group size (default 1,024): checked (at least 1) and otherwise unused,
    /// as Lance 14.0.2 ignores it for 2.x files (`test_max_rows_per_group` in its
    /// `dataset/write.rs`); every file lancet writes is 2.x. Batches go to the file writer
    /// whole (cut only at file boundaries): cutting them into 1,024-row writes made the
    /// writer encode every small write apart, 8× the CPU and 1.6× the bytes of Lance's files.
    pub max_rows_per_group: u64,
    /// Planned file sizes: file `i` closes after `planned_rows[i]` rows (each at least 1);
    /// files past the plan close after `max_rows_per_file`. Lance's compaction plans its
    /// outputs this way (balanced sizes rather than full files and a remainder).
    pub planned_rows: Vec<u64>,
    /// Told of each fragment as it starts and as its file is finished.
    pub progress: Progress,
    /// Files encoded side by side, at most (0: one per core). An observed write (`progress`)
    /// writes one at a time.
    pub files_at_once: usize,
}

impl Default for FragmentOptions {
    fn default() -> Self {
        FragmentOptions {
            version: FileVersion::V2_2,
            max_rows_per_file: 1024 * 1024,
            max_rows_per_group: 1024,
            planned_rows: Vec::new(),
            progress: Progress::default(),
            files_at_once: 0,
        }
    }
}

/// Writes `batches` (each of `schema`, the table's schema whose fields take `field_ids` in
/// depth-first order; see [`conform`]) as the data files of new fragments under `data_dir`,
/// one file per fragment, a new one every [`FragmentOptions::max_rows_per_file`] rows.
/// Returns the fragments in order, with id 0 (a commit numbers them) and no row ids. Memory
/// stays bounded: rows go to the files' writers as they come, and at most 256 MiB of rows
/// handed over wait to be written (`file_task`), plus what each open file's encoder holds
/// ([`FragmentOptions::files_at_once`] files). The stream's own errors come back unchanged.
pub async fn write_fragments<S, E>(
    fs: &FileStore,
    data_dir: &Path,
    schema: &Schema,
    field_ids: &[i32],
    batches: S,
    options: FragmentOptions,
) -> std::result::Result<Vec<DataFragment>, E>
where
    S: Stream<Item = std::result::Result<RecordBatch, E>>,
    E: From<FileError>,
{
    if options.max_rows_per_file == 0
        || options.max_rows_per_group == 0
        || options.planned_rows.contains(&0)
    {
        return Err(FileError::InvalidInput {
            path: data_dir.clone(),
            rule: "max_rows_per_file, max_rows_per_group and planned file sizes must be at least 1"
                .into(),
        }
        .into());
    }
    let observed = |told: std::result::Result<(), String>| {
        told.map_err(|reason| FileError::InvalidInput {
            path: data_dir.clone(),
            rule: format!("the write's progress observer failed: {reason}"),
        })
    };
    // each file is written by a task of its own ([`FileTask`]); a few closed files finish
    // side by side, collected in order. An observer is told of one file after the other,
    // each begun after the one before it completed, as Lance tells it.
    let parallel = match (options.progress.is_observed(), options.files_at_once) {
        (true, _) => 1,
        (false, 0) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        (false, n) => n,
    };
    let budget = InFlight::new();
    let mut out = Vec::new();
    let mut closing: VecDeque<(String, Closed)> = VecDeque::new();
    let mut current: Option<(String, FileTask)> = None;
    let mut batches = std::pin::pin!(batches);
    while let Some(batch) = batches.next().await {
        let mut batch = conform(&batch?, schema).map_err(|rule| FileError::InvalidInput {
            path: data_dir.clone(),
            rule,
        })?;
        while batch.num_rows() > 0 {
            if current.is_none() {
                observed(options.progress.begin(&DataFragment::default()))?;
                let name = format!("{}.lance", uuid::Uuid::new_v4());
                let path = data_dir.clone().join(name.as_str());
                let writer = StreamingWriter::create_with_ids(
                    fs,
                    &path,
                    schema,
                    options.version,
                    Some(field_ids),
                )
                .await?;
                current = Some((name, FileTask::start(writer, budget.clone())));
            }
            let Some((_, task)) = current.as_mut() else {
                continue;
            };
            let limit = options
                .planned_rows
                .get(out.len() + closing.len())
                .copied()
                .unwrap_or(options.max_rows_per_file);
            let room = limit.saturating_sub(task.rows());
            let take = (batch.num_rows() as u64).min(room) as usize;
            if let Err(stopped) = task.write(batch.slice(0, take)).await {
                if let Some((_, task)) = current.take() {
                    return Err(task.close().written().await.err().unwrap_or(stopped).into());
                }
            }
            batch = batch.slice(take, batch.num_rows() - take);
            if current.as_ref().is_some_and(|(_, t)| t.rows() >= limit) {
                if let Some((name, task)) = current.take() {
                    closing.push_back((name, task.close()));
                }
                while closing.len() >= parallel {
                    collect(&mut closing, &mut out, &options).await?;
                }
            }
        }
    }
    if let Some((name, task)) = current.take() {
        closing.push_back((name, task.close()));
    }
    while !closing.is_empty() {
        collect(&mut closing, &mut out, &options).await?;
    }
    Ok(out)
}

/// The oldest closed file, once written, as a fragment of `out` (its progress completed).
async fn collect(
    closing: &mut VecDeque<(String, Closed)>,
    out: &mut Vec<DataFragment>,
    options: &FragmentOptions,
) -> Result<()> {
    let Some((name, closed)) = closing.pop_front() else {
        return Ok(());
    };
    let fragment = fragment_of(name, closed.written().await?, options.version);
    options
        .progress
        .complete(&fragment)
        .map_err(|reason| FileError::InvalidInput {
            path: Path::default(),
            rule: format!("the write's progress observer failed: {reason}"),
        })?;
    out.push(fragment);
    Ok(())
}

/// The fragment record of one written data file.
fn fragment_of(name: String, written: WrittenFile, version: FileVersion) -> DataFragment {
    let (major, minor) = version.data_file_version();
    let signed = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
    DataFragment {
        id: 0,
        files: vec![DataFile {
            path: name,
            fields: written.columns.iter().map(|(f, _)| signed(*f)).collect(),
            column_indices: written.columns.iter().map(|(_, c)| signed(*c)).collect(),
            file_major_version: major,
            file_minor_version: minor,
            file_size_bytes: written.size_bytes,
            base_id: None,
        }],
        physical_rows: written.num_rows,
        ..Default::default()
    }
}

/// `batch` with `schema`, when it holds the same columns (names and types, in order): a
/// column the table allows NULLs in may come without them, not the other way round.
pub fn conform(batch: &RecordBatch, schema: &Schema) -> std::result::Result<RecordBatch, String> {
    let given = batch.schema();
    if given.fields().len() != schema.fields().len() {
        let names = |s: &Schema| {
            s.fields()
                .iter()
                .map(|f| f.name().clone())
                .collect::<Vec<_>>()
        };
        return Err(format!(
            "the rows have columns {:?}; the table has {:?}",
            names(&given),
            names(schema)
        ));
    }
    for (g, t) in given.fields().iter().zip(schema.fields()) {
        if g.name() != t.name() || !same_type(g.data_type(), t.data_type()) {
            return Err(format!(
                "column {:?} ({}) where the table has {:?} ({})",
                g.name(),
                g.data_type(),
                t.name(),
                t.data_type()
            ));
        }
    }
    let columns = (batch.columns().iter().zip(schema.fields()))
        .map(|(c, f)| relabelled(c.clone(), f.data_type()))
        .collect::<std::result::Result<Vec<_>, String>>()?;
    RecordBatch::try_new(Arc::new(schema.clone()), columns)
        .map_err(|e| format!("the rows do not fit the table's schema: {e}"))
}

/// `batch` with `schema` when it holds the same columns in any order (matched by name,
/// reordered to the table's), as [`conform`] takes them.
pub fn conform_by_name(
    batch: &RecordBatch,
    schema: &Schema,
) -> std::result::Result<RecordBatch, String> {
    let given = batch.schema();
    let mut columns = Vec::with_capacity(schema.fields().len());
    let mut fields = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        let (i, g) = given.column_with_name(f.name()).ok_or_else(|| {
            format!(
                "the rows have no column {:?}; they must carry every column of the table",
                f.name()
            )
        })?;
        fields.push(g.clone());
        columns.extend(batch.columns().get(i).cloned());
    }
    if given.fields().len() != schema.fields().len() {
        return Err(format!(
            "the rows have {} columns; the table has {}",
            given.fields().len(),
            schema.fields().len()
        ));
    }
    let ordered =
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(|e| e.to_string())?;
    conform(&ordered, schema)
}

/// `column` as type `to` when the two differ only in nested fields' names, nullability or
/// metadata (a list's item name; field metadata the table sets after the data was written):
/// the table's type, the same values. Any other column is returned as it is.
fn relabelled(
    column: ArrayRef,
    to: &arrow_schema::DataType,
) -> std::result::Result<ArrayRef, String> {
    if column.data_type() == to || !same_type(column.data_type(), to) {
        return Ok(column);
    }
    arrow_cast::cast(&column, to).map_err(|e| format!("{} as {to}: {e}", column.data_type()))
}

/// Equal types, ignoring the nullability and names of nested fields (a list's item name).
fn same_type(a: &arrow_schema::DataType, b: &arrow_schema::DataType) -> bool {
    use arrow_schema::DataType::*;
    match (a, b) {
        (List(x), List(y)) | (LargeList(x), LargeList(y)) => {
            same_type(x.data_type(), y.data_type())
        }
        (FixedSizeList(x, n), FixedSizeList(y, m)) => {
            n == m && same_type(x.data_type(), y.data_type())
        }
        (Struct(x), Struct(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(x, y)| x.name() == y.name() && same_type(x.data_type(), y.data_type()))
        }
        _ => a == b,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array, ListArray, StructArray};
    use arrow_schema::{DataType, Field};

    #[test]
    fn nested_names_and_metadata_are_relabelled_to_the_table() {
        let child = Field::new("a", DataType::Int64, true);
        let values: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
        let s = StructArray::from(vec![(Arc::new(child.clone()), values.clone())]);
        let list = ListArray::from_iter_primitive::<arrow_array::types::Int64Type, _, _>(vec![
            Some(vec![Some(1)]),
            None,
        ]);
        let given = RecordBatch::try_from_iter(vec![
            ("s", Arc::new(s) as ArrayRef),
            ("l", Arc::new(list) as ArrayRef),
        ])
        .unwrap();
        let meta = std::collections::HashMap::from([("g".to_string(), "1".to_string())]);
        let table = Schema::new(vec![
            Field::new(
                "s",
                DataType::Struct(vec![child.with_metadata(meta)].into()),
                true,
            ),
            Field::new(
                "l",
                DataType::List(Arc::new(Field::new("element", DataType::Int64, true))),
                true,
            ),
        ]);
        let got = conform(&given, &table).unwrap();
        assert_eq!(got.schema().as_ref(), &table);
        assert_eq!(got.num_rows(), 2);
        // another child type is still refused
        let other = Schema::new(vec![
            Field::new(
                "s",
                DataType::Struct(vec![Field::new("a", DataType::Utf8, true)].into()),
                true,
            ),
            table.field(1).clone(),
        ]);
        assert!(conform(&given, &other).is_err());
    }
}
