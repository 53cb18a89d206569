//! `confine`: what confining a local table costs (issue 41 item 7), the confined store and
//! the plain `LocalFileSystem` side by side in one run, on the same files:
//!
//! - `get_range_4k`: 4 KiB from a 1 MiB data file under `data/` (a page read);
//! - `get_whole`: a 2 KiB file read whole (a manifest or deletion file);
//! - `list_1000`: listing a directory of 1,000 files (cleanup's listing).
//!
//! Run: `cargo bench -p lancet-paths --bench confine`.

use criterion::{criterion_group, criterion_main, Criterion};
use futures::TryStreamExt;
use lancet_paths::confine::Confined;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = std::fs::canonicalize(dir.path()).expect("its real location");
    std::fs::create_dir_all(root.join("data")).expect("data/");
    std::fs::create_dir_all(root.join("_versions")).expect("_versions/");
    std::fs::write(root.join("data/a.lance"), vec![7u8; 1 << 20]).expect("a data file");
    std::fs::write(root.join("small.bin"), vec![1u8; 2048]).expect("a small file");
    for i in 0..1000 {
        std::fs::write(root.join(format!("_versions/{i}.manifest")), b"m").expect("a file");
    }
    let path = |p: &str| Path::from_absolute_path(root.join(p)).expect("an absolute path");
    let (data, small, versions) = (path("data/a.lance"), path("small.bin"), path("_versions"));
    let stores: [(&str, std::sync::Arc<dyn ObjectStore>); 2] = [
        ("plain", std::sync::Arc::new(LocalFileSystem::new())),
        ("confined", std::sync::Arc::new(Confined::new(root.clone()))),
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("confine");
    for (name, store) in &stores {
        group.bench_function(format!("get_range_4k/{name}"), |b| {
            b.iter(|| {
                rt.block_on(store.get_range(&data, 65_536..69_632))
                    .expect("read")
            })
        });
        group.bench_function(format!("get_whole/{name}"), |b| {
            b.iter(|| {
                rt.block_on(async { store.get(&small).await?.bytes().await })
                    .expect("read")
            })
        });
        group.bench_function(format!("list_1000/{name}"), |b| {
            b.iter(|| {
                let listed: Vec<_> = rt
                    .block_on(store.list(Some(&versions)).try_collect())
                    .expect("listed");
                assert_eq!(listed.len(), 1000);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
