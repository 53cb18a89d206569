//! Test support (feature `testing`): the object-store conformance check every backend lancet
//! supports must pass, and the fault-injecting store (`fault`, same feature).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use bytes::Bytes;

use crate::error::PathsError;
use crate::store::DatasetStore;

/// One conformance check that every backend must pass.
pub async fn conformance(store: DatasetStore) {
    let p = store.path("_versions/1.manifest");
    assert!(matches!(
        store.get(&p, None).await,
        Err(PathsError::NotFound { .. })
    ));
    store
        .put_if_absent(&p, Bytes::from_static(b"abc"))
        .await
        .unwrap();
    assert!(matches!(
        store.put_if_absent(&p, Bytes::from_static(b"xyz")).await,
        Err(PathsError::AlreadyExists { .. })
    ));
    assert_eq!(store.get(&p, Some(3)).await.unwrap().as_ref(), b"abc");
    assert!(matches!(
        store.get(&p, Some(4)).await,
        Err(PathsError::SizeMismatch {
            expected: 4,
            actual: 3,
            ..
        })
    ));
    assert_eq!(store.get_range(&p, 1..3).await.unwrap().as_ref(), b"bc");
    assert_eq!(store.size(&p).await.unwrap(), 3);
    let listed = store.list("_versions").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        store.relative(&listed[0].location).unwrap(),
        "_versions/1.manifest"
    );
    store.put(&p, Bytes::from_static(b"abcd")).await.unwrap();
    assert_eq!(store.size(&p).await.unwrap(), 4);
}
