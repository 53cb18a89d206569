//! The history as a graph: each fragment has at most one producer and one consumer, physical
//! row counts agree along edges, no cycles. Translation applies transitions in dependency
//! (topological) order, so one pass follows every chain whatever the serialized order.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::collections::{HashMap, VecDeque};

use roaring::RoaringBitmap;

use crate::error::{corrupt, Result};
use crate::ledger::{Ledger, Mapping, Transition};
use crate::rowmap::RowMap;

/// What became of an old row address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Translation {
    /// The row lives at this address now (unchanged if no transition touched it).
    Address(u64),
    /// The row was deleted by a rewrite.
    Deleted,
}

/// Ordered compaction prepared for lookups: per source its survivors and the survivors of the
/// sources before it; the destinations' cumulative row starts.
#[derive(Debug)]
struct Ordered {
    sources: HashMap<u32, (RoaringBitmap, u64, u64)>,
    dest_starts: Vec<u64>,
    dest_ids: Vec<u32>,
}

impl Ordered {
    fn new(t: &Transition, surviving: &roaring::RoaringTreemap) -> Self {
        let mut sources = HashMap::new();
        let mut before = 0u64;
        for s in &t.sources {
            let bitmap: RoaringBitmap = surviving
                .bitmaps()
                .find(|(high, _)| *high == s.id)
                .map(|(_, b)| b.clone())
                .unwrap_or_default();
            let n = bitmap.len();
            sources.insert(s.id, (bitmap, before, s.physical_rows));
            before += n;
        }
        let mut dest_starts = Vec::with_capacity(t.destinations.len());
        let mut start = 0;
        for d in &t.destinations {
            dest_starts.push(start);
            start += d.physical_rows;
        }
        Self {
            sources,
            dest_starts,
            dest_ids: t.destinations.iter().map(|d| d.id).collect(),
        }
    }

    fn translate(&self, frag: u32, offset: u64) -> Translation {
        let Some((survivors, before, rows)) = self.sources.get(&frag) else {
            return Translation::Address((u64::from(frag) << 32) | offset);
        };
        // an offset past the source's rows passes through, as Lance's v0 remap does
        if offset >= *rows {
            return Translation::Address((u64::from(frag) << 32) | offset);
        }
        let o = offset as u32;
        if !survivors.contains(o) {
            return Translation::Deleted;
        }
        let k = before + survivors.rank(o) - 1;
        let d = self
            .dest_starts
            .partition_point(|&s| s <= k)
            .saturating_sub(1);
        let (Some(start), Some(id)) = (self.dest_starts.get(d), self.dest_ids.get(d)) else {
            return Translation::Deleted;
        };
        Translation::Address((u64::from(*id) << 32) | (k - start))
    }
}

#[derive(Debug)]
enum Prepared {
    Ordered(Ordered),
    /// The row map, once opened by the caller (see [`History::attach_row_map`]).
    Partition(Option<RowMap>),
}

/// A validated history ready to translate addresses.
#[derive(Debug)]
pub struct History {
    pub ledger: Ledger,
    /// Transition indices in dependency order.
    order: Vec<usize>,
    prepared: Vec<Prepared>,
    /// Source fragment id → the transition consuming it.
    consumer: HashMap<u32, usize>,
}

