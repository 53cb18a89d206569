//! Rows in and out of files: Parquet, Arrow IPC (file or stream), CSV and JSON lines, read
//! as a stream of batches (memory bounded by a batch), and written the same ways or as an
//! aligned text table.

use std::fs::File;
use std::io::{BufReader, Seek, Write};
use std::path::Path;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use futures::stream::BoxStream;
use futures::StreamExt;

use crate::error::CliError;

/// Rows read per batch from CSV and JSON lines.
const BATCH_ROWS: usize = 8192;
/// Rows read to infer a CSV or JSON lines file's schema.
const INFER_ROWS: usize = 10_000;

/// The formats rows are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InFormat {
    Parquet,
    ArrowFile,
    ArrowStream,
    Csv,
    JsonLines,
}

fn in_format(path: &Path) -> Result<InFormat, CliError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    Ok(match ext.as_deref() {
        Some("parquet") => InFormat::Parquet,
        Some("arrow" | "ipc" | "feather") => InFormat::ArrowFile,
        Some("arrows") => InFormat::ArrowStream,
        Some("csv") => InFormat::Csv,
        Some("jsonl" | "ndjson") => InFormat::JsonLines,
        _ => {
            return Err(CliError::Usage(format!(
            "{}: unknown file type (use .parquet, .arrow, .ipc, .arrows, .csv, .jsonl or .ndjson)",
            path.display()
        )))
        }
    })
}

/// A file's rows as a schema and a stream of batches. CSV and JSON lines take `schema` (a
/// table's, for an append) or infer one from their first rows (for a create); Parquet and
/// Arrow carry their own. A file that does not read is an error naming it.
pub fn read_rows(
    path: &Path,
    schema: Option<SchemaRef>,
) -> Result<(SchemaRef, BoxStream<'static, lancet::Result<RecordBatch>>), CliError> {
    let format = in_format(path)?;
    let shown = path.display().to_string();
    let bad = {
        let shown = shown.clone();
        move |e: ArrowError| CliError::Usage(format!("{shown}: {e}"))
    };
    let open = || File::open(path).map_err(|e| CliError::Usage(format!("{shown}: {e}")));
    let (file_schema, reader): Rows = match format {
        InFormat::Parquet => {
            let builder =
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(open()?)
                    .map_err(|e| CliError::Usage(format!("{shown}: {e}")))?;
            let reader = builder
                .with_batch_size(BATCH_ROWS)
                .build()
                .map_err(|e| CliError::Usage(format!("{shown}: {e}")))?;
            (reader.schema(), Box::new(reader))
        }
        InFormat::ArrowFile => {
            let reader =
                arrow_ipc::reader::FileReader::try_new(open()?, None).map_err(bad.clone())?;
            (reader.schema(), Box::new(reader))
        }
        InFormat::ArrowStream => {
            let reader = arrow_ipc::reader::StreamReader::try_new(BufReader::new(open()?), None)
                .map_err(bad.clone())?;
            (reader.schema(), Box::new(reader))
        }
        InFormat::Csv => csv_reader(path, schema.clone())?,
        InFormat::JsonLines => {
            let schema = match schema.clone() {
                Some(s) => s,
                None => {
                    let mut file = BufReader::new(open()?);
                    let (inferred, _) =
                        arrow_json::reader::infer_json_schema(&mut file, Some(INFER_ROWS))
                            .map_err(bad.clone())?;
                    file.rewind()
                        .map_err(|e| CliError::Usage(format!("{shown}: {e}")))?;
                    Arc::new(inferred)
                }
            };
            // a key the table has no column for is an error, not dropped
            let reader = arrow_json::ReaderBuilder::new(schema.clone())
                .with_strict_mode(true)
                .with_batch_size(BATCH_ROWS)
                .build(BufReader::new(open()?))
                .map_err(bad.clone())?;
            (schema, Box::new(reader))
        }
    };
    let stream = futures::stream::iter(reader).map(move |batch| {
        batch.map_err(|e| lancet::Error::InvalidArgument {
            what: shown.clone(),
            reason: e.to_string(),
        })
    });
    Ok((file_schema, stream.boxed()))
}

