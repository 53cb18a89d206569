//! A slow object store, for benchmarks and tests of what a command costs on S3-like storage:
//! an [`ObjectStore`] that holds each request back for an injected round-trip time (fixed, or
//! drawn uniformly from a range) and keeps a [`RequestLog`]: requests by kind, bytes each way,
//! and the longest chain of requests that ran one after another.
//!
//! **The chain.** A request depends on every request that finished before it started (the
//! command may have needed its answer), so its depth is one more than the deepest of those;
//! the longest chain is the deepest request. With every request costing at least the injected
//! latency `L`, a command's wall time is at least `chain × L`: the physical limit the cold
//! benchmark compares against. Requests in flight together share a depth.
//!
//! A listing costs one round trip per page of [`LIST_PAGE`] entries, as S3 pages them; a
//! multipart upload one for its start (its parts go to the inner store as they come).

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use rand::{Rng, SeedableRng};

/// Entries per listing page: each page is one round trip.
pub const LIST_PAGE: usize = 1000;

/// The round-trip time injected before each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    Fixed(Duration),
    /// Drawn uniformly from `low..=high` for each request.
    Uniform {
        low: Duration,
        high: Duration,
    },
}

impl Latency {
    /// The least a request costs.
    pub fn low(&self) -> Duration {
        match self {
            Latency::Fixed(d) => *d,
            Latency::Uniform { low, .. } => *low,
        }
    }
}

/// What a store was asked, since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RequestStats {
    /// Round trips of every kind (a listing page counts one).
    pub requests: u64,
    pub gets: u64,
    pub puts: u64,
    pub lists: u64,
    /// Heads, deletes, copies and multipart starts.
    pub others: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// The deepest request: the most round trips that ran one after another.
    pub longest_chain: u64,
}

/// The accounting of a [`LatencyStore`], shared with whoever reads it.
#[derive(Debug, Default)]
pub struct RequestLog {
    stats: Mutex<RequestStats>,
    /// The deepest request finished so far: a request starting now depends on it.
    finished_depth: AtomicU64,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Get,
    Put,
    List,
    Other,
}

impl RequestLog {
    pub fn stats(&self) -> RequestStats {
        *self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request starts: its depth, one more than the deepest finished one.
    fn start(&self, kind: Kind) -> u64 {
        let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        s.requests += 1;
        match kind {
            Kind::Get => s.gets += 1,
            Kind::Put => s.puts += 1,
            Kind::List => s.lists += 1,
            Kind::Other => s.others += 1,
        }
        let depth = self.finished_depth.load(Ordering::SeqCst) + 1;
        s.longest_chain = s.longest_chain.max(depth);
        depth
    }

    /// A request counted outside any chain.
    fn count(&self, kind: Kind) {
        let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        s.requests += 1;
        match kind {
            Kind::Get => s.gets += 1,
            Kind::Put => s.puts += 1,
            Kind::List => s.lists += 1,
            Kind::Other => s.others += 1,
        }
    }

    fn finish(&self, depth: u64) {
        self.finished_depth.fetch_max(depth, Ordering::SeqCst);
    }

    fn bytes(&self, read: u64, written: u64) {
        let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        s.bytes_read = s.bytes_read.saturating_add(read);
        s.bytes_written = s.bytes_written.saturating_add(written);
    }
}

/// An object store whose every request waits an injected round-trip time first.
#[derive(Debug)]
pub struct LatencyStore {
    inner: Arc<dyn ObjectStore>,
    latency: Latency,
    rng: Mutex<rand::rngs::SmallRng>,
    log: Arc<RequestLog>,
}

impl LatencyStore {
    /// `seed` fixes the draws of a [`Latency::Uniform`] (the same run twice waits the same).
    pub fn new(inner: Arc<dyn ObjectStore>, latency: Latency, seed: u64) -> Self {
        Self::with_log(inner, latency, seed, Arc::default())
    }

    /// A store logging into `log`, which other stores may share: requests to several stores
    /// (a table and its bases) make one chain.
    pub fn with_log(
        inner: Arc<dyn ObjectStore>,
        latency: Latency,
        seed: u64,
        log: Arc<RequestLog>,
    ) -> Self {
        Self {
            inner,
            latency,
            rng: Mutex::new(rand::rngs::SmallRng::seed_from_u64(seed)),
            log,
        }
    }

