//! Row addresses: Lance's `u64` naming a row by its fragment id (high 32 bits) and its offset
//! in that fragment (low 32 bits). Every crate packs and splits addresses through this type,
//! so the layout is written down once.

use std::ops::RangeInclusive;

/// A row address: `fragment << 32 | offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct RowAddress(u64);

impl RowAddress {
    /// The address of row `offset` of fragment `fragment`.
    pub const fn new(fragment: u32, offset: u32) -> Self {
        Self(((fragment as u64) << 32) | offset as u64)
    }

    /// The address a raw `u64` holds (every `u64` is one).
    pub const fn from_u64(raw: u64) -> Self {
        Self(raw)
    }

    /// The raw `u64`, as Lance stores and returns it.
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// The fragment id: the high 32 bits.
    pub const fn fragment(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The row offset within the fragment: the low 32 bits.
    pub const fn offset(self) -> u32 {
        self.0 as u32
    }

    /// The first address of `fragment` (its offset 0), as a raw `u64`.
    pub const fn first_of(fragment: u32) -> u64 {
        (fragment as u64) << 32
    }

    /// Every address of `fragment`, first to last (raw `u64`s).
    pub const fn fragment_range(fragment: u32) -> RangeInclusive<u64> {
        Self::first_of(fragment)..=Self::new(fragment, u32::MAX).0
    }

    /// Splits a raw address into `(fragment, offset)`.
    pub const fn split(raw: u64) -> (u32, u32) {
        let a = Self(raw);
        (a.fragment(), a.offset())
    }
}

impl From<u64> for RowAddress {
    fn from(raw: u64) -> Self {
        Self(raw)
    }
}

impl From<RowAddress> for u64 {
    fn from(a: RowAddress) -> Self {
        a.0
    }
}

impl std::fmt::Display for RowAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.fragment(), self.offset())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_and_splits_the_lance_layout() {
        let a = RowAddress::new(7, 42);
        assert_eq!(a.as_u64(), 7 * (1 << 32) + 42);
        assert_eq!((a.fragment(), a.offset()), (7, 42));
        assert_eq!(RowAddress::split(a.as_u64()), (7, 42));
        assert_eq!(RowAddress::from(a.as_u64()), a);
        assert_eq!(a.to_string(), "7:42");
        let top = RowAddress::new(u32::MAX, u32::MAX);
        assert_eq!(top.as_u64(), u64::MAX);
        assert_eq!((top.fragment(), top.offset()), (u32::MAX, u32::MAX));
        assert!(RowAddress::new(1, u32::MAX) < RowAddress::new(2, 0));
    }

    #[test]
    fn fragment_ranges_tile_the_address_space() {
        assert_eq!(RowAddress::fragment_range(0), 0..=(1 << 32) - 1);
        assert_eq!(RowAddress::fragment_range(3), 3 << 32..=(4 << 32) - 1);
        assert_eq!(
            RowAddress::fragment_range(u32::MAX),
            RowAddress::first_of(u32::MAX)..=u64::MAX
        );
        assert_eq!(RowAddress::first_of(5), RowAddress::new(5, 0).as_u64());
    }
}
