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

const SERIAL_COOKIE_NO_RUNCONTAINER: u32 = 12346;
const SERIAL_COOKIE: u16 = 12347;

fn deletion_schema() -> Schema {
    Schema::new(vec![Field::new("row_id", DataType::UInt32, false)])
}

/// Decodes a `.bin` deletion file. The container count in the header is checked (at most
/// 65,536) before the roaring crate reads it, and trailing bytes are rejected.
pub fn decode_bitmap(bytes: &[u8]) -> Result<RoaringBitmap, String> {
    let cookie = bytes
        .get(0..4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or("shorter than a roaring header")?;
    if cookie == SERIAL_COOKIE_NO_RUNCONTAINER {
        let size = bytes
            .get(4..8)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
            .ok_or("roaring header truncated")?;
        if size > 65_536 {
            return Err(format!("roaring header claims {size} containers"));
        }
    } else if (cookie & 0xffff) as u16 != SERIAL_COOKIE {
        return Err("not a roaring bitmap (bad cookie)".into());
    }
    let mut cursor = Cursor::new(bytes);
    let bitmap = RoaringBitmap::deserialize_from(&mut cursor).map_err(|e| e.to_string())?;
    if cursor.position() != bytes.len() as u64 {
        return Err(format!(
            "{} trailing bytes after the roaring bitmap",
            bytes.len() as u64 - cursor.position()
        ));
    }
    Ok(bitmap)
}

/// Decodes an `.arrow` deletion file.
pub fn decode_arrow(bytes: &[u8]) -> Result<RoaringBitmap, String> {
    // arrow-ipc is a third-party decoder: a panic inside it is a corrupt file, not a crash.
    std::panic::catch_unwind(|| decode_arrow_inner(bytes))
        .unwrap_or_else(|_| Err("Arrow IPC decoder panicked".into()))
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
    let mut out = Vec::with_capacity(deleted.serialized_size());
    // Writing into a Vec cannot fail.
    let _ = deleted.serialize_into(&mut out);
    out
}

/// Encodes `.arrow` bytes (one batch, ZSTD buffers).
pub fn encode_arrow(deleted: &RoaringBitmap) -> Result<Vec<u8>, String> {
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

/// Reads the deletion file `file` at `path` (resolved by lancet-paths). A non-zero
/// `num_deleted_rows` must equal the number of offsets read.
pub async fn read_deletion_vector(
    store: &DatasetStore,
    path: &Path,
    file: &DeletionFile,
) -> Result<RoaringBitmap> {
    let corrupt = |rule: String| RowIdError::CorruptDeletionFile {
        path: path.to_string(),
        rule,
    };
    let bytes = store.get(path, None).await?;
    let bitmap = match DeletionFileType::try_from(file.file_type) {
        Ok(DeletionFileType::ArrowArray) => decode_arrow(&bytes),
        Ok(DeletionFileType::Bitmap) => decode_bitmap(&bytes),
        Err(_) => Err(format!("unknown deletion file type {}", file.file_type)),
    }
    .map_err(corrupt)?;
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_round_trip() {
        let deleted: RoaringBitmap = [0u32, 5, 77, 4096, 100_000].into_iter().collect();
        assert_eq!(decode_bitmap(&encode_bitmap(&deleted)).unwrap(), deleted);
        assert_eq!(
            decode_arrow(&encode_arrow(&deleted).unwrap()).unwrap(),
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
        assert!(decode_bitmap(&bytes).unwrap_err().contains("trailing"));
        assert!(decode_bitmap(&[1, 2]).is_err());
        assert!(decode_bitmap(&[0; 8]).unwrap_err().contains("cookie"));
        let mut huge = SERIAL_COOKIE_NO_RUNCONTAINER.to_le_bytes().to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_bitmap(&huge).unwrap_err().contains("containers"));
        let good = encode_bitmap(&deleted);
        assert!(decode_bitmap(&good[..good.len() - 1]).is_err());
    }

    #[test]
    fn rejects_bad_arrow_files() {
        assert!(decode_arrow(b"not arrow").is_err());
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
        assert!(decode_arrow(&out).unwrap_err().contains("schema"));
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
        assert!(decode_arrow(&out).unwrap_err().contains("exactly 1"));
        let good = encode_arrow(&[1u32].into_iter().collect()).unwrap();
        assert!(decode_arrow(&good[..good.len() - 3]).is_err());
    }
}
