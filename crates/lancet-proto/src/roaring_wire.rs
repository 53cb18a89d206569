//! Roaring wire formats of Lance 14 (FORMAT-FACTS conventions), decoded with bounds checked
//! before the `roaring` crate allocates.
//!
//! - Roaring32: the portable `RoaringBitmap` serialization (deletion `.bin` files, fragment
//!   bitmaps).
//! - RoaringTreemap: u64 LE count of high keys, then per key (ascending) a u32 LE key and a
//!   portable Roaring32 of the low 32 bits (FRI `changed_row_addrs`).
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::io::Cursor;

use roaring::{RoaringBitmap, RoaringTreemap};

use crate::Malformed;

const SERIAL_COOKIE_NO_RUNCONTAINER: u32 = 12346;
const SERIAL_COOKIE: u16 = 12347;
/// A Roaring32 has at most 2^16 containers.
const MAX_CONTAINERS: u32 = 1 << 16;

/// Checks the header at the cursor's position: a known cookie and at most 2^16 containers.
fn check_header(bytes: &[u8], at: usize) -> Result<(), String> {
    let word = |k: usize| crate::le::u32_at(bytes, at.checked_add(k)?);
    let cookie = word(0).ok_or("shorter than a roaring header")?;
    if cookie == SERIAL_COOKIE_NO_RUNCONTAINER {
        let size = word(4).ok_or("roaring header truncated")?;
        if size > MAX_CONTAINERS {
            return Err(format!("roaring header claims {size} containers"));
        }
    } else if (cookie & 0xffff) as u16 != SERIAL_COOKIE {
        return Err("not a roaring bitmap (bad cookie)".into());
    }
    Ok(())
}

fn read_one(bytes: &[u8], cursor: &mut Cursor<&[u8]>) -> Result<RoaringBitmap, String> {
    check_header(bytes, cursor.position() as usize)?;
    RoaringBitmap::deserialize_from(cursor).map_err(|e| e.to_string())
}

/// Decodes exactly one Roaring32 occupying all of `bytes`.
pub fn decode_roaring32(bytes: &[u8]) -> Result<RoaringBitmap, Malformed> {
    decode_roaring32_inner(bytes).map_err(Malformed::from)
}

fn decode_roaring32_inner(bytes: &[u8]) -> Result<RoaringBitmap, String> {
    let mut cursor = Cursor::new(bytes);
    let bitmap = read_one(bytes, &mut cursor)?;
    trailing(bytes, &cursor)?;
    Ok(bitmap)
}

/// Decodes exactly one RoaringTreemap occupying all of `bytes`: keys strictly ascending, no
/// trailing bytes.
pub fn decode_treemap(bytes: &[u8]) -> Result<RoaringTreemap, Malformed> {
    decode_treemap_inner(bytes).map_err(Malformed::from)
}

fn decode_treemap_inner(bytes: &[u8]) -> Result<RoaringTreemap, String> {
    let count = bytes
        .get(0..8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or("shorter than a treemap header")?;
    // every entry takes at least a 4-byte key and an 8-byte bitmap header
    if count > (bytes.len() as u64) / 12 {
        return Err(format!(
            "treemap claims {count} keys in {} bytes",
            bytes.len()
        ));
    }
    let mut cursor = Cursor::new(bytes);
    cursor.set_position(8);
    let mut out = RoaringTreemap::new();
    let mut last: Option<u32> = None;
    for _ in 0..count {
        let at = cursor.position() as usize;
        let key = bytes
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
            .ok_or("treemap key truncated")?;
        if last.is_some_and(|l| key <= l) {
            return Err("treemap keys are not strictly ascending".into());
        }
        last = Some(key);
        cursor.set_position(at as u64 + 4);
        let bitmap = read_one(bytes, &mut cursor)?;
        let high = u64::from(key) << 32;
        out.extend(bitmap.iter().map(|low| high | u64::from(low)));
    }
    trailing(bytes, &cursor)?;
    Ok(out)
}

fn trailing(bytes: &[u8], cursor: &Cursor<&[u8]>) -> Result<(), String> {
    if cursor.position() != bytes.len() as u64 {
        return Err(format!(
            "{} trailing bytes after the roaring data",
            bytes.len() as u64 - cursor.position()
        ));
    }
    Ok(())
}

/// Encodes a Roaring32.
pub fn encode_roaring32(bitmap: &RoaringBitmap) -> Vec<u8> {
    let mut out = Vec::with_capacity(bitmap.serialized_size());
    // Writing into a Vec cannot fail.
    let _ = bitmap.serialize_into(&mut out);
    out
}

/// Encodes a RoaringTreemap.
pub fn encode_treemap(treemap: &RoaringTreemap) -> Vec<u8> {
    let mut out = Vec::with_capacity(treemap.serialized_size());
    let _ = treemap.serialize_into(&mut out);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects() {
        let b: RoaringBitmap = [1u32, 5, 70_000].into_iter().collect();
        assert_eq!(decode_roaring32(&encode_roaring32(&b)).unwrap(), b);
        let t: RoaringTreemap = [1u64, (3 << 32) | 7, (9 << 32) | 1].into_iter().collect();
        let bytes = encode_treemap(&t);
        assert_eq!(decode_treemap(&bytes).unwrap(), t);
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(decode_treemap(&extra)
            .unwrap_err()
            .to_string()
            .contains("trailing"));
        assert!(decode_treemap(&bytes[..bytes.len() - 2]).is_err());
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&[0; 16]);
        assert!(decode_treemap(&huge)
            .unwrap_err()
            .to_string()
            .contains("claims"));
        // swap the order of two keys
        let two: RoaringTreemap = [1u64, 1 << 32].into_iter().collect();
        let enc = encode_treemap(&two);
        let first = 8;
        let len0 = encode_roaring32(&[1u32].into_iter().collect()).len();
        let second = first + 4 + len0;
        let mut swapped = enc.clone();
        swapped[first..first + 4].copy_from_slice(&1u32.to_le_bytes());
        swapped[second..second + 4].copy_from_slice(&0u32.to_le_bytes());
        assert!(decode_treemap(&swapped)
            .unwrap_err()
            .to_string()
            .contains("ascending"));
        let mut many = SERIAL_COOKIE_NO_RUNCONTAINER.to_le_bytes().to_vec();
        many.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_roaring32(&many)
            .unwrap_err()
            .to_string()
            .contains("containers"));
    }
}
