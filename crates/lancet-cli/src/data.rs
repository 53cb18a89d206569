//! `lancet create|append|delete|update|scan|take`: rows in and out of a table.

use std::path::Path;

use futures::StreamExt;
use lancet::{CreateOptions, Dataset, Filter, Layout, ScanOptions};

use crate::error::CliError;
use crate::io::{read_rows, OutFormat, RowWriter};

/// What `lancet create` takes besides the table and the file.
pub struct Create {
    pub stable_row_ids: bool,
    pub tree: bool,
    /// `None`: 2.2 for a new table, the table's own on an overwrite.
    pub data_storage_version: Option<String>,
    pub max_rows_per_file: u64,
    pub overwrite: bool,
}

fn file_version(v: &str) -> Result<lancet::file::FileVersion, CliError> {
    lancet::file::FileVersion::parse(v).ok_or_else(|| {
        CliError::Usage(format!(
            "--data-storage-version {v}: lancet writes 2.0, 2.1 and 2.2"
        ))
    })
}

pub async fn create(uri: &str, from: &Path, options: Create) -> Result<(), CliError> {
    let (schema, rows) = read_rows(from, None)?;
    if options.overwrite {
        match Dataset::open(uri).await {
            Ok(ds) => {
                let append = lancet::AppendOptions {
                    max_rows_per_file: options.max_rows_per_file,
                    data_storage_version: (options.data_storage_version.as_deref())
                        .map(file_version)
                        .transpose()?,
                    ..Default::default()
                };
                let done = ds.overwrite(schema, counted(rows), &append).await?;
                println!(
                    "overwrote {} (version {}, {} fragments, {} rows)",
                    done.dataset.uri(),
                    done.version(),
                    done.fragments_added,
                    done.rows
                );
                return Ok(());
            }
            // no table there: overwriting creates it, as pylance does
            Err(e) if e.kind() == lancet::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    let created = Dataset::create(
        uri,
        schema,
        counted(rows),
        CreateOptions {
            stable_row_ids: options.stable_row_ids,
            layout: if options.tree {
                Layout::Tree
            } else {
                Layout::Flat
            },
            data_storage_version: file_version(
                options.data_storage_version.as_deref().unwrap_or("2.2"),
            )?,
            max_rows_per_file: options.max_rows_per_file,
            ..Default::default()
        },
    )
    .await?
    .dataset;
    println!(
        "created {} (version {}, {} fragments, {} rows)",
        created.uri(),
        created.version(),
        created.fragments().await?.len(),
        created.num_rows().unwrap_or(0)
    );
    Ok(())
}

pub async fn append(uri: &str, from: &Path) -> Result<(), CliError> {
    let ds = Dataset::open(uri).await?;
    let (_, rows) = read_rows(from, Some(ds.schema()?))?;
    appended(&ds.append(counted(rows)).await?.dataset);
    Ok(())
}

fn appended(ds: &Dataset) {
    println!(
        "appended to {} (version {}, {} rows)",
        ds.uri(),
        ds.version(),
        ds.num_rows().unwrap_or(0)
    );
}

/// What a match does (`lancet merge-insert --when-matched`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WhenMatched {
    Update,
    Delete,
    Nothing,
    Fail,
}

/// What an unmatched source row does (`--when-not-matched`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WhenNotMatched {
    Insert,
    Nothing,
}

/// What a target row no source row matches does (`--when-not-matched-by-source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BySource {
    Keep,
    Delete,
}

/// `lancet merge-insert`'s rules.
pub struct MergeHow {
    pub on: Vec<String>,
    pub when_matched: WhenMatched,
    pub condition: Option<String>,
    pub when_not_matched: WhenNotMatched,
    pub by_source: BySource,
    pub by_source_filter: Option<String>,
    pub use_index: bool,
}

