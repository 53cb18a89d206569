//! The presence bitmap of a `RangeWithBitmap` segment, with constant-time rank and select.
//!
//! Bit order is LSB first: value `start + i` is present iff bit `i mod 8` of byte `i div 8` is
//! set (FORMAT-FACTS §7.2; the proto comment's MSB-first is wrong). The unused high bits of the
//! last byte must be zero.
//!
//! Rank is answered from a cumulative count per 512-bit block plus at most 8 word popcounts,
//! so a lookup never counts a long prefix (the cost Lance hit in #8930 on 75 KB bitmaps).
//! This is hand-written rather than a crate because the wire layout (LSB-first bytes, exact
//! length, zero padding) must round-trip byte for byte, and the rank directory is 1.6% overhead.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use crate::error::DecodeError;

const WORDS_PER_BLOCK: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bitmap {
    words: Vec<u64>,
    len: u64,
    /// Set bits before each block of 8 words; one more entry than there are blocks.
    block_ranks: Vec<u64>,
}

impl Bitmap {
    /// From stored bytes: exactly `ceil(len / 8)` bytes, zero padding bits.
    pub fn from_bytes(bytes: &[u8], len: u64) -> Result<Self, DecodeError> {
        let expected = len.div_ceil(8);
        if bytes.len() as u64 != expected {
            return Err(DecodeError::Rule(format!(
                "bitmap of {} bytes for {len} values, expected {expected}",
                bytes.len()
            )));
        }
        let tail_bits = len % 8;
        if tail_bits != 0 {
            if let Some(last) = bytes.last() {
                if last >> tail_bits != 0 {
                    return Err(DecodeError::rule(
                        "bitmap has padding bits set past its length",
                    ));
                }
            }
        }
        let words = bytes
            .chunks(8)
            .map(|c| {
                let mut w = [0u8; 8];
                for (dst, src) in w.iter_mut().zip(c) {
                    *dst = *src;
                }
                u64::from_le_bytes(w)
            })
            .collect();
        Ok(Self::with_words(words, len))
    }

    /// `len` bits, all set.
    pub fn all_ones(len: u64) -> Self {
        let n = len.div_ceil(64) as usize;
        let mut words = vec![u64::MAX; n];
        if !len.is_multiple_of(64) {
            if let Some(last) = words.last_mut() {
                *last = (1u64 << (len % 64)) - 1;
            }
        }
        Self::with_words(words, len)
    }

    fn with_words(words: Vec<u64>, len: u64) -> Self {
        let mut block_ranks = Vec::with_capacity(words.len() / WORDS_PER_BLOCK + 2);
        let mut total = 0u64;
        for block in words.chunks(WORDS_PER_BLOCK) {
            block_ranks.push(total);
            total += block.iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
        }
        block_ranks.push(total);
        Self {
            words,
            len,
            block_ranks,
        }
    }

