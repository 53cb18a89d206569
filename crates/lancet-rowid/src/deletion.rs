//! Deletion vectors: Lance's deletion files as a roaring bitmap of deleted row offsets.
//!
//! - `.arrow` (`ARROW_ARRAY`): an Arrow IPC *file* with ZSTD buffers, exactly one record batch,
//!   schema exactly `[row_id: UInt32 non-null]` (FORMAT-FACTS §6; not Int32 as the proto says).
//! - `.bin` (`BITMAP`): one portable Roaring32 serialization, with nothing after it.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::{Array, RecordBatch, UInt32Array};
use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::{FileWriter, IpcWriteOptions};
use arrow_schema::{DataType, Field, Schema};
use lancet_paths::DatasetStore;
use lancet_proto::table::{deletion_file::DeletionFileType, DeletionFile};
use object_store::path::Path;
use roaring::RoaringBitmap;

use crate::error::{Result, RowIdError};

/// Lance writes a bitmap file once a deletion vector holds more than this many rows.
pub const BITMAP_THRESHOLD: u64 = 5000;

fn deletion_schema() -> Schema {
    Schema::new(vec![Field::new("row_id", DataType::UInt32, false)])
}

/// Decodes a `.bin` deletion file: exactly one Roaring32, its container count checked
/// before the roaring crate allocates, no trailing bytes.
pub fn decode_bitmap(bytes: &[u8]) -> Result<RoaringBitmap, lancet_proto::Malformed> {
    lancet_proto::roaring_wire::decode_roaring32(bytes)
}

/// Decodes an `.arrow` deletion file of a fragment with at most `max_rows` physical rows.
///
/// arrow-ipc trusts the lengths inside a file (a hostile ZSTD buffer header made it allocate
/// exabytes under `cargo xtask fuzz deletion_arrow`), so the file's structure is checked first
/// by `check_ipc_structure`; a panic inside arrow-ipc is still reported as corruption.
pub fn decode_arrow(bytes: &[u8], max_rows: u64) -> Result<RoaringBitmap, lancet_proto::Malformed> {
    check_ipc_structure(bytes, max_rows)?;
    std::panic::catch_unwind(|| decode_arrow_inner(bytes))
        .unwrap_or_else(|_| Err("the Arrow IPC decoder gave up on the input".into()))
        .map_err(lancet_proto::Malformed::from)
}

const ARROW_MAGIC: &[u8; 6] = b"ARROW1";
/// Sentinel for an uncompressed buffer inside a compressed batch.
const NOT_COMPRESSED: i64 = -1;

use lancet_proto::le::{i32_at, i64_at};

fn to_usize(v: i64, what: &str) -> Result<usize, String> {
    usize::try_from(v).map_err(|_| format!("negative {what} {v}"))
}

