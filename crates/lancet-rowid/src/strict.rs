//! Strict structural check of row-id protobufs before prost decodes them.
//!
//! Lance 14's `read_row_ids` rejects any field number or wire type other than field 1 at the
//! top of a `RowIdSequence`. lancet applies the same strictness at every level of the row-id
//! messages: each message may only hold its declared fields with their declared wire types, and
//! at most one arm of a oneof. prost alone would skip unknown fields and keep the last arm,
//! which would make a re-encode differ from the stored bytes without saying why.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use lancet_proto::wire::{self, WireType};

use crate::error::DecodeError;

/// Allowed fields of one message: `(number, wire type, nested shape)`.
pub(crate) struct Shape {
    pub name: &'static str,
    pub fields: &'static [(u32, WireType, Option<&'static Shape>)],
    /// The fields form one oneof: at most one may appear.
    pub oneof: bool,
}

use WireType::{LengthDelimited as Ld, Varint as Vi};

static U16_ARRAY: Shape = Shape {
    name: "U16Array",
    fields: &[(1, Vi, None), (2, Ld, None)],
    oneof: false,
};
static U32_ARRAY: Shape = Shape {
    name: "U32Array",
    fields: &[(1, Vi, None), (2, Ld, None)],
    oneof: false,
};
static U64_ARRAY: Shape = Shape {
    name: "U64Array",
    fields: &[(2, Ld, None)],
    oneof: false,
};
static ENCODED: Shape = Shape {
    name: "EncodedU64Array",
    fields: &[
        (1, Ld, Some(&U16_ARRAY)),
        (2, Ld, Some(&U32_ARRAY)),
        (3, Ld, Some(&U64_ARRAY)),
    ],
    oneof: true,
};
static RANGE: Shape = Shape {
    name: "Range",
    fields: &[(1, Vi, None), (2, Vi, None)],
    oneof: false,
};
static RANGE_WITH_HOLES: Shape = Shape {
    name: "RangeWithHoles",
    fields: &[(1, Vi, None), (2, Vi, None), (3, Ld, Some(&ENCODED))],
    oneof: false,
};
static RANGE_WITH_BITMAP: Shape = Shape {
    name: "RangeWithBitmap",
    fields: &[(1, Vi, None), (2, Vi, None), (3, Ld, None)],
    oneof: false,
};
pub(crate) static SEGMENT: Shape = Shape {
    name: "U64Segment",
    fields: &[
        (1, Ld, Some(&RANGE)),
        (2, Ld, Some(&RANGE_WITH_HOLES)),
        (3, Ld, Some(&RANGE_WITH_BITMAP)),
        (4, Ld, Some(&ENCODED)),
        (5, Ld, Some(&ENCODED)),
    ],
    oneof: true,
};
pub(crate) static SEQUENCE: Shape = Shape {
    name: "RowIdSequence",
    fields: &[(1, Ld, Some(&SEGMENT))],
    oneof: false,
};
static VERSION_RUN: Shape = Shape {
    name: "RowDatasetVersionRun",
    fields: &[(1, Ld, Some(&SEGMENT)), (2, Vi, None)],
    oneof: false,
};
pub(crate) static VERSION_SEQUENCE: Shape = Shape {
    name: "RowDatasetVersionSequence",
    fields: &[(1, Ld, Some(&VERSION_RUN))],
    oneof: false,
};

/// Checks `buf` against `shape`, recursively. Depth is bounded by the static shapes.
pub(crate) fn check(buf: &[u8], shape: &Shape) -> Result<(), DecodeError> {
    let mut arms = 0;
    for field in wire::fields(buf) {
        let field = field.map_err(|e| DecodeError::Rule(format!("{}: {e}", shape.name)))?;
        let Some((_, wire_type, nested)) = shape.fields.iter().find(|f| f.0 == field.number) else {
            return Err(DecodeError::Rule(format!(
                "{} has unknown field {}",
                shape.name, field.number
            )));
        };
        if *wire_type != field.wire_type {
            return Err(DecodeError::Rule(format!(
                "{} field {} has wire type {:?}, expected {:?}",
                shape.name, field.number, field.wire_type, wire_type
            )));
        }
        arms += 1;
        if shape.oneof && arms > 1 {
            return Err(DecodeError::Rule(format!(
                "{} sets more than one arm of its oneof",
                shape.name
            )));
        }
        if let (Some(nested), Some(body)) = (nested, buf.get(field.value.clone())) {
            check(body, nested)?;
        }
    }
    Ok(())
}