    /// Clears bit `i` (used while building); call [`Bitmap::rebuild_ranks`] after a batch.
    pub(crate) fn clear_all(&mut self, positions: impl IntoIterator<Item = u64>) {
        for i in positions {
            if let Some(w) = self.words.get_mut((i / 64) as usize) {
                *w &= !(1u64 << (i % 64));
            }
        }
        let words = std::mem::take(&mut self.words);
        *self = Self::with_words(words, self.len);
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn count_ones(&self) -> u64 {
        self.block_ranks.last().copied().unwrap_or(0)
    }

    pub fn get(&self, i: u64) -> bool {
        i < self.len
            && self
                .words
                .get((i / 64) as usize)
                .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Set bits before position `i`.
    pub fn rank(&self, i: u64) -> u64 {
        let i = i.min(self.len);
        let word = (i / 64) as usize;
        let block = word / WORDS_PER_BLOCK;
        let mut r = self.block_ranks.get(block).copied().unwrap_or(0);
        for w in self.words.get(block * WORDS_PER_BLOCK..word).unwrap_or(&[]) {
            r += u64::from(w.count_ones());
        }
        if !i.is_multiple_of(64) {
            if let Some(w) = self.words.get(word) {
                r += u64::from((w & ((1u64 << (i % 64)) - 1)).count_ones());
            }
        }
        r
    }

    /// Position of the `k`-th set bit (0-based).
    pub fn select(&self, k: u64) -> Option<u64> {
        if k >= self.count_ones() {
            return None;
        }
        // last block whose starting rank is <= k
        let block = self
            .block_ranks
            .partition_point(|&r| r <= k)
            .checked_sub(1)?;
        let mut remaining = k - self.block_ranks.get(block)?;
        let first = block * WORDS_PER_BLOCK;
        for (wi, w) in self.words.get(first..)?.iter().enumerate() {
            let ones = u64::from(w.count_ones());
            if remaining < ones {
                let mut word = *w;
                for _ in 0..remaining {
                    word &= word - 1;
                }
                return Some((first + wi) as u64 * 64 + u64::from(word.trailing_zeros()));
            }
            remaining -= ones;
        }
        None
    }

    /// Positions of set bits, ascending.
    pub fn iter_ones(&self) -> impl Iterator<Item = u64> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut word = w;
            std::iter::from_fn(move || {
                if word == 0 {
                    return None;
                }
                let bit = word.trailing_zeros();
                word &= word - 1;
                Some(wi as u64 * 64 + u64::from(bit))
            })
        })
    }

    /// Maximal runs of set bits as `(start, len)`, in O(runs + words).
    pub fn runs(&self) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut open: Option<(u64, u64)> = None;
        for (wi, &w) in self.words.iter().enumerate() {
            let base = wi as u64 * 64;
            let mut pos = 0u32;
            while pos < 64 {
                let shifted = w >> pos;
                if shifted == 0 {
                    break;
                }
                let zeros = shifted.trailing_zeros();
                if zeros > 0 {
                    runs.extend(open.take());
                    pos += zeros;
                    continue;
                }
                let ones = shifted.trailing_ones();
                let start = base + u64::from(pos);
                open = match open {
                    Some((s, l)) if s + l == start => Some((s, l + u64::from(ones))),
                    other => {
                        runs.extend(other);
                        Some((start, u64::from(ones)))
                    }
                };
                pos += ones;
            }
            // A run continues into the next word only through bit 63.
            if w >> 63 == 0 {
                runs.extend(open.take());
            }
        }
        runs.extend(open);
        runs
    }

    /// The stored form: `ceil(len / 8)` little-endian bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let n = self.len.div_ceil(8) as usize;
        let mut out: Vec<u8> = self.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        out.truncate(n);
        out
    }

    pub fn heap_bytes(&self) -> usize {
        self.words.capacity() * 8 + self.block_ranks.capacity() * 8
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;

    fn naive(bits: &[bool]) -> Bitmap {
        let mut bytes = vec![0u8; bits.len().div_ceil(8)];
        for (i, b) in bits.iter().enumerate() {
            if *b {
                bytes[i / 8] |= 1 << (i % 8);
            }
        }
        Bitmap::from_bytes(&bytes, bits.len() as u64).unwrap()
    }

    #[test]
    fn lsb_first_rank_select_runs() {
        // byte 0b0000_0101: values 0 and 2 present
        let b = Bitmap::from_bytes(&[0b101], 3).unwrap();
        assert!(b.get(0) && !b.get(1) && b.get(2));
        assert_eq!(b.rank(2), 1);
        assert_eq!(b.select(1), Some(2));
        assert_eq!(b.runs(), vec![(0, 1), (2, 1)]);
        assert_eq!(b.to_bytes(), vec![0b101]);

        let bits: Vec<bool> = (0..5000)
            .map(|i| i % 7 != 3 && !(1000..1700).contains(&i))
            .collect();
        let b = naive(&bits);
        let ones: Vec<u64> = (0..5000u64).filter(|i| bits[*i as usize]).collect();
        assert_eq!(b.iter_ones().collect::<Vec<_>>(), ones);
        assert_eq!(b.count_ones(), ones.len() as u64);
        for (k, &pos) in ones.iter().enumerate() {
            assert_eq!(b.select(k as u64), Some(pos));
            assert_eq!(b.rank(pos), k as u64);
        }
        assert_eq!(b.select(ones.len() as u64), None);
        let mut expanded = Vec::new();
        for (s, l) in b.runs() {
            expanded.extend(s..s + l);
        }
        assert_eq!(expanded, ones);
    }

    #[test]
    fn all_ones_and_clear() {
        let mut b = Bitmap::all_ones(130);
        assert_eq!(b.count_ones(), 130);
        assert_eq!(b.runs(), vec![(0, 130)]);
        b.clear_all([0, 64, 129]);
        assert_eq!(b.count_ones(), 127);
        assert_eq!(b.runs(), vec![(1, 63), (65, 64)]);
        assert_eq!(b.to_bytes().len(), 17);
    }

    #[test]
    fn rejects_bad_length_and_padding() {
        assert!(Bitmap::from_bytes(&[0xff], 9).is_err());
        assert!(Bitmap::from_bytes(&[0xff, 0], 8).is_err());
        // bit 3 set beyond len 3
        assert!(Bitmap::from_bytes(&[0b1000], 3).is_err());
        assert!(Bitmap::from_bytes(&[], u64::MAX).is_err());
        assert!(Bitmap::from_bytes(&[], 0).is_ok());
    }
}
