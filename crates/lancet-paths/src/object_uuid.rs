//! UUID object names: `_bt/root/{uuid}.root`, `_indices/{uuid}/`, `_fri/{uuid}/`.

use std::fmt;

use crate::error::{PathsError, Result};

/// A 16-byte UUID in display order, printed lowercase with hyphens after hex digits 8, 12, 16
/// and 20, as every Lance object name uses it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectUuid([u8; 16]);

impl ObjectUuid {
    /// From protobuf bytes; anything but exactly 16 bytes is rejected.
    pub fn from_slice(bytes: &[u8]) -> Result<Self> {
        let arr: [u8; 16] = bytes
            .try_into()
            .map_err(|_| PathsError::InvalidUuidLength { len: bytes.len() })?;
        Ok(Self(arr))
    }

    /// A fresh random (v4) UUID.
    pub fn new_v4() -> Self {
        Self(*uuid::Uuid::new_v4().as_bytes())
    }

    /// Parses hyphenated or simple hex text.
    pub fn parse(text: &str) -> Result<Self> {
        uuid::Uuid::try_parse(text)
            .map(|u| Self(*u.as_bytes()))
            .map_err(|_| PathsError::InvalidUuidText {
                text: text.to_string(),
            })
    }

    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The bytes as a `lance.table.UUID` message.
    pub fn to_proto(&self) -> lancet_proto::table::Uuid {
        lancet_proto::table::Uuid {
            uuid: self.0.to_vec(),
        }
    }
}

impl fmt::Display for ObjectUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&uuid::Uuid::from_bytes(self.0).hyphenated(), f)
    }
}

impl fmt::Debug for ObjectUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectUuid({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_lowercase_hyphenated() {
        let bytes: Vec<u8> = (0xa0..0xb0).collect();
        let u = ObjectUuid::from_slice(&bytes).unwrap();
        assert_eq!(u.to_string(), "a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
        assert_eq!(ObjectUuid::parse(&u.to_string()).unwrap(), u);
    }

    #[test]
    fn rejects_other_lengths() {
        for len in [0usize, 15, 17, 32] {
            let err = ObjectUuid::from_slice(&vec![0u8; len]).unwrap_err();
            assert!(matches!(err, PathsError::InvalidUuidLength { len: l } if l == len));
        }
        assert!(matches!(
            ObjectUuid::parse("not-a-uuid"),
            Err(PathsError::InvalidUuidText { .. })
        ));
    }
}
