//! lancet-btree against a brute-force filter: random data (duplicates across pages, NULL-only
//! pages, float NaN/±0/±inf, unicode strings), random predicates including three-valued NOT,
//! AND and OR, random page sizes.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::DataType;
use lancet_btree::{train, BTreeIndex, NoCache, NullableIdSet, Query, TrainOptions};
use lancet_file::FileStore;
use object_store::memory::InMemory;
use object_store::path::Path;
use proptest::prelude::*;
use roaring::RoaringTreemap;

#[derive(Debug, Clone, Copy, PartialEq)]
enum V {
    Null,
    I(i64),
    F(f64),
}

/// SQL comparison: NULL if either side is NULL; floats in total order with -0.0 = 0.0.
fn sql_cmp(a: V, b: V) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (V::Null, _) | (_, V::Null) => None,
        (V::I(x), V::I(y)) => Some(x.cmp(&y)),
        (V::F(x), V::F(y)) => {
            let norm = |v: f64| if v == 0.0 { 0.0 } else { v };
            Some(norm(x).total_cmp(&norm(y)))
        }
        _ => unreachable!(),
    }
}

#[derive(Debug, Clone)]
enum Pred {
    Eq(V),
    Lt(V, bool),
    Gt(V, bool),
    Between(V, V),
    In(Vec<V>),
    IsNull,
    Not(Box<Pred>),
    And(Box<Pred>, Box<Pred>),
    Or(Box<Pred>, Box<Pred>),
}

