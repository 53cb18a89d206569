//! Ids a search gathers, as sorted runs (one per page, in the page's id order), turned into a
//! treemap once: a few runs are merged pairwise, many are radix sorted, and the treemap is built
//! one 32-bit bitmap at a time.
//!
//! Why bitmaps are built through roaring's portable serialization: appending sorted ids one by
//! one (`from_sorted_iter`) grows every array container from empty, a reallocation per doubling,
//! which made treemap construction two thirds of a hot range search. The roaring crate has no
//! bulk constructor for sorted input, but its portable format (RoaringFormatSpec, no-run
//! cookie) is a stable, specified layout it decodes with one exact allocation per container.
//! The ids are checked strictly ascending here once, so the bytes are decoded without roaring
//! checking every container again.

use roaring::{RoaringBitmap, RoaringTreemap};

/// Runs merged pairwise up to this many; past it, one radix sort of everything is cheaper.
const MERGE_RUNS: usize = 64;

/// Ids in ascending runs: `ids[starts[i]..starts[i + 1]]` is sorted.
#[derive(Debug, Default)]
pub struct SortedRuns {
    ids: Vec<u64>,
    starts: Vec<usize>,
}

impl SortedRuns {
    pub fn with_capacity(ids: usize) -> Self {
        Self {
            ids: Vec::with_capacity(ids),
            starts: Vec::new(),
        }
    }

    /// Appends one run. The caller yields ids in ascending order (a page walked by id).
    pub fn push_run(&mut self, run: impl IntoIterator<Item = u64>) {
        let start = self.ids.len();
        self.ids.extend(run);
        if self.ids.len() > start {
            self.starts.push(start);
        }
    }

    /// Every id, deduplicated, as a treemap.
    pub fn into_treemap(self) -> RoaringTreemap {
        let mut ids = self.ids;
        let mut starts = self.starts;
        if starts.len() > MERGE_RUNS {
            radix_sort(&mut ids);
        } else if starts.len() > 1 {
            ids = merge_runs(ids, &mut starts);
        }
        // The runs were sorted if the caller kept its promise, and distinct if no id sits on
        // two pages (a corrupt segment could repeat one): check rather than trust.
        if !is_strictly_ascending(&ids) {
            if !ids.is_sorted() {
                radix_sort(&mut ids);
            }
            ids.dedup();
        }
        treemap_from_strictly_ascending(&ids)
    }
}

fn is_strictly_ascending(ids: &[u64]) -> bool {
    ids.windows(2).all(|w| matches!(w, [a, b] if a < b))
}

/// Merges adjacent runs pairwise until one is left (bottom-up merge sort over known runs).
fn merge_runs(mut ids: Vec<u64>, starts: &mut Vec<usize>) -> Vec<u64> {
    let mut scratch = Vec::with_capacity(ids.len());
    while starts.len() > 1 {
        scratch.clear();
        let mut next = Vec::with_capacity(starts.len().div_ceil(2));
        let bounds: Vec<usize> = starts.iter().copied().chain([ids.len()]).collect();
        let mut i = 0;
        while i + 1 < bounds.len() {
            let lo = bounds.get(i).copied().unwrap_or(ids.len());
            let mid = bounds.get(i + 1).copied().unwrap_or(ids.len());
            let hi = bounds.get(i + 2).copied().unwrap_or(ids.len());
            next.push(scratch.len());
            merge_two(
                ids.get(lo..mid).unwrap_or_default(),
                ids.get(mid..hi).unwrap_or_default(),
                &mut scratch,
            );
            i += 2;
        }
        std::mem::swap(&mut ids, &mut scratch);
        *starts = next;
    }
    ids
}

/// Appends the merge of two ascending slices to `out`.
fn merge_two(a: &[u64], b: &[u64], out: &mut Vec<u64>) {
    out.reserve(a.len() + b.len());
    let (mut a, mut b) = (a, b);
    while let (Some((&x, ra)), Some((&y, rb))) = (a.split_first(), b.split_first()) {
        if x <= y {
            out.push(x);
            a = ra;
        } else {
            out.push(y);
            b = rb;
        }
    }
    out.extend_from_slice(a);
    out.extend_from_slice(b);
}

/// A treemap of strictly ascending ids, one bitmap per high 32 bits.
fn treemap_from_strictly_ascending(ids: &[u64]) -> RoaringTreemap {
    RoaringTreemap::from_bitmaps(ids.chunk_by(|a, b| a >> 32 == b >> 32).filter_map(|group| {
        let high = (group.first()? >> 32) as u32;
        Some((high, bitmap_from_strictly_ascending(group)))
    }))
}

/// Cookie of the portable format without run containers.
const SERIAL_COOKIE_NO_RUNCONTAINER: u32 = 12346;
/// Containers with more values than this are bitmaps in the portable format.
const ARRAY_LIMIT: usize = 4096;

