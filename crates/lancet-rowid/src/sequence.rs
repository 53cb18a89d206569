//! `RowIdSequence`: the stable row id of every physical row of a fragment, as a list of
//! segments. Element `i` is the id of physical row `i`, deleted rows included.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::ops::Range;

use lancet_proto::table::RowIdSequence as PbSequence;
use prost::Message;
use roaring::RoaringBitmap;

use crate::error::DecodeError;
use crate::segment::U64Segment;
use crate::strict;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowIdSequence {
    segments: Vec<U64Segment>,
    /// `ends[k]` = total length of segments `0..=k`.
    ends: Vec<u64>,
}

impl RowIdSequence {
    /// From segments; fails if the total length overflows u64.
    pub fn from_segments(segments: Vec<U64Segment>) -> Result<Self, DecodeError> {
        let mut ends = Vec::with_capacity(segments.len());
        let mut total = 0u64;
        for s in &segments {
            total = total
                .checked_add(s.len())
                .ok_or_else(|| DecodeError::rule("sequence length overflows u64"))?;
            ends.push(total);
        }
        Ok(Self { segments, ends })
    }

    /// The ids `range` (what Lance assigns a new fragment).
    pub fn from_range(range: Range<u64>) -> Self {
        let len = range.end.saturating_sub(range.start);
        Self {
            segments: vec![U64Segment::Range(range)],
            ends: vec![len],
        }
    }

    /// The ids `values`, in physical order, as one segment chosen by Lance's rule.
    pub fn from_values(values: &[u64]) -> Self {
        Self::from_segment(U64Segment::from_values(values))
    }

    fn from_segment(segment: U64Segment) -> Self {
        let len = segment.len();
        Self {
            segments: vec![segment],
            ends: vec![len],
        }
    }

    pub fn segments(&self) -> &[U64Segment] {
        &self.segments
    }

    pub fn len(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id of physical row `offset`.
    pub fn get(&self, offset: u64) -> Option<u64> {
        let k = self.ends.partition_point(|&e| e <= offset);
        let start = match k {
            0 => 0,
            _ => *self.ends.get(k - 1)?,
        };
        self.segments.get(k)?.get(offset - start)
    }

    /// The physical offset of `id`.
    pub fn position(&self, id: u64) -> Option<u64> {
        let mut start = 0u64;
        for (segment, end) in self.segments.iter().zip(&self.ends) {
            if let Some(p) = segment.position(id) {
                return Some(start + p);
            }
            start = *end;
        }
        None
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.segments.iter().flat_map(|s| s.iter())
    }

    /// Appends `other`; a trailing `Range` and a leading `Range` that touch become one.
    pub fn extend(&mut self, other: RowIdSequence) {
        for segment in other.segments {
            self.push(segment);
        }
    }

    fn push(&mut self, segment: U64Segment) {
        if segment.is_empty() && !self.segments.is_empty() {
            return;
        }
        if let (Some(U64Segment::Range(last)), U64Segment::Range(next)) =
            (self.segments.last_mut(), &segment)
        {
            if last.end == next.start {
                last.end = next.end;
                if let Some(e) = self.ends.last_mut() {
                    *e += next.end - next.start;
                }
                return;
            }
            if last.is_empty() {
                *last = next.clone();
                if let Some(e) = self.ends.last_mut() {
                    *e = next.end - next.start;
                }
                return;
            }
        }
        let len = segment.len();
        self.ends.push(self.len() + len);
        self.segments.push(segment);
    }

    /// Rows `offset..offset + len`. A `Range` slices to a `Range`; other segments keep their
    /// family where it still fits (sorted stays sorted, unsorted stays an array), otherwise the
    /// selection rule picks again.
    pub fn slice(&self, offset: u64, len: u64) -> RowIdSequence {
        let mut out = RowIdSequence::default();
        let end = offset.saturating_add(len).min(self.len());
        let mut seg_start = 0u64;
        for (segment, seg_end) in self.segments.iter().zip(&self.ends) {
            let (lo, hi) = (offset.max(seg_start), end.min(*seg_end));
            if lo < hi {
                let (a, b) = (lo - seg_start, hi - seg_start);
                out.push(slice_segment(segment, a, b));
            }
            seg_start = *seg_end;
        }
        out
    }

    /// Drops the rows at `deleted` offsets. Segments that lose rows are re-encoded with the
    /// selection rule; untouched segments are kept as they are.
    pub fn mask(&self, deleted: &RoaringBitmap) -> RowIdSequence {
        let mut out = RowIdSequence::default();
        let mut seg_start = 0u64;
        for (segment, seg_end) in self.segments.iter().zip(&self.ends) {
            let lo = u32::try_from(seg_start).unwrap_or(u32::MAX);
            let hi = u32::try_from(*seg_end).unwrap_or(u32::MAX);
            if deleted.range_cardinality(lo..hi) == 0 {
                out.push(segment.clone());
            } else {
                let kept: Vec<u64> = segment
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| {
                        u32::try_from(seg_start + *i as u64).map_or(true, |o| !deleted.contains(o))
                    })
                    .map(|(_, v)| v)
                    .collect();
                out.push(U64Segment::from_values(&kept));
            }
            seg_start = *seg_end;
        }
        out
    }

