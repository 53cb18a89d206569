use std::collections::HashMap;

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use bytes::Bytes;
use lance_file::version::ConcreteFileVersion;
use lance_file::writer::FileWriterOptions;
use object_store::path::Path;
use object_store::ObjectStoreExt as _;

use crate::error::{lance_err, FileError, Result};
use crate::schema::check_schema_exact;
use crate::store::FileStore;

/// Lance file format versions lancet writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FileVersion {
    /// 2.0: the version `LanceIndexStore` writes index files in.
    V2_0,
    /// 2.1: what Lance writes FRI row maps and new datasets in.
    #[default]
    V2_1,
    /// 2.2: lance-file's stable version.
    V2_2,
}

impl FileVersion {
    /// The version a manifest's `data_format.version` or a user names: `2.0` (and Lance's
    /// legacy spelling `0.3`), `2.1`, `2.2` (and `stable`, Lance's alias for it).
    pub fn parse(name: &str) -> Option<FileVersion> {
        match name {
            "2.0" | "0.3" => Some(Self::V2_0),
            "2.1" => Some(Self::V2_1),
            "2.2" | "stable" => Some(Self::V2_2),
            _ => None,
        }
    }

    fn concrete(self) -> ConcreteFileVersion {
        match self {
            Self::V2_0 => ConcreteFileVersion::V2_0,
            Self::V2_1 => ConcreteFileVersion::V2_1,
            Self::V2_2 => ConcreteFileVersion::V2_2,
        }
    }

    /// The version's name as a manifest's `data_format.version` records it.
    pub fn name(self) -> &'static str {
        match self {
            Self::V2_0 => "2.0",
            Self::V2_1 => "2.1",
            Self::V2_2 => "2.2",
        }
    }

    /// `(major, minor)` as a `DataFile` records it.
    pub fn data_file_version(self) -> (u32, u32) {
        match self {
            Self::V2_0 => (2, 0),
            Self::V2_1 => (2, 1),
            Self::V2_2 => (2, 2),
        }
    }
}

/// What to write besides the rows.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub version: FileVersion,
    /// Schema metadata (string → string) stored in the file descriptor.
    pub metadata: HashMap<String, String>,
    /// Global buffers, written after the data pages; see [`WrittenFile::global_buffers`].
    pub global_buffers: Vec<Bytes>,
    /// The field ids the file's schema records, one per field in depth-first order (a
    /// table's data file holds its columns' ids from the manifest's schema); `None` numbers
    /// them from 0, as a standalone file does.
    pub field_ids: Option<Vec<i32>>,
}

/// Summary of a written file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    pub num_rows: u64,
    pub size_bytes: u64,
    /// File indexes of the global buffers in the order given (1-based: buffer 0 is the file
    /// descriptor).
    pub global_buffers: Vec<u32>,
    /// The fields that own a column, each with its column index, in order: what a
    /// `DataFile`'s `fields` and `column_indices` record (in 2.1 and later only leaves own
    /// columns; in 2.0 struct and list parents do too).
    pub columns: Vec<(u32, u32)>,
}

/// Writes `batches` to `path` as one Lance file whose schema is exactly `schema`.
/// Every batch must have that schema (metadata aside), otherwise nothing is written.
pub async fn write_file(
    fs: &FileStore,
    path: &Path,
    schema: &Schema,
    batches: &[RecordBatch],
    options: &WriteOptions,
) -> Result<WrittenFile> {
    for (i, batch) in batches.iter().enumerate() {
        check_schema_exact(batch.schema().as_ref(), schema).map_err(|rule| {
            FileError::InvalidInput {
                path: path.clone(),
                rule: format!("batch {i}: {rule}"),
            }
        })?;
    }
    let mut lance_schema =
        lance_core::datatypes::Schema::try_from(schema).map_err(lance_err(path))?;
    if let Some(ids) = &options.field_ids {
        renumber(&mut lance_schema, ids).map_err(|rule| FileError::InvalidInput {
            path: path.clone(),
            rule,
        })?;
    }
    let object_writer = fs.store.create(path).await.map_err(lance_err(path))?;
    let mut writer = lance_file::versions::create_writer(
        options.version.concrete(),
        object_writer,
        lance_schema,
        FileWriterOptions::default(),
    )
    .map_err(lance_err(path))?;
    for batch in batches {
        writer.write_batch(batch).await.map_err(lance_err(path))?;
    }
    let mut global_buffers = Vec::with_capacity(options.global_buffers.len());
    for buffer in &options.global_buffers {
        global_buffers.push(
            writer
                .add_global_buffer(buffer.clone())
                .await
                .map_err(lance_err(path))?,
        );
    }
    let mut keys: Vec<_> = options.metadata.iter().collect();
    keys.sort();
    for (k, v) in keys {
        writer.add_schema_metadata(k.clone(), v.clone());
    }
    let summary = writer.finish().await.map_err(lance_err(path))?;
    Ok(WrittenFile {
        num_rows: summary.num_rows,
        size_bytes: summary.size_bytes,
        global_buffers,
        columns: writer.field_id_to_column_indices().to_vec(),
    })
}

