//! What each commit of `lancet bench commit --workload W` changes.
//!
//! - `delete`: `changed` random fragments get a new deletion file;
//! - `append`: `changed` new fragments (fresh ids, row ids from `next_row_id` as one `Range`
//!   each, as Lance's writer gives them);
//! - `backfill`: one more data file (a new column) on each of `changed` consecutive fragments,
//!   sweeping the table in id order;
//! - `compact`: `changed` adjacent fragments removed and a quarter as many added with their
//!   rows;
//! - `mixed`: 70% append, 20% delete, 10% compact.
//!
//! The `append` workload's table has stable row ids (every record a sequence, no deletion
//! file). The others' tables have none.
//!
//! Every record names a real Lance file, as a commit requires (it reads the footers of the
//! data files it adds): records share the files of a [`Pool`], one per row count and field
//! set, written once when the bench starts, so that a table of millions of records needs a
//! few dozen files. Deletion files are written per record by the bench
//! ([`stage_deletion_files`]) before the commit that adds them.

use lancet::proto::table::data_fragment::RowIdSequence as PbRowIds;
use lancet::proto::table::{DataFile, DataFragment, DeletionFile};
use lancet::rowid::RowIdSequence;
use lancet::tree::Action;
use rand::rngs::SmallRng;

use crate::error::BenchError;
use rand::Rng;

/// A bench workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    Append,
    Backfill,
    Delete,
    Compact,
    Mixed,
}

impl Workload {
    /// Whether the workload's table has stable row ids.
    pub fn stable_row_ids(self) -> bool {
        self == Workload::Append
    }
}

/// Row counts of the pool's files: a record's `physical_rows` is one of them.
pub const POOL_ROWS: [u64; 8] = [1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288];

/// The real data files records name: for each row count of [`POOL_ROWS`], one file holding
/// fields 0 and 1 (a record's) and one holding field 2 (a backfill's column).
#[derive(Debug, Clone)]
pub struct Pool {
    /// `(rows, file)` of the two-field files.
    records: Vec<(u64, DataFile)>,
    /// `(rows, file)` of the one-field backfill files.
    backfills: Vec<(u64, DataFile)>,
}

impl Pool {
    /// Writes the pool's files under the table's `data/`.
    pub async fn write(store: &lancet::paths::DatasetStore) -> Result<Self, BenchError> {
        let fs = lancet::file_store_for(store)?;
        let mut records = Vec::new();
        let mut backfills = Vec::new();
        for rows in POOL_ROWS {
            records.push((rows, pool_file(store, &fs, &[0, 1], rows).await?));
            backfills.push((rows, pool_file(store, &fs, &[2], rows).await?));
        }
        Ok(Pool { records, backfills })
    }

    fn record_file(&self, rng: &mut SmallRng) -> (u64, DataFile) {
        let i = rng.random_range(0..self.records.len().max(1));
        self.records.get(i).cloned().unwrap_or_default()
    }

    fn backfill_file(&self, rows: u64) -> DataFile {
        self.backfills
            .iter()
            .find(|(r, _)| *r == rows)
            .map(|(_, f)| f.clone())
            .unwrap_or_default()
    }
}

