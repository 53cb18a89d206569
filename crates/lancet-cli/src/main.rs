//! `lancet`: inspect and operate on Lance tables with lancet's crates.

mod args;
mod at;
mod bench_cmd;
mod cleanup;
mod compact;
mod data;
mod demo;
mod error;
mod fri;
mod index;
mod inspect;
mod io;
mod measure;
mod report;
mod restore;
mod rowid;
#[cfg(feature = "sql")]
mod sql;
mod tag;
mod tree;
mod verify;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::error::CliError;

async fn run(cli: Cli) -> Result<std::process::ExitCode, CliError> {
    let done = |r: Result<(), CliError>| r.map(|()| std::process::ExitCode::SUCCESS);
    match cli.command {
        Command::Verify {
            dataset,
            at,
            json,
            check_previous,
            data,
        } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            verify::run(&dataset, version, json, check_previous, data).await
        }
        Command::Tree { command } => done(tree::run(command).await),
        Command::Bench { command } => done(bench_cmd::run(command).await),
        Command::Cleanup {
            dataset,
            older_than,
            retain_versions,
            delete_unverified,
            dry_run,
            json,
            concurrency,
            rate,
        } => {
            cleanup::cleanup(
                &dataset,
                cleanup::Options {
                    older_than,
                    retain_versions,
                    delete_unverified,
                    dry_run,
                    json,
                    concurrency,
                    rate,
                },
            )
            .await
        }
        c @ (Command::Create { .. }
        | Command::Append { .. }
        | Command::WriteFragments { .. }
        | Command::MergeInsert { .. }
        | Command::Update { .. }
        | Command::Delete { .. }
        | Command::Truncate { .. }) => done(rows(c).await),
        c @ (Command::AddColumn { .. }
        | Command::DropColumns { .. }
        | Command::AlterColumn { .. }
        | Command::Metadata { .. }) => done(schema(c).await),
        #[cfg(feature = "sql")]
        Command::Sql {
            query,
            tables,
            row_columns,
            explain,
            analyze,
            format,
            output,
        } => {
            let mode = match explain {
                true => sql::Mode::Explain { analyze },
                false => {
                    let out = data::Output {
                        columns: None,
                        format,
                        path: output.as_deref(),
                    };
                    sql::Mode::Rows(out.format(), output.clone())
                }
            };
            done(sql::run(&query, &tables, row_columns, mode).await)
        }
        c @ (Command::Scan { .. }
        | Command::Take { .. }
        | Command::Count { .. }
        | Command::Changes { .. }
        | Command::Inspect { .. }
        | Command::Report { .. }
        | Command::Rowid { .. }) => done(reads(c).await),
        c => done(maintain(c).await),
    }
}

/// `lancet` commands of one kind: rows in and out of a table: create, append, write fragments, merge, update, delete, truncate.
async fn rows(command: Command) -> Result<(), CliError> {
    match command {
        Command::Create {
            dataset,
            from,
            stable_row_ids,
            layout,
            data_storage_version,
            max_rows_per_file,
            mode,
        } => {
            let options = data::Create {
                stable_row_ids,
                tree: layout == "tree",
                data_storage_version,
                max_rows_per_file,
                overwrite: mode == "overwrite",
            };
            data::create(&dataset, &from, options).await
        }
        Command::Append {
            dataset,
            from,
            fragments,
        } => match from {
            Some(from) => data::append(&dataset, &from).await,
            None => data::append_fragments(&dataset, &fragments).await,
        },
        Command::WriteFragments { dataset, from } => data::write_fragments(&dataset, &from).await,
        Command::MergeInsert {
            dataset,
            from,
            on,
            when_matched,
            condition,
            when_not_matched,
            when_not_matched_by_source,
            by_source_filter,
            no_index,
            json,
        } => {
            let how = data::MergeHow {
                on,
                when_matched,
                condition,
                when_not_matched,
                by_source: when_not_matched_by_source,
                by_source_filter,
                use_index: !no_index,
            };
            data::merge_insert(&dataset, &from, how, json).await
        }
        Command::Update {
            dataset,
            filter,
            set,
            json,
        } => data::update(&dataset, &filter, &set, json).await,
        Command::Delete {
            dataset,
            filter,
            json,
        } => data::delete(&dataset, &filter, json).await,
        Command::Truncate { dataset, json } => data::truncate(&dataset, json).await,
        _ => Ok(()),
    }
}

