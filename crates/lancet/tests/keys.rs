//! Issue 41, item 3: an unenforced primary key set through field metadata is a key (the
//! field records its position, as Lance 14.0.2's UpdateConfig sets it), never on a nullable
//! column, and never changed or removed once set; a refused update publishes nothing.

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancet::{CreateOptions, Dataset, ErrorKind, MetadataTarget};

const KEY: &str = "lance-schema:unenforced-primary-key";

async fn table(dir: &std::path::Path) -> Dataset {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(0..10)),
            Arc::new(Int64Array::from_iter_values(0..10)),
        ],
    )
    .unwrap();
    Dataset::create(
        dir.to_str().unwrap(),
        schema,
        futures::stream::iter([Ok(batch)]),
        CreateOptions::default(),
    )
    .await
    .unwrap()
    .dataset
}

fn key_of(ds: &Dataset) -> Vec<(String, bool, u32)> {
    ds.storage()
        .manifest()
        .fields
        .iter()
        .map(|f| {
            (
                f.name.clone(),
                f.unenforced_primary_key,
                f.unenforced_primary_key_position,
            )
        })
        .collect()
}

#[tokio::test]
async fn a_primary_key_set_through_field_metadata_is_a_key_and_stays_one() {
    let dir = tempfile::tempdir().unwrap();
    let ds = table(dir.path()).await;
    // on a nullable column: refused, nothing published
    let e = ds
        .storage()
        .update_metadata(MetadataTarget::Field("v"), &[(KEY, Some("true"))], false)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let latest = Dataset::open(dir.path().to_str().unwrap()).await.unwrap();
    assert_eq!(latest.version(), ds.version());

    let keyed = ds
        .storage()
        .update_metadata(MetadataTarget::Field("id"), &[(KEY, Some("true"))], false)
        .await
        .unwrap()
        .dataset;
    assert_eq!(
        key_of(&keyed),
        [("id".to_string(), true, 0), ("v".to_string(), false, 0)]
    );
    // removed, changed, or moved to another column: refused, the key stays
    for (field, value) in [("id", None), ("id", Some("false")), ("v", Some("true"))] {
        let e = keyed
            .storage()
            .update_metadata(MetadataTarget::Field(field), &[(KEY, value)], false)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{field} {value:?}: {e}");
    }
    let latest = Dataset::open(dir.path().to_str().unwrap()).await.unwrap();
    assert_eq!(latest.version(), keyed.version());
    assert_eq!(key_of(&latest), key_of(&keyed));
    // other metadata of the key column is fine
    let noted = keyed
        .storage()
        .update_metadata(MetadataTarget::Field("id"), &[("note", Some("x"))], false)
        .await
        .unwrap()
        .dataset;
    assert_eq!(key_of(&noted), key_of(&keyed));
}
