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
//! file: a stable-row-id commit reads the deletion files of what it changes, and the bench
//! writes none). The others' tables have none.

use lancet::proto::table::data_fragment::RowIdSequence as PbRowIds;
use lancet::proto::table::{DataFile, DataFragment, DeletionFile};
use lancet::rowid::RowIdSequence;
use lancet::tree::Action;
use rand::rngs::SmallRng;
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

/// A realistic record: one two-field data file, ~7% with a deletion file.
pub fn record(rng: &mut SmallRng, id: u64) -> DataFragment {
    let rows = 1024 + rng.random_range(0..1u64 << 20);
    DataFragment {
        id,
        files: vec![data_file(rng, vec![0, 1], rows)],
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

fn data_file(rng: &mut SmallRng, fields: Vec<i32>, rows: u64) -> DataFile {
    DataFile {
        path: format!(
            "{:016x}{:016x}.lance",
            rng.random::<u64>(),
            rng.random::<u64>()
        ),
        column_indices: (0..fields.len() as i32).collect(),
        fields,
        file_major_version: 2,
        file_minor_version: 1,
        file_size_bytes: rows * 12,
        base_id: None,
    }
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
}

impl Generator {
    /// The generator of a table of `records`.
    pub fn new(workload: Workload, records: &mut [DataFragment]) -> Self {
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
                    out.push((id, Action::AddDataFile(data_file(rng, vec![2], 1024))));
                }
                out
            }
            Workload::Compact => self.compact(rng, changed),
        }
    }

    fn append(&mut self, rng: &mut SmallRng) -> (u64, Action) {
        let id = self.next_id;
        self.next_id += 1;
        let mut f = record(rng, id);
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