/// Rows of a CSV file with a header, typed as `schema` (whose column names the header must
/// list in order) or as inferred from its first rows.
fn csv_reader(path: &Path, schema: Option<SchemaRef>) -> Result<Rows, CliError> {
    let shown = path.display().to_string();
    let bad = |e: ArrowError| CliError::Usage(format!("{shown}: {e}"));
    let open = || File::open(path).map_err(|e| CliError::Usage(format!("{shown}: {e}")));
    let format = arrow_csv::reader::Format::default().with_header(true);
    let (inferred, _) = format
        .infer_schema(&mut open()?, Some(INFER_ROWS))
        .map_err(bad)?;
    let schema = match schema {
        // the header names the table's columns, in order
        Some(s) => {
            let names = |s: &arrow_schema::Schema| -> Vec<String> {
                s.fields().iter().map(|f| f.name().clone()).collect()
            };
            if names(&inferred) != names(&s) {
                return Err(CliError::Usage(format!(
                    "{shown}: columns {:?} where the table has {:?}",
                    names(&inferred),
                    names(&s)
                )));
            }
            s
        }
        None => Arc::new(inferred),
    };
    let reader = arrow_csv::ReaderBuilder::new(schema.clone())
        .with_header(true)
        .with_batch_size(BATCH_ROWS)
        .build(open()?)
        .map_err(bad)?;
    Ok((schema, Box::new(reader)))
}

/// A file's schema and its batches.
type Rows = (
    SchemaRef,
    Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>,
);

/// The formats rows are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutFormat {
    /// An aligned text table.
    Table,
    Csv,
    /// One JSON object per row, columns in order.
    Jsonl,
    Parquet,
    /// An Arrow IPC file.
    Arrow,
}

/// Writes batches as they come in one format, to a file or stdout.
pub struct RowWriter {
    inner: Inner,
}

enum Inner {
    /// Text tables are aligned over every row, so they are held until the end.
    Table(Box<dyn Write>, Vec<RecordBatch>),
    Csv(arrow_csv::Writer<Box<dyn Write>>),
    Jsonl(arrow_json::LineDelimitedWriter<Box<dyn Write>>),
    Parquet(parquet::arrow::ArrowWriter<File>),
    Arrow(arrow_ipc::writer::FileWriter<Box<dyn Write>>),
}

impl RowWriter {
    /// A writer of `schema`'s rows to `path` (stdout when `None`; Parquet needs a file).
    pub fn new(
        format: OutFormat,
        schema: &SchemaRef,
        path: Option<&Path>,
    ) -> Result<Self, CliError> {
        let sink = || -> Result<Box<dyn Write>, CliError> {
            Ok(match path {
                Some(p) => Box::new(std::io::BufWriter::new(File::create(p)?)),
                None => Box::new(std::io::BufWriter::new(std::io::stdout())),
            })
        };
        let arrow = |e: ArrowError| CliError::Usage(format!("writing rows: {e}"));
        let inner = match format {
            OutFormat::Table => Inner::Table(sink()?, Vec::new()),
            OutFormat::Csv => Inner::Csv(
                arrow_csv::WriterBuilder::new()
                    .with_header(true)
                    .build(sink()?),
            ),
            OutFormat::Jsonl => Inner::Jsonl(
                arrow_json::WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .build::<_, arrow_json::writer::LineDelimited>(sink()?),
            ),
            OutFormat::Parquet => {
                let p =
                    path.ok_or_else(|| CliError::Usage("--format parquet needs -o FILE".into()))?;
                Inner::Parquet(
                    parquet::arrow::ArrowWriter::try_new(File::create(p)?, schema.clone(), None)
                        .map_err(|e| CliError::Usage(format!("writing parquet: {e}")))?,
                )
            }
            OutFormat::Arrow => Inner::Arrow(
                arrow_ipc::writer::FileWriter::try_new(sink()?, schema).map_err(arrow)?,
            ),
        };
        Ok(RowWriter { inner })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), CliError> {
        let arrow = |e: ArrowError| CliError::Usage(format!("writing rows: {e}"));
        match &mut self.inner {
            Inner::Table(_, held) => held.push(batch.clone()),
            Inner::Csv(w) => w.write(batch).map_err(arrow)?,
            Inner::Jsonl(w) => w.write(batch).map_err(arrow)?,
            Inner::Parquet(w) => w
                .write(batch)
                .map_err(|e| CliError::Usage(format!("writing parquet: {e}")))?,
            Inner::Arrow(w) => w.write(batch).map_err(arrow)?,
        }
        Ok(())
    }

    pub fn finish(self) -> Result<(), CliError> {
        let arrow = |e: ArrowError| CliError::Usage(format!("writing rows: {e}"));
        match self.inner {
            Inner::Table(mut out, held) => {
                let text = arrow_cast::pretty::pretty_format_batches(&held).map_err(arrow)?;
                writeln!(out, "{text}")?;
                out.flush()?;
            }
            Inner::Csv(w) => w.into_inner().flush()?,
            Inner::Jsonl(mut w) => {
                w.finish().map_err(arrow)?;
                w.into_inner().flush()?;
            }
            Inner::Parquet(w) => {
                w.close()
                    .map_err(|e| CliError::Usage(format!("writing parquet: {e}")))?;
            }
            Inner::Arrow(mut w) => {
                w.finish().map_err(arrow)?;
                w.into_inner().map_err(arrow)?.flush()?;
            }
        }
        Ok(())
    }
}
