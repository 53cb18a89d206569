//! Ascending destination offsets collected as runs of consecutive values, then turned into a
//! bitmap: a rewrite keeps the order of the rows each destination receives, so translating
//! every row of a source yields long runs (whole blocks become one range per destination).
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::ops::Range;

use roaring::RoaringBitmap;

/// Offsets of one destination: single values (from swept rows) and whole ranges (from blocks
/// or sources translated from counts), each list ascending.
#[derive(Debug, Default, Clone)]
pub(crate) struct Runs {
    singles: Vec<u32>,
    ranges: Vec<Range<u32>>,
}

impl Runs {
    /// Appends `x`, which must be above every single value so far.
    pub(crate) fn push(&mut self, x: u32) {
        self.singles.push(x);
    }

    /// Appends `r`, which must start at or above the end of the last range.
    pub(crate) fn push_range(&mut self, r: Range<u32>) {
        if r.is_empty() {
            return;
        }
        match self.ranges.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => self.ranges.push(r),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.singles.is_empty() && self.ranges.is_empty()
    }

    /// The offsets as a bitmap, or `None` if a list was not strictly ascending.
    pub(crate) fn into_bitmap(self) -> Option<RoaringBitmap> {
        if !self
            .ranges
            .windows(2)
            .all(|w| matches!(w, [a, b] if a.end <= b.start))
        {
            return None;
        }
        let mut b = RoaringBitmap::from_sorted_iter(self.singles).ok()?;
        for r in self.ranges {
            b.insert_range(r);
        }
        Some(b)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn runs_make_the_bitmap_of_their_values() {
        let mut r = Runs::default();
        for x in [1, 2, 3, 7, 9, 10] {
            r.push(x);
        }
        r.push_range(11..20);
        r.push_range(20..20);
        r.push(u32::MAX - 1);
        r.push_range(30..40);
        let want: RoaringBitmap = [1, 2, 3, 7, 9, 10]
            .into_iter()
            .chain(11..20)
            .chain(30..40)
            .chain([u32::MAX - 1])
            .collect();
        assert_eq!(r.clone().into_bitmap(), Some(want));
        let mut single_back = r.clone();
        single_back.push(5);
        assert_eq!(single_back.into_bitmap(), None);
        r.push_range(0..3);
        assert_eq!(r.into_bitmap(), None);
        let mut dense = Runs::default();
        dense.push_range(0..100_000);
        dense.push(100_001);
        assert_eq!(dense.into_bitmap().map(|b| b.len()), Some(100_001));
    }
}