/// Checks an Arrow IPC file before arrow-ipc reads it: magic at both ends, a footer inside the
/// file with no dictionaries and exactly one record batch whose block, message and body lie
/// inside the file; a row count and field node lengths of at most `max_rows`; every buffer
/// inside the body; and every compressed buffer declaring an uncompressed size a UInt32
/// column of `max_rows` rows could need.
fn check_ipc_structure(bytes: &[u8], max_rows: u64) -> Result<(), String> {
    let n = bytes.len();
    if n < 18 || bytes.get(..6) != Some(ARROW_MAGIC.as_slice()) {
        return Err("not an Arrow IPC file (magic)".into());
    }
    if bytes.get(n - 6..) != Some(ARROW_MAGIC.as_slice()) {
        return Err("Arrow IPC file has no trailing magic".into());
    }
    let footer_len = to_usize(
        i64::from(i32_at(bytes, n - 10).ok_or("footer length")?),
        "footer length",
    )?;
    let footer_start = (n - 10)
        .checked_sub(footer_len)
        .filter(|s| *s >= 8)
        .ok_or_else(|| format!("footer of {footer_len} bytes does not fit the file"))?;
    let footer = arrow_ipc::root_as_footer(bytes.get(footer_start..n - 10).ok_or("footer")?)
        .map_err(|e| format!("footer: {e}"))?;
    if footer.dictionaries().is_some_and(|d| !d.is_empty()) {
        return Err("deletion files have no dictionaries".into());
    }
    let blocks = footer
        .recordBatches()
        .ok_or("footer lists no record batches")?;
    if blocks.len() != 1 {
        return Err(format!(
            "{} record batches, expected exactly 1",
            blocks.len()
        ));
    }
    let block = blocks.get(0);
    let start = to_usize(block.offset(), "block offset")?;
    let meta_len = to_usize(i64::from(block.metaDataLength()), "metadata length")?;
    let body_len = to_usize(block.bodyLength(), "body length")?;
    let body_start = start.checked_add(meta_len).ok_or("block overflows")?;
    let body_end = body_start.checked_add(body_len).ok_or("block overflows")?;
    if start < 8 || body_end > footer_start {
        return Err("record batch block lies outside the file's data".into());
    }
    let meta = bytes.get(start..body_start).ok_or("metadata")?;
    let (len_at, fb_at): (usize, usize) = if meta.get(..4) == Some([0xff; 4].as_slice()) {
        (4, 8)
    } else {
        (0, 4)
    };
    let fb_len = to_usize(
        i64::from(i32_at(meta, len_at).ok_or("message length")?),
        "message length",
    )?;
    let fb = meta
        .get(fb_at..fb_at.checked_add(fb_len).ok_or("message length")?)
        .ok_or("message runs past its block")?;
    let message = arrow_ipc::root_as_message(fb).map_err(|e| format!("message: {e}"))?;
    let batch = message
        .header_as_record_batch()
        .ok_or("block is not a record batch")?;
    let rows = u64::try_from(batch.length()).map_err(|_| "negative row count")?;
    if rows > max_rows {
        return Err(format!(
            "{rows} deleted rows in a fragment of at most {max_rows}"
        ));
    }
    for node in batch.nodes().iter().flat_map(|v| v.iter()) {
        if u64::try_from(node.length()).map_or(true, |l| l > max_rows) {
            return Err(format!("field node length {} out of range", node.length()));
        }
    }
    let body = bytes.get(body_start..body_end).ok_or("body")?;
    let max_uncompressed = max_rows.saturating_mul(4).saturating_add(64);
    for buffer in batch.buffers().iter().flat_map(|v| v.iter()) {
        let offset = to_usize(buffer.offset(), "buffer offset")?;
        let len = to_usize(buffer.length(), "buffer length")?;
        if offset.checked_add(len).is_none_or(|end| end > body.len()) {
            return Err("buffer lies outside the record batch body".into());
        }
        if batch.compression().is_some() && len >= 8 {
            let declared = i64_at(body, offset).ok_or("buffer header")?;
            if declared != NOT_COMPRESSED
                && u64::try_from(declared).map_or(true, |d| d > max_uncompressed)
            {
                return Err(format!("compressed buffer declares {declared} bytes"));
            }
        }
    }
    Ok(())
}

fn decode_arrow_inner(bytes: &[u8]) -> Result<RoaringBitmap, String> {
    let reader = FileReader::try_new(Cursor::new(bytes), None).map_err(|e| e.to_string())?;
    let schema = reader.schema();
    if schema.fields() != deletion_schema().fields() || !schema.metadata().is_empty() {
        return Err(format!(
            "schema must be exactly [row_id: UInt32 not null], found {schema}"
        ));
    }
    if reader.num_batches() != 1 {
        return Err(format!(
            "{} record batches, expected exactly 1",
            reader.num_batches()
        ));
    }
    let mut bitmap = RoaringBitmap::new();
    for batch in reader {
        let batch = batch.map_err(|e| e.to_string())?;
        let col = batch
            .column(0)
            .as_any()
            .downcast_ref::<UInt32Array>()
            .ok_or("row_id column is not UInt32")?;
        if col.null_count() != 0 {
            return Err("row_id column has nulls".into());
        }
        bitmap.extend(col.values().iter().copied());
    }
    Ok(bitmap)
}

