//! Lance transactions: what each version did, where it is stored, and how it is read.
//!
//! Lance 14 stores a version's `Transaction` twice (FORMAT-FACTS §2, §3): as
//! `_transactions/{read_version}-{uuid}.txn`, named by `Manifest.transaction_file`, and inline
//! in the manifest object (a u32-prefixed section whose offset is `Manifest.transaction_section`,
//! field 23; deprecated field 21 is read, never written). Readers take the inline copy first,
//! then the file, as Lance's conflict resolver does. A version whose transaction cannot be
//! decoded still opens: only commits that must decide a conflict need it.
//!
//! An operation number lancet does not model (the oneof's 100–199 range) is kept as its raw
//! bytes ([`StoredTransaction::unknown_operation`]) rather than dropped, so a newer writer's
//! operation is reported, and treated as a conflict, instead of being mistaken for none.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use bytes::Bytes;
use lancet_proto::table::Transaction;
use lancet_proto::wire;
use object_store::path::Path;
use prost::Message;

use crate::error::{PathsError, Result};
use crate::manifest::ManifestFile;
use crate::store::DatasetStore;

pub use crate::layout::{transaction_file_name, TRANSACTIONS_DIR};

/// Operation numbers this build models (`Transaction.operation`).
const KNOWN_OPERATIONS: std::ops::RangeInclusive<u32> = 100..=115;
/// The range Lance reserves for operations.
const OPERATION_RANGE: std::ops::RangeInclusive<u32> = 100..=199;

pub use lancet_proto::transaction::{operation_name, StoredTransaction};

/// Decodes a transaction (a `.txn` file or an inline section). Pure.
pub fn decode_transaction(path: &Path, bytes: &[u8]) -> Result<StoredTransaction> {
    let corrupt = |rule: String| PathsError::corrupt_transaction(path, rule);
    let transaction = Transaction::decode(bytes)
        .map_err(|e| corrupt(format!("Transaction protobuf does not decode: {e}")))?;
    let mut unknown_operation = None;
    for field in wire::fields(bytes) {
        let field = field.map_err(|e| corrupt(format!("Transaction protobuf: {e}")))?;
        if OPERATION_RANGE.contains(&field.number) && !KNOWN_OPERATIONS.contains(&field.number) {
            let value = bytes.get(field.value.clone()).unwrap_or_default();
            // the last occurrence wins, as for a oneof
            unknown_operation = Some((field.number, Bytes::copy_from_slice(value)));
        } else if KNOWN_OPERATIONS.contains(&field.number) {
            unknown_operation = None;
        }
    }
    if unknown_operation.is_some() {
        // an unmodelled operation that comes last replaces any modelled one
        let mut transaction = transaction;
        transaction.operation = None;
        return Ok(StoredTransaction {
            transaction,
            unknown_operation,
        });
    }
    Ok(StoredTransaction {
        transaction,
        unknown_operation,
    })
}

/// Writes `transaction` to `_transactions/{read_version}-{uuid}.txn` (a fresh uuid per
/// transaction, so the name is never taken) and returns the name for
/// `Manifest.transaction_file`.
pub async fn write_transaction_file(
    store: &DatasetStore,
    transaction: &Transaction,
) -> Result<String> {
    let name = transaction_file_name(transaction);
    let path = store.path(&crate::layout::transaction_path(&name));
    store
        .put(&path, Bytes::from(transaction.encode_to_vec()))
        .await?;
    Ok(name)
}

/// The transaction of a read manifest: its inline section, else its `transaction_file`,
/// else `None` (Lance 14's order). A section or file that does not decode is an error.
pub async fn read_transaction(
    store: &DatasetStore,
    file: &ManifestFile,
) -> Result<Option<StoredTransaction>> {
    match &file.decoded.transaction_section {
        Some(Ok(section)) => return decode_transaction(&file.entry.path, section).map(Some),
        Some(Err(rule)) => {
            return Err(PathsError::corrupt_transaction(
                &file.entry.path,
                rule.rule.clone(),
            ))
        }
        None => {}
    }
    let name = &file.decoded.manifest.transaction_file;
    if name.is_empty() {
        return Ok(None);
    }
    if name.contains('/') || name.contains("..") {
        return Err(PathsError::corrupt_transaction(
            &file.entry.path,
            format!("transaction_file {name:?} is not a plain file name"),
        ));
    }
    let path = store.path(&crate::layout::transaction_path(name));
    let bytes = store.get(&path, None).await?;
    decode_transaction(&path, &bytes).map(Some)
}