/// Kleene evaluation of one row: Some(true/false) or None (NULL).
fn eval(p: &Pred, x: V) -> Option<bool> {
    use std::cmp::Ordering::*;
    match p {
        Pred::Eq(v) => sql_cmp(x, *v).map(|o| o == Equal),
        Pred::Lt(v, incl) => sql_cmp(x, *v).map(|o| o == Less || (*incl && o == Equal)),
        Pred::Gt(v, incl) => sql_cmp(x, *v).map(|o| o == Greater || (*incl && o == Equal)),
        Pred::Between(a, b) => {
            let lo = sql_cmp(x, *a).map(|o| o != Less);
            let hi = sql_cmp(x, *b).map(|o| o != Greater);
            kleene_and(lo, hi)
        }
        Pred::In(vs) => {
            let mut any_null = false;
            for v in vs {
                match sql_cmp(x, *v) {
                    Some(Equal) => return Some(true),
                    None => any_null = true,
                    _ => {}
                }
            }
            if any_null {
                None
            } else {
                Some(false)
            }
        }
        Pred::IsNull => Some(x == V::Null),
        Pred::Not(q) => eval(q, x).map(|b| !b),
        Pred::And(a, b) => kleene_and(eval(a, x), eval(b, x)),
        Pred::Or(a, b) => match (eval(a, x), eval(b, x)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
    }
}

fn kleene_and(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

fn scalar(v: V, t: &DataType) -> ArrayRef {
    match (v, t) {
        (V::I(x), _) => Arc::new(Int64Array::from(vec![x])),
        (V::F(x), _) => Arc::new(Float64Array::from(vec![x])),
        (V::Null, DataType::Int64) => Arc::new(Int64Array::from(vec![None::<i64>])),
        (V::Null, _) => Arc::new(Float64Array::from(vec![None::<f64>])),
    }
}

/// Evaluates `p` with the index, combining leaves with Kleene logic as the CLI does.
async fn search(index: &BTreeIndex, p: &Pred, t: &DataType, all: &RoaringTreemap) -> NullableIdSet {
    Box::pin(async move {
        let leaf = |q: Query| async move { index.search(&q).await.unwrap() };
        match p {
            Pred::Eq(v) => leaf(Query::Equals(scalar(*v, t))).await,
            Pred::Lt(v, incl) => {
                let b = if *incl {
                    Bound::Included(scalar(*v, t))
                } else {
                    Bound::Excluded(scalar(*v, t))
                };
                if *v == V::Null {
                    return leaf(Query::Equals(scalar(V::Null, t))).await;
                }
                leaf(Query::Range(Bound::Unbounded, b)).await
            }
            Pred::Gt(v, incl) => {
                let b = if *incl {
                    Bound::Included(scalar(*v, t))
                } else {
                    Bound::Excluded(scalar(*v, t))
                };
                if *v == V::Null {
                    return leaf(Query::Equals(scalar(V::Null, t))).await;
                }
                leaf(Query::Range(b, Bound::Unbounded)).await
            }
            Pred::Between(a, b) => {
                if *a == V::Null || *b == V::Null {
                    // x BETWEEN NULL AND b = (x >= NULL) AND (x <= b)
                    let lo = search(index, &Pred::Gt(*a, true), t, all).await;
                    let hi = search(index, &Pred::Lt(*b, true), t, all).await;
                    return lo.and(&hi);
                }
                leaf(Query::Range(
                    Bound::Included(scalar(*a, t)),
                    Bound::Included(scalar(*b, t)),
                ))
                .await
            }
            Pred::In(vs) => {
                let arrs: Vec<ArrayRef> = vs.iter().map(|v| scalar(*v, t)).collect();
                let list = arrow_select::concat::concat(
                    &arrs.iter().map(|a| a.as_ref()).collect::<Vec<_>>(),
                )
                .unwrap();
                leaf(Query::IsIn(list)).await
            }
            Pred::IsNull => leaf(Query::IsNull).await,
            Pred::Not(q) => search(index, q, t, all).await.not(all),
            Pred::And(a, b) => search(index, a, t, all)
                .await
                .and(&search(index, b, t, all).await),
            Pred::Or(a, b) => search(index, a, t, all)
                .await
                .or(&search(index, b, t, all).await),
        }
    })
    .await
}

fn value_strategy(float: bool) -> BoxedStrategy<V> {
    if float {
        prop_oneof![
            3 => Just(V::Null),
            1 => Just(V::F(f64::NAN)),
            1 => Just(V::F(-0.0)),
            1 => Just(V::F(0.0)),
            1 => Just(V::F(f64::INFINITY)),
            1 => Just(V::F(f64::NEG_INFINITY)),
            10 => (-20i32..20).prop_map(|x| V::F(f64::from(x) / 2.0)),
        ]
        .boxed()
    } else {
        prop_oneof![
            3 => Just(V::Null),
            1 => Just(V::I(i64::MIN)),
            1 => Just(V::I(i64::MAX)),
            10 => (-15i64..15).prop_map(V::I),
        ]
        .boxed()
    }
}

fn pred_strategy(float: bool) -> BoxedStrategy<Pred> {
    let v = value_strategy(float);
    let leaf = prop_oneof![
        v.clone().prop_map(Pred::Eq),
        (v.clone(), any::<bool>()).prop_map(|(x, i)| Pred::Lt(x, i)),
        (v.clone(), any::<bool>()).prop_map(|(x, i)| Pred::Gt(x, i)),
        (v.clone(), v.clone()).prop_map(|(a, b)| Pred::Between(a, b)),
        proptest::collection::vec(v, 1..5).prop_map(Pred::In),
        Just(Pred::IsNull),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|p| Pred::Not(Box::new(p))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Pred::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner).prop_map(|(a, b)| Pred::Or(Box::new(a), Box::new(b))),
        ]
    })
    .boxed()
}