/// A bitmap of the low 32 bits of strictly ascending ids that share their high 32 bits (the
/// caller has checked the order, so the bytes are decoded without checking it again).
fn bitmap_from_strictly_ascending(ids: &[u64]) -> RoaringBitmap {
    let containers: Vec<&[u64]> = ids.chunk_by(|a, b| (a >> 16) == (b >> 16)).collect();
    let data_bytes: usize = containers
        .iter()
        .map(|c| {
            if c.len() > ARRAY_LIMIT {
                8192
            } else {
                2 * c.len()
            }
        })
        .sum();
    let header = 8 + 8 * containers.len();
    let mut buf = Vec::with_capacity(header + data_bytes);
    buf.extend_from_slice(&SERIAL_COOKIE_NO_RUNCONTAINER.to_le_bytes());
    buf.extend_from_slice(&(containers.len() as u32).to_le_bytes());
    for c in &containers {
        let key = c.first().map_or(0, |id| (id >> 16) as u16);
        buf.extend_from_slice(&key.to_le_bytes());
        buf.extend_from_slice(&((c.len() - 1) as u16).to_le_bytes());
    }
    // Offsets of each container's data from the start (read past by the decoder, written
    // correctly anyway).
    let mut offset = header;
    for c in &containers {
        buf.extend_from_slice(&(offset as u32).to_le_bytes());
        offset += if c.len() > ARRAY_LIMIT {
            8192
        } else {
            2 * c.len()
        };
    }
    for c in &containers {
        if c.len() > ARRAY_LIMIT {
            let mut words = [0u64; 1024];
            for id in c.iter() {
                let low = *id as u16;
                if let Some(w) = words.get_mut(usize::from(low >> 6)) {
                    *w |= 1 << (low & 63);
                }
            }
            words
                .iter()
                .for_each(|w| buf.extend_from_slice(&w.to_le_bytes()));
        } else {
            buf.extend(c.iter().flat_map(|id| (*id as u16).to_le_bytes()));
        }
    }
    RoaringBitmap::deserialize_unchecked_from(buf.as_slice()).unwrap_or_else(|_| {
        // unreachable: the buffer holds exactly what the header declares
        ids.iter().map(|id| *id as u32).collect()
    })
}

/// LSD radix sort on 12-bit digits, running only the passes the ids' spread needs (ids of a
/// few fragments' pages usually differ in their low 24–36 bits: 2–3 passes). Comparison sort
/// for short inputs.
///
/// Indexing is in bounds by construction: a digit is masked to `BUCKETS - 1` and `counts`
/// holds `BUCKETS + 1` entries; after the prefix sum, `counts[b]` stays below `ids.len()`
/// (the length of `scratch`) because exactly that many values are placed. The input is in
/// memory (page ids), not stored bytes.
#[allow(clippy::indexing_slicing)]
fn radix_sort(ids: &mut Vec<u64>) {
    const BITS: u32 = 12;
    const BUCKETS: usize = 1 << BITS;
    if ids.len() < 512 {
        ids.sort_unstable();
        return;
    }
    let (Some(&min), Some(&max)) = (ids.iter().min(), ids.iter().max()) else {
        return;
    };
    let spread_bits = 64 - (max - min).leading_zeros();
    let passes = spread_bits.div_ceil(BITS);
    let mut scratch = vec![0u64; ids.len()];
    let mut src = std::mem::take(ids);
    let mut counts = vec![0usize; BUCKETS + 1];
    for pass in 0..passes {
        let shift = pass * BITS;
        counts.iter_mut().for_each(|c| *c = 0);
        for v in &src {
            counts[(((v - min) >> shift) as usize & (BUCKETS - 1)) + 1] += 1;
        }
        for i in 0..BUCKETS {
            counts[i + 1] += counts[i];
        }
        for v in &src {
            let b = ((v - min) >> shift) as usize & (BUCKETS - 1);
            scratch[counts[b]] = *v;
            counts[b] += 1;
        }
        std::mem::swap(&mut src, &mut scratch);
    }
    *ids = src;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn radix_sort_sorts() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for n in [0usize, 1, 255, 256, 5000] {
            for spread in [1u64 << 8, 1 << 20, 1 << 40, u64::MAX] {
                let mut v: Vec<u64> = (0..n)
                    .map(|_| (xorshift(&mut state) % spread).wrapping_add(1 << 33))
                    .collect();
                let mut want = v.clone();
                want.sort_unstable();
                radix_sort(&mut v);
                assert_eq!(v, want, "n {n} spread {spread}");
            }
        }
    }

    #[test]
    fn runs_become_the_set_of_their_ids() {
        let mut state = 0x1234_5678_9abc_def1u64;
        for runs in [0usize, 1, 2, 3, 7, 64, 65, 200] {
            let mut all = Vec::new();
            let mut gathered = SortedRuns::default();
            for _ in 0..runs {
                let len = (xorshift(&mut state) % 300) as usize;
                let mut run: Vec<u64> =
                    (0..len).map(|_| xorshift(&mut state) % (1 << 34)).collect();
                run.sort_unstable();
                all.extend_from_slice(&run);
                gathered.push_run(run);
            }
            let want: RoaringTreemap = all.iter().copied().collect();
            assert_eq!(gathered.into_treemap(), want, "{runs} runs");
        }
    }

    #[test]
    fn bitmaps_from_sorted_ids_match_roaring() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        // sparse, dense (bitmap containers), single-id containers, full containers
        for (n, spread) in [
            (0u64, 1u64),
            (1, 1),
            (3000, 1 << 32),
            (60_000, 70_000),
            (65_536, 65_536),
        ] {
            let mut ids: Vec<u64> = (0..n)
                .map(|i| {
                    if spread == n {
                        i
                    } else {
                        xorshift(&mut state) % spread
                    }
                })
                .map(|low| (7 << 32) | low)
                .collect();
            ids.sort_unstable();
            ids.dedup();
            let want: RoaringTreemap = ids.iter().copied().collect();
            assert_eq!(
                treemap_from_strictly_ascending(&ids),
                want,
                "n {n} spread {spread}"
            );
        }
    }

    #[test]
    fn unsorted_runs_still_give_the_set() {
        let mut gathered = SortedRuns::default();
        gathered.push_run([5, 1, 1 << 40, 3]);
        gathered.push_run([2, 2]);
        let want: RoaringTreemap = [1, 2, 3, 5, 1 << 40].into_iter().collect();
        assert_eq!(gathered.into_treemap(), want);
    }
}
