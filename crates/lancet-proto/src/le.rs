//! Bounds-checked little-endian reads from stored bytes: `None` when the value does not lie
//! wholly inside the slice (offsets are added with overflow checks). Every decoder of a
//! fixed layout (the Lance file footer, the manifest footer, roaring headers, LSPC counts,
//! Arrow IPC deletion files) reads its integers through these.

fn array_at<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    bytes.get(at..at.checked_add(N)?)?.try_into().ok()
}

pub fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    array_at(bytes, at).map(u16::from_le_bytes)
}

pub fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    array_at(bytes, at).map(u32::from_le_bytes)
}

pub fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    array_at(bytes, at).map(u64::from_le_bytes)
}

pub fn i32_at(bytes: &[u8], at: usize) -> Option<i32> {
    array_at(bytes, at).map(i32::from_le_bytes)
}

pub fn i64_at(bytes: &[u8], at: usize) -> Option<i64> {
    array_at(bytes, at).map(i64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_inside_the_slice_only() {
        let b = [1u8, 0, 0, 0, 0, 0, 0, 0x80, 0xff];
        assert_eq!(u16_at(&b, 0), Some(1));
        assert_eq!(u32_at(&b, 0), Some(1));
        assert_eq!(u64_at(&b, 0), Some(0x8000_0000_0000_0001));
        assert_eq!(i64_at(&b, 0), Some(i64::MIN + 1));
        assert_eq!(i32_at(&b, 5), Some(i32::from_le_bytes([0, 0, 0x80, 0xff])));
        assert_eq!(u64_at(&b, 2), None, "one byte short");
        assert_eq!(u16_at(&b, 8), None);
        assert_eq!(u32_at(&b, 9), None);
        assert_eq!(
            u32_at(&b, usize::MAX - 1),
            None,
            "offset overflow is not a panic"
        );
        assert_eq!(u16_at(&[], 0), None);
    }
}