/// `lancet` commands of one kind: schema and metadata changes: add, drop and alter columns, metadata.
async fn schema(command: Command) -> Result<(), CliError> {
    match command {
        Command::AddColumn {
            dataset,
            name,
            expr,
            fragments_per_commit,
            json,
        } => data::add_column(&dataset, &name, &expr, fragments_per_commit, json).await,
        Command::DropColumns {
            dataset,
            columns,
            json,
        } => data::drop_columns(&dataset, &columns, json).await,
        Command::AlterColumn {
            dataset,
            column,
            rename,
            nullable,
            data_type,
            json,
        } => {
            let data_type = data_type.map(|t| data::sql_type(&t)).transpose()?;
            let alteration = lancet::ColumnAlteration {
                path: column,
                rename,
                nullable,
                data_type,
            };
            data::alter_column(&dataset, alteration, json).await
        }
        Command::Metadata {
            dataset,
            config,
            schema,
            field,
            set,
            remove,
            replace,
            json,
        } => {
            let target = match (config, schema, field.as_deref()) {
                (true, _, _) => lancet::MetadataTarget::Config,
                (_, true, _) => lancet::MetadataTarget::Schema,
                (_, _, Some(path)) => lancet::MetadataTarget::Field(path),
                _ => lancet::MetadataTarget::Table,
            };
            data::update_metadata(&dataset, target, &set, &remove, replace, json).await
        }
        _ => Ok(()),
    }
}

/// `lancet` commands of one kind: reading a version: scan, take, changes, inspect, row ids.
async fn reads(command: Command) -> Result<(), CliError> {
    match command {
        Command::Scan {
            dataset,
            at,
            columns,
            filter,
            with_row_id,
            with_row_address,
            limit,
            offset,
            format,
            output,
        } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            let scan = data::Scan {
                version,
                filter,
                with_row_id,
                with_row_address,
                limit,
                offset,
            };
            let out = data::Output {
                columns,
                format,
                path: output.as_deref(),
            };
            data::scan(&dataset, scan, out).await
        }
        Command::Count {
            dataset,
            at,
            filter,
            json,
        } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            data::count(&dataset, version, filter.as_deref(), json).await
        }
        Command::Take {
            dataset,
            at,
            row_ids,
            columns,
            format,
            output,
        } => {
            let out = data::Output {
                columns,
                format,
                path: output.as_deref(),
            };
            let (dataset, version) = at.resolve(&dataset).await?;
            data::take(&dataset, version, &row_ids, out).await
        }
        Command::Changes {
            dataset,
            since,
            until,
            format,
            output,
        } => {
            let out = data::Output {
                columns: None,
                format,
                path: output.as_deref(),
            };
            data::changes(&dataset, since, until, out).await
        }
        Command::Inspect { dataset, at, json } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            inspect::run(&dataset, version, json).await
        }
        Command::Report {
            dataset,
            at,
            output,
        } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            report::run(&dataset, version, output.as_deref()).await
        }
        Command::Rowid {
            dataset,
            at,
            json,
            lookup,
            segments,
            versions,
        } => {
            let (dataset, version) = at.resolve(&dataset).await?;
            rowid::run(&dataset, version, json, &lookup, segments, versions).await
        }
        _ => Ok(()),
    }
}

