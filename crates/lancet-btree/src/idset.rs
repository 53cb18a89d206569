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

    /// Appends, as one run, the ids whose `keep` is true, in the order given (ascending, as
    /// for [`Self::push_run`]). Branch-free: every id is written and the end advances by
    /// `keep`, so an unpredictable selection (a page's positions in id order tested against
    /// a value range) costs no mispredictions.
    pub fn push_run_where(&mut self, candidates: impl ExactSizeIterator<Item = (u64, bool)>) {
        let start = self.ids.len();
        self.ids.resize(start + candidates.len(), 0);
        let mut end = start;
        for (id, keep) in candidates {
            if let Some(slot) = self.ids.get_mut(end) {
                *slot = id;
            }
            end += usize::from(keep);
        }
        self.ids.truncate(end);
        if end > start {
            self.starts.push(start);
        }
    }

    /// Every id, deduplicated, as a treemap.
    pub fn into_treemap(self) -> RoaringTreemap {
        let Self {
            mut ids,
            mut starts,
        } = self;
        if starts.len() > MERGE_RUNS {
            radix_sort(&mut ids);
        } else if starts.len() > 1 {
            merge_runs(&mut ids, &mut starts);
        }
        // The runs were sorted if the caller kept its promise, and distinct if no id sits on
        // two pages (a corrupt segment could repeat one): checked rather than trusted.
        Containers::of_strictly_ascending(&ids)
            .unwrap_or_else(|| {
                ids.sort_unstable();
                ids.dedup();
                Containers::of_strictly_ascending(&ids).unwrap_or_else(Containers::empty)
            })
            .into_treemap()
    }
}

/// Merges adjacent runs pairwise until one is left (bottom-up merge sort over known runs).
fn merge_runs(ids: &mut Vec<u64>, starts: &mut Vec<usize>) {
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
        std::mem::swap(ids, &mut scratch);
        *starts = next;
    }
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

/// Roaring containers of strictly ascending ids: each container's key (the ids' high 48 bits)
/// and length, and every id's low 16 bits in one buffer.
struct Containers {
    keys: Vec<(u64, usize)>,
    lows: Vec<u16>,
}

/// The length of the prefix of `ids` whose elements satisfy `pred`, for a `pred` true on a
/// non-empty prefix and false after it: doubling steps, then a binary search in the last.
fn gallop(ids: &[u64], pred: impl Fn(u64) -> bool) -> usize {
    let mut hi = 1;
    while hi < ids.len() && ids.get(hi).is_some_and(|&id| pred(id)) {
        hi *= 2;
    }
    let lo = hi / 2;
    let hi = hi.min(ids.len());
    lo + ids
        .get(lo..hi)
        .map_or(0, |window| window.partition_point(|&id| pred(id)))
}

/// Cookie of the portable format without run containers.
const SERIAL_COOKIE_NO_RUNCONTAINER: u32 = 12346;
/// Containers with more values than this are bitmaps in the portable format.
const ARRAY_LIMIT: usize = 4096;

impl Containers {
    fn empty() -> Self {
        Self {
            keys: Vec::new(),
            lows: Vec::new(),
        }
    }

    /// The containers of `ids`; `None` unless they are strictly ascending.
    ///
    /// Three straight passes rather than one loop doing all three: the order check and the
    /// low bits vectorize, and container boundaries are found by galloping search (a
    /// container holds tens to thousands of ids), so no pass branches per id.
    fn of_strictly_ascending(ids: &[u64]) -> Option<Self> {
        let ascending = match (ids.get(..ids.len().saturating_sub(1)), ids.get(1..)) {
            (Some(head), Some(tail)) => head.iter().zip(tail).fold(true, |ok, (a, b)| ok & (a < b)),
            _ => true,
        };
        if !ascending {
            return None;
        }
        let lows = ids.iter().map(|&id| id as u16).collect();
        let mut keys = Vec::new();
        let mut rest = ids;
        while let Some(&first) = rest.first() {
            let key = first >> 16;
            let n = gallop(rest, |id| id >> 16 == key);
            keys.push((key, n));
            rest = rest.get(n..).unwrap_or_default();
        }
        Some(Self { keys, lows })
    }

