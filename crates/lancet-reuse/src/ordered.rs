//! Ordered compaction prepared for translation: per source its survivors and the number of
//! survivors in the sources before it; the destinations' cumulative row starts.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::collections::HashMap;

use lancet_proto::RowAddress;
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::ledger::Transition;
use crate::runs::Runs;
use crate::translation::Translation;

/// One ordered-compaction transition, ready to translate.
#[derive(Debug)]
pub(crate) struct Ordered {
    sources: HashMap<u32, (RoaringBitmap, u64, u64)>,
    dest_starts: Vec<u64>,
    dest_ids: Vec<u32>,
}

impl Ordered {
    pub(crate) fn new(t: &Transition, surviving: &RoaringTreemap) -> Self {
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

    pub(crate) fn translate(&self, frag: u32, offset: u64) -> Translation {
        let Some((survivors, before, rows)) = self.sources.get(&frag) else {
            return Translation::Address(RowAddress::first_of(frag) | offset);
        };
        // an offset past the source's rows passes through, as Lance's v0 remap does
        if offset >= *rows {
            return Translation::Address(RowAddress::first_of(frag) | offset);
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
        Translation::Address(RowAddress::first_of(*id) | (k - start))
    }

    /// Translates the requested offsets `req` of source `frag` (ascending) and appends each
    /// surviving one's destination offset to `outs[destination index]`; deleted rows vanish.
    /// Offsets are visited in survivor order, so every list stays ascending when sources are
    /// fed in transition order. Offsets past the source's rows are returned unchanged (they
    /// are not rows of this transition).
    pub(crate) fn translate_offsets(
        &self,
        frag: u32,
        req: &RoaringBitmap,
        outs: &mut [Runs],
    ) -> RoaringBitmap {
        let Some((survivors, before, rows)) = self.sources.get(&frag) else {
            return req.clone();
        };
        let rows = u32::try_from(*rows).unwrap_or(u32::MAX);
        let passthrough: RoaringBitmap = req.range(rows..).collect();
        let hit = req & survivors;
        if hit.len() == survivors.len() {
            // every survivor requested: output positions before..before + n, one range per
            // destination they span
            self.emit_range(*before..before + hit.len(), outs);
            return passthrough;
        }
        let mut d = 0usize;
        let mut emit = |k: u64| {
            while self.dest_starts.get(d + 1).is_some_and(|&s| s <= k) {
                d += 1;
            }
            if let (Some(start), Some(out)) = (self.dest_starts.get(d), outs.get_mut(d)) {
                out.push((k - start) as u32);
            }
        };
        if hit.len().saturating_mul(16) < survivors.len() {
            // a few rows of a large source: one rank query each
            for o in &hit {
                emit(before + survivors.rank(o) - 1);
            }
        } else {
            // most of the source: walk its survivors once, counting
            let mut wanted = hit.iter().peekable();
            for (r, o) in survivors.iter().enumerate() {
                if wanted.next_if_eq(&o).is_some() {
                    emit(before + r as u64);
                }
                if wanted.peek().is_none() {
                    break;
                }
            }
        }
        passthrough
    }

    /// Appends output-stream positions `k` as destination offset ranges.
    fn emit_range(&self, k: std::ops::Range<u64>, outs: &mut [Runs]) {
        let first = self
            .dest_starts
            .partition_point(|&s| s <= k.start)
            .saturating_sub(1);
        for (d, out) in outs.iter_mut().enumerate().skip(first) {
            let (Some(&start), end) = (
                self.dest_starts.get(d),
                self.dest_starts.get(d + 1).copied().unwrap_or(u64::MAX),
            ) else {
                break;
            };
            if start >= k.end {
                break;
            }
            let lo = k.start.max(start) - start;
            let hi = k.end.min(end) - start;
            out.push_range(lo as u32..hi as u32);
        }
    }
}

/// Where the rows of ordered compactions went, for rewriting an index's row addresses when a
/// compaction remaps indexes instead of deferring (the same rule the Fragment Reuse Index
/// translates by): a row of a source has the address its survivor took, a deleted row none,
/// a row of any other fragment keeps its address.
#[derive(Debug)]
pub struct CompactionRemap {
    by_source: HashMap<u32, usize>,
    ordered: Vec<Ordered>,
}

impl CompactionRemap {
    /// The remap of `transitions`, each an ordered compaction with distinct sources.
    pub fn new(transitions: &[Transition]) -> crate::Result<Self> {
        let mut by_source = HashMap::new();
        let mut ordered = Vec::with_capacity(transitions.len());
        for (i, t) in transitions.iter().enumerate() {
            crate::ledger::check(t, "a compaction")?;
            let crate::Mapping::OrderedCompaction { surviving } = &t.mapping else {
                return Err(crate::ReuseError::InvalidInput(
                    "a compaction's remap takes ordered compactions only".into(),
                ));
            };
            for s in &t.sources {
                if by_source.insert(s.id, i).is_some() {
                    return Err(crate::ReuseError::InvalidInput(format!(
                        "fragment {} is the source of two compactions",
                        s.id
                    )));
                }
            }
            ordered.push(Ordered::new(t, surviving));
        }
        Ok(CompactionRemap { by_source, ordered })
    }

    /// The address the row at `address` has after the compactions; `None` when it was
    /// deleted.
    pub fn remap(&self, address: u64) -> Option<u64> {
        let (frag, offset) = RowAddress::split(address);
        let Some(o) = self.by_source.get(&frag).and_then(|&i| self.ordered.get(i)) else {
            return Some(address);
        };
        match o.translate(frag, u64::from(offset)) {
            Translation::Address(a) => Some(a),
            Translation::Deleted => None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::ledger::{Digest, Mapping};

    /// Both set paths (walking the survivors, one rank query per offset) agree with
    /// per-address translation, for one offset and for every offset.
    #[test]
    fn set_paths_agree_with_single_addresses() {
        let rows = [300u64, 0, 170];
        let mut surviving = RoaringTreemap::new();
        let mut sources = Vec::new();
        for (f, n) in rows.iter().enumerate() {
            let alive: Vec<u64> = (0..*n).filter(|o| o % 7 != 3).collect();
            surviving.extend(alive.iter().map(|o| ((f as u64) << 32) | o));
            sources.push(Digest {
                id: f as u32,
                physical_rows: *n,
                num_deleted_rows: n - alive.len() as u64,
            });
        }
        let total = surviving.len();
        let destinations: Vec<Digest> = [100, 0, total - 100]
            .iter()
            .enumerate()
            .map(|(d, n)| Digest {
                id: 50 + d as u32,
                physical_rows: *n,
                num_deleted_rows: 0,
            })
            .collect();
        let t = Transition {
            dataset_version: None,
            sources,
            destinations,
            mapping: Mapping::OrderedCompaction {
                surviving: surviving.clone(),
            },
        };
        let o = Ordered::new(&t, &surviving);
        for f in [0u32, 2] {
            let n = rows[f as usize] as u32;
            let requests: Vec<RoaringBitmap> = [
                (0..n + 3).collect(),
                (0..n + 3).filter(|x| x % 2 == 0).collect(),
            ]
            .into_iter()
            .chain((0..n + 3).map(|x| [x].into_iter().collect()))
            .collect();
            for req in requests {
                let mut outs = vec![Runs::default(); 3];
                let past = o.translate_offsets(f, &req, &mut outs);
                let mut got: Vec<u64> = outs
                    .into_iter()
                    .enumerate()
                    .flat_map(|(d, v)| {
                        let b = v.into_bitmap().unwrap();
                        b.into_iter()
                            .map(move |x| ((50 + d as u64) << 32) | u64::from(x))
                    })
                    .collect();
                got.extend(past.iter().map(|x| (u64::from(f) << 32) | u64::from(x)));
                got.sort_unstable();
                let mut want: Vec<u64> = req
                    .iter()
                    .filter_map(|x| match o.translate(f, u64::from(x)) {
                        Translation::Address(a) => Some(a),
                        Translation::Deleted => None,
                    })
                    .collect();
                want.sort_unstable();
                assert_eq!(got, want, "source {f}, {} offsets", req.len());
            }
        }
    }

    #[test]
    fn a_compaction_remap_moves_survivors_and_drops_deleted_rows() {
        use crate::ledger::Digest;
        let digest = |id, physical_rows, num_deleted_rows| Digest {
            id,
            physical_rows,
            num_deleted_rows,
        };
        let sources = vec![digest(1, 4, 1), digest(2, 3, 0)];
        let deleted: [RoaringBitmap; 2] = [[2u32].into_iter().collect(), RoaringBitmap::new()];
        let t = Transition {
            dataset_version: None,
            mapping: crate::rules::ordered_compaction(&sources, &deleted).unwrap(),
            sources,
            destinations: vec![digest(9, 4, 0), digest(10, 2, 0)],
        };
        let remap = CompactionRemap::new(std::slice::from_ref(&t)).unwrap();
        let a = |f: u32, o: u32| RowAddress::new(f, o).as_u64();
        assert_eq!(remap.remap(a(1, 0)), Some(a(9, 0)));
        assert_eq!(remap.remap(a(1, 2)), None);
        assert_eq!(remap.remap(a(1, 3)), Some(a(9, 2)));
        assert_eq!(remap.remap(a(2, 0)), Some(a(9, 3)));
        assert_eq!(remap.remap(a(2, 2)), Some(a(10, 1)));
        assert_eq!(remap.remap(a(5, 7)), Some(a(5, 7)));
        // a fragment cannot be the source of two compactions
        assert!(CompactionRemap::new(&[t.clone(), t]).is_err());
    }
}
