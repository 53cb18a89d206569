//! `lancet bench commit`: what a commit costs on a large table, flat or tree.
//!
//! Builds a table of `fragments` realistic records (one two-field data file each, ~7% with a
//! deletion file; the data files a few shared real files, see [`crate::workload::Pool`]), as
//! a flat manifest or converted into a tree with the writer's default policy. Then makes `commits` commits, each giving
//! `changed` random fragments a new deletion file. Bytes written per commit are every object the
//! commit puts, manifest included (as `Storage::commit_actions` reports them); latency is the whole
//! `Storage::commit_actions` call (objects, manifest, reopening the new version). Finally a
//! cold open of the last version resolves one fragment: the objects it reads and its time.
//!
//! With `rows`, each commit is instead a real append through `Dataset::append`: one batch of
//! `rows` rows of the table's schema (`id` int64, `x` float64) written as a new data file and
//! committed as an Append; latency then includes writing the data file (its bytes are not
//! counted in bytes written, which stay metadata).
//!
//! With `writers` > 1, that many writers commit at once, each on its own fragments (ids
//! congruent to its number): every commit races the others, and a lost race is rebased over
//! what won (`Committed::attempts` counts the attempts). Latency then includes the rebases.

use std::time::Instant;

use lancet::paths::DatasetStore;
use lancet::proto::table::DataFragment;
use lancet::tree::{Action, RootInfo, TreeWriterConfig};
use lancet::{Caches, Dataset};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::error::BenchError;
use crate::workload::{
    data_schema, record, stage_deletion_files, write_deletion_files, Generator, Pool, Workload,
};

#[derive(Serialize)]
struct Latency {
    p50: f64,
    p95: f64,
    p99: f64,
}

#[derive(Serialize)]
struct OpenToFirstResolve {
    objects: u64,
    ms: f64,
}

#[derive(Serialize)]
struct Attempts {
    mean: f64,
    max: u32,
}

/// What one kind of object cost, per commit on average.
#[derive(Serialize, Default, Clone, Copy)]
struct KindCost {
    objects: f64,
    bytes: f64,
}

/// Objects written per commit, by kind.
#[derive(Serialize, Default)]
struct Kinds {
    manifest: KindCost,
    transaction: KindCost,
    root: KindCost,
    node: KindCost,
    leaf: KindCost,
}

/// One measured commit.
struct Sample {
    ms: f64,
    bytes: u64,
    attempts: u32,
    /// Objects and bytes by kind: manifest, transaction, root, node, leaf.
    kinds: [(u64, u64); 5],
}

impl Sample {
    fn of(ms: f64, c: &lancet::Committed) -> Self {
        let mut kinds = [(0u64, 0u64); 5];
        let manifest = c.dataset.storage().manifest_file().entry.size;
        let mut tree = 0;
        for (path, size) in &c.tree_objects {
            use lancet::paths::TreeObjectKind;
            let i = match lancet::paths::validate_tree_path(path) {
                Ok(TreeObjectKind::Root) => 2,
                Ok(TreeObjectKind::Node) => 3,
                _ => 4,
            };
            if let Some(k) = kinds.get_mut(i) {
                *k = (k.0 + 1, k.1 + size);
            }
            tree += size;
        }
        kinds[0] = (1, manifest);
        let tree_count = c.tree_objects.len() as u64;
        kinds[1] = (
            c.objects_written.saturating_sub(tree_count + 1),
            c.bytes_written.saturating_sub(manifest + tree),
        );
        Sample {
            ms,
            bytes: c.bytes_written,
            attempts: c.attempts,
            kinds,
        }
    }
}

#[derive(Serialize)]
struct Report {
    workload: Workload,
    layout: &'static str,
    fragments: u64,
    commits: u64,
    changed: u64,
    bytes_written_per_commit: f64,
    bytes_per_commit_p50: f64,
    /// Objects and bytes per commit by kind (means over the run).
    per_kind: Kinds,
    commit_latency_ms: Latency,
    open_to_first_resolve: OpenToFirstResolve,
    setup_s: f64,
    /// The setup's one commit of every fragment (an Upsert each) on the empty table: what a
    /// large distributed append costs, judged by the invariants like any commit.
    setup_commit_s: f64,
    writers: u64,
    /// Attempts per commit (1 + races lost and rebased over).
    attempts: Attempts,
    /// Commits per second over the measured phase, all writers together.
    commits_per_s: f64,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i.min(sorted.len() - 1)).copied().unwrap_or(0.0)
}

