//! Lance's unenforced primary and clustering keys installed through field metadata, as Lance
//! 14.0.2's UpdateConfig applies them (`manifest_build.rs`):
//!
//! - after a field's metadata changes, its key positions follow the metadata:
//!   `lance-schema:unenforced-primary-key:position` (a 1-based position) or a truthy
//!   `lance-schema:unenforced-primary-key` (position 0: ordered by field id) make it a primary
//!   key column; `lance-schema:unenforced-clustering-key:position` a clustering key column.
//!   The protobuf records them (`unenforced_primary_key`, `..._position`), which is what
//!   pylance and merge_insert's key guard read;
//! - a key, once set, is never changed or removed, and an update that writes a key entry
//!   without installing a valid key is refused;
//! - every primary key column is a leaf, and neither it nor an ancestor is nullable, a list
//!   or a map (`Schema::verify_primary_key`).
//!
//! Pure: the caller hands in the manifest's fields and the ids whose metadata it updated.

use lancet_proto::file::Field;

use crate::error::{Result, TxnError};

pub const PRIMARY_KEY: &str = "lance-schema:unenforced-primary-key";
pub const PRIMARY_KEY_POSITION: &str = "lance-schema:unenforced-primary-key:position";
pub const CLUSTERING_KEY_POSITION: &str = "lance-schema:unenforced-clustering-key:position";

/// Lance's `str_is_truthy`.
fn truthy(v: &[u8]) -> bool {
    let v = String::from_utf8_lossy(v);
    ["1", "true", "on", "yes", "y"]
        .iter()
        .any(|t| v.eq_ignore_ascii_case(t))
}

fn position(field: &Field, key: &str) -> Option<u32> {
    let v = field.metadata.get(key)?;
    std::str::from_utf8(v).ok()?.parse::<u32>().ok()
}

/// The primary key's field ids in key order: explicit positions first (by position, then
/// id), then position-0 columns by id.
pub fn primary_key(fields: &[Field]) -> Vec<i32> {
    let mut key: Vec<&Field> = fields.iter().filter(|f| f.unenforced_primary_key).collect();
    key.sort_by_key(|f| match f.unenforced_primary_key_position {
        0 => (true, f.id, f.id),
        p => (false, i32::try_from(p).unwrap_or(i32::MAX), f.id),
    });
    key.iter().map(|f| f.id).collect()
}

/// The clustering key's field ids in position order.
pub fn clustering_key(fields: &[Field]) -> Vec<i32> {
    let mut key: Vec<&Field> = fields
        .iter()
        .filter(|f| f.unenforced_clustering_key_position > 0)
        .collect();
    key.sort_by_key(|f| (f.unenforced_clustering_key_position, f.id));
    key.iter().map(|f| f.id).collect()
}

/// What an UpdateConfig's field metadata updates write: whether any entry is a primary key
/// entry, and whether any is a clustering key entry.
pub fn writes_keys<'a>(keys: impl IntoIterator<Item = &'a str>) -> (bool, bool) {
    let (mut primary, mut clustering) = (false, false);
    for k in keys {
        primary |= k == PRIMARY_KEY || k == PRIMARY_KEY_POSITION;
        clustering |= k == CLUSTERING_KEY_POSITION;
    }
    (primary, clustering)
}