/// Encodes `.bin` bytes.
pub fn encode_bitmap(deleted: &RoaringBitmap) -> Vec<u8> {
    lancet_proto::roaring_wire::encode_roaring32(deleted)
}

/// Encodes `.arrow` bytes (one batch, ZSTD buffers).
pub fn encode_arrow(deleted: &RoaringBitmap) -> Result<Vec<u8>, lancet_proto::Malformed> {
    encode_arrow_inner(deleted).map_err(lancet_proto::Malformed::from)
}

fn encode_arrow_inner(deleted: &RoaringBitmap) -> Result<Vec<u8>, String> {
    let schema = Arc::new(deletion_schema());
    let values = UInt32Array::from_iter_values(deleted.iter());
    let batch =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(values)]).map_err(|e| e.to_string())?;
    let options = IpcWriteOptions::default()
        .try_with_compression(Some(arrow_ipc::CompressionType::ZSTD))
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut writer =
        FileWriter::try_new_with_options(&mut out, &schema, options).map_err(|e| e.to_string())?;
    writer.write(&batch).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    drop(writer);
    Ok(out)
}

/// The file type Lance would write for `deleted`.
pub fn file_type_for(deleted: &RoaringBitmap) -> DeletionFileType {
    if deleted.len() > BITMAP_THRESHOLD {
        DeletionFileType::Bitmap
    } else {
        DeletionFileType::ArrowArray
    }
}

/// Writes the deletion vector `deleted` of fragment `fragment` as a new deletion file of
/// `store` (under `_deletions/`, named as Lance names it, in the format Lance picks for its
/// size), and returns the reference to store in the fragment. `read_version`: the version
/// the deletion was computed on.
pub async fn write_deletion_file(
    store: &DatasetStore,
    fragment: u64,
    read_version: u64,
    deleted: &RoaringBitmap,
) -> Result<DeletionFile> {
    let file_type = file_type_for(deleted);
    let bytes = match file_type {
        DeletionFileType::Bitmap => encode_bitmap(deleted),
        DeletionFileType::ArrowArray => {
            encode_arrow(deleted).map_err(|e| RowIdError::InvalidInput(e.rule))?
        }
    };
    let uuid = lancet_paths::ObjectUuid::new_v4();
    let mut id = [0u8; 8];
    id.copy_from_slice(uuid.as_bytes().get(..8).unwrap_or(&[0; 8]));
    let file = DeletionFile {
        file_type: file_type as i32,
        read_version,
        id: u64::from_le_bytes(id),
        num_deleted_rows: deleted.len(),
        base_id: None,
    };
    let path = store.path(&lancet_paths::layout::deletion_path(fragment, &file)?);
    store.put(&path, bytes.into()).await?;
    Ok(file)
}