/// One pool file: `rows` rows of the bench schema's fields `fields` (field id = position).
async fn pool_file(
    store: &lancet::paths::DatasetStore,
    fs: &lancet::file::FileStore,
    fields: &[i32],
    rows: u64,
) -> Result<DataFile, BenchError> {
    use std::sync::Arc;
    let table = data_schema();
    let picked: Vec<arrow_schema::Field> = fields
        .iter()
        .filter_map(|id| {
            usize::try_from(*id)
                .ok()
                .and_then(|i| table.fields().get(i))
        })
        .map(|f| f.as_ref().clone())
        .collect();
    let schema = arrow_schema::Schema::new(picked);
    let n = i64::try_from(rows).unwrap_or(0);
    let columns: Vec<arrow_array::ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            arrow_schema::DataType::Float64 => Arc::new(
                arrow_array::Float64Array::from_iter_values((0..n).map(|i| i as f64 * 0.5)),
            ) as arrow_array::ArrayRef,
            _ => Arc::new(arrow_array::Int64Array::from_iter_values(0..n)),
        })
        .collect();
    let batch = arrow_array::RecordBatch::try_new(Arc::new(schema.clone()), columns)
        .map_err(|e| BenchError::Usage(e.to_string()))?;
    let name = format!(
        "pool-{}-{rows}.lance",
        fields
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("_")
    );
    let written = lancet::file::write_file(
        fs,
        &store.path(&lancet::paths::layout::data_path(&name)),
        &schema,
        std::slice::from_ref(&batch),
        &lancet::file::WriteOptions {
            field_ids: Some(fields.to_vec()),
            ..Default::default()
        },
    )
    .await?;
    Ok(DataFile {
        path: name,
        fields: fields.to_vec(),
        column_indices: (0..fields.len() as i32).collect(),
        file_major_version: 2,
        file_minor_version: 1,
        file_size_bytes: written.size_bytes,
        base_id: None,
    })
}

/// A realistic record: one two-field data file of the pool, ~7% with a deletion file.
pub fn record(rng: &mut SmallRng, id: u64, pool: &Pool) -> DataFragment {
    let (rows, file) = pool.record_file(rng);
    DataFragment {
        id,
        files: vec![file],
        deletion_file: (rng.random_range(0..100) < 7).then(|| DeletionFile {
            file_type: 1,
            read_version: 1,
            id: rng.random::<u64>(),
            num_deleted_rows: rng.random_range(1..=rows),
            base_id: None,
        }),
        physical_rows: rows,
        ..Default::default()
    }
}

/// Writes the deletion file of every record and `AddDeletionFile` action in `actions`, as a
/// writer does before it commits.
pub async fn stage_deletion_files(
    ds: &lancet::Dataset,
    actions: &[(u64, Action)],
) -> Result<(), BenchError> {
    let files = actions
        .iter()
        .filter_map(|(id, a)| match a {
            Action::AddDeletionFile(d) => Some((*id, *d)),
            Action::Upsert(f) => f.deletion_file.map(|d| (*id, d)),
            _ => None,
        })
        .collect();
    write_deletion_files(ds.storage().store(), files).await
}

/// Writes each `(fragment, deletion file)`: the fragment's first `num_deleted_rows` rows
/// deleted, as a bitmap file.
pub async fn write_deletion_files(
    store: &lancet::paths::DatasetStore,
    files: Vec<(u64, DeletionFile)>,
) -> Result<(), BenchError> {
    use futures::{StreamExt, TryStreamExt};
    futures::stream::iter(files)
        .map(|(id, d)| async move {
            let path = lancet::paths::layout::deletion_path(id, &d)?;
            let n = u32::try_from(d.num_deleted_rows).unwrap_or(u32::MAX);
            let deleted: roaring::RoaringBitmap = (0..n).collect();
            let bytes = lancet::rowid::deletion::encode_bitmap(&deleted);
            store.put(&store.path(&path), bytes.into()).await?;
            Ok::<_, BenchError>(())
        })
        .buffer_unordered(32)
        .try_collect::<()>()
        .await
}

/// The state a workload's commits change.
#[derive(Debug, Clone)]
pub struct Generator {
    pub workload: Workload,
    /// Live fragment ids, ascending.
    live: Vec<u64>,
    next_id: u64,
    pub next_row_id: u64,
    /// Where the backfill sweep is.
    sweep: usize,
    /// The data files records name.
    pool: Pool,
    /// Each live fragment's rows (a backfill's file has as many).
    rows: std::collections::HashMap<u64, u64>,
}

impl Generator {
    /// The generator of a table of `records`.
    pub fn new(workload: Workload, records: &mut [DataFragment], pool: Pool) -> Self {
        let mut next_row_id = 0;
        if workload.stable_row_ids() {
            for f in records.iter_mut() {
                f.deletion_file = None;
                next_row_id = with_ids(f, next_row_id);
            }
        }
        Generator {
            workload,
            live: records.iter().map(|f| f.id).collect(),
            next_id: records.last().map_or(0, |f| f.id + 1),
            next_row_id,
            sweep: 0,
            pool,
            rows: records.iter().map(|f| (f.id, f.physical_rows)).collect(),
        }
    }