/// `lancet merge-insert`.
pub async fn merge_insert(
    uri: &str,
    from: &Path,
    how: MergeHow,
    json: bool,
) -> Result<(), CliError> {
    let ds = Dataset::open(uri).await?;
    let (_, rows) = read_rows(from, Some(ds.schema()?))?;
    let when_matched = match how.when_matched {
        WhenMatched::Update => "update",
        WhenMatched::Delete => "delete",
        WhenMatched::Nothing => "nothing",
        WhenMatched::Fail => "fail",
    };
    let merge = ds
        .merge_insert(&how.on)
        .use_index(how.use_index)
        .with_options(&lancet::MergeOptions {
            when_matched: when_matched.into(),
            condition: how.condition,
            insert_not_matched: how.when_not_matched == WhenNotMatched::Insert,
            delete_not_matched_by_source: how.by_source == BySource::Delete,
            by_source_filter: how.by_source_filter,
        })?;
    let committed = merge.execute(rows).await?;
    let version = committed.version();
    let merged = committed.merged.unwrap_or_default();
    if json {
        println!(
            "{}",
            serde_json::json!({
                "inserted_rows": merged.inserted_rows,
                "updated_rows": merged.updated_rows,
                "deleted_rows": merged.deleted_rows,
                "version": version,
            })
        );
    } else {
        println!(
            "merged into {uri}: {} inserted, {} updated, {} deleted; version {version}",
            merged.inserted_rows, merged.updated_rows, merged.deleted_rows
        );
    }
    Ok(())
}

/// `lancet write-fragments`: the fragments, each its `DataFragment` protobuf in base64.
pub async fn write_fragments(uri: &str, from: &Path) -> Result<(), CliError> {
    use base64::Engine;
    use lancet::proto::prost::Message;
    let ds = Dataset::open(uri).await?;
    let (_, rows) = read_rows(from, Some(ds.schema()?))?;
    let fragments = (ds.storage())
        .write_fragments(counted(rows), &lancet::AppendOptions::default())
        .await?;
    let encoded: Vec<String> = fragments
        .iter()
        .map(|f| base64::engine::general_purpose::STANDARD.encode(f.encode_to_vec()))
        .collect();
    let rows: u64 = fragments.iter().map(|f| f.physical_rows).sum();
    println!(
        "{}",
        serde_json::json!({ "fragments": encoded, "rows": rows })
    );
    Ok(())
}

/// `lancet append --fragments`: every fragment the files list, in one Append.
pub async fn append_fragments(uri: &str, files: &[std::path::PathBuf]) -> Result<(), CliError> {
    use base64::Engine;
    use lancet::proto::prost::Message;
    let mut fragments = Vec::new();
    for file in files {
        let bad = |why: String| CliError::Usage(format!("{}: {why}", file.display()));
        let text = std::fs::read_to_string(file).map_err(|e| bad(e.to_string()))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let listed = json["fragments"].as_array().ok_or_else(|| {
            bad("no \"fragments\" list (write it with lancet write-fragments)".into())
        })?;
        for f in listed {
            let bytes = f
                .as_str()
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .ok_or_else(|| bad("a fragment is not base64".into()))?;
            fragments.push(
                lancet::proto::table::DataFragment::decode(bytes.as_slice())
                    .map_err(|e| bad(format!("a fragment does not decode: {e}")))?,
            );
        }
    }
    let op = lancet::Operation::Append(lancet::proto::table::transaction::Append { fragments });
    appended(&Dataset::open(uri).await?.commit(op).await?.dataset);
    Ok(())
}

pub async fn delete(uri: &str, filter: &str, json: bool) -> Result<(), CliError> {
    let ds = Dataset::open(uri).await?;
    let changed = ds.delete(&Filter::parse(filter)?).await?;
    report(
        json,
        "deleted_rows",
        changed.rows,
        changed.dataset.version(),
    );
    Ok(())
}

/// `lancet metadata`.
pub async fn update_metadata(
    uri: &str,
    target: lancet::MetadataTarget<'_>,
    set: &[String],
    remove: &[String],
    replace: bool,
    json: bool,
) -> Result<(), CliError> {
    let mut entries: Vec<(&str, Option<&str>)> = Vec::new();
    for s in set {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| CliError::Usage(format!("--set {s:?}: expected KEY=VALUE")))?;
        entries.push((k, Some(v)));
    }
    entries.extend(remove.iter().map(|k| (k.as_str(), None)));
    if entries.is_empty() && !replace {
        return Err(CliError::Usage(
            "nothing to change: give --set, --remove or --replace".into(),
        ));
    }
    let ds = Dataset::open(uri).await?;
    let done = ds
        .storage()
        .update_metadata(target, &entries, replace)
        .await?;
    match json {
        true => println!("{}", serde_json::json!({ "version": done.version() })),
        false => println!("updated {uri} (version {})", done.version()),
    }
    Ok(())
}

/// `lancet truncate`.
pub async fn truncate(uri: &str, json: bool) -> Result<(), CliError> {
    let done = Dataset::open(uri).await?.storage().truncate().await?;
    report(json, "deleted_rows", done.rows, done.version());
    Ok(())
}