/// The size of version `version`'s manifest when it exists and records the transaction
/// `uuid`: a put its writer made that reported failure although it landed (a lost response,
/// or a store retry that found its own object). A writer that finds its own version takes
/// the commit as made, and never publishes the same work twice. `None` otherwise, including
/// when the version cannot be read.
pub async fn recorded_by(
    store: &DatasetStore,
    version: u64,
    scheme: crate::manifest::NamingScheme,
    uuid: &str,
) -> Option<u64> {
    let file = crate::manifest::read_manifest_named(store, version, scheme)
        .await
        .ok()?;
    let recorded = read_transaction(store, &file).await.ok()??;
    (recorded.transaction.uuid == uuid).then_some(file.entry.size)
}

/// The versions after `from`, each with its transaction, up to the latest a reader can find:
/// what a writer that lost a race (version `known` exists) reads to judge what it lost to.
/// The versions through `known + 1` and the latest-version hint are read at once (after a
/// lost race the next is most often absent, so the rebase starts one round trip sooner);
/// versions the hint names past them next, concurrently; then names past the hint one by one,
/// as the hint may lag. A hinted version that is missing (cleaned up, or a hint from the
/// future) ends the list there. Versions are read by name under `scheme`, never listed.
pub async fn versions_since(
    store: &DatasetStore,
    scheme: crate::manifest::NamingScheme,
    from: u64,
    known: u64,
) -> Result<Vec<(ManifestFile, Option<StoredTransaction>)>> {
    use crate::manifest::{read_latest_hint, read_manifest_named};
    use futures::StreamExt;
    let hint = async { read_latest_hint(store).await.ok().flatten().unwrap_or(0) };
    let read = |version: u64| async move {
        match read_manifest_named(store, version, scheme).await {
            Ok(file) => {
                let txn = read_transaction(store, &file).await?;
                Ok(Some((file, txn)))
            }
            Err(PathsError::VersionNotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    };
    let read_all = |versions: std::ops::RangeInclusive<u64>| {
        versions
            .map(read)
            .collect::<futures::stream::FuturesOrdered<_>>()
            .collect::<Vec<_>>()
    };
    let (mut found, hint) = futures::join!(read_all(from + 1..=known + 1), hint);
    if hint > known + 1 {
        found.extend(read_all(known + 2..=hint).await);
    }
    let mut out = Vec::new();
    for f in found {
        match f? {
            Some(read) => out.push(read),
            None => return Ok(out),
        }
    }
    let mut version = from + 1 + out.len() as u64;
    while let Some(read) = read(version).await? {
        out.push(read);
        version += 1;
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use lancet_proto::table::transaction::{Append, Operation, ReserveFragments};

    fn txn(op: Operation) -> Transaction {
        Transaction {
            read_version: 3,
            uuid: "00000000-0000-4000-8000-000000000001".into(),
            operation: Some(op),
            ..Default::default()
        }
    }

    #[test]
    fn round_trips_and_names() {
        let t = txn(Operation::ReserveFragments(ReserveFragments {
            num_fragments: 4,
        }));
        let d = decode_transaction(&Path::from("t"), &t.encode_to_vec()).unwrap();
        assert_eq!(d.transaction, t);
        assert_eq!(d.operation_name(), "ReserveFragments");
        assert_eq!(
            transaction_file_name(&t),
            "3-00000000-0000-4000-8000-000000000001.txn"
        );
    }

    #[test]
    fn unknown_operation_is_kept_raw() {
        let mut bytes = txn(Operation::Append(Append::default())).encode_to_vec();
        // field 150, length-delimited, 2 bytes: a newer writer's operation
        bytes.extend_from_slice(&[0xb2, 0x09, 2, 0x08, 0x01]);
        let d = decode_transaction(&Path::from("t"), &bytes).unwrap();
        assert_eq!(d.operation_name(), "Unknown(150)");
        assert_eq!(d.unknown_operation.unwrap().1.as_ref(), &[0x08, 0x01]);
        assert!(d.transaction.operation.is_none());
    }

    #[test]
    fn garbage_is_a_typed_error() {
        let err =
            decode_transaction(&Path::from("_transactions/x.txn"), &[0x0a, 0xff]).unwrap_err();
        assert!(
            matches!(err, PathsError::CorruptTransaction { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("_transactions/x.txn"), "{err}");
    }
}
