//! Seeded mutations of valid encodings.

use rand::rngs::SmallRng;
use rand::Rng;

/// Integers that break length and offset arithmetic.
const INTERESTING: [u64; 12] = [
    0,
    1,
    2,
    15,
    16,
    0x7f,
    0x80,
    0xff,
    0xffff,
    0x7fff_ffff,
    0xffff_ffff,
    u64::MAX,
];

pub struct Mutator<'a> {
    rng: &'a mut SmallRng,
}

impl<'a> Mutator<'a> {
    pub fn new(rng: &'a mut SmallRng) -> Self {
        Self { rng }
    }

    /// One to eight stacked mutations of `seeds[pick]`.
    pub fn mutate(&mut self, seeds: &[Vec<u8>], pick: usize, hot: &[usize]) -> Vec<u8> {
        let mut data = seeds[pick].clone();
        let rounds = self.rng.random_range(1..=8);
        for _ in 0..rounds {
            self.one(&mut data, seeds, hot);
        }
        data
    }

    fn one(&mut self, data: &mut Vec<u8>, seeds: &[Vec<u8>], hot: &[usize]) {
        let choice = self.rng.random_range(0..9);
        let len = data.len();
        match choice {
            0 if len > 0 => {
                let at = self.rng.random_range(0..len);
                data[at] ^= 1 << self.rng.random_range(0..8);
            }
            1 if len > 0 => {
                let at = self.rng.random_range(0..len);
                data[at] = self.rng.random();
            }
            2 if len > 0 => {
                let keep = self.rng.random_range(0..len);
                data.truncate(keep);
            }
            3 => {
                let at = self.rng.random_range(0..=len);
                let n = self.rng.random_range(1..=16);
                let bytes: Vec<u8> = (0..n).map(|_| self.rng.random()).collect();
                data.splice(at..at, bytes);
            }
            4 if len > 0 => {
                let start = self.rng.random_range(0..len);
                let end = self.rng.random_range(start..=len.min(start + 32));
                data.drain(start..end);
            }
            5 => {
                // overwrite with an interesting integer at a hot (length/offset) position
                let at = if !hot.is_empty() && self.rng.random_bool(0.7) {
                    hot[self.rng.random_range(0..hot.len())]
                } else if len > 0 {
                    self.rng.random_range(0..len)
                } else {
                    return;
                };
                let value = INTERESTING[self.rng.random_range(0..INTERESTING.len())];
                let width = [1usize, 2, 4, 8][self.rng.random_range(0..4)];
                let bytes = value.to_le_bytes();
                for (i, byte) in bytes.iter().take(width).enumerate() {
                    if let Some(b) = data.get_mut(at + i) {
                        *b = *byte;
                    }
                }
            }
            6 if !seeds.is_empty() => {
                // splice a chunk of another seed in
                let other = &seeds[self.rng.random_range(0..seeds.len())];
                if other.is_empty() {
                    return;
                }
                let start = self.rng.random_range(0..other.len());
                let end = self.rng.random_range(start..=other.len());
                let at = self.rng.random_range(0..=len);
                data.splice(at..at, other[start..end].iter().copied());
            }
            7 if len > 1 => {
                // duplicate a chunk (repeated fields, repeated sections)
                let start = self.rng.random_range(0..len);
                let end = self.rng.random_range(start..=len.min(start + 64));
                let chunk = data[start..end].to_vec();
                data.splice(end..end, chunk);
            }
            _ => {
                // a protobuf-shaped byte: varint continuation or a tag
                if len > 0 {
                    let at = self.rng.random_range(0..len);
                    data[at] = [0x80, 0xff, 0x08, 0x12, 0x1a, 0x0a][self.rng.random_range(0..6)];
                }
            }
        }
    }
}