/// The Arrow type a SQL type name names, as Lance's filter language maps it (`INT`,
/// `BIGINT`, `FLOAT`, `DOUBLE`, `VARCHAR`, `DATE`, `TIMESTAMP`, `DECIMAL(p, s)`, ...).
pub fn sql_type(name: &str) -> Result<arrow_schema::DataType, CliError> {
    // a cast of a column stays a cast (a constant one folds into a literal)
    match lancet::filter::parse_value(&format!("CAST(c AS {name})")) {
        Ok(lancet::filter::Scalar::Cast(_, t)) => Ok(t),
        _ => Err(CliError::Usage(format!(
            "--type {name:?}: not a SQL type name"
        ))),
    }
}

/// `lancet alter-column`.
pub async fn alter_column(
    uri: &str,
    alteration: lancet::ColumnAlteration,
    json: bool,
) -> Result<(), CliError> {
    let ds = Dataset::open(uri).await?;
    let done = ds.alter_columns(std::slice::from_ref(&alteration)).await?;
    match json {
        true => println!("{}", serde_json::json!({ "version": done.version() })),
        false => println!("altered {} (version {})", alteration.path, done.version()),
    }
    Ok(())
}

/// `lancet drop-columns`.
pub async fn drop_columns(uri: &str, columns: &[String], json: bool) -> Result<(), CliError> {
    let ds = Dataset::open(uri).await?;
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    let done = ds.drop_columns(&names).await?;
    match json {
        true => println!("{}", serde_json::json!({ "version": done.version() })),
        false => println!(
            "dropped {} (version {})",
            columns.join(", "),
            done.version()
        ),
    }
    Ok(())
}

pub async fn update(uri: &str, filter: &str, set: &[String], json: bool) -> Result<(), CliError> {
    let ds = Dataset::open(uri).await?;
    let filter = Filter::parse(filter)?;
    let assignments = set
        .iter()
        .map(|s| lancet::filter::parse_assignment(s))
        .collect::<Result<Vec<_>, _>>()?;
    let changed = ds.update(&filter, &assignments).await?;
    report(
        json,
        "updated_rows",
        changed.rows,
        changed.dataset.version(),
    );
    Ok(())
}

pub async fn add_column(
    uri: &str,
    name: &str,
    expr: &str,
    fragments_per_commit: Option<usize>,
    json: bool,
) -> Result<(), CliError> {
    let ds = Dataset::open(uri).await?;
    let value = lancet::filter::parse_value(expr)?;
    let options = lancet::AddColumnOptions {
        fragments_per_commit: fragments_per_commit.unwrap_or(usize::MAX),
    };
    let done = ds.add_column(name, &value, options).await?.dataset;
    if json {
        println!("{}", serde_json::json!({ "version": done.version() }));
    } else {
        println!("added column {name:?}; version {}", done.version());
    }
    Ok(())
}

fn report(json: bool, what: &str, rows: u64, version: u64) {
    if json {
        println!("{}", serde_json::json!({ what: rows, "version": version }));
    } else {
        println!(
            "{} {rows} rows; version {version}",
            what.replace("_rows", "")
        );
    }
}

/// What `lancet scan` and `lancet take` print.
pub struct Output<'a> {
    pub columns: Option<Vec<String>>,
    pub format: Option<OutFormat>,
    pub path: Option<&'a Path>,
}

impl Output<'_> {
    pub fn format(&self) -> OutFormat {
        use std::io::IsTerminal;
        match self.format {
            Some(f) => f,
            None if self.path.is_none() && std::io::stdout().is_terminal() => OutFormat::Table,
            None => OutFormat::Jsonl,
        }
    }
}

pub struct Scan {
    pub version: Option<u64>,
    pub filter: Option<String>,
    pub with_row_id: bool,
    pub with_row_address: bool,
    pub limit: Option<u64>,
    pub offset: u64,
}

pub async fn scan(uri: &str, scan: Scan, out: Output<'_>) -> Result<(), CliError> {
    let ds = Dataset::open(uri).await?;
    let filter = scan.filter.as_deref().map(Filter::parse).transpose()?;
    let options = ScanOptions {
        columns: out.columns.clone(),
        filter,
        with_row_id: scan.with_row_id,
        with_row_address: scan.with_row_address,
        limit: scan.limit,
        offset: scan.offset,
        version: scan.version,
        ..Default::default()
    };
    let schema = match scan.version {
        Some(v) if v != ds.version() => ds.checkout(v).await?.storage().scan_schema(&options)?,
        _ => ds.storage().scan_schema(&options)?,
    };
    let mut rows = ds.scan(options).await?;
    let mut writer = RowWriter::new(out.format(), &schema, out.path)?;
    while let Some(batch) = rows.next().await {
        writer.write(&batch?)?;
    }
    writer.finish()
}

