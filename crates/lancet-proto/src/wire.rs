//! A bounds-checked walker over the fields of one protobuf message.
//!
//! prost decodes into typed structs and drops what it does not know. lancet needs two things
//! prost cannot give: the exact bytes of an embedded message (`lancet inspect` prints each
//! fragment's `DataFragment` bytes as stored) and the raw bytes of fields a newer writer added,
//! so that re-encoding a manifest keeps them. [`Fields`] yields each top-level field with its
//! byte span; it never allocates and never reads past the input.

use std::ops::Range;

/// Protobuf wire types lancet accepts. Groups (3, 4) are deprecated and never written by Lance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireType {
    Varint,
    Fixed64,
    LengthDelimited,
    Fixed32,
}

/// A malformed field in a protobuf message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("varint at byte {offset} is truncated or longer than 10 bytes")]
    BadVarint { offset: usize },
    #[error("field at byte {offset} has unsupported wire type {wire_type}")]
    BadWireType { offset: usize, wire_type: u8 },
    #[error("field at byte {offset} has field number 0")]
    ZeroFieldNumber { offset: usize },
    #[error("field at byte {offset} runs past the end of the message ({len} bytes)")]
    Truncated { offset: usize, len: usize },
}

/// One field of a message: its number, wire type, the span of the whole field (tag included)
/// and the span of its value (for length-delimited fields, without the length prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawField {
    pub number: u32,
    pub wire_type: WireType,
    pub span: Range<usize>,
    pub value: Range<usize>,
}

/// Iterator over the top-level fields of `buf`. Stops at the first error.
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    failed: bool,
}

/// Walks the top-level fields of one encoded message.
pub fn fields(buf: &[u8]) -> Fields<'_> {
    Fields {
        buf,
        pos: 0,
        failed: false,
    }
}

fn read_varint(buf: &[u8], offset: usize) -> Result<(u64, usize), WireError> {
    let mut value: u64 = 0;
    for i in 0..10 {
        let byte = *buf.get(offset + i).ok_or(WireError::BadVarint { offset })?;
        let bits = u64::from(byte & 0x7f);
        if i == 9 && byte > 1 {
            return Err(WireError::BadVarint { offset });
        }
        value |= bits << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((value, offset + i + 1));
        }
    }
    Err(WireError::BadVarint { offset })
}

impl Fields<'_> {
    fn next_field(&mut self) -> Result<RawField, WireError> {
        let start = self.pos;
        let (key, after_key) = read_varint(self.buf, start)?;
        let number = u32::try_from(key >> 3).map_err(|_| WireError::BadWireType {
            offset: start,
            wire_type: (key & 7) as u8,
        })?;
        if number == 0 {
            return Err(WireError::ZeroFieldNumber { offset: start });
        }
        let len = self.buf.len();
        let truncated = WireError::Truncated { offset: start, len };
        let (wire_type, value) = match key & 7 {
            0 => {
                let (_, end) = read_varint(self.buf, after_key)?;
                (WireType::Varint, after_key..end)
            }
            1 => (WireType::Fixed64, after_key..after_key + 8),
            2 => {
                let (n, body) = read_varint(self.buf, after_key)?;
                let n = usize::try_from(n).map_err(|_| truncated.clone())?;
                let end = body.checked_add(n).ok_or(truncated.clone())?;
                (WireType::LengthDelimited, body..end)
            }
            5 => (WireType::Fixed32, after_key..after_key + 4),
            other => {
                return Err(WireError::BadWireType {
                    offset: start,
                    wire_type: other as u8,
                })
            }
        };
        if value.end > len {
            return Err(truncated);
        }
        self.pos = value.end;
        Ok(RawField {
            number,
            wire_type,
            span: start..value.end,
            value,
        })
    }
}

impl Iterator for Fields<'_> {
    type Item = Result<RawField, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let item = self.next_field();
        self.failed = item.is_err();
        Some(item)
    }
}

/// The concatenated raw bytes (tags included) of every top-level field of `buf` whose number is
/// not in `known`, in their original order. Appending them to a prost encoding of the known
/// fields reproduces a message that loses nothing.
pub fn unknown_fields(buf: &[u8], known: &[u32]) -> Result<Vec<u8>, WireError> {
    let mut out = Vec::new();
    for field in fields(buf) {
        let field = field?;
        if !known.contains(&field.number) {
            if let Some(bytes) = buf.get(field.span.clone()) {
                out.extend_from_slice(bytes);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn walks_all_wire_types() {
        // field 1 varint 150, field 2 bytes "hi", field 3 fixed32, field 4 fixed64
        let buf = [
            0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x1d, 1, 2, 3, 4, 0x21, 1, 2, 3, 4, 5, 6, 7,
            8,
        ];
        let got: Vec<_> = fields(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].number, 1);
        assert_eq!(got[1].value, 5..7);
        assert_eq!(got[2].wire_type, WireType::Fixed32);
        assert_eq!(got[3].span, 12..21);
    }

    #[test]
    fn rejects_truncation_and_bad_types() {
        assert!(matches!(
            fields(&[0x12, 0x05, 1]).next(),
            Some(Err(WireError::Truncated { .. }))
        ));
        assert!(matches!(
            fields(&[0x0b]).next(),
            Some(Err(WireError::BadWireType { wire_type: 3, .. }))
        ));
        assert!(matches!(
            fields(&[0x08, 0xff]).next(),
            Some(Err(WireError::BadVarint { .. }))
        ));
        assert!(matches!(
            fields(&[0x00, 0x00]).next(),
            Some(Err(WireError::ZeroFieldNumber { .. }))
        ));
        let huge = [
            0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        assert!(fields(&huge).next().unwrap().is_err());
    }

    #[test]
    fn unknown_fields_keep_order_and_bytes() {
        let buf = [
            0x08, 0x01, 0xd0, 0x01, 0x07, 0x10, 0x02, 0xd2, 0x01, 0x01, b'x',
        ];
        // field 26 varint 7 and field 26 bytes "x" are unknown
        let unknown = unknown_fields(&buf, &[1, 2]).unwrap();
        assert_eq!(unknown, vec![0xd0, 0x01, 0x07, 0xd2, 0x01, 0x01, b'x']);
    }
}
