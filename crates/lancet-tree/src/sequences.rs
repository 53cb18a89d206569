//! Sets of mutation sequences, for the uniqueness check every operation runs over the buffers
//! it decodes (thousands of inserts per resolve on a busy tree).
//!
//! A `HashSet<u64>` with a multiplicative hash whose odd multiplier is drawn once per process:
//! about four times cheaper than SipHash here, and stored sequences cannot be chosen to
//! collide without knowing the multiplier.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// Hashes one `u64` by multiplying with a per-process odd constant.
#[derive(Debug, Clone, Copy, Default)]
pub struct SequenceHasher {
    state: u64,
}

impl Hasher for SequenceHasher {
    fn finish(&self) -> u64 {
        self.state
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.state = (self.state ^ u64::from(b)).wrapping_mul(multiplier());
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.state = (self.state ^ n).wrapping_mul(multiplier()).rotate_left(29);
    }
}

fn multiplier() -> u64 {
    static M: OnceLock<u64> = OnceLock::new();
    *M.get_or_init(|| {
        let seed = std::collections::hash_map::RandomState::new().hash_one(0x9E37_79B9_u64);
        seed | 1
    })
}

/// Builds [`SequenceHasher`]s.
#[derive(Debug, Clone, Copy, Default)]
pub struct SequenceBuild;

impl BuildHasher for SequenceBuild {
    type Hasher = SequenceHasher;

    fn build_hasher(&self) -> SequenceHasher {
        SequenceHasher::default()
    }
}

/// A set of sequences.
pub type SequenceSet = HashSet<u64, SequenceBuild>;
