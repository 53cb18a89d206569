//! `lancet bench commit`: what a commit costs on a large table, flat or tree.
//!
//! Builds a table of `fragments` realistic records (one two-field data file each, ~7% with a
//! deletion file; metadata only, no data files are needed), as a flat manifest or converted
//! into a tree with the writer's default policy. Then makes `commits` commits, each giving
//! `changed` random fragments a new deletion file. Bytes written per commit are every object the
//! commit puts, manifest included (as `Dataset::commit_measured` reports them); latency is the whole
//! `Dataset::commit_with_actions` call (objects, manifest, reopening the new version). Finally a
//! cold open of the last version resolves one fragment: the objects it reads and its time.

use std::time::Instant;

use lancet::paths::manifest::{write_manifest, NamingScheme};
use lancet::paths::DatasetStore;
use lancet::proto::table::{DataFile, DataFragment, DeletionFile, Manifest};
use lancet::tree::{Action, RootInfo, TreeWriterConfig};
use lancet::{Caches, Dataset};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::error::CliError;

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
struct Report {
    bytes_written_per_commit: f64,
    commit_latency_ms: Latency,
    open_to_first_resolve: OpenToFirstResolve,
    setup_s: f64,
}

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
}

pub async fn commit(o: Options) -> Result<(), CliError> {
    if o.fragments == 0 || o.changed > o.fragments {
        return Err(CliError::Usage(
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
    let caches = Caches::new(Default::default());
    let mut rng = SmallRng::seed_from_u64(7);

    let setup = Instant::now();
    eprintln!("bench: writing {} fragments", o.fragments);
    let manifest = Manifest {
        version: 1,
        fragments: (0..o.fragments).map(|id| record(&mut rng, id)).collect(),
        max_fragment_id: u32::try_from(o.fragments - 1).ok(),
        reader_feature_flags: lancet::paths::flags::DELETION_FILES,
        writer_feature_flags: lancet::paths::flags::DELETION_FILES,
        ..Default::default()
    };
    write_manifest(&store, &manifest, &[], &[], NamingScheme::V2, None).await?;
    drop(manifest);
    let mut ds = Dataset::open_with(store.clone(), None, caches.clone()).await?;
    let config = o.config.clone();
    if o.tree {
        eprintln!("bench: converting to a tree");
        ds = ds.convert_to_tree(&config, |_, _| {}).await?;
    }
    let setup_s = setup.elapsed().as_secs_f64();

    let mut latencies = Vec::with_capacity(o.commits as usize);
    let mut bytes = 0u64;
    for c in 0..o.commits {
        let actions: Vec<(u64, Action)> = (0..o.changed)
            .map(|_| {
                let id = rng.random_range(0..o.fragments);
                let rows = 1024; // every record has at least this many rows
                (
                    id,
                    Action::AddDeletionFile(DeletionFile {
                        file_type: 1,
                        read_version: ds.version(),
                        id: rng.random::<u64>(),
                        num_deleted_rows: rng.random_range(1..=rows),
                        base_id: None,
                    }),
                )
            })
            .collect();
        let start = Instant::now();
        let committed = ds
            .commit_measured(ds.manifest().clone(), &[], &actions, &config)
            .await?;
        latencies.push(start.elapsed().as_secs_f64() * 1000.0);
        bytes += committed.bytes_written;
        ds = committed.dataset;
        if (c + 1) % 10 == 0 {
            eprintln!("bench: {} of {} commits", c + 1, o.commits);
        }
    }

    let cold = Caches::new(Default::default());
    let start = Instant::now();
    let opened = Dataset::open_with(store.clone(), Some(ds.version()), cold.clone()).await?;
    let probe = rng.random_range(0..o.fragments);
    let found = opened.fragment(probe).await?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    if found.is_none() {
        return Err(CliError::Usage(format!("fragment {probe} did not resolve")));
    }
    let objects = 1 + match opened.tree() {
        Some(t) => {
            u64::from(matches!(t.root_info(), RootInfo::External { .. }))
                + cold.tree_node_stats().misses
        }
        None => 0,
    };

    latencies.sort_by(f64::total_cmp);
    let report = Report {
        bytes_written_per_commit: if o.commits == 0 {
            0.0
        } else {
            bytes as f64 / o.commits as f64
        },
        commit_latency_ms: Latency {
            p50: percentile(&latencies, 0.50),
            p95: percentile(&latencies, 0.95),
            p99: percentile(&latencies, 0.99),
        },
        open_to_first_resolve: OpenToFirstResolve { objects, ms },
        setup_s,
    };
    if o.json {
        println!(
            "{}",
            serde_json::to_string(&report).map_err(std::io::Error::other)?
        );
    } else {
        println!(
            "{} commits of {} changed fragments on {} fragments ({}): {:.0} bytes written per commit, latency p50 {:.2} ms p95 {:.2} ms p99 {:.2} ms; cold open + resolve {} objects in {:.2} ms; setup {:.1} s",
            o.commits,
            o.changed,
            o.fragments,
            if o.tree { "tree" } else { "flat" },
            report.bytes_written_per_commit,
            report.commit_latency_ms.p50,
            report.commit_latency_ms.p95,
            report.commit_latency_ms.p99,
            objects,
            ms,
            setup_s
        );
    }
    Ok(())
}
