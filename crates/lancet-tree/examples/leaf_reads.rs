//! What reading parts of one tree leaf costs: opening a 4096-record leaf held in memory, its
//! `id` column, one row (a range read and a take), and every row; the mean of 400 reads over
//! 50 leaves. The figures behind the point-read paragraph of docs/performance.md.
//!
//! `cargo run --release -p lancet-tree --example leaf_reads`

use std::time::Instant;

use bytes::Bytes;
use lancet_file::{FileStore, WriteOptions};
use lancet_proto::table::{DataFile, DataFragment, DeletionFile};
use lancet_tree::leaf::{encode_records, leaf_schema};
use object_store::path::Path;
use object_store::ObjectStoreExt;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const LEAVES: u64 = 50;
const RECORDS: u64 = 4096;
const READS: usize = 400;

/// A record like `lancet bench commit`'s: one two-field data file, ~7% with a deletion file.
fn record(rng: &mut SmallRng, id: u64) -> DataFragment {
    let rows = 1024 + rng.random_range(0..1u64 << 20);
    DataFragment {
        id,
        files: vec![DataFile {
            path: format!(
                "{:016x}{:016x}.lance",
                rng.random::<u64>(),
                rng.random::<u64>()
            ),
            fields: vec![0, 1],
            column_indices: vec![0, 1],
            file_major_version: 2,
            file_minor_version: 1,
            file_size_bytes: rows * 12,
            base_id: None,
        }],
        deletion_file: (rng.random_range(0..100) < 7).then(|| DeletionFile {
            file_type: 1,
            read_version: 1,
            id: rng.random::<u64>(),
            num_deleted_rows: rng.random_range(1..=rows),
            base_id: None,
        }),
        physical_rows: rows,
        ..Default::default()
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = SmallRng::seed_from_u64(1);
    let schema = leaf_schema();
    let memory = std::sync::Arc::new(object_store::memory::InMemory::new());
    let fs = FileStore::new(memory.clone(), "memory:///")?;
    let mut leaves: Vec<(Path, Bytes)> = Vec::new();
    for l in 0..LEAVES {
        let records: Vec<DataFragment> = (0..RECORDS)
            .map(|i| record(&mut rng, l * RECORDS + i))
            .collect();
        let batch = encode_records(&records).map_err(|v| format!("{v:?}"))?;
        let path = Path::from(format!("leaf-{l}.lance"));
        lancet_file::write_file(&fs, &path, &schema, &[batch], &WriteOptions::default()).await?;
        leaves.push((path.clone(), memory.get(&path).await?.bytes().await?));
    }
    let outlines: Vec<lancet_file::FileOutline> = {
        let mut v = Vec::new();
        for (path, bytes) in &leaves {
            v.push(
                lancet_file::open_bytes_exact(path, bytes.clone(), &schema)
                    .await?
                    .outline(),
            );
        }
        v
    };
    let mut reopen = [0.0f64; 2];
    let mut ms = [0.0f64; 5];
    for i in 0..READS {
        let (path, bytes) = &leaves[i % leaves.len()];
        let row = (i as u64 * 7919) % RECORDS;
        let t = Instant::now();
        let file = lancet_file::open_bytes_exact(path, bytes.clone(), &schema).await?;
        ms[0] += t.elapsed().as_secs_f64();
        let t = Instant::now();
        file.read_columns(&["id"], None).await?;
        ms[1] += t.elapsed().as_secs_f64();
        let t = Instant::now();
        file.read_range(row..row + 1).await?;
        ms[2] += t.elapsed().as_secs_f64();
        let t = Instant::now();
        file.take_rows(&[row]).await?;
        ms[3] += t.elapsed().as_secs_f64();
        let t = Instant::now();
        file.read_all().await?;
        ms[4] += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let again =
            lancet_file::reopen_bytes(path, bytes.clone(), &outlines[i % leaves.len()]).await?;
        reopen[0] += t.elapsed().as_secs_f64();
        let t = Instant::now();
        again.take_rows(&[row]).await?;
        reopen[1] += t.elapsed().as_secs_f64();
    }
    let mean = |x: f64| x / READS as f64 * 1e3;
    println!(
        "leaf {} bytes; mean ms: open {:.3}, id column {:.3}, one row (range) {:.3}, one row (take) {:.3}, every row {:.3}",
        leaves[0].1.len(),
        mean(ms[0]),
        mean(ms[1]),
        mean(ms[2]),
        mean(ms[3]),
        mean(ms[4])
    );
    println!(
        "outline {} bytes; reopen {:.3}, then one row (take) {:.3}",
        outlines[0].size_bytes(),
        mean(reopen[0]),
        mean(reopen[1])
    );
    Ok(())
}
