//! `EncodedU64Array`: a base plus packed little-endian u16 or u32 offsets, or raw u64 values.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use lancet_proto::table::encoded_u64_array::{Array as PbArray, U16Array, U32Array, U64Array};
use lancet_proto::table::EncodedU64Array;

use crate::error::DecodeError;

/// A list of u64 values as stored. Decoding keeps the stored width, so re-encoding gives the
/// stored bytes back even where a narrower width would fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodedArray {
    U16 { base: u64, offsets: Vec<u16> },
    U32 { base: u64, offsets: Vec<u32> },
    U64(Vec<u64>),
}

impl EncodedArray {
    /// Lance's writer rule: empty → `U64([])`; `base = min`; u16 offsets when
    /// `max − min ≤ 0xFFFF`, u32 when `≤ 0xFFFF_FFFF`, otherwise raw u64.
    pub fn from_values(values: &[u64]) -> Self {
        let (Some(min), Some(max)) = (values.iter().min(), values.iter().max()) else {
            return Self::U64(Vec::new());
        };
        let (min, span) = (*min, max - min);
        if span <= u64::from(u16::MAX) {
            Self::U16 {
                base: min,
                offsets: values.iter().map(|v| (v - min) as u16).collect(),
            }
        } else if span <= u64::from(u32::MAX) {
            Self::U32 {
                base: min,
                offsets: values.iter().map(|v| (v - min) as u32).collect(),
            }
        } else {
            Self::U64(values.to_vec())
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Self::U16 { offsets, .. } => offsets.len(),
            Self::U32 { offsets, .. } => offsets.len(),
            Self::U64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i`. Decoding checked that `base + offset` never overflows.
    pub fn get(&self, i: usize) -> Option<u64> {
        match self {
            Self::U16 { base, offsets } => offsets.get(i).map(|o| base + u64::from(*o)),
            Self::U32 { base, offsets } => offsets.get(i).map(|o| base + u64::from(*o)),
            Self::U64(v) => v.get(i).copied(),
        }
    }

    pub fn iter(&self) -> Box<dyn Iterator<Item = u64> + '_> {
        match self {
            Self::U16 { base, offsets } => {
                Box::new(offsets.iter().map(move |o| base + u64::from(*o)))
            }
            Self::U32 { base, offsets } => {
                Box::new(offsets.iter().map(move |o| base + u64::from(*o)))
            }
            Self::U64(v) => Box::new(v.iter().copied()),
        }
    }

    /// Index of `value` in a strictly increasing array.
    pub fn binary_search(&self, value: u64) -> Result<usize, usize> {
        match self {
            Self::U16 { base, offsets } => match value.checked_sub(*base) {
                None => Err(0),
                Some(d) if d > u64::from(u16::MAX) => Err(offsets.len()),
                Some(d) => offsets.binary_search(&(d as u16)),
            },
            Self::U32 { base, offsets } => match value.checked_sub(*base) {
                None => Err(0),
                Some(d) if d > u64::from(u32::MAX) => Err(offsets.len()),
                Some(d) => offsets.binary_search(&(d as u32)),
            },
            Self::U64(v) => v.binary_search(&value),
        }
    }

    /// Number of values `< value` in a strictly increasing array.
    pub fn count_below(&self, value: u64) -> usize {
        match self.binary_search(value) {
            Ok(i) | Err(i) => i,
        }
    }

    pub fn is_strictly_increasing(&self) -> bool {
        fn check<T: Ord>(v: &[T]) -> bool {
            v.windows(2).all(|w| matches!(w, [a, b] if a < b))
        }
        match self {
            Self::U16 { offsets, .. } => check(offsets),
            Self::U32 { offsets, .. } => check(offsets),
            Self::U64(v) => check(v),
        }
    }

    pub(crate) fn from_proto(p: &EncodedU64Array) -> Result<Self, DecodeError> {
        match &p.array {
            None => Err(DecodeError::rule("EncodedU64Array has no array")),
            Some(PbArray::U16Array(a)) => {
                let offsets = unpack::<2, u16>(&a.offsets, u16::from_le_bytes)?;
                check_base(a.base, offsets.iter().max().map(|m| u64::from(*m)))?;
                Ok(Self::U16 {
                    base: a.base,
                    offsets,
                })
            }
            Some(PbArray::U32Array(a)) => {
                let offsets = unpack::<4, u32>(&a.offsets, u32::from_le_bytes)?;
                check_base(a.base, offsets.iter().max().map(|m| u64::from(*m)))?;
                Ok(Self::U32 {
                    base: a.base,
                    offsets,
                })
            }
            Some(PbArray::U64Array(a)) => {
                Ok(Self::U64(unpack::<8, u64>(&a.values, u64::from_le_bytes)?))
            }
        }
    }

    pub(crate) fn to_proto(&self) -> EncodedU64Array {
        let array = match self {
            Self::U16 { base, offsets } => PbArray::U16Array(U16Array {
                base: *base,
                offsets: offsets.iter().flat_map(|o| o.to_le_bytes()).collect(),
            }),
            Self::U32 { base, offsets } => PbArray::U32Array(U32Array {
                base: *base,
                offsets: offsets.iter().flat_map(|o| o.to_le_bytes()).collect(),
            }),
            Self::U64(v) => PbArray::U64Array(U64Array {
                values: v.iter().flat_map(|o| o.to_le_bytes()).collect(),
            }),
        };
        EncodedU64Array { array: Some(array) }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Self::U16 { offsets, .. } => offsets.capacity() * 2,
            Self::U32 { offsets, .. } => offsets.capacity() * 4,
            Self::U64(v) => v.capacity() * 8,
        }
    }
}

fn check_base(base: u64, max_offset: Option<u64>) -> Result<(), DecodeError> {
    match max_offset {
        Some(m) if base.checked_add(m).is_none() => Err(DecodeError::rule(
            "EncodedU64Array base + offset overflows u64",
        )),
        _ => Ok(()),
    }
}

/// Packed little-endian integers; the byte length must be a multiple of the width. The output
/// is bounded by the input's length.
fn unpack<const W: usize, T>(bytes: &[u8], from: fn([u8; W]) -> T) -> Result<Vec<T>, DecodeError> {
    if !bytes.len().is_multiple_of(W) {
        return Err(DecodeError::Rule(format!(
            "packed array of {} bytes is not a multiple of {W}",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(W)
        .filter_map(|c| c.try_into().ok().map(from))
        .collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn width_rule() {
        assert_eq!(EncodedArray::from_values(&[]), EncodedArray::U64(vec![]));
        assert!(matches!(
            EncodedArray::from_values(&[5, 5 + 0xFFFF]),
            EncodedArray::U16 { base: 5, .. }
        ));
        assert!(matches!(
            EncodedArray::from_values(&[5, 5 + 0x10000]),
            EncodedArray::U32 { .. }
        ));
        assert!(matches!(
            EncodedArray::from_values(&[0, 1 << 32]),
            EncodedArray::U64(_)
        ));
        let a = EncodedArray::from_values(&[9, 3, 7]);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![9, 3, 7]);
        assert_eq!(EncodedArray::from_proto(&a.to_proto()).unwrap(), a);
    }

    #[test]
    fn rejects_bad_lengths_and_overflow() {
        let bad = EncodedU64Array {
            array: Some(PbArray::U16Array(U16Array {
                base: 0,
                offsets: vec![1, 2, 3],
            })),
        };
        assert!(EncodedArray::from_proto(&bad).is_err());
        let overflow = EncodedU64Array {
            array: Some(PbArray::U16Array(U16Array {
                base: u64::MAX,
                offsets: vec![1, 0],
            })),
        };
        assert!(EncodedArray::from_proto(&overflow).is_err());
        let bad64 = EncodedU64Array {
            array: Some(PbArray::U64Array(U64Array { values: vec![0; 7] })),
        };
        assert!(EncodedArray::from_proto(&bad64).is_err());
        assert!(EncodedArray::from_proto(&EncodedU64Array { array: None }).is_err());
    }

    #[test]
    fn search_in_sorted_arrays() {
        for a in [
            EncodedArray::from_values(&[10, 20, 30]),
            EncodedArray::U64(vec![10, 20, 30]),
            EncodedArray::U32 {
                base: 10,
                offsets: vec![0, 10, 20],
            },
        ] {
            assert_eq!(a.binary_search(20), Ok(1));
            assert_eq!(a.binary_search(5), Err(0));
            assert_eq!(a.binary_search(25), Err(2));
            assert_eq!(a.binary_search(u64::MAX), Err(3));
            assert_eq!(a.count_below(31), 3);
        }
    }
}