    /// Decodes stored bytes strictly: only `segments` (field 1) at every level's declared fields
    /// and wire types, one oneof arm, every segment valid, total length within u64.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        strict::check(bytes, &strict::SEQUENCE)?;
        let pb = PbSequence::decode(bytes)
            .map_err(|e| DecodeError::Rule(format!("RowIdSequence: {e}")))?;
        let segments = pb
            .segments
            .iter()
            .map(U64Segment::from_proto)
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_segments(segments)
    }

    /// The stored bytes.
    pub fn encode(&self) -> Vec<u8> {
        PbSequence {
            segments: self.segments.iter().map(U64Segment::to_proto).collect(),
        }
        .encode_to_vec()
    }

    pub fn heap_bytes(&self) -> usize {
        self.segments.capacity() * std::mem::size_of::<U64Segment>()
            + self.ends.capacity() * 8
            + self
                .segments
                .iter()
                .map(U64Segment::heap_bytes)
                .sum::<usize>()
    }
}

fn slice_segment(segment: &U64Segment, a: u64, b: u64) -> U64Segment {
    match segment {
        U64Segment::Range(r) => U64Segment::Range(r.start + a..r.start + b),
        U64Segment::SortedArray(_) | U64Segment::Array(_) => {
            let values: Vec<u64> = segment
                .iter()
                .skip(a as usize)
                .take((b - a) as usize)
                .collect();
            let arr = crate::encoded::EncodedArray::from_values(&values);
            if matches!(segment, U64Segment::SortedArray(_)) {
                U64Segment::SortedArray(arr)
            } else {
                U64Segment::Array(arr)
            }
        }
        _ => {
            let values: Vec<u64> = segment
                .iter()
                .skip(a as usize)
                .take((b - a) as usize)
                .collect();
            U64Segment::from_values(&values)
        }
    }
}

/// Compaction: concatenates the sources (each with its deleted offsets dropped) in order and
/// cuts the result into destinations of `sizes` rows. Ids are kept; `sizes` must add up to the
/// number of surviving rows.
pub fn rechunk(
    sources: &[(&RowIdSequence, Option<&RoaringBitmap>)],
    sizes: &[u64],
) -> Result<Vec<RowIdSequence>, crate::RowIdError> {
    let mut all = RowIdSequence::default();
    for (seq, deleted) in sources {
        match deleted {
            Some(d) if !d.is_empty() => all.extend(seq.mask(d)),
            _ => all.extend((*seq).clone()),
        }
    }
    let total: u64 = sizes.iter().sum();
    if total != all.len() {
        return Err(crate::RowIdError::InvalidInput(format!(
            "destination sizes add up to {total} but {} rows survive",
            all.len()
        )));
    }
    let mut out = Vec::with_capacity(sizes.len());
    let mut offset = 0;
    for &n in sizes {
        out.push(all.slice(offset, n));
        offset += n;
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn get_position_extend() {
        let mut s = RowIdSequence::from_range(0..10);
        s.extend(RowIdSequence::from_range(10..20));
        assert_eq!(s.segments().len(), 1, "touching ranges merge");
        s.extend(RowIdSequence::from_values(&[100, 50, 75]));
        assert_eq!(s.len(), 23);
        assert_eq!(s.get(19), Some(19));
        assert_eq!(s.get(20), Some(100));
        assert_eq!(s.get(22), Some(75));
        assert_eq!(s.get(23), None);
        assert_eq!(s.position(50), Some(21));
        assert_eq!(s.position(51), None);
        let back = RowIdSequence::decode(&s.encode()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn mask_and_rechunk() {
        let a = RowIdSequence::from_range(0..10);
        let b = RowIdSequence::from_range(100..105);
        let mut del = RoaringBitmap::new();
        del.insert(2);
        del.insert(3);
        let out = rechunk(&[(&a, Some(&del)), (&b, None)], &[6, 7]).unwrap();
        let ids: Vec<Vec<u64>> = out.iter().map(|s| s.iter().collect()).collect();
        assert_eq!(ids[0], vec![0, 1, 4, 5, 6, 7]);
        assert_eq!(ids[1], vec![8, 9, 100, 101, 102, 103, 104]);
        assert!(rechunk(&[(&a, None)], &[3]).is_err());
    }

    #[test]
    fn strict_decoding() {
        let good = RowIdSequence::from_range(5..9).encode();
        assert!(RowIdSequence::decode(&good).is_ok());
        // unknown top-level field 2 (varint)
        let mut extra = good.clone();
        extra.extend_from_slice(&[0x10, 0x01]);
        assert!(RowIdSequence::decode(&extra).is_err());
        // field 1 with wire type varint
        assert!(RowIdSequence::decode(&[0x08, 0x01]).is_err());
        // unknown field inside the Range (field 3)
        let nested = [0x0a, 0x06, 0x0a, 0x04, 0x08, 0x05, 0x18, 0x01];
        assert!(RowIdSequence::decode(&nested).is_err());
        // two oneof arms in one segment
        let two_arms = [0x0a, 0x08, 0x0a, 0x02, 0x08, 0x01, 0x0a, 0x02, 0x08, 0x02];
        assert!(RowIdSequence::decode(&two_arms).is_err());
        // truncated
        assert!(RowIdSequence::decode(&good[..good.len() - 1]).is_err());
        // total length overflows
        let big = RowIdSequence::from_segments(vec![U64Segment::Range(0..u64::MAX)])
            .unwrap()
            .encode();
        let mut twice = big.clone();
        twice.extend_from_slice(&big);
        assert!(RowIdSequence::decode(&twice).is_err());
    }
}