    fn into_treemap(self) -> RoaringTreemap {
        let mut lows = self.lows.as_slice();
        let bitmaps: Vec<(u32, RoaringBitmap)> = self
            .keys
            .chunk_by(|a, b| a.0 >> 16 == b.0 >> 16)
            .map(|group| {
                let count: usize = group.iter().map(|(_, n)| n).sum();
                let (these, rest) = lows.split_at(count.min(lows.len()));
                lows = rest;
                let high = group.first().map_or(0, |(key, _)| (key >> 16) as u32);
                (high, bitmap(group, these))
            })
            .collect();
        RoaringTreemap::from_bitmaps(bitmaps)
    }
}

/// The bitmap of one 32-bit group: its containers' keys and lengths, and their low bits in
/// ascending order (checked strictly ascending by [`Containers::of_strictly_ascending`]).
fn bitmap(containers: &[(u64, usize)], lows: &[u16]) -> RoaringBitmap {
    let size = |n: usize| if n > ARRAY_LIMIT { 8192 } else { 2 * n };
    let header = 8 + 8 * containers.len();
    let data: usize = containers.iter().map(|&(_, n)| size(n)).sum();
    let mut buf = Vec::with_capacity(header + data);
    buf.extend_from_slice(&SERIAL_COOKIE_NO_RUNCONTAINER.to_le_bytes());
    buf.extend_from_slice(&(containers.len() as u32).to_le_bytes());
    for &(key, n) in containers {
        buf.extend_from_slice(&(key as u16).to_le_bytes());
        buf.extend_from_slice(&(n.saturating_sub(1) as u16).to_le_bytes());
    }
    // Offsets of each container's data from the start (read past by the decoder, written
    // correctly anyway).
    let mut offset = header;
    for &(_, n) in containers {
        buf.extend_from_slice(&(offset as u32).to_le_bytes());
        offset += size(n);
    }
    let mut rest = lows;
    for &(_, n) in containers {
        let (these, after) = rest.split_at(n.min(rest.len()));
        rest = after;
        if n > ARRAY_LIMIT {
            let mut words = [0u64; 1024];
            for &low in these {
                if let Some(w) = words.get_mut(usize::from(low >> 6)) {
                    *w |= 1 << (low & 63);
                }
            }
            words
                .iter()
                .for_each(|w| buf.extend_from_slice(&w.to_le_bytes()));
        } else {
            let at = buf.len();
            buf.resize(at + 2 * these.len(), 0);
            if let Some(dst) = buf.get_mut(at..) {
                for (d, low) in dst.chunks_exact_mut(2).zip(these) {
                    d.copy_from_slice(&low.to_le_bytes());
                }
            }
        }
    }
    RoaringBitmap::deserialize_unchecked_from(buf.as_slice()).unwrap_or_else(|_| {
        // unreachable: the buffer holds exactly what the header declares
        let mut rest = lows;
        let mut out = RoaringBitmap::new();
        for &(key, n) in containers {
            let (these, after) = rest.split_at(n.min(rest.len()));
            rest = after;
            let high = (key as u32) << 16;
            out.extend(these.iter().map(|&low| high | u32::from(low)));
        }
        out
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
                Containers::of_strictly_ascending(&ids)
                    .map(Containers::into_treemap)
                    .unwrap_or_default(),
                want,
                "n {n} spread {spread}"
            );
        }
    }

    #[test]
    fn runs_pushed_where_keep_only_the_kept_ids() {
        let mut state = 0x0dd5_eed5_1234_5678u64;
        let mut gathered = SortedRuns::default();
        let mut want = RoaringTreemap::new();
        for _ in 0..5 {
            let candidates: Vec<(u64, bool)> = (0..700u64)
                .map(|i| (i * 97 + (3 << 32), xorshift(&mut state).is_multiple_of(3)))
                .collect();
            want.extend(candidates.iter().filter(|c| c.1).map(|c| c.0));
            gathered.push_run_where(candidates.into_iter());
        }
        gathered.push_run_where([(1, false), (2, false)].into_iter());
        assert_eq!(gathered.starts.len(), 5, "an empty selection adds no run");
        assert_eq!(gathered.into_treemap(), want);
    }

    #[test]
    fn gallop_finds_every_prefix_length() {
        let ids: Vec<u64> = (0..300).collect();
        for n in 1..=300u64 {
            assert_eq!(gallop(&ids, |id| id < n), n as usize, "prefix {n}");
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