async fn build(values: &[V], float: bool, page_rows: u64) -> (BTreeIndex, DataType) {
    let fs = FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap();
    let dir = Path::from("_indices/x");
    let t = if float {
        DataType::Float64
    } else {
        DataType::Int64
    };
    let arr: ArrayRef = if float {
        Arc::new(Float64Array::from(
            values
                .iter()
                .map(|v| match v {
                    V::F(x) => Some(*x),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        ))
    } else {
        Arc::new(Int64Array::from(
            values
                .iter()
                .map(|v| match v {
                    V::I(x) => Some(*x),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        ))
    };
    // ids are not in value order, as row addresses are not
    let ids = UInt64Array::from_iter_values(
        (0..values.len() as u64).map(|i| i * 7 % 1_000_003 + (i << 32)),
    );
    let batch =
        RecordBatch::try_from_iter([("value", arr), ("id", Arc::new(ids) as ArrayRef)]).unwrap();
    let opts = TrainOptions {
        page_rows,
        ..Default::default()
    };
    train(&fs, &dir, &t, futures::stream::iter([Ok(batch)]), opts)
        .await
        .unwrap();
    let index = BTreeIndex::open(&fs, &dir, Arc::new(NoCache), &HashMap::new())
        .await
        .unwrap();
    (index, t)
}

fn id_of(i: usize) -> u64 {
    let i = i as u64;
    i * 7 % 1_000_003 + (i << 32)
}

fn case() -> impl Strategy<Value = (bool, Vec<V>, u64, Vec<Pred>)> {
    any::<bool>().prop_flat_map(|float| {
        (
            Just(float),
            proptest::collection::vec(value_strategy(float), 0..150),
            1u64..9,
            proptest::collection::vec(pred_strategy(float), 1..12),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn index_answers_equal_brute_force((float, values, page_rows, preds) in case()) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let (index, t) = rt.block_on(build(&values, float, page_rows));
        let all: RoaringTreemap = (0..values.len()).map(id_of).collect();
        for p in &preds {
            let got = rt.block_on(search(&index, p, &t, &all));
            let mut want_t = RoaringTreemap::new();
            let mut want_n = RoaringTreemap::new();
            for (i, v) in values.iter().enumerate() {
                match eval(p, *v) {
                    Some(true) => { want_t.insert(id_of(i)); }
                    None => { want_n.insert(id_of(i)); }
                    Some(false) => {}
                }
            }
            prop_assert_eq!(&got.true_ids, &want_t, "TRUE rows of {:?} over {:?}", p, values);
            prop_assert_eq!(&got.null_ids, &want_n, "NULL rows of {:?} over {:?}", p, values);
        }
    }
}

#[tokio::test]
async fn strings_prefix_and_ranges() {
    let words = [
        "",
        "a",
        "ab",
        "abc",
        "abd",
        "ac",
        "b",
        "é",
        "éa",
        "\u{10FFFF}",
        "a\u{10FFFF}",
        "a\u{10FFFF}z",
    ];
    let mut values: Vec<Option<&str>> = words.iter().map(|w| Some(*w)).collect();
    values.push(None);
    values.extend(words.iter().map(|w| Some(*w))); // duplicates across pages
    let fs = FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap();
    let dir = Path::from("s");
    let arr: ArrayRef = Arc::new(StringArray::from(values.clone()));
    let ids = UInt64Array::from_iter_values(0..values.len() as u64);
    let batch =
        RecordBatch::try_from_iter([("value", arr), ("id", Arc::new(ids) as ArrayRef)]).unwrap();
    let opts = TrainOptions {
        page_rows: 3,
        ..Default::default()
    };
    train(
        &fs,
        &dir,
        &DataType::Utf8,
        futures::stream::iter([Ok(batch)]),
        opts,
    )
    .await
    .unwrap();
    let index = BTreeIndex::open(&fs, &dir, Arc::new(NoCache), &HashMap::new())
        .await
        .unwrap();
    for prefix in ["", "a", "ab", "é", "a\u{10FFFF}", "\u{10FFFF}", "zz"] {
        let got = index
            .search(&Query::LikePrefix(prefix.to_string()))
            .await
            .unwrap();
        let want: RoaringTreemap = values
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_some_and(|s| s.starts_with(prefix)))
            .map(|(i, _)| i as u64)
            .collect();
        assert_eq!(got.true_ids, want, "prefix {prefix:?}");
        assert_eq!(got.null_ids.len(), 1, "the NULL row is NULL for LIKE");
    }
    let eq = index
        .search(&Query::Equals(Arc::new(StringArray::from(vec!["ab"]))))
        .await
        .unwrap();
    assert_eq!(eq.true_ids.iter().collect::<Vec<_>>(), vec![2, 15]);
    let wrong_type = index
        .search(&Query::Equals(Arc::new(Int64Array::from(vec![1]))))
        .await;
    assert!(wrong_type.is_err());
}

/// Training through spilled runs (a tiny memory budget) gives the same files' content as
/// an in-memory build, and a merge adds new rows, drops remapped-away rows and removes
/// duplicate `(value, id)` pairs.
#[tokio::test]
async fn spill_and_merge_match_in_memory_builds() {
    use lancet_btree::merge;
    let fs = FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap();
    let n = 20_000u64;
    let make = |lo: u64, hi: u64| -> RecordBatch {
        let values: ArrayRef = Arc::new(Float64Array::from(
            (lo..hi)
                .map(|i| match i % 11 {
                    0 => None,
                    1 => Some(f64::NAN),
                    2 => Some(-0.0),
                    _ => Some(((i * 7919) % 500) as f64 - 250.0),
                })
                .collect::<Vec<_>>(),
        ));
        let ids: ArrayRef = Arc::new(UInt64Array::from_iter_values(lo..hi));
        RecordBatch::try_from_iter([("value", values), ("id", ids)]).unwrap()
    };
    let batches: Vec<RecordBatch> = (0..n).step_by(1000).map(|lo| make(lo, lo + 1000)).collect();
    let stream = |b: &Vec<RecordBatch>| futures::stream::iter(b.clone().into_iter().map(Ok));
    let small = TrainOptions {
        page_rows: 100,
        memory_budget_bytes: 20_000,
        ..Default::default()
    };
    let big = TrainOptions {
        page_rows: 100,
        ..Default::default()
    };
    let spilled = train(
        &fs,
        &Path::from("a"),
        &DataType::Float64,
        stream(&batches),
        small,
    )
    .await
    .unwrap();
    let memory = train(
        &fs,
        &Path::from("b"),
        &DataType::Float64,
        stream(&batches),
        big,
    )
    .await
    .unwrap();
    assert_eq!(spilled.num_rows, n);
    assert_eq!(spilled.num_pages, memory.num_pages);
    let a = BTreeIndex::open(&fs, &Path::from("a"), Arc::new(NoCache), &HashMap::new())
        .await
        .unwrap();
    let b = BTreeIndex::open(&fs, &Path::from("b"), Arc::new(NoCache), &HashMap::new())
        .await
        .unwrap();
    let (va, ia) = a.read_rows(0..n).await.unwrap();
    let (vb, ib) = b.read_rows(0..n).await.unwrap();
    assert_eq!(ia, ib, "same order of ids");
    assert_eq!(va.to_data(), vb.to_data());

    // merge: old rows with odd ids move to id + 1_000_000, ids divisible by 5 are dropped,
    // 500 new rows arrive, and 100 old pairs are offered again (duplicates)
    let new = vec![Ok(make(n, n + 500)), Ok(make(10, 110))];
    let remap = |id: u64| {
        if id.is_multiple_of(5) && id != 0 {
            None
        } else if id % 2 == 1 {
            Some(id + 1_000_000)
        } else {
            Some(id)
        }
    };
    let merged = merge(
        &fs,
        &a,
        remap,
        futures::stream::iter(new),
        &Path::from("m"),
        small,
    )
    .await
    .unwrap();
    let m = BTreeIndex::open(&fs, &Path::from("m"), Arc::new(NoCache), &HashMap::new())
        .await
        .unwrap();
    let (_, ids) = m.read_rows(0..merged.num_rows).await.unwrap();
    let mut got: Vec<u64> = ids.values().to_vec();
    got.sort_unstable();
    let mut want: Vec<u64> = (0..n).filter_map(remap).collect();
    want.extend(n..n + 500);
    // the re-offered ids 10..110 keep their ids; those remapped away or moved are new rows
    want.extend((10..110u64).filter(|id| remap(*id) != Some(*id)));
    want.sort_unstable();
    assert_eq!(got, want);
}

/// A cache that counts insertions, to see how often a page is loaded.
#[derive(Default)]
struct CountingCache {
    pages: std::sync::Mutex<HashMap<lancet_btree::PageKey, Arc<lancet_btree::Page>>>,
    inserts: std::sync::atomic::AtomicUsize,
}

impl lancet_btree::PageCache for CountingCache {
    fn get(&self, key: &lancet_btree::PageKey) -> Option<Arc<lancet_btree::Page>> {
        self.pages.lock().unwrap().get(key).cloned()
    }
    fn insert(&self, key: lancet_btree::PageKey, page: Arc<lancet_btree::Page>) {
        self.inserts
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.pages.lock().unwrap().insert(key, page);
    }
}

/// Concurrent cold searches for the same value load its page once, and a search reads only
/// the pages it selects, in one coalesced request set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_cold_loads_load_a_page_once() {
    let fs = FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap();
    let dir = Path::from("c");
    let values: ArrayRef = Arc::new(Int64Array::from_iter_values(0..10_000));
    let ids: ArrayRef = Arc::new(UInt64Array::from_iter_values(0..10_000));
    let batch = RecordBatch::try_from_iter([("value", values), ("id", ids)]).unwrap();
    let opts = TrainOptions {
        page_rows: 100,
        ..Default::default()
    };
    train(
        &fs,
        &dir,
        &DataType::Int64,
        futures::stream::iter([Ok(batch)]),
        opts,
    )
    .await
    .unwrap();
    let cache = Arc::new(CountingCache::default());
    let index = Arc::new(
        BTreeIndex::open(&fs, &dir, cache.clone(), &HashMap::new())
            .await
            .unwrap(),
    );
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let index = index.clone();
        tasks.push(tokio::spawn(async move {
            index
                .search(&Query::Equals(Arc::new(Int64Array::from(vec![4242]))))
                .await
                .unwrap()
        }));
    }
    for t in tasks {
        assert_eq!(
            t.await.unwrap().true_ids.iter().collect::<Vec<_>>(),
            vec![4242]
        );
    }
    assert_eq!(
        index.pages_read(),
        1,
        "one page read for 16 concurrent searches"
    );
    assert_eq!(cache.inserts.load(std::sync::atomic::Ordering::SeqCst), 1);
    // a range over 3 pages reads exactly those 3 more
    let r = index
        .search(&Query::Range(
            Bound::Included(Arc::new(Int64Array::from(vec![5050])) as ArrayRef),
            Bound::Excluded(Arc::new(Int64Array::from(vec![5250])) as ArrayRef),
        ))
        .await
        .unwrap();
    assert_eq!(r.true_ids.len(), 200);
    assert_eq!(index.pages_read(), 4);
}

/// Every type Lance 14.0.2's BTree indexes trains and answers equality and ranges exactly:
/// times, durations, half floats and fixed-size binary too (values cast from Int64 or bytes,
/// a NULL among them, pages of three rows).
#[tokio::test]
async fn every_type_lance_indexes_trains_and_answers() {
    use arrow_schema::TimeUnit;
    let ints: Vec<Option<i64>> = vec![Some(5), Some(1), None, Some(3), Some(1), Some(9), Some(4)];
    let types = [
        DataType::Time32(TimeUnit::Second),
        DataType::Time64(TimeUnit::Microsecond),
        DataType::Duration(TimeUnit::Millisecond),
        DataType::Float16,
        DataType::FixedSizeBinary(2),
    ];
    for t in types {
        let values: ArrayRef = match &t {
            DataType::FixedSizeBinary(_) => Arc::new(
                arrow_array::FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                    ints.iter().map(|v| v.map(|v| [0u8, v as u8])),
                    2,
                )
                .unwrap(),
            ),
            DataType::Float16 => arrow_cast::cast(
                &arrow_cast::cast(&Int64Array::from(ints.clone()), &DataType::Float64).unwrap(),
                &t,
            )
            .unwrap(),
            DataType::Time32(_) => arrow_cast::cast(
                &arrow_cast::cast(&Int64Array::from(ints.clone()), &DataType::Int32).unwrap(),
                &t,
            )
            .unwrap(),
            _ => arrow_cast::cast(&Int64Array::from(ints.clone()), &t).unwrap(),
        };
        let fs = FileStore::new(Arc::new(InMemory::new()), "memory:///").unwrap();
        let dir = Path::from("t");
        let ids = UInt64Array::from_iter_values(0..ints.len() as u64);
        let batch = RecordBatch::try_from_iter([
            ("value", values.clone()),
            ("id", Arc::new(ids) as ArrayRef),
        ])
        .unwrap();
        let opts = TrainOptions {
            page_rows: 3,
            ..Default::default()
        };
        train(&fs, &dir, &t, futures::stream::iter([Ok(batch)]), opts)
            .await
            .unwrap_or_else(|e| panic!("{t}: {e}"));
        let index = BTreeIndex::open(&fs, &dir, Arc::new(NoCache), &HashMap::new())
            .await
            .unwrap();
        let one = values.slice(1, 1); // the value 1
        let eq = index.search(&Query::Equals(one.clone())).await.unwrap();
        assert_eq!(eq.true_ids.iter().collect::<Vec<_>>(), [1, 4], "{t}");
        let three = values.slice(3, 1);
        let range = Query::Range(
            std::ops::Bound::Excluded(one),
            std::ops::Bound::Included(three),
        );
        let got = index.search(&range).await.unwrap();
        assert_eq!(got.true_ids.iter().collect::<Vec<_>>(), [3], "{t}");
    }
}