pub struct Options {
    pub fragments: u64,
    pub commits: u64,
    pub changed: u64,
    pub tree: bool,
    pub store: Option<String>,
    pub json: bool,
    /// The tree writer's policy.
    pub config: TreeWriterConfig,
    /// Concurrent writers (1: one writer, no races).
    pub writers: u64,
    /// The node cache's capacity (default: the facade's).
    pub node_cache_bytes: Option<u64>,
    /// Build a tree table from its first B fragments, the rest appended B per commit.
    pub build_batch: Option<u64>,
    /// Each commit appends this many rows as a new fragment (a data file and an Append).
    pub rows: Option<u64>,
    /// What each commit changes.
    pub workload: Workload,
}

/// `n` rows of [`data_schema`](crate::workload::data_schema) from `start`.
fn data_rows(start: i64, n: i64) -> Result<arrow_array::RecordBatch, BenchError> {
    let ids: Vec<i64> = (start..start + n).collect();
    let x: Vec<f64> = ids.iter().map(|i| *i as f64 * 0.5).collect();
    let w = arrow_array::new_null_array(&arrow_schema::DataType::Int64, ids.len());
    arrow_array::RecordBatch::try_new(
        data_schema(),
        vec![
            std::sync::Arc::new(arrow_array::Int64Array::from(ids)),
            std::sync::Arc::new(arrow_array::Float64Array::from(x)),
            w,
        ],
    )
    .map_err(|e| BenchError::Usage(e.to_string()))
}

/// One writer's commits: `commits` commits of the workload, each timed, with its bytes and
/// attempts. A `delete` writer changes only the fragments with `id % writers == w`.
#[allow(clippy::too_many_arguments)]
async fn writer(
    mut ds: Dataset,
    w: u64,
    writers: u64,
    mut generator: Generator,
    commits: u64,
    changed: u64,
    config: TreeWriterConfig,
    progress: bool,
    rows: Option<u64>,
) -> Result<Vec<Sample>, BenchError> {
    let mut rng = SmallRng::seed_from_u64(7 + w);
    let mut out = Vec::with_capacity(commits as usize);
    for c in 0..commits {
        if let Some(n) = rows {
            let start_row = i64::try_from((w * commits + c) * n).unwrap_or(0);
            let batch = data_rows(start_row, i64::try_from(n).unwrap_or(0))?;
            let start = Instant::now();
            let committed = ds.append(futures::stream::iter([Ok(batch)])).await?;
            out.push(Sample::of(
                start.elapsed().as_secs_f64() * 1000.0,
                &committed,
            ));
            ds = committed.dataset;
            continue;
        }
        let actions = generator.actions(&mut rng, changed, ds.version(), |id| id % writers == w);
        // written before the commit (and its clock), as a writer writes them
        stage_deletion_files(&ds, &actions).await?;
        let mut manifest = ds.storage().manifest().clone();
        manifest.next_row_id = manifest.next_row_id.max(generator.next_row_id);
        let start = Instant::now();
        let committed = ds
            .storage()
            .commit_actions(manifest, &[], &actions, &config)
            .await?;
        out.push(Sample::of(
            start.elapsed().as_secs_f64() * 1000.0,
            &committed,
        ));
        ds = committed.dataset;
        if progress && (c + 1) % 10 == 0 {
            eprintln!("bench: {} of {} commits", c + 1, commits);
        }
    }
    Ok(out)
}