impl History {
    /// Builds the graph and checks it.
    pub fn new(ledger: Ledger, what: &str) -> Result<Self> {
        let ts = &ledger.transitions;
        let mut producer: HashMap<u32, (usize, u64)> = HashMap::new();
        let mut consumer: HashMap<u32, usize> = HashMap::new();
        for (i, t) in ts.iter().enumerate() {
            for d in &t.destinations {
                if producer.insert(d.id, (i, d.physical_rows)).is_some() {
                    return Err(corrupt(
                        what,
                        format!("fragment {} is produced twice", d.id),
                    ));
                }
            }
            for s in &t.sources {
                if consumer.insert(s.id, i).is_some() {
                    return Err(corrupt(
                        what,
                        format!("fragment {} is consumed twice", s.id),
                    ));
                }
            }
        }
        // edges producer -> consumer; physical rows must agree along them
        let mut indegree = vec![0usize; ts.len()];
        let mut edges: Vec<Vec<usize>> = vec![Vec::new(); ts.len()];
        for (i, t) in ts.iter().enumerate() {
            for s in &t.sources {
                if let Some(&(p, rows)) = producer.get(&s.id) {
                    if rows != s.physical_rows {
                        return Err(corrupt(
                            what,
                            format!(
                                "fragment {} was written with {rows} rows but read with {}",
                                s.id, s.physical_rows
                            ),
                        ));
                    }
                    if let (Some(e), Some(d)) = (edges.get_mut(p), indegree.get_mut(i)) {
                        e.push(i);
                        *d += 1;
                    }
                }
            }
        }
        let mut queue: VecDeque<usize> = (0..ts.len())
            .filter(|&i| indegree.get(i) == Some(&0))
            .collect();
        let mut order = Vec::with_capacity(ts.len());
        while let Some(i) = queue.pop_front() {
            order.push(i);
            for &j in edges.get(i).map(Vec::as_slice).unwrap_or_default() {
                if let Some(d) = indegree.get_mut(j) {
                    *d -= 1;
                    if *d == 0 {
                        queue.push_back(j);
                    }
                }
            }
        }
        if order.len() != ts.len() {
            return Err(corrupt(what, "the history has a cycle"));
        }
        let prepared = ts
            .iter()
            .map(|t| match &t.mapping {
                Mapping::OrderedCompaction { surviving } => {
                    Prepared::Ordered(Ordered::new(t, surviving))
                }
                Mapping::StablePartition { .. } => Prepared::Partition(None),
            })
            .collect();
        Ok(Self {
            ledger,
            order,
            prepared,
            consumer,
        })
    }

    /// The stable-partition transitions whose row maps must be attached before translation:
    /// `(transition index, map_id, map_size_bytes, base_id)`.
    pub fn row_maps_needed(&self) -> Vec<(usize, String, u64, Option<u32>)> {
        self.ledger
            .transitions
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match &t.mapping {
                Mapping::StablePartition {
                    map_id,
                    map_size_bytes,
                    base_id,
                } => Some((i, map_id.clone(), *map_size_bytes, *base_id)),
                _ => None,
            })
            .collect()
    }

    /// Attaches the opened row map of transition `i`.
    pub fn attach_row_map(&mut self, i: usize, map: RowMap) {
        if let Some(p) = self.prepared.get_mut(i) {
            *p = Prepared::Partition(Some(map));
        }
    }

    pub fn transition(&self, i: usize) -> Option<&Transition> {
        self.ledger.transitions.get(i)
    }

    /// Translates old addresses, in input order. Transitions run in dependency order, each on
    /// the addresses its sources hold at that point; a deleted row stays deleted.
    pub async fn translate(&self, addrs: &[u64]) -> Result<Vec<Translation>> {
        let mut out: Vec<Translation> = addrs.iter().map(|a| Translation::Address(*a)).collect();
        for &i in &self.order {
            let Some(prepared) = self.prepared.get(i) else {
                continue;
            };
            match prepared {
                Prepared::Ordered(o) => {
                    for t in out.iter_mut() {
                        if let Translation::Address(a) = *t {
                            let frag = (a >> 32) as u32;
                            if self.consumer.get(&frag) == Some(&i) {
                                *t = o.translate(frag, a & 0xffff_ffff);
                            }
                        }
                    }
                }
                Prepared::Partition(map) => {
                    let requests: Vec<(usize, u32, u64)> = out
                        .iter()
                        .enumerate()
                        .filter_map(|(slot, t)| match *t {
                            Translation::Address(a)
                                if self.consumer.get(&((a >> 32) as u32)) == Some(&i) =>
                            {
                                Some((slot, (a >> 32) as u32, a & 0xffff_ffff))
                            }
                            _ => None,
                        })
                        .collect();
                    if requests.is_empty() {
                        continue;
                    }
                    let map = map.as_ref().ok_or_else(|| {
                        crate::ReuseError::InvalidInput(format!(
                            "the row map of transition {i} was not attached"
                        ))
                    })?;
                    for (slot, addr) in map.translate(&requests).await? {
                        if let Some(t) = out.get_mut(slot) {
                            *t = addr.map_or(Translation::Deleted, Translation::Address);
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}
