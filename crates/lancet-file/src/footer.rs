//! Validation of a v2 Lance file's footer and offset tables before lance-file reads it.
//!
//! lance-io and lance-file trust these numbers (an empty or truncated object makes lance-io
//! 14.0.2 panic on an `unwrap`), so lancet checks them first, from at most the last 40 bytes
//! plus the two offset tables, whose lengths are bounded by the object size.
//!
//! ```text
//! ... | CMO table: num_columns × (u64 pos, u64 len) | GBO table: num_global_buffers × (u64, u64)
//! footer (40 bytes): u64 column_meta_start | u64 cmo_table_start | u64 gbo_table_start |
//!                    u32 num_global_buffers | u32 num_columns | u16 major | u16 minor | "LANC"
//! ```
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

pub(crate) const FOOTER_LEN: u64 = 40;

/// The decoded footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Footer {
    pub column_meta_start: u64,
    pub cmo_table_start: u64,
    pub gbo_table_start: u64,
    pub num_global_buffers: u32,
    pub num_columns: u32,
    pub major: u16,
    pub minor: u16,
}

use lancet_proto::le::{u16_at, u32_at, u64_at};

/// Parses the last 40 bytes of a file of `size` bytes and checks that the tables it names lie
/// inside the file, in order, before the footer.
pub(crate) fn parse_footer(tail: &[u8], size: u64) -> Result<Footer, String> {
    if size < FOOTER_LEN || tail.len() as u64 != FOOTER_LEN {
        return Err(format!(
            "file is {size} bytes, shorter than the 40-byte v2 footer"
        ));
    }
    if tail.get(36..40) != Some(b"LANC".as_slice()) {
        return Err("footer magic is not \"LANC\"".into());
    }
    let f = (|| {
        Some(Footer {
            column_meta_start: u64_at(tail, 0)?,
            cmo_table_start: u64_at(tail, 8)?,
            gbo_table_start: u64_at(tail, 16)?,
            num_global_buffers: u32_at(tail, 24)?,
            num_columns: u32_at(tail, 28)?,
            major: u16_at(tail, 32)?,
            minor: u16_at(tail, 34)?,
        })
    })()
    .ok_or("footer out of range")?;
    match (f.major, f.minor) {
        (0, 3) | (2, 0..=3) => {}
        (0, 0..=2) => return Err("legacy v1 Lance files are not supported here".into()),
        (major, minor) => return Err(format!("unsupported file version {major}.{minor}")),
    }
    let footer_start = size - FOOTER_LEN;
    let cmo_len = u64::from(f.num_columns) * 16;
    let gbo_len = u64::from(f.num_global_buffers) * 16;
    if f.num_global_buffers == 0 {
        return Err("no global buffers: buffer 0 must hold the file descriptor".into());
    }
    if f.column_meta_start > f.cmo_table_start {
        return Err("column metadata starts after the column offset table".into());
    }
    if f.cmo_table_start.checked_add(cmo_len) != Some(f.gbo_table_start) {
        return Err(format!(
            "column offset table at {} with {} columns does not end at the global buffer table ({})",
            f.cmo_table_start, f.num_columns, f.gbo_table_start
        ));
    }
    if f.gbo_table_start.checked_add(gbo_len) != Some(footer_start) {
        return Err(format!(
            "global buffer table at {} with {} buffers does not end at the footer ({footer_start})",
            f.gbo_table_start, f.num_global_buffers
        ));
    }
    Ok(f)
}

/// Checks that every `(position, length)` entry of an offset table lies inside `limit` bytes.
pub(crate) fn check_offset_table(table: &[u8], limit: u64, what: &str) -> Result<(), String> {
    for (i, entry) in table.chunks(16).enumerate() {
        let (pos, len) = (u64_at(entry, 0), u64_at(entry, 8));
        let (Some(pos), Some(len)) = (pos, len) else {
            return Err(format!("{what} table is truncated"));
        };
        if pos.checked_add(len).is_none_or(|end| end > limit) {
            return Err(format!(
                "{what} {i} at {pos} with length {len} runs past byte {limit}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;

    fn footer(cm: u64, cmo: u64, gbo: u64, ngb: u32, ncol: u32, major: u16, minor: u16) -> Vec<u8> {
        let mut v = Vec::new();
        for x in [cm, cmo, gbo] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(&ngb.to_le_bytes());
        v.extend_from_slice(&ncol.to_le_bytes());
        v.extend_from_slice(&major.to_le_bytes());
        v.extend_from_slice(&minor.to_le_bytes());
        v.extend_from_slice(b"LANC");
        v
    }

    #[test]
    fn accepts_consistent_footers() {
        // 100 bytes before tables, 2 columns (32 bytes), 1 buffer (16 bytes)
        let size = 100 + 32 + 16 + 40;
        let f = parse_footer(&footer(90, 100, 132, 1, 2, 2, 1), size).unwrap();
        assert_eq!(f.num_columns, 2);
        assert!(parse_footer(&footer(90, 100, 132, 1, 2, 0, 3), size).is_ok());
    }

    #[test]
    fn rejects_every_inconsistency() {
        let size = 188;
        let cases = [
            (footer(90, 100, 132, 1, 2, 0, 1), "legacy v1"),
            (footer(90, 100, 132, 1, 2, 3, 0), "unsupported file version"),
            (footer(90, 100, 132, 0, 2, 2, 1), "no global buffers"),
            (footer(120, 100, 132, 1, 2, 2, 1), "starts after"),
            (
                footer(90, 100, 140, 1, 2, 2, 1),
                "does not end at the global buffer table",
            ),
            (
                footer(90, 100, 132, 2, 2, 2, 1),
                "does not end at the footer",
            ),
            (footer(90, u64::MAX - 8, 132, 1, 2, 2, 1), "does not end"),
        ];
        for (tail, needle) in cases {
            let err = parse_footer(&tail, size).unwrap_err();
            assert!(err.contains(needle), "{err} / {needle}");
        }
        let mut bad_magic = footer(90, 100, 132, 1, 2, 2, 1);
        bad_magic[39] = b'X';
        assert!(parse_footer(&bad_magic, size)
            .unwrap_err()
            .to_string()
            .contains("magic"));
        assert!(parse_footer(&bad_magic[..10], 10)
            .unwrap_err()
            .to_string()
            .contains("shorter"));
    }

    #[test]
    fn offset_tables_stay_inside() {
        let mut t = Vec::new();
        t.extend_from_slice(&10u64.to_le_bytes());
        t.extend_from_slice(&5u64.to_le_bytes());
        assert!(check_offset_table(&t, 15, "column").is_ok());
        assert!(check_offset_table(&t, 14, "column").is_err());
        t[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(check_offset_table(&t, 100, "column").is_err());
        assert!(check_offset_table(&t[..12], 100, "column").is_err());
    }
}
