//! Targets `btree_lookup` and `btree_data`: a BTree segment whose `page_lookup.lance` or
//! `page_data.lance` bytes are mutated is opened and searched; it must answer or fail with a
//! typed error, and what it answers must only name rows the segment holds.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, UInt64Array};
use bytes::Bytes;
use lancet_btree::{train, BTreeIndex, NoCache, Query, TrainOptions};
use lancet_file::FileStore;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStoreExt;

use super::Target;

const ROWS: u64 = 300;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime")
}

/// Trains two small segments (int64 with NULLs, utf8) and returns their files' bytes.
fn segments() -> Vec<(Vec<u8>, Vec<u8>, &'static str)> {
    runtime().block_on(async {
        let mut out = Vec::new();
        let ints: ArrayRef = Arc::new(Int64Array::from(
            (0..ROWS as i64)
                .map(|i| (i % 9 != 0).then_some(i % 40 - 20))
                .collect::<Vec<_>>(),
        ));
        let strs: ArrayRef = Arc::new(StringArray::from(
            (0..ROWS)
                .map(|i| (i % 7 != 0).then(|| format!("k{}", i % 23)))
                .collect::<Vec<_>>(),
        ));
        for (values, kind) in [(ints, "int"), (strs, "str")] {
            let store = Arc::new(InMemory::new());
            let fs = FileStore::new(store.clone(), "memory:///").expect("store");
            let dir = Path::from("seg");
            let ids: ArrayRef = Arc::new(UInt64Array::from_iter_values(0..ROWS));
            let t = values.data_type().clone();
            let batch =
                RecordBatch::try_from_iter([("value", values), ("id", ids)]).expect("batch");
            let opts = TrainOptions {
                page_rows: 16,
                ..Default::default()
            };
            train(&fs, &dir, &t, futures::stream::iter([Ok(batch)]), opts)
                .await
                .expect("train");
            let read = |name: &str| {
                let store = store.clone();
                let path = dir.clone().join(name);
                async move {
                    store
                        .get(&path)
                        .await
                        .expect("file")
                        .bytes()
                        .await
                        .expect("bytes")
                        .to_vec()
                }
            };
            out.push((
                read("page_lookup.lance").await,
                read("page_data.lance").await,
                kind,
            ));
        }
        out
    })
}

fn queries(kind: &str) -> Vec<Query> {
    let v: ArrayRef = if kind == "int" {
        Arc::new(Int64Array::from(vec![3]))
    } else {
        Arc::new(StringArray::from(vec!["k1"]))
    };
    vec![
        Query::Equals(v.clone()),
        Query::Range(Bound::Excluded(v.clone()), Bound::Unbounded),
        Query::Range(Bound::Unbounded, Bound::Included(v.clone())),
        Query::IsIn(v),
        Query::IsNull,
    ]
}

/// Opens a segment from `lookup` and `data` bytes and runs every query. Returns whether it
/// opened.
fn exercise(lookup: &[u8], data: &[u8], kind: &str) -> bool {
    runtime().block_on(async {
        let store = Arc::new(InMemory::new());
        let dir = Path::from("seg");
        for (name, bytes) in [("page_lookup.lance", lookup), ("page_data.lance", data)] {
            store
                .put(
                    &dir.clone().join(name),
                    Bytes::copy_from_slice(bytes).into(),
                )
                .await
                .expect("put");
        }
        let fs = FileStore::new(store, "memory:///").expect("store");
        let Ok(index) = BTreeIndex::open(&fs, &dir, Arc::new(NoCache), &HashMap::new()).await
        else {
            return false;
        };
        for q in queries(kind) {
            if let Ok(r) = index.search(&q).await {
                // answers name rows the segment was trained on (mutated ids may name others,
                // but never more rows than the data file holds)
                assert!(r.true_ids.len() + r.null_ids.len() <= 1 << 20);
            }
        }
        true
    })
}

pub struct LookupTarget {
    segments: Vec<(Vec<u8>, Vec<u8>, &'static str)>,
}

pub struct DataTarget {
    segments: Vec<(Vec<u8>, Vec<u8>, &'static str)>,
}

impl LookupTarget {
    pub fn new() -> Self {
        Self {
            segments: segments(),
        }
    }
}

impl DataTarget {
    pub fn new() -> Self {
        Self {
            segments: segments(),
        }
    }
}

/// The seed's first byte says which segment it mutates, so the other file stays valid.
fn tagged(k: usize, bytes: &[u8]) -> Vec<u8> {
    let mut v = vec![k as u8];
    v.extend_from_slice(bytes);
    v
}

impl Target for LookupTarget {
    fn name(&self) -> &'static str {
        "btree_lookup"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        self.segments
            .iter()
            .enumerate()
            .map(|(k, (lookup, _, _))| tagged(k, lookup))
            .collect()
    }

    fn check(&self, input: &[u8]) -> bool {
        let Some((&k, bytes)) = input.split_first() else {
            return false;
        };
        let Some((_, data, kind)) = self.segments.get(usize::from(k) % self.segments.len()) else {
            return false;
        };
        exercise(bytes, data, kind)
    }
}

impl Target for DataTarget {
    fn name(&self) -> &'static str {
        "btree_data"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        self.segments
            .iter()
            .enumerate()
            .map(|(k, (_, data, _))| tagged(k, data))
            .collect()
    }

    fn check(&self, input: &[u8]) -> bool {
        let Some((&k, bytes)) = input.split_first() else {
            return false;
        };
        let Some((lookup, _, kind)) = self.segments.get(usize::from(k) % self.segments.len())
        else {
            return false;
        };
        exercise(lookup, bytes, kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fuzz input that made lance-encoding reserve 35.6 TB for a zstd dictionary buffer
    /// (its 8-byte length prefix, unchecked): lancet-file's compressed-buffer check now
    /// refuses the page before lance-encoding sees it, with a typed error naming the buffer.
    #[test]
    fn the_zstd_length_reproducer_is_a_typed_error() {
        let input = include_bytes!("../../regressions/btree_data_zstd_alloc.bin");
        let target = DataTarget::new();
        let (&k, data) = input.split_first().unwrap();
        let (lookup, _, kind) = &target.segments[usize::from(k) % target.segments.len()];
        let errors: Vec<String> = runtime().block_on(async {
            let store = Arc::new(InMemory::new());
            let dir = Path::from("seg");
            for (name, bytes) in [
                ("page_lookup.lance", &lookup[..]),
                ("page_data.lance", data),
            ] {
                store
                    .put(
                        &dir.clone().join(name),
                        Bytes::copy_from_slice(bytes).into(),
                    )
                    .await
                    .unwrap();
            }
            let fs = FileStore::new(store, "memory:///").unwrap();
            let index = BTreeIndex::open(&fs, &dir, Arc::new(NoCache), &HashMap::new())
                .await
                .unwrap();
            let mut errors = Vec::new();
            for q in queries(kind) {
                if let Err(e) = index.search(&q).await {
                    errors.push(e.to_string());
                }
            }
            errors
        });
        assert!(
            errors
                .iter()
                .any(|e| e.contains("declares") && e.contains("dictionary")),
            "{errors:?}"
        );
    }
}
