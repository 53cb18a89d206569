//! Fetching tree objects whole by resolved location: one GET, its length checked against the
//! reference's `object_size`.

use super::*;

/// Reads whole objects by resolved location.
pub trait ObjectFetcher: Send + Sync + std::fmt::Debug {
    /// The bytes of the object at `location`. With `expected_size`, an object of another
    /// length is [`PathsError::SizeMismatch`].
    fn fetch<'a>(
        &'a self,
        location: &'a ObjectLocation,
        expected_size: Option<u64>,
    ) -> BoxFuture<'a, std::result::Result<Bytes, PathsError>>;

    /// The store path of `location`, for error messages.
    fn display_path(&self, location: &ObjectLocation) -> String {
        location.display_uri()
    }
}

/// Fetches from the current dataset's store, and from other datasets (reached through
/// `base_id`) by opening their URI once and keeping the handle.
#[derive(Debug)]
pub struct StoreFetcher {
    current: DatasetStore,
    others: Mutex<HashMap<String, DatasetStore>>,
}

impl StoreFetcher {
    pub fn new(current: DatasetStore) -> Self {
        Self {
            current,
            others: Mutex::new(HashMap::new()),
        }
    }

    /// Uses `store` for every location whose base URI is `uri` (a store that cannot be opened
    /// from its URI alone, such as an in-memory one).
    pub fn register(&self, uri: &str, store: DatasetStore) {
        if let Ok(mut others) = self.others.lock() {
            others.insert(uri.trim_end_matches('/').to_string(), store);
        }
    }

    fn store_for(
        &self,
        location: &ObjectLocation,
    ) -> std::result::Result<DatasetStore, PathsError> {
        if location.base.base_id.is_none() {
            return Ok(self.current.clone());
        }
        let uri = location.base.uri.as_str();
        let mut others = self.others.lock().map_err(|_| PathsError::InvalidUri {
            uri: uri.to_string(),
            reason: "store table poisoned".into(),
        })?;
        if let Some(store) = others.get(uri) {
            return Ok(store.clone());
        }
        let store = DatasetStore::open(uri)?;
        others.insert(uri.to_string(), store.clone());
        Ok(store)
    }
}

impl ObjectFetcher for StoreFetcher {
    fn fetch<'a>(
        &'a self,
        location: &'a ObjectLocation,
        expected_size: Option<u64>,
    ) -> BoxFuture<'a, std::result::Result<Bytes, PathsError>> {
        Box::pin(async move {
            let store = self.store_for(location)?;
            let path = store.path(&location.path);
            store.get(&path, expected_size).await
        })
    }

    fn display_path(&self, location: &ObjectLocation) -> String {
        match self.store_for(location) {
            Ok(store) => store.path(&location.path).to_string(),
            Err(_) => location.display_uri(),
        }
    }
}

/// Maps a fetch failure to the rule it breaks (a missing object, a wrong size) or to I/O.
pub(crate) fn fetch_error(object: &str, e: PathsError) -> TreeError {
    match e {
        PathsError::NotFound { .. } => TreeError::corrupt(
            object,
            Rule::ObjectMissing,
            "a referenced tree object does not exist",
        ),
        PathsError::SizeMismatch {
            expected, actual, ..
        } => TreeError::corrupt(
            object,
            Rule::ObjectSize,
            format!("object_size is {expected}, the object is {actual} bytes"),
        ),
        e => TreeError::Io {
            object: object.to_string(),
            source: Arc::new(e),
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use lancet_paths::ResolvedBase;

    #[tokio::test]
    async fn a_fetch_checks_the_size_its_reference_records() {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().to_str().unwrap();
        let store = DatasetStore::create(uri).unwrap();
        store
            .put(&store.path("_bt/node/a.node"), Bytes::from_static(b"12345"))
            .await
            .unwrap();
        let fetcher = StoreFetcher::new(store);
        let at = |path: &str| ObjectLocation {
            base: ResolvedBase::current_dataset(uri),
            path: path.to_string(),
        };
        let node = at("_bt/node/a.node");
        assert_eq!(fetcher.fetch(&node, Some(5)).await.unwrap().len(), 5);
        assert_eq!(fetcher.fetch(&node, None).await.unwrap().len(), 5);
        let wrong = fetcher.fetch(&node, Some(6)).await.unwrap_err();
        assert_eq!(fetch_error("n", wrong).rule(), Some(Rule::ObjectSize));
        let gone = fetcher
            .fetch(&at("_bt/node/b.node"), Some(5))
            .await
            .unwrap_err();
        assert_eq!(fetch_error("n", gone).rule(), Some(Rule::ObjectMissing));
    }
}