/// The key positions of the fields `updated` (their metadata just changed) made to follow
/// their metadata, then Lance's rules judged against the keys `before` (primary, clustering)
/// the update; `writes`: what [`writes_keys`] said of the update's entries.
pub fn settle(
    fields: &mut [Field],
    updated: &[i32],
    before: (Vec<i32>, Vec<i32>),
    writes: (bool, bool),
) -> Result<()> {
    for f in fields.iter_mut().filter(|f| updated.contains(&f.id)) {
        let primary = position(f, PRIMARY_KEY_POSITION)
            .or_else(|| f.metadata.get(PRIMARY_KEY).filter(|v| truthy(v)).map(|_| 0));
        f.unenforced_primary_key = primary.is_some();
        f.unenforced_primary_key_position = primary.unwrap_or(0);
        f.unenforced_clustering_key_position = position(f, CLUSTERING_KEY_POSITION).unwrap_or(0);
    }
    let refuse = |what: &str| Err(TxnError::operation("UpdateConfig", what.to_string()));
    let (primary_after, clustering_after) = (primary_key(fields), clustering_key(fields));
    let (primary_before, clustering_before) = before;
    let (writes_primary, writes_clustering) = writes;
    if !primary_before.is_empty() {
        if writes_primary || primary_after != primary_before {
            return refuse(
                "the unenforced primary key is a reserved key and cannot be changed once set",
            );
        }
    } else if writes_primary && primary_after.is_empty() {
        return refuse(
            "the unenforced primary key is a reserved key and cannot be set to an invalid value",
        );
    }
    if writes_primary {
        verify_primary_key(fields, &primary_after)?;
    }
    if !clustering_before.is_empty() {
        if writes_clustering || clustering_after != clustering_before {
            return refuse(
                "the unenforced clustering key is a reserved key and cannot be changed once set",
            );
        }
    } else if writes_clustering && clustering_after.is_empty() {
        return refuse(
            "the unenforced clustering key is a reserved key and cannot be set to an invalid value",
        );
    }
    Ok(())
}

/// Every primary key column a leaf, and neither it nor an ancestor nullable, a list or a map.
fn verify_primary_key(fields: &[Field], key: &[i32]) -> Result<()> {
    let refuse = |why: String| Err(TxnError::operation("UpdateConfig", why));
    for id in key {
        if fields.iter().any(|f| f.parent_id == *id) {
            return refuse(format!("Primary key column must be a leaf: field {id}"));
        }
        let mut at = fields.iter().find(|f| f.id == *id);
        while let Some(f) = at {
            if f.nullable {
                return refuse(format!(
                    "Primary key column and all its ancestors must not be nullable: {:?}",
                    f.name
                ));
            }
            if ["list", "large_list", "list.struct", "large_list.struct"]
                .contains(&f.logical_type.as_str())
                || f.logical_type == "map"
            {
                return refuse(format!(
                    "Primary key column must not be in a list or map type: {:?}",
                    f.name
                ));
            }
            at = (f.parent_id >= 0)
                .then(|| fields.iter().find(|p| p.id == f.parent_id))
                .flatten();
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn field(id: i32, name: &str, nullable: bool) -> Field {
        Field {
            id,
            parent_id: -1,
            name: name.into(),
            logical_type: "int64".into(),
            nullable,
            ..Default::default()
        }
    }

    fn set(fields: &mut [Field], id: i32, key: &str, value: &str) -> Result<()> {
        let before = (primary_key(fields), clustering_key(fields));
        if let Some(f) = fields.iter_mut().find(|f| f.id == id) {
            f.metadata.insert(key.into(), value.as_bytes().to_vec());
        }
        settle(fields, &[id], before, writes_keys([key]))
    }

    #[test]
    fn a_key_set_through_field_metadata_is_a_key_and_stays_one() {
        let mut fields = vec![field(0, "id", false), field(1, "v", true)];
        set(&mut fields, 0, PRIMARY_KEY, "true").unwrap();
        assert!(fields[0].unenforced_primary_key);
        assert_eq!(primary_key(&fields), [0]);
        // changing it, or writing it again, is refused
        let mut again = fields.clone();
        assert!(set(&mut again, 0, PRIMARY_KEY, "false").is_err());
        let mut other = fields.clone();
        assert!(set(&mut other, 1, PRIMARY_KEY_POSITION, "1").is_err());
        // an unrelated metadata entry is fine
        set(&mut fields, 1, "note", "x").unwrap();
        assert_eq!(primary_key(&fields), [0]);
    }

    #[test]
    fn a_key_on_a_nullable_column_or_an_invalid_value_is_refused() {
        let mut fields = vec![field(0, "id", false), field(1, "v", true)];
        assert!(set(&mut fields.clone(), 1, PRIMARY_KEY, "true").is_err());
        assert!(set(&mut fields.clone(), 0, PRIMARY_KEY_POSITION, "first").is_err());
        assert!(set(&mut fields.clone(), 0, CLUSTERING_KEY_POSITION, "x").is_err());
        set(&mut fields, 0, CLUSTERING_KEY_POSITION, "1").unwrap();
        assert_eq!(clustering_key(&fields), [0]);
        assert!(set(&mut fields, 0, CLUSTERING_KEY_POSITION, "2").is_err());
    }
}