/// Gives the schema's fields `ids` in depth-first order (parents' ids follow).
pub(crate) fn renumber(
    schema: &mut lance_core::datatypes::Schema,
    ids: &[i32],
) -> Result<(), String> {
    fn walk(
        fields: &mut [lance_core::datatypes::Field],
        parent: i32,
        ids: &mut std::slice::Iter<'_, i32>,
    ) -> Result<(), String> {
        for f in fields {
            f.id = *ids
                .next()
                .ok_or("fewer field ids than the schema has fields")?;
            f.parent_id = parent;
            walk(&mut f.children, f.id, ids)?;
        }
        Ok(())
    }
    let mut it = ids.iter();
    walk(&mut schema.fields, -1, &mut it)?;
    match it.next() {
        Some(_) => Err("more field ids than the schema has fields".into()),
        None => Ok(()),
    }
}

/// [`write_file`] into memory: the file's bytes, for a caller that uploads several small
/// files concurrently (a tree commit's leaves) instead of one after the other. `path` only
/// names the file in errors; a Lance file does not record where it is stored.
pub async fn encode_file(
    path: &Path,
    schema: &Schema,
    batches: &[RecordBatch],
    options: &WriteOptions,
) -> Result<(Bytes, WrittenFile)> {
    let memory = std::sync::Arc::new(object_store::memory::InMemory::new());
    let fs = FileStore::new(memory.clone(), "memory:///")?;
    let written = write_file(&fs, path, schema, batches, options).await?;
    let store_err = |e: object_store::Error| FileError::Store {
        path: path.clone(),
        source: std::sync::Arc::new(e),
    };
    let bytes = memory
        .get(path)
        .await
        .map_err(store_err)?
        .bytes()
        .await
        .map_err(store_err)?;
    Ok((bytes, written))
}

/// A Lance file written batch by batch (for outputs too large to hold at once).
pub struct StreamingWriter {
    path: Path,
    schema: Schema,
    writer: lance_file::writer::FileWriter,
    rows: u64,
}

impl StreamingWriter {
    /// Creates `path`; every batch written must have exactly `schema`.
    pub async fn create(
        fs: &FileStore,
        path: &Path,
        schema: &Schema,
        version: FileVersion,
    ) -> Result<Self> {
        Self::create_with_ids(fs, path, schema, version, None).await
    }

    /// [`StreamingWriter::create`] with the field ids the file's schema records (see
    /// [`WriteOptions::field_ids`]).
    pub async fn create_with_ids(
        fs: &FileStore,
        path: &Path,
        schema: &Schema,
        version: FileVersion,
        field_ids: Option<&[i32]>,
    ) -> Result<Self> {
        let mut lance_schema =
            lance_core::datatypes::Schema::try_from(schema).map_err(lance_err(path))?;
        if let Some(ids) = field_ids {
            renumber(&mut lance_schema, ids).map_err(|rule| FileError::InvalidInput {
                path: path.clone(),
                rule,
            })?;
        }
        let object_writer = fs.store.create(path).await.map_err(lance_err(path))?;
        let writer = lance_file::versions::create_writer(
            version.concrete(),
            object_writer,
            lance_schema,
            FileWriterOptions::default(),
        )
        .map_err(lance_err(path))?;
        Ok(Self {
            path: path.clone(),
            schema: schema.clone(),
            writer,
            rows: 0,
        })
    }

    pub async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        check_schema_exact(batch.schema().as_ref(), &self.schema).map_err(|e| {
            FileError::InvalidInput {
                path: self.path.clone(),
                rule: e.rule,
            }
        })?;
        self.rows += batch.num_rows() as u64;
        self.writer
            .write_batch(batch)
            .await
            .map_err(lance_err(&self.path))
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Adds schema metadata and global buffers and closes the file.
    pub async fn finish(
        mut self,
        metadata: &HashMap<String, String>,
        global_buffers: &[Bytes],
    ) -> Result<WrittenFile> {
        let mut indexes = Vec::with_capacity(global_buffers.len());
        for b in global_buffers {
            indexes.push(
                self.writer
                    .add_global_buffer(b.clone())
                    .await
                    .map_err(lance_err(&self.path))?,
            );
        }
        let mut keys: Vec<_> = metadata.iter().collect();
        keys.sort();
        for (k, v) in keys {
            self.writer.add_schema_metadata(k.clone(), v.clone());
        }
        let summary = self.writer.finish().await.map_err(lance_err(&self.path))?;
        Ok(WrittenFile {
            num_rows: summary.num_rows,
            size_bytes: summary.size_bytes,
            global_buffers: indexes,
            columns: self.writer.field_id_to_column_indices().to_vec(),
        })
    }
}

#[cfg(test)]
mod version_names {
    use super::FileVersion;

    #[test]
    fn versions_parse_as_manifests_and_users_name_them() {
        for (name, v) in [
            ("2.0", FileVersion::V2_0),
            ("0.3", FileVersion::V2_0),
            ("2.1", FileVersion::V2_1),
            ("2.2", FileVersion::V2_2),
            ("stable", FileVersion::V2_2),
        ] {
            assert_eq!(FileVersion::parse(name), Some(v), "{name}");
        }
        for bad in ["", "2.3", "legacy", "2"] {
            assert_eq!(FileVersion::parse(bad), None, "{bad}");
        }
    }
}
