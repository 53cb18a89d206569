//! `lancet bench search`: hot [`lancet::Dataset::search`] latency on an existing table.
//!
//! Opens the table once with a fresh session (moka caches), parses the filter once, runs
//! `warmup` searches (filling the page and index caches), then times `iterations` searches
//! one after another, deletion vectors applied and row ids out, as an embedding engine
//! would call it. Reports the median, p95 and fastest latency in microseconds and the rows
//! matched. `benches/btree_compare.py --interleaved` alternates this command with pylance's
//! own hot queries, so both sides are measured under the same machine conditions.

use std::time::Instant;

use lancet::{Caches, Dataset, Filter};
use serde_json::json;

use crate::error::BenchError;

pub struct Options {
    pub dataset: String,
    pub filter: String,
    pub iterations: u64,
    pub warmup: u64,
    pub json: bool,
}

pub async fn run(o: Options) -> Result<(), BenchError> {
    let filter = Filter::parse(&o.filter)?;
    let store = lancet::paths::DatasetStore::open(&o.dataset)?;
    let ds = Dataset::open_with(store, None, Caches::new(Default::default())).await?;
    let mut rows = 0;
    for _ in 0..o.warmup {
        rows = ds.search(&filter).await?.row_ids.len();
    }
    let mut micros = Vec::with_capacity(o.iterations as usize);
    for _ in 0..o.iterations.max(1) {
        let t = Instant::now();
        let found = ds.search(&filter).await?;
        micros.push(t.elapsed().as_secs_f64() * 1e6);
        rows = found.row_ids.len();
    }
    micros.sort_by(f64::total_cmp);
    let at = |p: f64| {
        let i = ((micros.len() - 1) as f64 * p).round() as usize;
        micros.get(i).copied().unwrap_or(0.0)
    };
    let (median, p95, fastest) = (at(0.5), at(0.95), at(0.0));
    if o.json {
        println!(
            "{}",
            json!({
                "filter": o.filter,
                "rows": rows,
                "iterations": micros.len(),
                "median_us": median,
                "p95_us": p95,
                "min_us": fastest,
            })
        );
    } else {
        println!(
            "{}: {rows} rows; median {median:.1} us, p95 {p95:.1} us, fastest {fastest:.1} us over {} searches",
            o.filter,
            micros.len()
        );
    }
    Ok(())
}
