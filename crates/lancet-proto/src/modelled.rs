//! Which fields of an encoded `DataFragment` lancet's messages model.
//!
//! prost drops fields a message does not declare, so a fragment decoded and encoded again
//! loses what a newer writer added, and the reserved `ExternalFile` arms (fields 6, 8 and 10:
//! row ids or version sequences stored outside the fragment). The tree spec: "the write must
//! fail if any such reference cannot be preserved". A writer that re-encodes a fragment asks
//! [`unmodelled_fragment_fields`] first and refuses when it names any.
//!
//! The field numbers are FORMAT-FACTS §4.2–4.3 (Lance 14.0.2's `fragment_metadata.proto`).

use crate::wire::{fields, WireError, WireType};

/// `DataFragment`: 6, 8 and 10 are the reserved `ExternalFile` arms, not modelled.
const FRAGMENT: &[u32] = &[1, 2, 3, 4, 5, 7, 9, 11, 12, 13, 14, 15, 16];
const DATA_FILE: &[u32] = &[1, 2, 3, 4, 5, 6, 7];
/// `DeletionFile`: 5 and 6 are unused.
const DELETION_FILE: &[u32] = &[1, 2, 3, 4, 7];
const OVERLAY: &[u32] = &[1, 2, 3, 4];
const FIELD_COVERAGE: &[u32] = &[1];
/// A map entry: key, value.
const MAP_ENTRY: &[u32] = &[1, 2];
/// `RowLineageColumn` is empty.
const LINEAGE_COLUMN: &[u32] = &[];

/// The fields of the encoded `DataFragment` `bytes` that lancet's messages do not model, as
/// paths (`"6"`, `"files[0].9"`, `"deletion_file.5"`), in wire order; empty when a decode and
/// re-encode loses nothing. Malformed bytes are an error, never a panic.
pub fn unmodelled_fragment_fields(bytes: &[u8]) -> Result<Vec<String>, WireError> {
    let mut out = Vec::new();
    walk(bytes, FRAGMENT, "", &mut out, &|number| match number {
        2 => Some(Nested::Repeated("files", DATA_FILE)),
        3 => Some(Nested::One("deletion_file", DELETION_FILE)),
        11 => Some(Nested::Repeated("overlays", OVERLAY)),
        12 => Some(Nested::One("column_row_ids", LINEAGE_COLUMN)),
        13 => Some(Nested::One(
            "column_last_updated_at_versions",
            LINEAGE_COLUMN,
        )),
        14 => Some(Nested::One("column_created_at_versions", LINEAGE_COLUMN)),
        16 => Some(Nested::Repeated("metadata", MAP_ENTRY)),
        _ => None,
    })?;
    Ok(out)
}

/// `FragmentTreeMutation`, `FragmentAction` and the action payloads (`fragment_metadata.proto`).
const MUTATION: &[u32] = &[1, 2, 3, 4, 5];
const ACTION: &[u32] = &[1, 2, 3, 4, 5, 6, 7];
const FRAG_AND_MESSAGE: &[u32] = &[1, 2];
const FRAG_ONLY: &[u32] = &[1];
const REPLACE_DATA_FILE: &[u32] = &[1, 2, 3, 4, 5];

/// The fields lancet does not model in the buffered mutations of an encoded fragment tree
/// node, root or `FragmentTree` (`buffer_field`: the number of its repeated
/// `FragmentTreeMutation` field: 2 in a node or root, 3 for `mutations_since_root`), as paths
/// (`"buffer[0].action.upsert_fragment.6"`). A mutation is re-encoded whenever a commit
/// rewrites the object holding it, so what prost drops there is lost like a fragment's.
pub fn unmodelled_mutation_fields(
    container: &[u8],
    buffer_field: u32,
    name: &str,
) -> Result<Vec<String>, WireError> {
    let mut out = Vec::new();
    let mut i = 0;
    for field in fields(container) {
        let field = field?;
        if field.number != buffer_field || field.wire_type != WireType::LengthDelimited {
            continue;
        }
        let mutation = container.get(field.value.clone()).unwrap_or_default();
        let prefix = format!("{name}[{i}].");
        i += 1;
        for m in fields(mutation) {
            let m = m?;
            if !MUTATION.contains(&m.number) {
                out.push(format!("{prefix}{}", m.number));
                continue;
            }
            if m.number != 2 || m.wire_type != WireType::LengthDelimited {
                continue;
            }
            let action = mutation.get(m.value.clone()).unwrap_or_default();
            for a in fields(action) {
                let a = a?;
                let here = format!("{prefix}action.");
                if !ACTION.contains(&a.number) {
                    out.push(format!("{here}{}", a.number));
                    continue;
                }
                if a.wire_type != WireType::LengthDelimited {
                    continue;
                }
                let payload = action.get(a.value.clone()).unwrap_or_default();
                let (arm, known, inner): (&str, &[u32], Option<&[u32]>) = match a.number {
                    1 => {
                        for f in unmodelled_fragment_fields(payload)? {
                            out.push(format!("{here}upsert_fragment.{f}"));
                        }
                        continue;
                    }
                    3 => ("add_data_file", FRAG_AND_MESSAGE, Some(DATA_FILE)),
                    4 => ("remove_data_file", FRAG_AND_MESSAGE, None),
                    5 => ("add_deletion_file", FRAG_AND_MESSAGE, Some(DELETION_FILE)),
                    6 => ("clear_deletion_file", FRAG_ONLY, None),
                    7 => ("replace_data_file", REPLACE_DATA_FILE, None),
                    _ => continue,
                };
                let arm_prefix = format!("{here}{arm}.");
                walk(
                    payload,
                    known,
                    &arm_prefix,
                    &mut out,
                    &|number| match (number, inner) {
                        (2, Some(k)) => Some(Nested::One("file", k)),
                        _ => None,
                    },
                )?;
            }
        }
    }
    Ok(out)
}