pub async fn commit(o: Options) -> Result<(), BenchError> {
    if o.fragments == 0 || o.changed > o.fragments {
        return Err(BenchError::Usage(
            "--fragments must be positive and --changed at most --fragments".into(),
        ));
    }
    let temp;
    let uri = match &o.store {
        Some(uri) => uri.clone(),
        None => {
            temp = tempfile::tempdir()?;
            temp.path().to_string_lossy().into_owned()
        }
    };
    let store = DatasetStore::create(&uri)?;
    let defaults = lancet::CacheConfig::default();
    let caches = Caches::new(lancet::CacheConfig {
        node_bytes: o.node_cache_bytes.unwrap_or(defaults.node_bytes),
        ..defaults
    });
    let mut rng = SmallRng::seed_from_u64(7);

    let setup = Instant::now();
    eprintln!("bench: writing {} fragments", o.fragments);
    let pool = Pool::write(&store).await?;
    let mut records: Vec<_> = (0..o.fragments)
        .map(|id| record(&mut rng, id, &pool))
        .collect();
    let generator = Generator::new(o.workload, &mut records, pool);
    let deletion_files = records
        .iter()
        .filter_map(|f| f.deletion_file.map(|d| (f.id, d)))
        .collect();
    write_deletion_files(&store, deletion_files).await?;
    // with --build-batch, the first B are converted and the rest appended B per commit
    let batch = match o.build_batch {
        Some(b) if o.tree && b > 0 && b < o.fragments => b,
        Some(_) if !o.tree => {
            return Err(BenchError::Usage(
                "--build-batch builds a tree table".into(),
            ))
        }
        _ => o.fragments,
    };
    let rest = records.split_off(usize::try_from(batch).unwrap_or(usize::MAX));
    let row_ids_end = |fragments: &[DataFragment]| -> u64 {
        match o.workload.stable_row_ids() {
            true => fragments.iter().map(|f| f.physical_rows).sum(),
            false => 0,
        }
    };
    let mut next_row_id = row_ids_end(&records);
    // the table through the public write path: created empty with the bench's schema (the
    // fields the pool's files hold), then the records committed as storage actions, judged by
    // the invariants (data files read, deletion files looked up) like any commit
    let empty = Dataset::create(
        &uri,
        data_schema(),
        futures::stream::empty(),
        lancet::CreateOptions {
            stable_row_ids: o.workload.stable_row_ids(),
            data_storage_version: lancet::file::FileVersion::V2_1,
            ..Default::default()
        },
    )
    .await?
    .dataset;
    let empty = Dataset::open_with(store.clone(), Some(empty.version()), caches.clone()).await?;
    let mut manifest = empty.storage().manifest().clone();
    manifest.next_row_id = manifest.next_row_id.max(next_row_id);
    let actions: Vec<(u64, Action)> = records
        .into_iter()
        .map(|f| (f.id, Action::Upsert(Box::new(f))))
        .collect();
    let big_commit = Instant::now();
    empty
        .storage()
        .commit_actions(manifest, &[], &actions, &TreeWriterConfig::default())
        .await?;
    let setup_commit_s = big_commit.elapsed().as_secs_f64();
    drop(actions);
    let mut ds = Dataset::open_with(store.clone(), None, caches.clone()).await?;
    let config = o.config.clone();
    if o.tree {
        eprintln!("bench: converting to a tree");
        ds = ds
            .storage()
            .convert_to_tree(&config, |_, _| {})
            .await?
            .dataset;
        let mut rest = rest.into_iter().peekable();
        while rest.peek().is_some() {
            let chunk: Vec<_> = rest
                .by_ref()
                .take(usize::try_from(batch).unwrap_or(1))
                .collect();
            eprintln!(
                "bench: appending fragments from {}",
                chunk.first().map_or(0, |f| f.id)
            );
            next_row_id += row_ids_end(&chunk);
            let actions: Vec<(u64, Action)> = chunk
                .into_iter()
                .map(|f| (f.id, Action::Upsert(Box::new(f))))
                .collect();
            let mut manifest = ds.storage().manifest().clone();
            manifest.next_row_id = manifest.next_row_id.max(next_row_id);
            stage_deletion_files(&ds, &actions).await?;
            ds = ds
                .storage()
                .commit_actions(manifest, &[], &actions, &config)
                .await?
                .dataset;
        }
    }
    let setup_s = setup.elapsed().as_secs_f64();

    let writers = o.writers.max(1);
    if writers > 1 && o.workload != Workload::Delete {
        return Err(BenchError::Usage(
            "several writers run the delete workload only (each on its own fragments)".into(),
        ));
    }
    let measured = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        tasks.push(tokio::spawn(writer(
            ds.clone(),
            w,
            writers,
            generator.clone(),
            o.commits,
            o.changed,
            config.clone(),
            w == 0,
            o.rows,
        )));
    }
    let mut results = Vec::new();
    for t in tasks {
        results.extend(t.await.map_err(std::io::Error::other)??);
    }
    let elapsed = measured.elapsed().as_secs_f64();
    let ds = Dataset::open_with(store.clone(), None, caches.clone()).await?;
    let mut latencies: Vec<f64> = results.iter().map(|r| r.ms).collect();
    let bytes: u64 = results.iter().map(|r| r.bytes).sum();
    let attempts = Attempts {
        mean: results.iter().map(|r| f64::from(r.attempts)).sum::<f64>()
            / results.len().max(1) as f64,
        max: results.iter().map(|r| r.attempts).max().unwrap_or(0),
    };
    let total = results.len() as u64;
    let per = |i: usize| {
        let (objects, bytes) = results.iter().fold((0u64, 0u64), |acc, r| {
            let k = r.kinds.get(i).copied().unwrap_or_default();
            (acc.0 + k.0, acc.1 + k.1)
        });
        let n = total.max(1) as f64;
        KindCost {
            objects: objects as f64 / n,
            bytes: bytes as f64 / n,
        }
    };
    let per_kind = Kinds {
        manifest: per(0),
        transaction: per(1),
        root: per(2),
        node: per(3),
        leaf: per(4),
    };

    let cold = Caches::new(Default::default());
    let start = Instant::now();
    let opened = Dataset::open_with(store.clone(), Some(ds.version()), cold.clone()).await?;
    let probe = rng.random_range(0..o.fragments);
    let found = opened.storage().fragment(probe).await?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    if found.is_none() {
        return Err(BenchError::Usage(format!(
            "fragment {probe} did not resolve"
        )));
    }
    let objects = 1 + match opened.storage().tree() {
        Some(t) => {
            u64::from(matches!(t.root_info(), RootInfo::External { .. }))
                + cold.tree_node_stats().misses
        }
        None => 0,
    };

    latencies.sort_by(f64::total_cmp);
    let mut sizes: Vec<f64> = results.iter().map(|r| r.bytes as f64).collect();
    sizes.sort_by(f64::total_cmp);
    let report = Report {
        workload: o.workload,
        layout: if o.tree { "tree" } else { "flat" },
        fragments: o.fragments,
        commits: o.commits,
        changed: o.changed,
        per_kind,
        bytes_per_commit_p50: percentile(&sizes, 0.50),
        bytes_written_per_commit: if total == 0 {
            0.0
        } else {
            bytes as f64 / total as f64
        },
        commit_latency_ms: Latency {
            p50: percentile(&latencies, 0.50),
            p95: percentile(&latencies, 0.95),
            p99: percentile(&latencies, 0.99),
        },
        open_to_first_resolve: OpenToFirstResolve { objects, ms },
        setup_s,
        setup_commit_s,
        writers,
        attempts,
        commits_per_s: if elapsed > 0.0 {
            total as f64 / elapsed
        } else {
            0.0
        },
    };
    if o.json {
        println!(
            "{}",
            serde_json::to_string(&report).map_err(std::io::Error::other)?
        );
    } else {
        println!(
            "{:?}: {} writers x {} commits of {} changed fragments on {} fragments ({}): {:.0} bytes written per commit (p50 {:.0}), latency p50 {:.2} ms p95 {:.2} ms p99 {:.2} ms, {:.2} attempts per commit (max {}); cold open + resolve {} objects in {:.2} ms; setup {:.1} s (its commit of every fragment {:.1} s)",
            o.workload,
            writers,
            o.commits,
            o.changed,
            o.fragments,
            if o.tree { "tree" } else { "flat" },
            report.bytes_written_per_commit,
            report.bytes_per_commit_p50,
            report.commit_latency_ms.p50,
            report.commit_latency_ms.p95,
            report.commit_latency_ms.p99,
            report.attempts.mean,
            report.attempts.max,
            objects,
            ms,
            setup_s,
            setup_commit_s
        );
        let k = &report.per_kind;
        println!(
            "per commit: manifest {:.0} B, transaction {:.0} B, root {:.2} objects {:.0} B, node {:.2} objects {:.0} B, leaf {:.2} objects {:.0} B",
            k.manifest.bytes,
            k.transaction.bytes,
            k.root.objects,
            k.root.bytes,
            k.node.objects,
            k.node.bytes,
            k.leaf.objects,
            k.leaf.bytes
        );
    }
    Ok(())
}
