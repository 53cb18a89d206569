//! Thin helpers over `lance-file` 14.0.2 for the Lance files lancet reads and writes (tree
//! leaves, BTree pages, FRI row maps, demo data files).
//!
//! - [`write_file`] writes record batches with an exact Arrow schema, schema metadata and global
//!   buffers.
//! - [`LanceFile`] opens a file and reads all rows, a row range, several ranges in one coalesced
//!   request set, or a global buffer; [`LanceFile::check_schema`] compares the stored schema
//!   exactly (field order, types including dictionary value types and list item fields,
//!   nullability).
//!
//! - [`read_fragment`] reads a fragment's columns from the data files that hold them (NULL
//!   for a field none holds); [`write_fragments`] writes a stream of batches as the data
//!   files of new fragments, split every `max_rows_per_file` rows.
//!
//! The page encodings are lance-encoding's; this crate never encodes pages by hand.

// Stored bytes are hostile: no unwrap, expect or unchecked index outside tests (a local
// `allow` states the invariant that bounds it).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

mod checked_io;
mod error;
mod file_task;
mod footer;
mod fragment;
pub mod legacy;
mod progress;
mod read;
pub mod scan_plan;
mod schema;
mod store;
mod tail;
mod write;

pub use checked_io::MAX_DECOMPRESSED;
pub use error::{FileError, Result};
pub use fragment::{
    conform, conform_by_name, read_fragment, write_fragments, Column, DataFileAt, FragmentOptions,
    Rows,
};
pub use progress::{Progress, WriteProgress};
pub use read::{
    open_bytes_exact, read_bytes_exact, reopen_bytes, FileOutline, FileSummary, LanceFile,
};
pub use schema::{check_schema_exact, manifest_fields, table_schema};
pub use store::{io_counters, FileStore};
pub use write::{encode_file, write_file, FileVersion, StreamingWriter, WriteOptions, WrittenFile};
