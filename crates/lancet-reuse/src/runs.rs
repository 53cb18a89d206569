//! Ascending destination offsets collected as runs of consecutive values, then turned into a
//! bitmap: a rewrite keeps the order of the rows each destination receives, so translating
//! every row of a source yields long runs (whole blocks become one range per destination).
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::ops::Range;

use roaring::RoaringBitmap;

/// Offsets of one destination, ascending, as half-open runs.
#[derive(Debug, Default, Clone)]
pub(crate) struct Runs {
    runs: Vec<Range<u32>>,
    values: u64,
}

impl Runs {
    /// Appends `x`, which must be above every value so far.
    pub(crate) fn push(&mut self, x: u32) {
        self.push_range(x..x.saturating_add(1));
    }

    /// Appends `r`, which must start at or above the end of the last run.
    pub(crate) fn push_range(&mut self, r: Range<u32>) {
        if r.is_empty() {
            return;
        }
        self.values += u64::from(r.end - r.start);
        match self.runs.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => self.runs.push(r),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The offsets as a bitmap, or `None` if they were not ascending.
    pub(crate) fn into_bitmap(self) -> Option<RoaringBitmap> {
        if !self
            .runs
            .windows(2)
            .all(|w| matches!(w, [a, b] if a.end <= b.start))
        {
            return None;
        }
        // Mostly single values: appending them is cheaper than a range insert each.
        if self.runs.len() as u64 * 2 > self.values {
            return RoaringBitmap::from_sorted_iter(self.runs.into_iter().flatten()).ok();
        }
        let mut b = RoaringBitmap::new();
        for r in self.runs {
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
        let want: RoaringBitmap = [1, 2, 3, 7, 9, 10]
            .into_iter()
            .chain(11..20)
            .chain([u32::MAX - 1])
            .collect();
        assert_eq!(r.clone().into_bitmap(), Some(want));
        r.push(5);
        assert_eq!(r.into_bitmap(), None);
        let mut dense = Runs::default();
        dense.push_range(0..100_000);
        dense.push(100_001);
        assert_eq!(dense.into_bitmap().map(|b| b.len()), Some(100_001));
    }
}
