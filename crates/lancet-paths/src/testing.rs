//! Test support (feature `testing`): the object-store conformance check every backend lancet
//! supports must pass, and the fault-injecting store (`fault`, same feature).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use bytes::Bytes;

use crate::error::PathsError;
use crate::store::DatasetStore;

/// One conformance check that every backend must pass: missing objects, put-if-absent (and
/// a race of creators of one name: exactly one wins), sized and ranged reads, recursive
/// listing with sizes and modification times, overwrite, delete (and deleting a missing
/// object), and that nothing leaks outside the dataset's prefix.
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
    // a listed object in one ranged read; listed longer than it is: the size is named
    assert_eq!(store.get_listed(&p, 3).await.unwrap().as_ref(), b"abc");
    assert!(matches!(
        store.get_listed(&p, 5).await,
        Err(PathsError::SizeMismatch {
            expected: 5,
            actual: 3,
            ..
        })
    ));
    assert!(matches!(
        store
            .get_listed(&store.path("_versions/9.manifest"), 3)
            .await,
        Err(PathsError::NotFound { .. })
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

    // eight creators of one name at once: exactly one wins, the others see AlreadyExists
    let race = store.path("_versions/2.manifest");
    let attempts = (0..8u8).map(|i| {
        let store = store.clone();
        let race = race.clone();
        async move { store.put_if_absent(&race, Bytes::from(vec![i; 8])).await }
    });
    let results = futures::future::join_all(attempts).await;
    let won: Vec<usize> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| r.is_ok())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(won.len(), 1, "{results:?}");
    assert!(results
        .iter()
        .all(|r| r.is_ok() || matches!(r, Err(PathsError::AlreadyExists { .. }))));
    let winner = u8::try_from(won[0]).unwrap();
    assert_eq!(store.get(&race, None).await.unwrap().as_ref(), &[winner; 8]);

    // recursive listing, with sizes and times
    let nested = store.path("_indices/u/deep/page_data.lance");
    store
        .put(&nested, Bytes::from_static(b"12345"))
        .await
        .unwrap();
    let listed = store.list("_indices").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].size, 5);
    assert!(listed[0].last_modified.timestamp() > 1_600_000_000);
    assert_eq!(store.list("").await.unwrap().len(), 3);

    // delete, and deleting what is gone
    store.delete(&nested).await.unwrap();
    assert!(matches!(
        store.get(&nested, None).await,
        Err(PathsError::NotFound { .. })
    ));
    assert!(matches!(
        store.delete(&nested).await,
        Ok(()) | Err(PathsError::NotFound { .. })
    ));
    assert!(store.list("_indices").await.unwrap().is_empty());
}
