//! Value types a BTree indexes, and the exact schemas of its two files (FORMAT-FACTS §8.1).

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

/// File names inside `_indices/{uuid}/`.
pub const PAGE_LOOKUP_FILE: &str = "page_lookup.lance";
pub const PAGE_DATA_FILE: &str = "page_data.lance";
/// Schema metadata keys of `page_lookup.lance`.
pub const BATCH_SIZE_KEY: &str = "batch_size";
pub const RANGE_PARTITIONED_KEY: &str = "range_partitioned";
/// Lance's default page size (`zone_size`).
pub const DEFAULT_PAGE_ROWS: u64 = 4096;

/// Whether lancet indexes columns of `t`: integers, floats (half precision too), decimals,
/// strings, binary (fixed-size too), booleans, dates, times, timestamps and durations: the
/// types Lance 14.0.2's BTree indexes.
pub fn is_supported(t: &DataType) -> bool {
    use DataType::*;
    matches!(
        t,
        Int8 | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Float16
            | Float32
            | Float64
            | Utf8
            | LargeUtf8
            | Binary
            | LargeBinary
            | FixedSizeBinary(_)
            | Boolean
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(_, _)
            | Duration(_)
            | Decimal128(_, _)
            | Decimal256(_, _)
    )
}

/// `page_data.lance`: `values: T` (nullable), `ids: UInt64` (not null).
pub fn page_data_schema(value_type: &DataType) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("values", value_type.clone(), true),
        Field::new("ids", DataType::UInt64, false),
    ]))
}

/// `page_lookup.lance`: `min`, `max` (nullable `T`), `null_count`, `page_idx` (UInt32).
pub fn page_lookup_schema(value_type: &DataType) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("min", value_type.clone(), true),
        Field::new("max", value_type.clone(), true),
        Field::new("null_count", DataType::UInt32, false),
        Field::new("page_idx", DataType::UInt32, false),
    ]))
}