/// Reads the deletion file `file` at `path` (resolved by lancet-paths) of a fragment with
/// `physical_rows` rows (0 = unknown). A non-zero `num_deleted_rows` must equal the number of
/// offsets read, and every offset must be below a known `physical_rows`.
pub async fn read_deletion_vector(
    store: &DatasetStore,
    path: &Path,
    file: &DeletionFile,
    physical_rows: u64,
) -> Result<RoaringBitmap> {
    let max_rows = match physical_rows {
        0 => 1u64 << 32,
        n => n,
    };
    let corrupt = |rule: String| RowIdError::CorruptDeletionFile {
        at: lancet_proto::ObjectRef::new(path.to_string()),
        rule,
    };
    let bytes = store.get(path, None).await?;
    let bitmap = match DeletionFileType::try_from(file.file_type) {
        Ok(DeletionFileType::ArrowArray) => decode_arrow(&bytes, max_rows),
        Ok(DeletionFileType::Bitmap) => decode_bitmap(&bytes),
        Err(_) => Err(lancet_proto::Malformed::from(format!(
            "unknown deletion file type {}",
            file.file_type
        ))),
    }
    .map_err(|e| corrupt(e.rule))?;
    if let Some(max) = bitmap.max() {
        if u64::from(max) >= max_rows {
            return Err(corrupt(format!(
                "deletes offset {max} of a fragment with {max_rows} rows"
            )));
        }
    }
    if file.num_deleted_rows != 0 && file.num_deleted_rows != bitmap.len() {
        return Err(corrupt(format!(
            "holds {} offsets but its reference says num_deleted_rows = {}",
            bitmap.len(),
            file.num_deleted_rows
        )));
    }
    Ok(bitmap)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_round_trip() {
        let deleted: RoaringBitmap = [0u32, 5, 77, 4096, 100_000].into_iter().collect();
        assert_eq!(decode_bitmap(&encode_bitmap(&deleted)).unwrap(), deleted);
        assert_eq!(
            decode_arrow(&encode_arrow(&deleted).unwrap(), 1 << 20).unwrap(),
            deleted
        );
        let empty = RoaringBitmap::new();
        assert_eq!(decode_bitmap(&encode_bitmap(&empty)).unwrap(), empty);
        let many: RoaringBitmap = (0..6000).collect();
        assert_eq!(file_type_for(&many), DeletionFileType::Bitmap);
        assert_eq!(file_type_for(&deleted), DeletionFileType::ArrowArray);
    }

    #[test]
    fn rejects_bad_bitmaps() {
        let deleted: RoaringBitmap = [1u32, 2, 3].into_iter().collect();
        let mut bytes = encode_bitmap(&deleted);
        bytes.push(0);
        assert!(decode_bitmap(&bytes)
            .unwrap_err()
            .to_string()
            .contains("trailing"));
        assert!(decode_bitmap(&[1, 2]).is_err());
        assert!(decode_bitmap(&[0; 8])
            .unwrap_err()
            .to_string()
            .contains("cookie"));
        let mut huge = 12346u32.to_le_bytes().to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_bitmap(&huge)
            .unwrap_err()
            .to_string()
            .contains("containers"));
        let good = encode_bitmap(&deleted);
        assert!(decode_bitmap(&good[..good.len() - 1]).is_err());
    }

    #[test]
    fn rejects_bad_arrow_files() {
        assert!(decode_arrow(b"not arrow", 100).is_err());
        // wrong type: Int32
        let schema = Arc::new(Schema::new(vec![Field::new(
            "row_id",
            DataType::Int32,
            false,
        )]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(arrow_array::Int32Array::from(vec![1, 2]))],
        )
        .unwrap();
        let mut out = Vec::new();
        let mut w = FileWriter::try_new(&mut out, &schema).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        drop(w);
        assert!(decode_arrow(&out, 100)
            .unwrap_err()
            .to_string()
            .contains("schema"));
        // two batches
        let schema = Arc::new(deletion_schema());
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(UInt32Array::from(vec![1u32]))],
        )
        .unwrap();
        let mut out = Vec::new();
        let mut w = FileWriter::try_new(&mut out, &schema).unwrap();
        w.write(&batch).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        drop(w);
        assert!(decode_arrow(&out, 100)
            .unwrap_err()
            .to_string()
            .contains("exactly 1"));
        let good = encode_arrow(&[1u32].into_iter().collect()).unwrap();
        assert!(decode_arrow(&good[..good.len() - 3], 100).is_err());
        // the input the fuzzer found: a ZSTD buffer header declaring ~1.3 EB
        let many: RoaringBitmap = (0..50u32).collect();
        let mut hostile = encode_arrow(&many).unwrap();
        let zstd_frame = hostile
            .windows(4)
            .position(|w| w == [0x28, 0xb5, 0x2f, 0xfd])
            .expect("a ZSTD frame");
        hostile[zstd_frame - 8..zstd_frame].copy_from_slice(&(1i64 << 60).to_le_bytes());
        assert!(decode_arrow(&hostile, 100)
            .unwrap_err()
            .to_string()
            .contains("declares"));
    }
}
