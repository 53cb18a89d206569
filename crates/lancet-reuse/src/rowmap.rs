//! `_fri/{map_id}/stable_partition.lance`: one nullable `uint16` label per physical source row
//! plus the LSPC counts buffer. Opening reads the counts only; translation reads label blocks.

use std::collections::HashMap;
use std::ops::Range;

use arrow_array::{Array, RecordBatch, UInt16Array};
use arrow_schema::{DataType, Field, Schema};
use futures::StreamExt;
use lancet_file::LanceFile;
use lancet_proto::RowAddress;
use roaring::RoaringBitmap;

use crate::counts::Counts;
use crate::error::{corrupt, Result};
use crate::ledger::Transition;
use crate::runs::Runs;

/// Partial blocks whose labels are read in one request set.
const READ_AHEAD_BLOCKS: usize = 16;

/// A requested source within a block: its label-file start, its requested offsets, and the
/// offsets of it the block holds.
type Part<'a> = (u64, &'a RoaringBitmap, Range<u32>);

/// Schema metadata key naming the global buffer that holds the counts.
pub const COUNTS_BUFFER_KEY: &str = "lance:stable_partition:counts_buffer_index";
/// File name inside `_fri/{map_id}/`.
pub const ROW_MAP_FILE: &str = "stable_partition.lance";

pub fn row_map_schema() -> Schema {
    Schema::new(vec![Field::new("label", DataType::UInt16, true)])
}

/// An opened, validated row map.
#[derive(Debug)]
pub struct RowMap {
    file: LanceFile,
    pub counts: Counts,
    /// Label-file position of each source's first row, and its physical rows.
    sources: HashMap<u32, (u64, u64)>,
    destinations: Vec<u32>,
}

/// Where a row map lives in its base: `_fri/{map_id}/stable_partition.lance` below a dataset
/// root, `{map_id}/stable_partition.lance` in a plain directory.
pub fn row_map_path(map_id: &str, base_is_dataset_root: bool) -> String {
    match base_is_dataset_root {
        true => lancet_paths::layout::fri_file(map_id, ROW_MAP_FILE),
        false => format!("{map_id}/{ROW_MAP_FILE}"),
    }
}

impl RowMap {
    /// Validates the file against its transition: exact schema, counts buffer present and
    /// valid, `total_rows` = label rows = Σ source physical rows, one column per destination,
    /// final counts = destination physical rows.
    /// Opens the row map at `relative` in `store` (see [`row_map_path`]) for transition `t`,
    /// which records its size: an object of another size is corrupt.
    pub async fn open_at(
        store: &lancet_paths::DatasetStore,
        fs: &lancet_file::FileStore,
        relative: &str,
        t: &Transition,
    ) -> Result<Self> {
        let size = match &t.mapping {
            crate::ledger::Mapping::StablePartition { map_size_bytes, .. } => *map_size_bytes,
            crate::ledger::Mapping::OrderedCompaction { .. } => {
                return Err(crate::error::ReuseError::InvalidInput(
                    "an ordered compaction has no row map".into(),
                ))
            }
        };
        let path = store.path(relative);
        let file = LanceFile::open(fs, &path, Some(size)).await?;
        let actual = store.size(&path).await?;
        if actual != size {
            return Err(crate::error::corrupt(
                path.to_string(),
                format!("{actual} bytes, map_size_bytes says {size}"),
            ));
        }
        Self::open(file, t).await
    }

