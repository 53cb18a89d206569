//! The history as a graph: each fragment has at most one producer and one consumer, physical
//! row counts agree along edges, no cycles. Translation applies transitions in dependency
//! (topological) order, so one pass follows every chain whatever the serialized order.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap, VecDeque};

use lancet_proto::RowAddress;
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{corrupt, Result};
use crate::ledger::{Ledger, Mapping, Transition};
use crate::ordered::Ordered;
use crate::rowmap::RowMap;
use crate::runs::Runs;
pub use crate::translation::Translation;

#[derive(Debug)]
enum Prepared {
    Ordered(Ordered),
    /// The row map, once opened by the caller (see [`History::attach_row_map`]).
    Partition(Option<Box<RowMap>>),
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
            *p = Prepared::Partition(Some(Box::new(map)));
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
                            let (frag, offset) = RowAddress::split(a);
                            if self.consumer.get(&frag) == Some(&i) {
                                *t = o.translate(frag, u64::from(offset));
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
                                if self.consumer.get(&RowAddress::split(a).0) == Some(&i) =>
                            {
                                let (frag, offset) = RowAddress::split(a);
                                Some((slot, frag, u64::from(offset)))
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

    /// Translates a set of stored row addresses (for example a BTree segment's ids) into the
    /// addresses the same rows have now; deleted rows drop out. Each transition, in dependency
    /// order, takes the per-fragment offset bitmaps of its sources and produces ascending
    /// offset lists per destination, so nothing is sorted; see `benches/reuse.rs`.
    pub async fn translate_set(&self, addrs: &RoaringTreemap) -> Result<RoaringTreemap> {
        let mut current: BTreeMap<u32, RoaringBitmap> =
            addrs.bitmaps().map(|(f, b)| (f, b.clone())).collect();
        for &i in &self.order {
            let (Some(t), Some(prepared)) = (self.ledger.transitions.get(i), self.prepared.get(i))
            else {
                continue;
            };
            let taken: Vec<(u32, RoaringBitmap)> = t
                .sources
                .iter()
                .filter_map(|s| current.remove(&s.id).map(|b| (s.id, b)))
                .collect();
            if taken.is_empty() {
                continue;
            }
            let mut outs: Vec<Runs> = vec![Runs::default(); t.destinations.len()];
            match prepared {
                Prepared::Ordered(o) => {
                    for (frag, req) in &taken {
                        let past = o.translate_offsets(*frag, req, &mut outs);
                        if !past.is_empty() {
                            *current.entry(*frag).or_default() |= past;
                        }
                    }
                }
                Prepared::Partition(map) => {
                    let map = map.as_ref().ok_or_else(|| {
                        crate::ReuseError::InvalidInput(format!(
                            "the row map of transition {i} was not attached"
                        ))
                    })?;
                    let requests: Vec<(u32, &RoaringBitmap)> =
                        taken.iter().map(|(f, b)| (*f, b)).collect();
                    for (frag, past) in map.translate_offsets(&requests, &mut outs).await? {
                        *current.entry(frag).or_default() |= past;
                    }
                }
            }
            for (d, offsets) in t.destinations.iter().zip(outs) {
                if offsets.is_empty() {
                    continue;
                }
                let produced = offsets.into_bitmap().ok_or_else(|| {
                    crate::error::corrupt(
                        format!("transition {i}"),
                        "a destination receives its rows out of order",
                    )
                })?;
                *current.entry(d.id).or_default() |= produced;
            }
        }
        Ok(RoaringTreemap::from_bitmaps(current))
    }

    /// The fragments whose every row an index covering `covered` (fragment ids) still
    /// answers for after the history: `covered` itself, plus each destination of a
    /// transition all of whose sources are answered for, in dependency order. An index
    /// translated with [`History::translate_set`] is exact on exactly these fragments.
    pub fn covered_after(&self, covered: &RoaringBitmap) -> RoaringBitmap {
        let mut out = covered.clone();
        for &i in &self.order {
            let Some(t) = self.ledger.transitions.get(i) else {
                continue;
            };
            if t.sources.iter().all(|s| out.contains(s.id)) {
                out.extend(t.destinations.iter().map(|d| d.id));
            }
        }
        out
    }

    /// The transitions an index covering `indexed` (fragment ids) still needs, in list order:
    /// the one consuming an indexed fragment, then, transitively, the one consuming each of
    /// its destinations (intermediate transitions stay as long as an old address must pass
    /// through them). A history trimmed to the union over every index translates those
    /// indexes exactly as the full history does.
    pub fn needed_for(&self, indexed: &RoaringBitmap) -> Vec<usize> {
        let mut needed = vec![false; self.ledger.transitions.len()];
        let mut frontier: Vec<u32> = indexed.iter().collect();
        while let Some(f) = frontier.pop() {
            let Some(&i) = self.consumer.get(&f) else {
                continue;
            };
            if let (Some(flag), Some(t)) = (needed.get_mut(i), self.ledger.transitions.get(i)) {
                if !*flag {
                    *flag = true;
                    frontier.extend(t.destinations.iter().map(|d| d.id));
                }
            }
        }
        needed
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.then_some(i))
            .collect()
    }

    /// The fragments whose addresses some index may still hold, which a trim keeps the
    /// transitions of: for each index, its covered fragments (`bitmap`) and the fragments of
    /// the version it was built on (`built_on`), or, where that version is gone, its covered
    /// fragments' ancestors in this history.
    pub fn indexed_fragments<'a>(
        &self,
        indexes: impl IntoIterator<Item = (&'a RoaringBitmap, Option<&'a [u32]>)>,
    ) -> RoaringBitmap {
        let mut indexed = RoaringBitmap::new();
        for (bitmap, built_on) in indexes {
            indexed |= bitmap;
            match built_on {
                Some(fragments) => indexed.extend(fragments.iter().copied()),
                None => indexed |= self.with_ancestors(bitmap),
            }
        }
        indexed
    }

    /// `fragments` and every fragment they were produced from, transitively: where an index
    /// whose `fragment_bitmap` was moved forward by a deferred rewrite (as pylance does) may
    /// still hold addresses.
    pub fn with_ancestors(&self, fragments: &RoaringBitmap) -> RoaringBitmap {
        let producer: HashMap<u32, usize> = self
            .ledger
            .transitions
            .iter()
            .enumerate()
            .flat_map(|(i, t)| t.destinations.iter().map(move |d| (d.id, i)))
            .collect();
        let mut out = fragments.clone();
        let mut frontier: Vec<u32> = fragments.iter().collect();
        while let Some(f) = frontier.pop() {
            let Some(t) = producer
                .get(&f)
                .and_then(|&i| self.ledger.transitions.get(i))
            else {
                continue;
            };
            for s in &t.sources {
                if out.insert(s.id) {
                    frontier.push(s.id);
                }
            }
        }
        out
    }
}
