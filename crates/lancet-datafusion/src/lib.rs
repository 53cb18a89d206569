//! lancet tables in DataFusion: a `TableProvider` over the facade's `Dataset`, so a Rust
//! engine reads (and appends to) Lance tables, flat or fragment-tree, with SQL or DataFrames.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use datafusion::prelude::SessionContext;
//! use lancet_datafusion::{LancetTable, TableOptions};
//!
//! let dataset = lancet::Dataset::open("/data/events").await?;
//! let ctx = SessionContext::new();
//! ctx.register_table("events", Arc::new(LancetTable::new(dataset, TableOptions::default())?))?;
//! ctx.sql("SELECT count(*) FROM events WHERE id = 42").await?.show().await?;
//! # Ok(()) }
//! ```
//!
//! What is pushed into lancet, and what is not, is stated where it is decided: the filter
//! forms in [`filters`], projection, limit, statistics and partitions in [`table`], what a
//! partition reads in [`exec`], appends in [`sink`], sessions and errors in [`query`]. A filter lancet does not answer exactly
//! is left to DataFusion: no query gets another answer than DataFusion over the same rows.
//!
//! This crate is its own so that engines embedding lancet without DataFusion do not compile
//! it.

// the futures of the facade's write path are deep for the compiler's Send proof
#![recursion_limit = "256"]
// Stored bytes are hostile: no unwrap, expect or unchecked index outside tests.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod exec;
pub mod filters;
pub mod query;
pub mod sink;
pub mod table;

pub use exec::LancetScanExec;
pub use table::{LancetTable, TableOptions};
