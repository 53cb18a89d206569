//! Lance's key-value maps of a table, changed by the user calls pylance has for them:
//! `update_config`, `update_metadata`, `update_schema_metadata`, `update_field_metadata`, each
//! one `UpdateConfig` (Lance 14.0.2's new-style fields), and `truncate_table`.

use std::collections::BTreeMap;

use lancet_filter::Filter;
use lancet_proto::table::transaction::{Operation, UpdateConfig, UpdateMap, UpdateMapEntry};

use crate::committed::Committed;
use crate::mutate;
use crate::operations;
use lancet_read::error::{Error, Result};
use lancet_read::snapshot::Snapshot;

/// Which of a table's maps [`Storage::update_metadata`](crate::Storage::update_metadata) changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataTarget<'a> {
    /// The table's config (`ds.config()`: Lance's settings, e.g. `lance.auto_cleanup.*`).
    Config,
    /// The table metadata (`ds.metadata`).
    Table,
    /// The schema's metadata.
    Schema,
    /// The metadata of the field at this path (`a.b`: `b` under `a`).
    Field(&'a str),
}

/// A field's path and the entries of its metadata to set (`Some`) or remove (`None`).
pub type FieldEntries<'a> = (&'a str, Vec<(&'a str, Option<&'a str>)>);

/// Sets (`Some`) or removes (`None`) the keys of `entries` in one of the table's maps —
/// or, with `replace`, makes the map exactly the entries that have a value — in one
/// UpdateConfig, as Lance 14.0.2's `update_config` / `update_metadata` /
/// `update_schema_metadata` / `update_field_metadata`. An unknown field is `InvalidInput`
/// with nothing published.
pub(crate) async fn update_metadata(
    snap: &Snapshot,
    target: MetadataTarget<'_>,
    entries: &[(&str, Option<&str>)],
    replace: bool,
) -> Result<Committed> {
    let map = update_map(entries, replace);
    let mut update = UpdateConfig::default();
    match target {
        MetadataTarget::Config => update.config_updates = Some(map),
        MetadataTarget::Table => update.table_metadata_updates = Some(map),
        MetadataTarget::Schema => update.schema_metadata_updates = Some(map),
        MetadataTarget::Field(path) => {
            update.field_metadata_updates = BTreeMap::from([(field_id(snap, path)?, map)]);
        }
    }
    operations::commit(snap, Operation::UpdateConfig(update)).await
}

/// The metadata of several fields (by path) changed in one UpdateConfig, as Lance 14.0.2's
/// `update_field_metadata` with several fields: each field's `entries` set or removed, or
/// with `replace` made its whole map. An unknown field is `InvalidInput`, nothing published.
pub(crate) async fn update_field_metadata(
    snap: &Snapshot,
    fields: &[FieldEntries<'_>],
    replace: bool,
) -> Result<Committed> {
    let mut update = UpdateConfig::default();
    for (path, entries) in fields {
        let map = update_map(entries, replace);
        update
            .field_metadata_updates
            .insert(field_id(snap, path)?, map);
    }
    operations::commit(snap, Operation::UpdateConfig(update)).await
}

fn update_map(entries: &[(&str, Option<&str>)], replace: bool) -> UpdateMap {
    UpdateMap {
        update_entries: entries
            .iter()
            .map(|(k, v)| UpdateMapEntry {
                key: (*k).to_string(),
                value: v.map(str::to_string),
            })
            .collect(),
        replace,
    }
}

fn field_id(snap: &Snapshot, path: &str) -> Result<i32> {
    lancet_txn::fields::field_id_by_path(&snap.manifest().fields, path).ok_or_else(|| {
        Error::InvalidArgument {
            what: format!("field {path:?}"),
            reason: "the table has no such field".into(),
        }
    })
}

/// Deletes every row, as Lance 14.0.2's `truncate_table` (a Delete of `true`): the schema,
/// indexes and history stay.
pub(crate) async fn truncate(snap: &Snapshot) -> Result<Committed> {
    let all = Filter::parse("true")?;
    mutate::delete(snap, &all).await
}