    pub async fn open(file: LanceFile, t: &Transition) -> Result<Self> {
        let what = format!("row map {}", file.path());
        file.check_schema(&row_map_schema())?;
        let index: u32 = file
            .metadata()
            .get(COUNTS_BUFFER_KEY)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| corrupt(&what, format!("no valid {COUNTS_BUFFER_KEY}")))?;
        let bytes = file.global_buffer(index).await?;
        let counts = Counts::decode(&bytes).map_err(|r| corrupt(&what, r))?;
        let total: u64 = t.sources.iter().map(|s| s.physical_rows).sum();
        if counts.total_rows != total || file.num_rows() != total {
            return Err(corrupt(
                &what,
                format!(
                    "{} label rows and a header total of {}, but the sources hold {total}",
                    file.num_rows(),
                    counts.total_rows
                ),
            ));
        }
        if counts.num_destinations as usize != t.destinations.len() {
            return Err(corrupt(
                &what,
                "destination count differs from the transition",
            ));
        }
        let totals = counts.totals();
        for (d, (got, dest)) in totals.iter().zip(&t.destinations).enumerate() {
            if *got != dest.physical_rows {
                return Err(corrupt(
                    &what,
                    format!(
                        "destination {d} receives {got} rows but has {}",
                        dest.physical_rows
                    ),
                ));
            }
        }
        let mut sources = HashMap::new();
        let mut start = 0;
        for s in &t.sources {
            sources.insert(s.id, (start, s.physical_rows));
            start += s.physical_rows;
        }
        Ok(Self {
            file,
            counts,
            sources,
            destinations: t.destinations.iter().map(|d| d.id).collect(),
        })
    }

    /// Translates `(slot, source fragment, offset)` requests; each touched block is read once
    /// and swept from the preceding counts row. `None` = deleted.
    pub async fn translate(
        &self,
        requests: &[(usize, u32, u64)],
    ) -> Result<Vec<(usize, Option<u64>)>> {
        let block_rows = u64::from(self.counts.block_rows);
        let mut by_block: std::collections::BTreeMap<u64, Vec<(u64, usize)>> = Default::default();
        for &(slot, frag, offset) in requests {
            let (start, rows) = self.sources.get(&frag).copied().ok_or_else(|| {
                crate::ReuseError::InvalidInput(format!("fragment {frag} is not a source"))
            })?;
            if offset >= rows {
                return Err(crate::ReuseError::InvalidInput(format!(
                    "offset {offset} is past the {rows} rows of source {frag}"
                )));
            }
            let pos = start + offset;
            by_block
                .entry(pos / block_rows)
                .or_default()
                .push((pos, slot));
        }
        let mut out = Vec::with_capacity(requests.len());
        for (b, mut wanted) in by_block {
            wanted.sort_unstable();
            let lo = b * block_rows;
            let batch = self
                .file
                .read_range(lo..lo + self.counts.block_len(b))
                .await?;
            let mut next = wanted.iter().peekable();
            self.sweep_labels(b, &batch, |i, to| {
                while let Some((_, slot)) = next.next_if(|(p, _)| *p == lo + i as u64) {
                    let addr = to.and_then(|(d, off)| {
                        let dest = self.destinations.get(d)?;
                        Some(RowAddress::new(*dest, off).as_u64())
                    });
                    out.push((*slot, addr));
                }
            })?;
        }
        Ok(out)
    }

    /// Set translation: `requests` are `(source fragment, requested offsets)` in the
    /// transition's source order; each surviving row's destination offset is appended to
    /// `outs[destination index]` (ascending per destination, since labels are swept in
    /// source order). Returns the offsets past each source's rows, untranslated.
    ///
    /// A block whose every row is requested needs no labels: destination `d` receives the
    /// offsets from its count before the block to its count after it (the counts were
    /// validated when the map was opened). Other touched blocks are read once, swept from the
    /// preceding counts row and checked against the next.
    pub(crate) async fn translate_offsets(
        &self,
        requests: &[(u32, &RoaringBitmap)],
        outs: &mut [Runs],
    ) -> Result<Vec<(u32, RoaringBitmap)>> {
        let block_rows = u64::from(self.counts.block_rows);
        let mut passthrough = Vec::new();
        // requested sources as (label-file start, rows, offsets), in label-file order
        let mut segs: Vec<(u64, u64, &RoaringBitmap)> = Vec::with_capacity(requests.len());
        let mut blocks: Vec<u64> = Vec::new();
        for (frag, req) in requests {
            let (start, rows) = self.sources.get(frag).copied().ok_or_else(|| {
                crate::ReuseError::InvalidInput(format!("fragment {frag} is not a source"))
            })?;
            let rows32 = u32::try_from(rows).unwrap_or(u32::MAX);
            let past: RoaringBitmap = req.range(rows32..).collect();
            if !past.is_empty() {
                passthrough.push((*frag, past));
            }
            if segs.last().is_some_and(|(s, _, _)| *s > start) {
                return Err(crate::ReuseError::InvalidInput(
                    "requests are not in the transition's source order".into(),
                ));
            }
            let (Some(min), Some(max)) = (req.min(), req.range(..rows32).max()) else {
                continue;
            };
            let (first, last) = (
                (start + u64::from(min)) / block_rows,
                (start + u64::from(max)) / block_rows,
            );
            let from = if blocks.last() == Some(&first) {
                first + 1
            } else {
                first
            };
            blocks.extend(from..=last);
            segs.push((start, rows, req));
        }
        blocks.dedup();
        // Plan every touched block first, so the labels of the partial ones can be read ahead
        // in batches (lance-encoding decodes a batch on the runtime's workers while earlier
        // blocks are swept here).
        let mut plan: Vec<(u64, Option<Vec<Part>>)> = Vec::new();
        for b in blocks {
            let lo = b * block_rows;
            let hi = lo + self.counts.block_len(b);
            let mut requested = 0u64;
            let mut parts: Vec<Part> = Vec::new();
            for &(start, rows, req) in &segs {
                let (a, z) = (lo.max(start), hi.min(start + rows));
                if a >= z {
                    continue;
                }
                let offs = (a - start) as u32..(z - start) as u32;
                let n = req.range_cardinality(offs.clone());
                if n > 0 {
                    requested += n;
                    parts.push((start, req, offs));
                }
            }
            match requested {
                0 => {}
                n if n == hi - lo => plan.push((b, None)),
                _ => plan.push((b, Some(parts))),
            }
        }
        let partial: Vec<u64> = plan
            .iter()
            .filter_map(|(b, parts)| parts.as_ref().map(|_| *b))
            .collect();
        // owned ranges per read, so the stream's closure takes no borrowed argument (a
        // closure over `&[u64]` chunks makes the future unprovably `Send`)
        let reads: Vec<Vec<Range<u64>>> = partial
            .chunks(READ_AHEAD_BLOCKS)
            .map(|chunk| {
                chunk
                    .iter()
                    .map(|b| b * block_rows..b * block_rows + self.counts.block_len(*b))
                    .collect()
            })
            .collect();
        let mut batches = futures::stream::iter(reads)
            .map(|ranges: Vec<Range<u64>>| async move { self.file.read_ranges(&ranges).await })
            .buffered(2);
        let mut current: Option<(RecordBatch, usize)> = None;
        for (b, parts) in plan {
            let Some(parts) = parts else {
                // every row requested: the counts say where they all went
                for (d, out) in outs.iter_mut().enumerate() {
                    out.push_range(self.counts.before(b, d)..self.counts.at(b, d));
                }
                continue;
            };
            let len = self.counts.block_len(b) as usize;
            if current
                .as_ref()
                .is_none_or(|(batch, at)| *at >= batch.num_rows())
            {
                let batch = batches.next().await.ok_or_else(|| {
                    corrupt(
                        format!("row map {}", self.file.path()),
                        "label batch missing",
                    )
                })??;
                current = Some((batch, 0));
            }
            let Some((batch, at)) = current.as_mut() else {
                continue;
            };
            if *at + len > batch.num_rows() {
                return Err(corrupt(
                    format!("row map {}", self.file.path()),
                    format!("block {b} is short"),
                ));
            }
            let labels = batch.slice(*at, len);
            *at += len;
            self.sweep_block(b, b * block_rows, &labels, &parts, outs)?;
        }
        Ok(passthrough)
    }

    /// Sweeps block `b` (label-file rows from `lo`, its labels in `batch`) and emits the
    /// requested rows of `parts`; the counters must end at the block's counts.
    fn sweep_block(
        &self,
        b: u64,
        lo: u64,
        batch: &RecordBatch,
        parts: &[Part],
        outs: &mut [Runs],
    ) -> Result<()> {
        // requested positions of the block as a bit mask
        let mut mask = vec![0u64; batch.num_rows().div_ceil(64)];
        for (start, req, offs) in parts {
            for o in req.range(offs.clone()) {
                let i = (start + u64::from(o) - lo) as usize;
                if let Some(w) = mask.get_mut(i / 64) {
                    *w |= 1 << (i % 64);
                }
            }
        }
        self.sweep_labels(b, batch, |i, to| {
            if let Some((d, off)) = to {
                if mask.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1) {
                    if let Some(out) = outs.get_mut(d) {
                        out.push(off);
                    }
                }
            }
        })
    }

    /// Walks the labels of block `b` in order, calling `visit(i, Some((d, offset)))` for the
    /// block's row `i` sent to destination `d` at `offset` (counters seeded from the preceding
    /// counts row), or `visit(i, None)` for a deleted row. The one place labels are checked:
    /// the block holds exactly its rows, every label is below the number of destinations, and
    /// the counters end at the block's counts.
    fn sweep_labels(
        &self,
        b: u64,
        batch: &RecordBatch,
        mut visit: impl FnMut(usize, Option<(usize, u32)>),
    ) -> Result<()> {
        let what = || format!("row map {}", self.file.path());
        let m = self.destinations.len();
        if batch.num_rows() as u64 != self.counts.block_len(b) {
            return Err(corrupt(
                what(),
                format!("block {b} has {} labels", batch.num_rows()),
            ));
        }
        let labels = batch
            .column(0)
            .as_any()
            .downcast_ref::<UInt16Array>()
            .ok_or_else(|| corrupt(what(), "label column is not UInt16"))?;
        let mut counter: Vec<u32> = (0..m).map(|d| self.counts.before(b, d)).collect();
        let nulls = labels.nulls();
        for (i, &label) in labels.values().iter().enumerate() {
            if nulls.is_some_and(|n| n.is_null(i)) {
                visit(i, None);
                continue;
            }
            let d = usize::from(label);
            let Some(c) = counter.get_mut(d) else {
                return Err(corrupt(what(), format!("label {d} with {m} destinations")));
            };
            visit(i, Some((d, *c)));
            *c += 1;
        }
        self.check_block_counts(b, &counter)
    }

    /// After sweeping block `b`, each destination's counter must equal its count at the end of
    /// the block: the labels and the counts matrix tell one story.
    fn check_block_counts(&self, b: u64, counter: &[u32]) -> Result<()> {
        for (d, c) in counter.iter().enumerate() {
            if *c != self.counts.at(b, d) {
                return Err(corrupt(
                    format!("row map {}", self.file.path()),
                    format!("labels of block {b} disagree with the counts for destination {d}"),
                ));
            }
        }
        Ok(())
    }
}
