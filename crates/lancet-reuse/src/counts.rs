//! The LSPC counts buffer of a stable-partition row map: a 28-byte header and a dense grid of
//! cumulative u32 counts, one row per block of source rows, one column per destination.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

/// Magic of the counts buffer.
pub const MAGIC: &[u8; 4] = b"LSPC";
/// Rows per block the writer uses.
pub const DEFAULT_BLOCK_ROWS: u32 = 65_536;

/// The most destinations a stable partition has: labels are u16, so 65,536 (FRI spec:
/// `1..=65536`; Lance 14.0.2's reader stops at 65,535).
pub const MAX_DESTINATIONS: usize = 1 << 16;
const HEADER: usize = 28;

/// A validated counts matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    pub num_destinations: u32,
    pub block_rows: u32,
    pub total_rows: u64,
    /// `cells[b * m + d]` = rows labelled `d` in blocks `0..=b`.
    cells: Vec<u32>,
}

impl Counts {
    /// Decodes and validates: magic, version 1, representation 0, 1..=65536 destinations,
    /// positive block size, exact length `28 + 4·blocks·m`, counts never decreasing, a block
    /// adding at most its own length.
    pub fn decode(bytes: &[u8]) -> Result<Self, lancet_proto::Malformed> {
        Self::decode_inner(bytes).map_err(lancet_proto::Malformed::from)
    }

    fn decode_inner(bytes: &[u8]) -> Result<Self, String> {
        let u32_at = |at: usize| lancet_proto::le::u32_at(bytes, at);
        if bytes.get(0..4) != Some(MAGIC.as_slice()) {
            return Err("counts buffer has no LSPC magic".into());
        }
        let version = u32_at(4).ok_or("header truncated")?;
        if version != 1 {
            return Err(format!("counts buffer version {version} is not supported"));
        }
        let repr = u32_at(8).ok_or("header truncated")?;
        if repr != 0 {
            return Err(format!("counts representation {repr} is not supported"));
        }
        let m = u32_at(12).ok_or("header truncated")?;
        if !(1..=65_536).contains(&m) {
            return Err(format!("{m} destinations (1..=65536 allowed)"));
        }
        let block_rows = u32_at(16).ok_or("header truncated")?;
        if block_rows == 0 {
            return Err("block_rows is 0".into());
        }
        let total_rows = bytes
            .get(20..28)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or("header truncated")?;
        let blocks = total_rows.div_ceil(u64::from(block_rows));
        let expected = blocks
            .checked_mul(u64::from(m))
            .and_then(|c| c.checked_mul(4))
            .and_then(|c| c.checked_add(HEADER as u64))
            .ok_or("counts grid size overflows")?;
        if bytes.len() as u64 != expected {
            return Err(format!(
                "counts buffer is {} bytes, header implies {expected}",
                bytes.len()
            ));
        }
        let cells: Vec<u32> = bytes
            .get(HEADER..)
            .unwrap_or_default()
            .chunks_exact(4)
            .filter_map(|c| c.try_into().ok().map(u32::from_le_bytes))
            .collect();
        let counts = Self {
            num_destinations: m,
            block_rows,
            total_rows,
            cells,
        };
        counts.check_growth()?;
        Ok(counts)
    }

    fn check_growth(&self) -> Result<(), String> {
        let m = self.num_destinations as usize;
        for b in 0..self.blocks() {
            let len = self.block_len(b);
            let mut added = 0u64;
            for d in 0..m {
                let now = self.at(b, d);
                let before = if b == 0 { 0 } else { self.at(b - 1, d) };
                if now < before {
                    return Err(format!("count of destination {d} decreases at block {b}"));
                }
                added += u64::from(now - before);
            }
            if added > len {
                return Err(format!("block {b} adds {added} rows but holds {len}"));
            }
        }
        Ok(())
    }

    pub fn blocks(&self) -> u64 {
        self.total_rows.div_ceil(u64::from(self.block_rows))
    }

    /// Rows of block `b` (the last one may be short).
    pub fn block_len(&self, b: u64) -> u64 {
        let start = b * u64::from(self.block_rows);
        u64::from(self.block_rows).min(self.total_rows.saturating_sub(start))
    }

    /// Cumulative count of destination `d` through block `b`.
    pub fn at(&self, b: u64, d: usize) -> u32 {
        let i = b as usize * self.num_destinations as usize + d;
        self.cells.get(i).copied().unwrap_or(0)
    }

    /// Cumulative count of `d` before block `b` (0 before the first).
    pub fn before(&self, b: u64, d: usize) -> u32 {
        if b == 0 {
            0
        } else {
            self.at(b - 1, d)
        }
    }

    /// Final count of each destination.
    pub fn totals(&self) -> Vec<u64> {
        let last = self.blocks();
        (0..self.num_destinations as usize)
            .map(|d| {
                if last == 0 {
                    0
                } else {
                    u64::from(self.at(last - 1, d))
                }
            })
            .collect()
    }

    /// Encodes a matrix from per-block label counts (not cumulative): `per_block[b][d]`.
    pub fn encode(
        num_destinations: u32,
        block_rows: u32,
        total_rows: u64,
        per_block: &[Vec<u32>],
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + per_block.len() * num_destinations as usize * 4);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&num_destinations.to_le_bytes());
        out.extend_from_slice(&block_rows.to_le_bytes());
        out.extend_from_slice(&total_rows.to_le_bytes());
        let mut running = vec![0u32; num_destinations as usize];
        for block in per_block {
            for (r, c) in running.iter_mut().zip(block) {
                *r += c;
            }
            for r in &running {
                out.extend_from_slice(&r.to_le_bytes());
            }
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn decode_and_every_rule() {
        let good = Counts::encode(2, 4, 10, &[vec![2, 1], vec![0, 4], vec![1, 1]]);
        let c = Counts::decode(&good).unwrap();
        assert_eq!(c.blocks(), 3);
        assert_eq!(c.block_len(2), 2);
        assert_eq!(c.totals(), vec![3, 6]);
        assert_eq!(c.before(1, 1), 1);
        let patch = |at: usize, v: u32| {
            let mut b = good.clone();
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
            b
        };
        let mut bad_magic = good.clone();
        bad_magic[0] = b'X';
        assert!(Counts::decode(&bad_magic)
            .unwrap_err()
            .to_string()
            .contains("magic"));
        assert!(Counts::decode(&patch(4, 2))
            .unwrap_err()
            .to_string()
            .contains("version"));
        assert!(Counts::decode(&patch(8, 1))
            .unwrap_err()
            .to_string()
            .contains("representation"));
        assert!(Counts::decode(&patch(12, 0))
            .unwrap_err()
            .to_string()
            .contains("destinations"));
        assert!(Counts::decode(&patch(16, 0))
            .unwrap_err()
            .to_string()
            .contains("block_rows"));
        assert!(Counts::decode(&good[..good.len() - 4])
            .unwrap_err()
            .to_string()
            .contains("implies"));
        // a count decreasing: block 1 destination 0 from 2 to 1
        assert!(Counts::decode(&patch(28 + 8, 1))
            .unwrap_err()
            .to_string()
            .contains("decreases"));
        // block 1 adding 5 rows to a 4-row block
        assert!(Counts::decode(&patch(28 + 12, 6))
            .unwrap_err()
            .to_string()
            .contains("adds"));
        let empty = Counts::encode(3, 8, 0, &[]);
        assert_eq!(Counts::decode(&empty).unwrap().totals(), vec![0, 0, 0]);
    }
}
