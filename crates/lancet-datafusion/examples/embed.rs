//! An engine embedding lancet through DataFusion: write a table with a BTree on `id`,
//! register it with a `SessionContext`, and run SQL whose filter the BTree answers.
//!
//! `cargo run -p lancet-datafusion --example embed [DIR]` prints the plan (the lancet scan
//! names the filter pushed into it and the index answering it) and the rows.

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use datafusion::prelude::SessionContext;
use lancet::{CreateOptions, Dataset};
use lancet_datafusion::{LancetTable, TableOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = match std::env::args().nth(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::temp_dir().join(format!("lancet-embed-{}", std::process::id())),
    };
    let uri = dir.join("events");
    let uri = uri.to_str().ok_or("a path that is not UTF-8")?;

    // a table of 100,000 rows in 10 fragments, and a BTree on `id`
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("kind", DataType::Utf8, false),
    ]));
    let ids: Vec<i64> = (0..100_000).collect();
    let kinds: Vec<String> = ids.iter().map(|i| format!("k{}", i % 7)).collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(kinds)),
        ],
    )?;
    let options = CreateOptions {
        max_rows_per_file: 10_000,
        ..Default::default()
    };
    let rows = futures::stream::iter(vec![Ok(batch)]);
    let created = Dataset::create(uri, schema, rows, options).await?;
    let dataset = created.dataset.build_btree("id", None).await?.dataset;

    // the table in DataFusion
    let ctx = SessionContext::new();
    let table = LancetTable::new(dataset, TableOptions::default())?;
    ctx.register_table("events", Arc::new(table))?;
    let query = "SELECT id, kind FROM events WHERE id IN (7, 70000) OR id = 99999 ORDER BY id";
    ctx.sql(&format!("EXPLAIN {query}")).await?.show().await?;
    ctx.sql(query).await?.show().await?;
    Ok(())
}