    pub fn log(&self) -> Arc<RequestLog> {
        self.log.clone()
    }

    fn draw(&self) -> Duration {
        draw(
            self.latency,
            &mut self.rng.lock().unwrap_or_else(|p| p.into_inner()),
        )
    }

    /// One round trip: wait, run `request`, and log it.
    async fn round_trip<T>(&self, kind: Kind, request: impl std::future::Future<Output = T>) -> T {
        let depth = self.log.start(kind);
        let wait = self.draw();
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let out = request.await;
        self.log.finish(depth);
        out
    }
}

impl fmt::Display for LatencyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LatencyStore({:?}, {})", self.latency, self.inner)
    }
}

fn draw(latency: Latency, rng: &mut rand::rngs::SmallRng) -> Duration {
    match latency {
        Latency::Fixed(d) => d,
        Latency::Uniform { low, high } if high > low => rng.random_range(low..=high),
        Latency::Uniform { low, .. } => low,
    }
}

fn range_len(r: &Range<u64>) -> u64 {
    r.end.saturating_sub(r.start)
}

#[async_trait]
impl ObjectStore for LatencyStore {
    async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
        self.log.bytes(0, p.content_length() as u64);
        self.round_trip(Kind::Put, self.inner.put_opts(l, p, o))
            .await
    }

    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let upload = self.inner.put_multipart_opts(l, o);
        self.round_trip(Kind::Other, upload).await
    }

    async fn get_opts(&self, l: &Path, o: GetOptions) -> Result<GetResult> {
        let head = o.head;
        let kind = if head { Kind::Other } else { Kind::Get };
        let got = self.round_trip(kind, self.inner.get_opts(l, o)).await?;
        if !head {
            self.log.bytes(range_len(&got.range), 0);
        }
        Ok(got)
    }

    async fn get_ranges(&self, l: &Path, r: &[Range<u64>]) -> Result<Vec<Bytes>> {
        // as S3 answers it: ranges less than the coalescing gap apart in one request, each
        // request a round trip of its own (the inner store's own batching is not used)
        object_store::coalesce_ranges(
            r,
            |range| async move {
                let options = GetOptions::default().with_range(Some(range));
                self.get_opts(l, options).await?.bytes().await
            },
            object_store::OBJECT_STORE_COALESCE_DEFAULT,
        )
        .await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        // deletes are cleanup's, measured elsewhere: counted, neither delayed nor chained
        let log = self.log.clone();
        self.inner
            .delete_stream(locations)
            .inspect(move |_| log.count(Kind::Other))
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let log = self.log.clone();
        let latency = self.latency;
        let seed = self.rng.lock().unwrap_or_else(|p| p.into_inner()).random();
        let pages = self.inner.list(prefix).chunks(LIST_PAGE);
        let start = (pages, rand::rngs::SmallRng::seed_from_u64(seed), true);
        // a round trip before the first page, and before each page after a full one
        stream::unfold(start, move |(mut pages, mut rng, charge)| {
            let log = log.clone();
            async move {
                let depth = charge.then(|| log.start(Kind::List));
                let wait = draw(latency, &mut rng);
                if charge && !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
                let page = pages.next().await;
                if let Some(depth) = depth {
                    log.finish(depth);
                }
                let page = page?;
                let full = page.len() == LIST_PAGE;
                Some((stream::iter(page), (pages, rng, full)))
            }
        })
        .flatten()
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.round_trip(Kind::List, self.inner.list_with_delimiter(prefix))
            .await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.round_trip(Kind::Other, self.inner.copy_opts(from, to, options))
            .await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    use super::*;

    const L: Duration = Duration::from_millis(20);

    async fn store(objects: usize) -> LatencyStore {
        let inner = Arc::new(InMemory::new());
        for i in 0..objects {
            inner
                .put(
                    &Path::from(format!("o/{i:05}")),
                    PutPayload::from(vec![7u8; 10]),
                )
                .await
                .unwrap();
        }
        LatencyStore::new(inner, Latency::Fixed(L), 1)
    }

    #[tokio::test]
    async fn requests_one_after_another_make_a_chain_and_take_its_time() {
        let s = store(3).await;
        let began = Instant::now();
        for i in 0..3 {
            let got = s.get(&Path::from(format!("o/{i:05}"))).await.unwrap();
            assert_eq!(got.bytes().await.unwrap().len(), 10);
        }
        assert!(began.elapsed() >= 3 * L);
        let stats = s.log().stats();
        assert_eq!((stats.requests, stats.gets, stats.longest_chain), (3, 3, 3));
        assert_eq!(stats.bytes_read, 30);
    }

    #[tokio::test]
    async fn requests_in_flight_together_share_a_depth() {
        let s = store(4).await;
        let began = Instant::now();
        let gets = (0..4).map(|i| {
            let path = Path::from(format!("o/{i:05}"));
            let s = &s;
            async move { s.get_range(&path, 0..4).await.unwrap() }
        });
        let got = futures::future::join_all(gets).await;
        assert!(began.elapsed() < 3 * L, "{:?}", began.elapsed());
        assert!(got.iter().all(|b| b.len() == 4));
        // then one more, after all of them: depth 2
        s.put(&Path::from("o/new"), PutPayload::from(vec![1u8; 5]))
            .await
            .unwrap();
        let stats = s.log().stats();
        assert_eq!((stats.requests, stats.puts, stats.longest_chain), (5, 1, 2));
        assert_eq!((stats.bytes_read, stats.bytes_written), (16, 5));
    }

    #[tokio::test]
    async fn a_listing_costs_a_round_trip_per_page() {
        use futures::TryStreamExt;
        let s = store(2 * LIST_PAGE + 5).await;
        let listed: Vec<_> = s.list(Some(&Path::from("o"))).try_collect().await.unwrap();
        assert_eq!(listed.len(), 2 * LIST_PAGE + 5);
        let stats = s.log().stats();
        assert_eq!((stats.lists, stats.longest_chain), (3, 3));
        // an empty listing still asks once
        let none: Vec<_> = s
            .list(Some(&Path::from("nothing")))
            .try_collect()
            .await
            .unwrap();
        assert!(none.is_empty());
        assert_eq!(s.log().stats().lists, 4);
    }

    #[tokio::test]
    async fn ranges_cost_what_s3_requests_they_make() {
        let inner = Arc::new(InMemory::new());
        let big = Path::from("big");
        inner
            .put(&big, PutPayload::from(vec![1u8; 3 << 20]))
            .await
            .unwrap();
        let s = LatencyStore::new(inner, Latency::Fixed(L), 1);
        // near each other: one request; 2 MiB apart: two, at the same time
        let got = s.get_ranges(&big, &[0..10, 100..110]).await.unwrap();
        assert_eq!(got.iter().map(|b| b.len()).collect::<Vec<_>>(), [10, 10]);
        assert_eq!(s.log().stats().gets, 1);
        let got = s
            .get_ranges(&big, &[0..10, (2 << 20)..(2 << 20) + 5])
            .await
            .unwrap();
        assert_eq!(got.iter().map(|b| b.len()).collect::<Vec<_>>(), [10, 5]);
        let stats = s.log().stats();
        assert_eq!((stats.gets, stats.longest_chain), (3, 2));
        assert_eq!(stats.bytes_read, 110 + 15);
        // deletes are counted, never chained
        let deleted: Vec<_> = s
            .delete_stream(futures::stream::iter([Ok(big.clone())]).boxed())
            .collect()
            .await;
        assert!(deleted.iter().all(|d| d.is_ok()));
        let stats = s.log().stats();
        assert_eq!((stats.others, stats.longest_chain), (1, 2));
    }

    #[tokio::test]
    async fn drawn_latencies_stay_in_their_range() {
        let inner = Arc::new(InMemory::new());
        let latency = Latency::Uniform {
            low: Duration::from_millis(5),
            high: Duration::from_millis(15),
        };
        let s = LatencyStore::new(inner, latency, 9);
        for _ in 0..20 {
            let d = s.draw();
            assert!(
                d >= latency.low() && d <= Duration::from_millis(15),
                "{d:?}"
            );
        }
        let began = Instant::now();
        let _ = s.head(&Path::from("missing")).await;
        assert!(began.elapsed() >= latency.low());
        assert_eq!(s.log().stats().others, 1);
    }
}
