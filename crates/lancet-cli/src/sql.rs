//! `lancet sql`: DataFusion's SQL over lancet tables (`lancet-datafusion`'s provider), each
//! named with `--table NAME=URI`; joins across tables work. Filters lancet answers exactly
//! are pushed into its scans (through a BTree where one covers the column); `--explain`
//! prints the plan, where each lancet scan names its filter and index, and `--analyze` runs
//! the query and adds what each step read. A progress line on stderr (a terminal only)
//! counts the rows produced.

use std::io::IsTerminal;
use std::path::Path;

use futures::StreamExt;
use lancet::{Dataset, VersionRef};
use lancet_datafusion::{query, LancetTable, TableOptions};

use crate::error::CliError;
use crate::io::{OutFormat, RowWriter};

/// One `--table NAME=URI[@VERSION]`: the name the query uses, the table, and a version (the
/// latest when `None`).
#[derive(Debug, Clone)]
pub struct TableArg {
    pub name: String,
    pub uri: String,
    pub version: Option<u64>,
}

/// Parses `NAME=URI`, or `NAME=URI@VERSION` for a version of it.
pub fn parse_table(text: &str) -> Result<TableArg, String> {
    let (name, rest) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: a table is NAME=URI"))?;
    if name.is_empty() || rest.is_empty() {
        return Err(format!("{text:?}: a table is NAME=URI"));
    }
    let (uri, version) = match rest.rsplit_once('@') {
        Some((uri, v))
            if !uri.is_empty() && !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) =>
        {
            let version = v
                .parse()
                .map_err(|e| format!("{text:?}: version {v}: {e}"))?;
            (uri, Some(version))
        }
        _ => (rest, None),
    };
    Ok(TableArg {
        name: name.to_string(),
        uri: uri.to_string(),
        version,
    })
}

/// What `lancet sql` prints.
pub enum Mode {
    Rows(OutFormat, Option<std::path::PathBuf>),
    Explain { analyze: bool },
}

/// Runs `text` over `tables` (with `_rowid` / `_rowaddr` columns when `row_columns`).
pub async fn run(
    text: &str,
    tables: &[TableArg],
    row_columns: bool,
    mode: Mode,
) -> Result<(), CliError> {
    let options = TableOptions {
        with_row_id: row_columns,
        with_row_address: row_columns,
    };
    let mut registered = Vec::with_capacity(tables.len());
    for t in tables {
        if registered.iter().any(|(n, _)| n == &t.name) {
            return Err(CliError::Usage(format!("table {} is named twice", t.name)));
        }
        let at = VersionRef {
            version: t.version,
            ..Default::default()
        };
        let dataset = Dataset::open_ref(&t.uri, &at).await?;
        registered.push((t.name.clone(), LancetTable::new(dataset, options)?));
    }
    let ctx = query::session(registered, None)?;
    match mode {
        Mode::Explain { analyze } => {
            print!("{}", query::explain(&ctx, text, analyze).await?);
            Ok(())
        }
        Mode::Rows(format, path) => {
            let (schema, mut rows) = query::run(&ctx, text).await?;
            let bar = Progress::new();
            let mut writer = RowWriter::new(format, &schema, path.as_deref().map(Path::new))?;
            while let Some(batch) = rows.next().await {
                let batch = batch?;
                bar.add(batch.num_rows());
                writer.write(&batch)?;
            }
            bar.finish();
            writer.finish()
        }
    }
}

/// Rows produced so far and the time taken, on stderr when it is a terminal.
struct Progress {
    bar: indicatif::ProgressBar,
}

impl Progress {
    fn new() -> Self {
        let bar = match std::io::stderr().is_terminal() {
            true => indicatif::ProgressBar::new_spinner().with_style(
                indicatif::ProgressStyle::with_template("{spinner} {elapsed} {pos} rows")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            ),
            false => indicatif::ProgressBar::hidden(),
        };
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Progress { bar }
    }

    fn add(&self, rows: usize) {
        self.bar.inc(rows as u64);
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::parse_table;

    #[test]
    fn tables_are_name_uri_and_maybe_a_version() {
        let t = parse_table("t=/data/x").unwrap();
        assert_eq!(
            (t.name.as_str(), t.uri.as_str(), t.version),
            ("t", "/data/x", None)
        );
        let t = parse_table("t=s3://b/x@12").unwrap();
        assert_eq!((t.uri.as_str(), t.version), ("s3://b/x", Some(12)));
        // an @ not followed by digits is part of the path
        let t = parse_table("t=/data/a@b").unwrap();
        assert_eq!((t.uri.as_str(), t.version), ("/data/a@b", None));
        for bad in ["t", "=x", "t=", ""] {
            assert!(parse_table(bad).is_err(), "{bad}");
        }
    }
}