/// `lancet` commands of one kind: maintenance and references: compaction, restore, clone, demo, tags, branches, indexes, the FRI.
async fn maintain(command: Command) -> Result<(), CliError> {
    match command {
        Command::Compact {
            dataset,
            target_rows_per_fragment,
            max_rows_per_group,
            no_materialize_deletions,
            materialize_deletions_threshold,
            defer_index_remap,
            plan,
            execute,
            commit,
            json,
        } => {
            let options = lancet::CompactionOptions {
                target_rows_per_fragment,
                max_rows_per_group,
                materialize_deletions: !no_materialize_deletions,
                materialize_deletions_threshold,
                defer_index_remap,
                ..Default::default()
            };
            let step = match (plan, execute, commit.is_empty()) {
                (true, _, _) => compact::Step::Plan,
                (_, Some(task), _) => compact::Step::Execute(task),
                (_, None, false) => compact::Step::Commit(commit),
                (_, None, true) => compact::Step::All,
            };
            compact::run(&dataset, step, options, json).await
        }
        Command::Restore { dataset, version } => restore::run(&dataset, version).await,
        Command::Clone { source, target, at } => {
            let (source, version) = at.resolve(&source).await?;
            cleanup::clone(&source, &target, version).await
        }
        Command::Demo { dir, layout } => demo::run(&dir, layout == "tree").await,
        Command::Tag { command } => tag::run(command).await,
        Command::Branch { command } => tag::branch(command).await,
        Command::Index { command } => index::run(command).await,
        Command::Fri { command } => fri::run(command).await,
        _ => Ok(()),
    }
}

/// Where the last panic happened, recorded by the panic hook for `main` to report.
static PANIC_AT: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// A panic is a lancet bug, never an answer: the hook only records where it happened (a
/// decoder's caught panic becomes a typed error); one that reaches `main` is reported as
/// `lancet: internal error at <location>` with exit status 101.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map_or_else(|| "an unknown location".to_string(), |l| l.to_string());
        if let Ok(mut slot) = PANIC_AT.lock() {
            *slot = Some(at);
        }
    }));
}

/// Sends lancet's tracing spans and events to stderr: `RUST_LOG` when set, otherwise the
/// level `-v` asks for (warnings only without it). From `-vv` on, each span's busy and idle
/// time is printed when it closes.
fn install_logging(verbose: u8) {
    use tracing_subscriber::fmt::format::FmtSpan;
    use tracing_subscriber::EnvFilter;
    let level = match verbose {
        0 => "warn",
        1 => "warn,lancet=info,lancet_tree=info,lancet_paths=info,lancet_btree=info",
        2 => "warn,lancet=debug,lancet_tree=debug,lancet_paths=debug,lancet_file=debug,lancet_btree=debug,lancet_reuse=debug,lancet_rowid=debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let spans = if verbose >= 2 {
        FmtSpan::CLOSE
    } else {
        FmtSpan::NONE
    };
    // A second subscriber (a test harness's) is not an error worth stopping for.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(spans)
        .with_writer(std::io::stderr)
        .with_target(true)
        .try_init();
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    install_panic_hook();
    install_logging(cli.verbose);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lancet: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let measure = match (&cli.store_latency, cli.store_stats) {
        (None, false) => None,
        (latency, _) => match latency.as_deref().map(measure::parse_latency).transpose() {
            Ok(latency) => Some(measure::Measure::install(latency)),
            Err(e) => {
                eprintln!("lancet: {e}");
                return std::process::ExitCode::FAILURE;
            }
        },
    };
    let stats = cli.store_stats;
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on(run(cli))));
    if let (Some(m), true) = (&measure, stats) {
        eprintln!("{}", m.report());
    }
    match outcome {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            eprintln!("lancet: {e}");
            std::process::ExitCode::FAILURE
        }
        Err(_) => {
            let at = PANIC_AT
                .lock()
                .ok()
                .and_then(|s| s.clone())
                .unwrap_or_else(|| "an unknown location".into());
            eprintln!("lancet: internal error at {at}");
            std::process::ExitCode::from(101)
        }
    }
}
