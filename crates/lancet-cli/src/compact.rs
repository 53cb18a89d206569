//! `lancet compact`: in one process, or planned, executed by any number of processes, and
//! committed once.

use std::path::PathBuf;

use lancet::{CompactionOptions, CompactionResult, CompactionTask, Dataset};

use crate::error::CliError;

/// What `lancet compact` was asked to do.
pub enum Step {
    /// Plan, execute and commit here.
    All,
    /// Print the plan's tasks as JSON, one array.
    Plan,
    /// Execute the task in this file; print its result as JSON.
    Execute(PathBuf),
    /// Commit the results in these files.
    Commit(Vec<PathBuf>),
}

/// A bar of `tasks` on stderr when it is a terminal (hidden otherwise).
fn progress(tasks: u64) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    indicatif::ProgressBar::new(tasks).with_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} compaction tasks ({elapsed})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    )
}

fn read_json<T: serde::de::DeserializeOwned>(path: &PathBuf) -> Result<T, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))
}

fn json<T: serde::Serialize>(v: &T) -> Result<String, CliError> {
    serde_json::to_string(v).map_err(|e| CliError::Usage(e.to_string()))
}

pub async fn run(
    uri: &str,
    step: Step,
    options: CompactionOptions,
    as_json: bool,
) -> Result<(), CliError> {
    let ds = Dataset::open(uri).await?;
    let compacted = match step {
        Step::Plan => {
            let tasks = ds.optimize().compaction().plan(&options).await?;
            println!("{}", json(&tasks)?);
            return Ok(());
        }
        Step::Execute(task) => {
            // a file holding the whole plan with one task is taken too
            let task: CompactionTask = match read_json::<Vec<CompactionTask>>(&task) {
                Ok(mut tasks) if tasks.len() == 1 => tasks.remove(0),
                Ok(_) => {
                    return Err(CliError::Usage(format!(
                        "{}: a plan of several tasks; give each task its own file",
                        task.display()
                    )))
                }
                Err(_) => read_json(&task)?,
            };
            println!(
                "{}",
                json(&ds.optimize().compaction().execute(&task).await?)?
            );
            return Ok(());
        }
        Step::Commit(files) => {
            let results = files
                .iter()
                .map(read_json::<CompactionResult>)
                .collect::<Result<Vec<_>, _>>()?;
            ds.optimize().compaction().commit(&results).await?
        }
        Step::All => {
            // the library's compact, one task at a time, with progress on a terminal
            let tasks = ds.optimize().compaction().plan(&options).await?;
            let bar = progress(tasks.len() as u64);
            let mut results = Vec::with_capacity(tasks.len());
            for task in &tasks {
                results.push(ds.optimize().compaction().execute(task).await?);
                bar.inc(1);
            }
            bar.finish_and_clear();
            ds.optimize().compaction().commit(&results).await?
        }
    };
    let version = compacted.version();
    if as_json {
        println!(
            "{}",
            serde_json::json!({
                "fragments_removed": compacted.fragments_removed,
                "fragments_added": compacted.fragments_added,
                "version": version,
            })
        );
    } else if compacted.versions == 0 {
        println!("nothing to compact (version {version})");
    } else {
        println!(
            "compacted {} fragments into {} (version {version})",
            compacted.fragments_removed, compacted.fragments_added
        );
    }
    Ok(())
}