/// A modelled field that holds a message, whose fields are checked too.
enum Nested {
    One(&'static str, &'static [u32]),
    Repeated(&'static str, &'static [u32]),
}

fn walk(
    bytes: &[u8],
    known: &[u32],
    prefix: &str,
    out: &mut Vec<String>,
    nested: &dyn Fn(u32) -> Option<Nested>,
) -> Result<(), WireError> {
    let mut seen: Vec<(u32, usize)> = Vec::new();
    for field in fields(bytes) {
        let field = field?;
        if !known.contains(&field.number) {
            out.push(format!("{prefix}{}", field.number));
            continue;
        }
        let Some(inner) = nested(field.number) else {
            continue;
        };
        if field.wire_type != WireType::LengthDelimited {
            continue; // prost refuses it when decoding; nothing of it is carried
        }
        let value = bytes.get(field.value.clone()).unwrap_or_default();
        let (name, known, index) = match inner {
            Nested::One(name, known) => (name, known, None),
            Nested::Repeated(name, known) => {
                let n = match seen.iter_mut().find(|(k, _)| *k == field.number) {
                    Some((_, n)) => {
                        *n += 1;
                        *n
                    }
                    None => {
                        seen.push((field.number, 0));
                        0
                    }
                };
                (name, known, Some(n))
            }
        };
        let here = match index {
            Some(i) => format!("{prefix}{name}[{i}]."),
            None => format!("{prefix}{name}."),
        };
        walk(value, known, &here, out, &|number| {
            // an overlay holds a DataFile (1) and a FieldCoverage (4)
            match (name, number) {
                ("overlays", 1) => Some(Nested::One("data_file", DATA_FILE)),
                ("overlays", 4) => Some(Nested::One("field_coverage", FIELD_COVERAGE)),
                _ => None,
            }
        })?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use prost::Message;

    #[test]
    fn buffered_mutations_name_the_fields_a_reencode_would_drop() {
        use crate::table::fragment_action::Action;
        use crate::table::{AddDataFile, FragmentAction, FragmentTreeMutation, FragmentTreeNode};
        let upsert = FragmentTreeMutation {
            action_sequence: 1,
            action: Some(FragmentAction {
                action: Some(Action::UpsertFragment(fragment())),
            }),
            ..Default::default()
        };
        let add = FragmentTreeMutation {
            action_sequence: 2,
            action: Some(FragmentAction {
                action: Some(Action::AddDataFile(AddDataFile {
                    frag_id: 3,
                    file: Some(DataFile::default()),
                })),
            }),
            ..Default::default()
        };
        let node = FragmentTreeNode {
            children: vec![],
            buffer: vec![upsert.clone(), add.clone()],
        };
        let clean = node.encode_to_vec();
        assert!(unmodelled_mutation_fields(&clean, 2, "buffer")
            .unwrap()
            .is_empty());
        // a reserved ExternalFile arm (6) in the upserted fragment, an unknown field (9) in
        // the added file, and an unknown field (8) on the mutation itself
        let mut frag = fragment().encode_to_vec();
        frag.extend([0x32, 0x00]); // field 6, empty message
        let mut file = DataFile::default().encode_to_vec();
        file.extend([0x48, 0x01]); // field 9, varint 1
        let action_upsert = [vec![0x0a, frag.len() as u8], frag].concat();
        let add_payload = [vec![0x08, 0x03, 0x12, file.len() as u8], file].concat();
        let action_add = [vec![0x1a, add_payload.len() as u8], add_payload].concat();
        let mutation = |seq: u8, action: Vec<u8>, extra: &[u8]| {
            [
                vec![0x08, seq, 0x12, action.len() as u8],
                action,
                extra.to_vec(),
            ]
            .concat()
        };
        let m1 = mutation(1, action_upsert, &[]);
        let m2 = mutation(2, action_add, &[0x40, 0x01]);
        let bytes = [
            vec![0x12, m1.len() as u8],
            m1,
            vec![0x12, m2.len() as u8],
            m2,
        ]
        .concat();
        assert!(
            FragmentTreeNode::decode(bytes.as_slice()).is_ok(),
            "prost drops them"
        );
        assert_eq!(
            unmodelled_mutation_fields(&bytes, 2, "buffer").unwrap(),
            vec![
                "buffer[0].action.upsert_fragment.6",
                "buffer[1].action.add_data_file.file.9",
                "buffer[1].8",
            ]
        );
        assert!(unmodelled_mutation_fields(&[0x12, 0x05, 0x08], 2, "buffer").is_err());
    }

    use super::*;
    use crate::table::{DataFile, DataFragment, DataOverlayFile, DeletionFile};

    fn fragment() -> DataFragment {
        DataFragment {
            id: 3,
            files: vec![
                DataFile {
                    path: "a.lance".into(),
                    fields: vec![0],
                    ..Default::default()
                },
                DataFile {
                    path: "b.lance".into(),
                    fields: vec![1],
                    base_id: Some(2),
                    ..Default::default()
                },
            ],
            deletion_file: Some(DeletionFile {
                num_deleted_rows: 1,
                ..Default::default()
            }),
            overlays: vec![DataOverlayFile {
                data_file: Some(DataFile::default()),
                committed_version: 4,
                ..Default::default()
            }],
            physical_rows: 10,
            metadata: [("k".to_string(), "v".to_string())].into(),
            ..Default::default()
        }
    }

    /// `bytes` with `extra` (tag and value) appended inside the length-delimited field at
    /// `span` (its length prefix is one byte).
    fn nest(bytes: &[u8], value: std::ops::Range<usize>, extra: &[u8]) -> Vec<u8> {
        let mut out = bytes[..value.start - 1].to_vec();
        out.push((value.len() + extra.len()) as u8);
        out.extend_from_slice(&bytes[value.clone()]);
        out.extend_from_slice(extra);
        out.extend_from_slice(&bytes[value.end..]);
        out
    }

    #[test]
    fn every_field_lancet_writes_is_modelled() {
        let bytes = fragment().encode_to_vec();
        assert_eq!(
            unmodelled_fragment_fields(&bytes).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn reserved_external_arms_and_new_fields_are_named() {
        let mut bytes = fragment().encode_to_vec();
        // field 6 (external_row_ids: an ExternalFile), field 40 varint
        bytes.extend_from_slice(&[0x32, 0x02, 0x0a, 0x00, 0xc0, 0x02, 0x01]);
        assert_eq!(unmodelled_fragment_fields(&bytes).unwrap(), ["6", "40"]);
    }

    #[test]
    fn fields_inside_nested_messages_are_named_with_their_path() {
        let bytes = fragment().encode_to_vec();
        let files: Vec<_> = fields(&bytes).filter_map(Result::ok).collect();
        // the second DataFile gains field 9; the deletion file field 5 (unused in Lance)
        let second = files.iter().filter(|f| f.number == 2).nth(1).unwrap();
        let with_file = nest(&bytes, second.value.clone(), &[0x48, 0x01]);
        assert_eq!(
            unmodelled_fragment_fields(&with_file).unwrap(),
            ["files[1].9"]
        );
        let deletion = files.iter().find(|f| f.number == 3).unwrap();
        let with_deletion = nest(&bytes, deletion.value.clone(), &[0x28, 0x01]);
        assert_eq!(
            unmodelled_fragment_fields(&with_deletion).unwrap(),
            ["deletion_file.5"]
        );
        let overlay = files.iter().find(|f| f.number == 11).unwrap();
        let with_overlay = nest(&bytes, overlay.value.clone(), &[0x30, 0x01]);
        assert_eq!(
            unmodelled_fragment_fields(&with_overlay).unwrap(),
            ["overlays[0].6"]
        );
    }

    #[test]
    fn malformed_bytes_are_an_error() {
        assert!(unmodelled_fragment_fields(&[0x12, 0x05, 1]).is_err());
        assert!(unmodelled_fragment_fields(&[0x12, 0x02, 0xff, 0xff]).is_err());
    }
}

/// A stored fragment that holds fields lancet's messages do not model (see this module):
/// re-encoding it would lose them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnmodelledFragment {
    pub id: u64,
    /// The fields, as paths (`"6"`, `"files[0].9"`); a malformed fragment names why instead.
    pub fields: Vec<String>,
}
