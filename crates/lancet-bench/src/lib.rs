//! lancet's benchmark harness: the workloads behind `lancet bench commit`, `lancet bench
//! cleanup` and `lancet bench search` (the CLI parses their arguments and calls here).
//!
//! A harness, not a library for tables: it builds large tables quickly from a pool of a few
//! real data files shared by millions of fragment records ([`workload::Pool`]), commits
//! through the facade (`Storage::commit_actions`, `Dataset::append`, `Dataset::commit`), and
//! reports what each commit wrote and how long it took, as JSON or text on stdout.
//!
//! Its own crate so that the `lancet` command only parses and prints, and so that an
//! embedder can run the same workloads against its own store.

pub mod cleanup;
pub mod commit;
mod error;
pub mod search;
pub mod workload;

pub use error::BenchError;