    /// One commit's actions. `owned` picks the fragments a `delete` writer may change (its
    /// share of the table when several writers commit at once).
    pub fn actions(
        &mut self,
        rng: &mut SmallRng,
        changed: u64,
        version: u64,
        owned: impl Fn(u64) -> bool,
    ) -> Vec<(u64, Action)> {
        let kind = match self.workload {
            Workload::Mixed => match rng.random_range(0..10) {
                0..=6 => Workload::Append,
                7 | 8 => Workload::Delete,
                _ => Workload::Compact,
            },
            w => w,
        };
        match kind {
            Workload::Append | Workload::Mixed => (0..changed).map(|_| self.append(rng)).collect(),
            Workload::Delete => {
                let live = &self.live;
                (0..changed)
                    .filter_map(|_| {
                        // a writer owns about 1/W of the ids: draw until one is its own
                        // (collecting them would cost a pass over the table per commit)
                        let id = (0..1024)
                            .filter_map(|_| live.get(rng.random_range(0..live.len().max(1))))
                            .copied()
                            .find(|id| owned(*id))?;
                        Some((
                            id,
                            Action::AddDeletionFile(DeletionFile {
                                file_type: 1,
                                read_version: version,
                                id: rng.random::<u64>(),
                                // every record has at least 1,024 rows
                                num_deleted_rows: rng.random_range(1..=1024),
                                base_id: None,
                            }),
                        ))
                    })
                    .collect()
            }
            Workload::Backfill => {
                let mut out = Vec::new();
                for _ in 0..changed {
                    if self.live.is_empty() {
                        break;
                    }
                    let id = self.live[self.sweep % self.live.len()];
                    self.sweep += 1;
                    let rows = self.rows.get(&id).copied().unwrap_or_default();
                    out.push((id, Action::AddDataFile(self.pool.backfill_file(rows))));
                }
                out
            }
            Workload::Compact => self.compact(rng, changed),
        }
    }

    fn append(&mut self, rng: &mut SmallRng) -> (u64, Action) {
        let id = self.next_id;
        self.next_id += 1;
        let mut f = record(rng, id, &self.pool);
        self.rows.insert(id, f.physical_rows);
        f.deletion_file = None;
        if self.workload.stable_row_ids() {
            self.next_row_id = with_ids(&mut f, self.next_row_id);
        }
        self.live.push(id);
        (id, Action::Upsert(Box::new(f)))
    }

    fn compact(&mut self, rng: &mut SmallRng, changed: u64) -> Vec<(u64, Action)> {
        let n = (changed as usize).min(self.live.len());
        if n == 0 {
            return Vec::new();
        }
        let start = rng.random_range(0..=self.live.len() - n);
        let removed: Vec<u64> = self.live.drain(start..start + n).collect();
        let mut out: Vec<(u64, Action)> = removed.iter().map(|id| (*id, Action::Remove)).collect();
        for _ in 0..(n / 4).max(1) {
            out.push(self.append(rng));
        }
        out
    }
}

/// `f` with the row ids `next..next + physical_rows` as one `Range`; the next free id.
fn with_ids(f: &mut DataFragment, next: u64) -> u64 {
    let end = next + f.physical_rows;
    f.row_id_sequence = Some(PbRowIds::InlineRowIds(
        RowIdSequence::from_range(next..end).encode(),
    ));
    end
}

/// The bench table's schema: `id` and `x` (field ids 0 and 1, what every record's data file
/// holds) and `w` (field 2, what the backfill workload adds).
pub fn data_schema() -> arrow_schema::SchemaRef {
    use arrow_schema::{DataType, Field, Schema};
    std::sync::Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
        Field::new("w", DataType::Int64, true),
    ]))
}