pub async fn take(
    uri: &str,
    version: Option<u64>,
    ids: &[u64],
    out: Output<'_>,
) -> Result<(), CliError> {
    let ds = open_at(uri, version).await?;
    let batch = ds.take(ids, out.columns.as_deref()).await?;
    let mut writer = RowWriter::new(out.format(), &batch.schema(), out.path)?;
    writer.write(&batch)?;
    writer.finish()
}

/// `lancet count`: the rows a filter matches, or every visible row (pylance's `count_rows`);
/// with `--json`, `{"rows": N, "version": V}`.
pub async fn count(
    uri: &str,
    version: Option<u64>,
    filter: Option<&str>,
    json: bool,
) -> Result<(), CliError> {
    let ds = open_at(uri, version).await?;
    let filter = filter.map(Filter::parse).transpose()?;
    let rows = ds.count_rows(filter.as_ref()).await?;
    if json {
        println!(
            "{}",
            serde_json::json!({"rows": rows, "version": ds.version()})
        );
    } else {
        println!("{rows}");
    }
    Ok(())
}

/// `lancet changes`: inserted and updated rows, then deleted row ids, each led by `_change`.
pub async fn changes(
    uri: &str,
    since: u64,
    until: Option<u64>,
    out: Output<'_>,
) -> Result<(), CliError> {
    use arrow_array::{ArrayRef, RecordBatch, StringArray, UInt64Array};
    let ds = open_at(uri, until).await?;
    let changes = ds.changes(since, ds.version()).await?;
    let led = |batch: &RecordBatch, what: &str| -> Result<RecordBatch, CliError> {
        let mut fields = vec![std::sync::Arc::new(arrow_schema::Field::new(
            "_change",
            arrow_schema::DataType::Utf8,
            false,
        ))];
        fields.extend(batch.schema().fields().iter().cloned());
        let mut columns: Vec<ArrayRef> =
            vec![std::sync::Arc::new(StringArray::from(vec![
                what;
                batch.num_rows()
            ]))];
        columns.extend(batch.columns().iter().cloned());
        // the data columns may be NULL in a deleted row's line
        let fields: Vec<_> = fields
            .into_iter()
            .map(|f| std::sync::Arc::new(f.as_ref().clone().with_nullable(f.name() != "_change")))
            .collect();
        RecordBatch::try_new(
            std::sync::Arc::new(arrow_schema::Schema::new(fields)),
            columns,
        )
        .map_err(|e| CliError::Usage(e.to_string()))
    };
    let inserted = led(&changes.inserted, "inserted")?;
    let updated = led(&changes.updated, "updated")?;
    // deleted ids: `_rowid` set, every other column NULL
    let schema = inserted.schema();
    let n = changes.deleted_row_ids.len();
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| -> ArrayRef {
            match f.name().as_str() {
                "_change" => std::sync::Arc::new(StringArray::from(vec!["deleted"; n])),
                "_rowid" => std::sync::Arc::new(UInt64Array::from(changes.deleted_row_ids.clone())),
                _ => arrow_array::new_null_array(f.data_type(), n),
            }
        })
        .collect();
    let deleted = RecordBatch::try_new(schema.clone(), columns)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let mut writer = RowWriter::new(out.format(), &schema, out.path)?;
    for batch in [&inserted, &updated, &deleted] {
        if batch.num_rows() > 0 {
            writer.write(batch)?;
        }
    }
    writer.finish()
}

async fn open_at(uri: &str, version: Option<u64>) -> Result<Dataset, CliError> {
    let ds = Dataset::open(uri).await?;
    Ok(match version {
        Some(v) if v != ds.version() => ds.checkout(v).await?,
        _ => ds,
    })
}

/// `rows`, with a count of rows read so far on stderr when it is a terminal (cleared when
/// the rows end).
fn counted(
    rows: futures::stream::BoxStream<'static, lancet::Result<arrow_array::RecordBatch>>,
) -> futures::stream::BoxStream<'static, lancet::Result<arrow_array::RecordBatch>> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return rows;
    }
    let bar = indicatif::ProgressBar::new_spinner()
        .with_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {human_pos} rows written ({per_sec})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        )
        .with_finish(indicatif::ProgressFinish::AndClear);
    rows.inspect(move |b| {
        if let Ok(b) = b {
            bar.inc(b.num_rows() as u64);
        }
    })
    .boxed()
}
