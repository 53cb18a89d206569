//! `lancet._lancet`: the native half of the `lancet` Python package.
//!
//! Binding only: each function converts Python arguments, calls the `lancet` facade on one
//! shared tokio runtime with the GIL released, and converts the answer back. Arrow data
//! crosses through the Arrow C stream interface (PyCapsules, no copies) in `arrow_ffi`;
//! errors become the typed exceptions of `lancet.errors` in `errors`. The pylance-like
//! names and argument handling live in the Python half (`lancet/`).
//!
//! The crate uses PyO3 0.25 (not the newest 0.30): its API (`allow_threads`, `with_gil`) is
//! the one the rest of the ecosystem's examples still show, and nothing here needs more.

mod arrow_ffi;
mod branches;
mod dataset;
mod debug;
mod errors;
mod fragment_edits;
mod fragments;
mod indexes;
mod lance_file;
mod maps;
mod new_columns;
mod operation_args;
mod plan;
mod progress;
mod project;
mod runtime;
mod scan_counters;
mod schema;
mod session;
mod sql;
mod storage_version;
mod transactions;
mod write;

use pyo3::prelude::*;

#[pymodule]
fn _lancet(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<dataset::PyDataset>()?;
    m.add_class::<arrow_ffi::ArrowStream>()?;
    m.add_class::<lance_file::FileWriter>()?;
    m.add_class::<lance_file::FileReader>()?;
    m.add_class::<scan_counters::ScanCounters>()?;
    m.add_function(wrap_pyfunction!(sql::sql, m)?)?;
    m.add_class::<session::PySession>()?;
    m.add_function(wrap_pyfunction!(dataset::open, m)?)?;
    m.add_function(wrap_pyfunction!(write::write, m)?)?;
    m.add_function(wrap_pyfunction!(write::write_new_fragments, m)?)?;
    m.add_function(wrap_pyfunction!(write::create_from_fragments, m)?)?;
    m.add_function(wrap_pyfunction!(fragments::fragment_info, m)?)?;
    m.add_function(wrap_pyfunction!(fragments::fragment_from_fields, m)?)?;
    m.add_function(wrap_pyfunction!(fragment_edits::fragment_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(fragment_edits::fragment_delete_rows, m)?)?;
    m.add_function(wrap_pyfunction!(fragment_edits::fragment_with_file, m)?)?;
    m.add_function(wrap_pyfunction!(fragment_edits::fragment_from_file, m)?)?;
    m.add_function(wrap_pyfunction!(fragment_edits::offsets_bitmap, m)?)?;
    m.add_function(wrap_pyfunction!(fragment_edits::bitmap_offsets, m)?)?;
    m.add_function(wrap_pyfunction!(indexes::drop_index, m)?)?;
    m.add_function(wrap_pyfunction!(indexes::describe_indices, m)?)?;
    m.add_function(wrap_pyfunction!(indexes::btree_statistics, m)?)?;
    m.add_function(wrap_pyfunction!(indexes::prewarm_index, m)?)?;
    m.add_function(wrap_pyfunction!(new_columns::write_new_column_file, m)?)?;
    m.add_function(wrap_pyfunction!(new_columns::commit_new_columns, m)?)?;
    m.add_function(wrap_pyfunction!(new_columns::merge_fragment_columns, m)?)?;
    m.add_function(wrap_pyfunction!(plan::filter_columns, m)?)?;
    m.add_function(wrap_pyfunction!(plan::analyze_scan, m)?)?;
    m.add_function(wrap_pyfunction!(plan::io_counters, m)?)?;
    m.add_function(wrap_pyfunction!(plan::all_files, m)?)?;
    m.add_function(wrap_pyfunction!(plan::version_numbers, m)?)?;
    m.add_function(wrap_pyfunction!(plan::tracked_files, m)?)?;
    m.add_function(wrap_pyfunction!(transactions::read_transaction, m)?)?;
    m.add_function(wrap_pyfunction!(transactions::get_transactions, m)?)?;
    m.add_function(wrap_pyfunction!(schema::schema_to_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(schema::schema_from_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(schema::field_info, m)?)?;
    m.add_function(wrap_pyfunction!(schema::key_fields, m)?)?;
    m.add_function(wrap_pyfunction!(schema::table_fields, m)?)?;
    m.add_function(wrap_pyfunction!(operation_args::commit_operation, m)?)?;
    m.add_function(wrap_pyfunction!(branches::branch_list, m)?)?;
    m.add_function(wrap_pyfunction!(branches::branch_create, m)?)?;
    m.add_function(wrap_pyfunction!(branches::branch_delete, m)?)?;
    m.add_function(wrap_pyfunction!(branches::branch_of, m)?)?;
    m.add_function(wrap_pyfunction!(maps::maps, m)?)?;
    m.add_function(wrap_pyfunction!(project::project, m)?)?;
    m.add_function(wrap_pyfunction!(debug::format_schema, m)?)?;
    m.add_function(wrap_pyfunction!(debug::format_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(debug::format_fragment, m)?)?;
    m.add_function(wrap_pyfunction!(debug::list_transactions, m)?)?;
    m.add_function(wrap_pyfunction!(project::expression_columns, m)?)?;
    m.add_function(wrap_pyfunction!(maps::update_map, m)?)?;
    m.add_function(wrap_pyfunction!(maps::truncate, m)?)?;
    m.add_function(wrap_pyfunction!(maps::version_facts, m)?)?;
    m.add_function(wrap_pyfunction!(maps::data_storage_version, m)?)?;
    m.add_function(wrap_pyfunction!(maps::update_field_maps, m)?)?;
    m.add_function(wrap_pyfunction!(maps::version_summary, m)?)?;
    m.add_function(wrap_pyfunction!(maps::shallow_clone, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
