//! `U64Segment`: one run of a row-id sequence, in one of five encodings, and Lance's rule for
//! choosing among them (FORMAT-FACTS §7.3).
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::ops::Range;

use lancet_proto::table::u64_segment::{
    Range as PbRange, RangeWithBitmap as PbRangeWithBitmap, RangeWithHoles as PbRangeWithHoles,
    Segment,
};
use lancet_proto::table::U64Segment as PbSegment;

use crate::bitmap::Bitmap;
use crate::encoded::EncodedArray;
use crate::error::DecodeError;

/// A run of u64 values (row ids, or row offsets in version spans).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum U64Segment {
    /// `start..end`.
    Range(Range<u64>),
    /// `range` minus `holes` (absolute values, strictly increasing, inside the range).
    RangeWithHoles {
        range: Range<u64>,
        holes: EncodedArray,
    },
    /// The values of `range` whose bit is set.
    RangeWithBitmap { range: Range<u64>, bitmap: Bitmap },
    /// Strictly increasing values.
    SortedArray(EncodedArray),
    /// Values in any order.
    Array(EncodedArray),
}

/// The encoding names `lancet rowid --segments` prints.
impl U64Segment {
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Range(_) => "range",
            Self::RangeWithHoles { .. } => "range_with_holes",
            Self::RangeWithBitmap { .. } => "range_with_bitmap",
            Self::SortedArray(_) => "sorted_array",
            Self::Array(_) => "array",
        }
    }

    /// Lance's writer rule. `values` are in physical order.
    ///
    /// 1. empty → `Range{0,0}`; 2. not strictly increasing → `Array`;
    /// 3. strictly increasing with `max < u64::MAX`: contiguous → `Range`; otherwise the cheapest
    ///    of `RangeWithHoles` (24 + 4·holes), `RangeWithBitmap` (24 + ⌈span/8⌉) and `SortedArray`
    ///    (24 + 2·count), ties in that order; 4. `max == u64::MAX` → `SortedArray`.
    pub fn from_values(values: &[u64]) -> Self {
        let (Some(&min), Some(&max)) = (values.first(), values.last()) else {
            return Self::Range(0..0);
        };
        let sorted = values.windows(2).all(|w| matches!(w, [a, b] if a < b));
        if !sorted {
            return Self::Array(EncodedArray::from_values(values));
        }
        if max == u64::MAX {
            return Self::SortedArray(EncodedArray::from_values(values));
        }
        let count = values.len() as u128;
        let span = u128::from(max - min) + 1;
        if span == count {
            return Self::Range(min..max + 1);
        }
        let n_holes = span.saturating_sub(count);
        let holes_cost = 24 + 4 * n_holes;
        let bitmap_cost = 24 + span.div_ceil(8);
        let sorted_cost = 24 + 2 * count;
        let range = min..max + 1;
        if holes_cost <= bitmap_cost && holes_cost <= sorted_cost {
            let mut holes = Vec::with_capacity(n_holes as usize);
            let mut next = min;
            for &v in values {
                holes.extend(next..v);
                next = v + 1;
            }
            Self::RangeWithHoles {
                range,
                holes: EncodedArray::from_values(&holes),
            }
        } else if bitmap_cost <= sorted_cost {
            let mut bitmap = Bitmap::all_ones((max - min) + 1);
            let mut next = min;
            let mut cleared = Vec::new();
            for &v in values {
                cleared.extend((next..v).map(|h| h - min));
                next = v + 1;
            }
            bitmap.clear_all(cleared);
            Self::RangeWithBitmap { range, bitmap }
        } else {
            Self::SortedArray(EncodedArray::from_values(values))
        }
    }

    pub fn len(&self) -> u64 {
        match self {
            Self::Range(r) => r.end - r.start,
            Self::RangeWithHoles { range, holes } => range.end - range.start - holes.len() as u64,
            Self::RangeWithBitmap { bitmap, .. } => bitmap.count_ones(),
            Self::SortedArray(a) | Self::Array(a) => a.len() as u64,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value at position `i`.
    pub fn get(&self, i: u64) -> Option<u64> {
        if i >= self.len() {
            return None;
        }
        match self {
            Self::Range(r) => Some(r.start + i),
            Self::RangeWithHoles { range, holes } => {
                // value = start + i + j, where j = holes h_k with h_k - k <= start + i
                let target = range.start + i;
                let mut lo = 0usize;
                let mut hi = holes.len();
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    // holes strictly increase inside the range, so h_k >= start + k
                    let h = holes.get(mid)?;
                    if h - mid as u64 <= target {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                Some(target + lo as u64)
            }
            Self::RangeWithBitmap { range, bitmap } => bitmap.select(i).map(|p| range.start + p),
            Self::SortedArray(a) | Self::Array(a) => a.get(usize::try_from(i).ok()?),
        }
    }

    /// Position of `value`, if present.
    pub fn position(&self, value: u64) -> Option<u64> {
        match self {
            Self::Range(r) => r.contains(&value).then(|| value - r.start),
            Self::RangeWithHoles { range, holes } => {
                if !range.contains(&value) || holes.binary_search(value).is_ok() {
                    return None;
                }
                Some(value - range.start - holes.count_below(value) as u64)
            }
            Self::RangeWithBitmap { range, bitmap } => {
                let p = value.checked_sub(range.start)?;
                (range.contains(&value) && bitmap.get(p)).then(|| bitmap.rank(p))
            }
            Self::SortedArray(a) => a.binary_search(value).ok().map(|i| i as u64),
            Self::Array(a) => a.iter().position(|v| v == value).map(|i| i as u64),
        }
    }

    /// Values in position order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = u64> + '_> {
        match self {
            Self::Range(r) => Box::new(r.clone()),
            Self::RangeWithHoles { range, holes } => {
                let mut holes = holes.iter().peekable();
                Box::new(range.clone().filter(move |v| {
                    while holes.peek().is_some_and(|h| h < v) {
                        holes.next();
                    }
                    holes.peek() != Some(v)
                }))
            }
            Self::RangeWithBitmap { range, bitmap } => {
                let start = range.start;
                Box::new(bitmap.iter_ones().map(move |p| start + p))
            }
            Self::SortedArray(a) | Self::Array(a) => a.iter(),
        }
    }

    /// Maximal runs `(first_value, first_position, len)` in which value and position both grow
    /// by one. Costs O(runs) for ranges with holes or bitmaps, O(len) for arrays.
    pub fn runs(&self) -> Vec<(u64, u64, u64)> {
        match self {
            Self::Range(r) if r.is_empty() => Vec::new(),
            Self::Range(r) => vec![(r.start, 0, r.end - r.start)],
            Self::RangeWithHoles { range, holes } => {
                let mut out = Vec::with_capacity(holes.len() + 1);
                let (mut next, mut pos) = (range.start, 0u64);
                for h in holes.iter().chain(std::iter::once(range.end)) {
                    if h > next {
                        out.push((next, pos, h - next));
                        pos += h - next;
                    }
                    next = h.saturating_add(1);
                }
                out
            }
            Self::RangeWithBitmap { range, bitmap } => {
                let mut pos = 0u64;
                bitmap
                    .runs()
                    .into_iter()
                    .map(|(s, l)| {
                        let run = (range.start + s, pos, l);
                        pos += l;
                        run
                    })
                    .collect()
            }
            Self::SortedArray(a) | Self::Array(a) => {
                let mut out: Vec<(u64, u64, u64)> = Vec::new();
                for (pos, v) in a.iter().enumerate() {
                    match out.last_mut() {
                        Some((first, _, len)) if first.checked_add(*len) == Some(v) => *len += 1,
                        _ => out.push((v, pos as u64, 1)),
                    }
                }
                out
            }
        }
    }

    /// Decodes and validates one stored segment.
    pub(crate) fn from_proto(p: &PbSegment) -> Result<Self, DecodeError> {
        let check_range = |start: u64, end: u64| {
            if start > end {
                Err(DecodeError::Rule(format!(
                    "range start {start} > end {end}"
                )))
            } else {
                Ok(start..end)
            }
        };
        match &p.segment {
            None => Err(DecodeError::rule("U64Segment has no segment")),
            Some(Segment::Range(r)) => Ok(Self::Range(check_range(r.start, r.end)?)),
            Some(Segment::RangeWithHoles(r)) => {
                let range = check_range(r.start, r.end)?;
                let holes = r
                    .holes
                    .as_ref()
                    .ok_or_else(|| DecodeError::rule("RangeWithHoles has no holes"))?;
                let holes = EncodedArray::from_proto(holes)?;
                if !holes.is_strictly_increasing() {
                    return Err(DecodeError::rule(
                        "RangeWithHoles holes are not strictly increasing",
                    ));
                }
                let inside = |v: Option<u64>| v.is_none_or(|v| range.contains(&v));
                if !inside(holes.get(0)) || !inside(holes.get(holes.len().wrapping_sub(1))) {
                    return Err(DecodeError::rule("RangeWithHoles hole outside its range"));
                }
                Ok(Self::RangeWithHoles { range, holes })
            }
            Some(Segment::RangeWithBitmap(r)) => {
                let range = check_range(r.start, r.end)?;
                let bitmap = Bitmap::from_bytes(&r.bitmap, range.end - range.start)?;
                Ok(Self::RangeWithBitmap { range, bitmap })
            }
            Some(Segment::SortedArray(a)) => {
                let a = EncodedArray::from_proto(a)?;
                if !a.is_strictly_increasing() {
                    return Err(DecodeError::rule("SortedArray is not strictly increasing"));
                }
                Ok(Self::SortedArray(a))
            }
            Some(Segment::Array(a)) => Ok(Self::Array(EncodedArray::from_proto(a)?)),
        }
    }

    pub(crate) fn to_proto(&self) -> PbSegment {
        let segment = match self {
            Self::Range(r) => Segment::Range(PbRange {
                start: r.start,
                end: r.end,
            }),
            Self::RangeWithHoles { range, holes } => Segment::RangeWithHoles(PbRangeWithHoles {
                start: range.start,
                end: range.end,
                holes: Some(holes.to_proto()),
            }),
            Self::RangeWithBitmap { range, bitmap } => {
                Segment::RangeWithBitmap(PbRangeWithBitmap {
                    start: range.start,
                    end: range.end,
                    bitmap: bitmap.to_bytes(),
                })
            }
            Self::SortedArray(a) => Segment::SortedArray(a.to_proto()),
            Self::Array(a) => Segment::Array(a.to_proto()),
        };
        PbSegment {
            segment: Some(segment),
        }
    }

    pub fn heap_bytes(&self) -> usize {
        match self {
            Self::Range(_) => 0,
            Self::RangeWithHoles { holes, .. } => holes.heap_bytes(),
            Self::RangeWithBitmap { bitmap, .. } => bitmap.heap_bytes(),
            Self::SortedArray(a) | Self::Array(a) => a.heap_bytes(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;

    fn check_model(seg: &U64Segment, values: &[u64]) {
        assert_eq!(seg.len(), values.len() as u64);
        assert_eq!(seg.iter().collect::<Vec<_>>(), values);
        for (i, v) in values.iter().enumerate() {
            assert_eq!(seg.get(i as u64), Some(*v), "get {i} of {seg:?}");
            assert_eq!(seg.position(*v), Some(i as u64));
        }
        assert_eq!(seg.get(values.len() as u64), None);
        let mut expanded = Vec::new();
        for (v, p, l) in seg.runs() {
            for k in 0..l {
                expanded.push((p + k, v + k));
            }
        }
        let want: Vec<(u64, u64)> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64, *v))
            .collect();
        assert_eq!(expanded, want);
        let back = U64Segment::from_proto(&seg.to_proto()).unwrap();
        assert_eq!(&back, seg);
    }

    #[test]
    fn selection_rule_and_model() {
        let cases: Vec<(Vec<u64>, &str)> = vec![
            (vec![], "range"),
            (vec![5, 6, 7], "range"),
            (vec![7, 5, 6], "array"),
            // span 100, 2 holes: RWH 32 < RWB 37 < SA 220
            (
                (0..100).filter(|v| *v != 10 && *v != 50).collect(),
                "range_with_holes",
            ),
            // span 1000, half missing: RWH 2024, RWB 149, SA 1024
            (
                (0..1000).filter(|v| v % 2 == 0).collect(),
                "range_with_bitmap",
            ),
            // sparse: SA wins
            (vec![1, 1000, 1_000_000], "sorted_array"),
            (vec![u64::MAX - 2, u64::MAX], "sorted_array"),
            (vec![3, u64::MAX], "sorted_array"),
        ];
        for (values, kind) in cases {
            let seg = U64Segment::from_values(&values);
            assert_eq!(seg.kind(), kind, "{values:?}");
            check_model(&seg, &values);
        }
    }

    #[test]
    fn ties_prefer_holes_then_bitmap() {
        // span 16, count 14: RWH 24+8=32, RWB 24+2=26 -> bitmap
        let v: Vec<u64> = (0..16).filter(|x| *x != 3 && *x != 9).collect();
        assert_eq!(U64Segment::from_values(&v).kind(), "range_with_bitmap");
        // span 9, count 8: RWH 28, RWB 26 -> bitmap; span 8 with 1 hole: RWH 28, RWB 25
        // tie RWH == RWB: 4h == ceil(span/8): span 32, h = 1 -> 28 vs 28 -> holes
        let v: Vec<u64> = (0..32).filter(|x| *x != 7).collect();
        assert_eq!(U64Segment::from_values(&v).kind(), "range_with_holes");
        // tie RWB == SA: ceil(span/8) == 2·count: span 64 (8 bytes), count 4 -> 32 vs 32, RWH 264
        let v = vec![0u64, 10, 20, 63];
        assert_eq!(U64Segment::from_values(&v).kind(), "range_with_bitmap");
    }

    #[test]
    fn decode_rejects_bad_segments() {
        let bad = [
            PbSegment { segment: None },
            PbSegment {
                segment: Some(Segment::Range(PbRange { start: 5, end: 4 })),
            },
            PbSegment {
                segment: Some(Segment::RangeWithHoles(PbRangeWithHoles {
                    start: 0,
                    end: 10,
                    holes: None,
                })),
            },
            PbSegment {
                segment: Some(Segment::RangeWithHoles(PbRangeWithHoles {
                    start: 0,
                    end: 10,
                    holes: Some(EncodedArray::from_values(&[3, 2]).to_proto()),
                })),
            },
            PbSegment {
                segment: Some(Segment::RangeWithHoles(PbRangeWithHoles {
                    start: 0,
                    end: 10,
                    holes: Some(EncodedArray::from_values(&[3, 10]).to_proto()),
                })),
            },
            PbSegment {
                segment: Some(Segment::RangeWithBitmap(PbRangeWithBitmap {
                    start: 0,
                    end: 10,
                    bitmap: vec![0xff, 0xff],
                })),
            },
            PbSegment {
                segment: Some(Segment::SortedArray(
                    EncodedArray::from_values(&[1, 1]).to_proto(),
                )),
            },
        ];
        for p in bad {
            assert!(U64Segment::from_proto(&p).is_err(), "{p:?}");
        }
    }
}
