//! `lancet clone` and `lancet cleanup`: printing only; the work is `Dataset::shallow_clone`
//! and `Dataset::cleanup`.

use std::io::IsTerminal;
use std::time::Duration;

use lancet::{CleanupPolicy, CleanupProgress, CleanupReport, Dataset};
use serde_json::json;

use crate::error::CliError;

/// `lancet clone <src> <dst> [--version N]`.
pub async fn clone(source: &str, target: &str, version: Option<u64>) -> Result<(), CliError> {
    let ds = Dataset::open(source).await?;
    let clone = ds.shallow_clone(target, version).await?.dataset;
    let fragments = clone.fragments().await?.len();
    println!(
        "cloned version {} of {source} to {target}: {fragments} fragments shared through base path {}",
        clone.version(),
        clone
            .storage().manifest()
            .base_paths
            .last()
            .map_or(0, |b| b.id)
    );
    Ok(())
}

/// What `lancet cleanup` was asked.
pub struct Options {
    pub older_than: Option<String>,
    pub retain_versions: Option<u64>,
    pub delete_unverified: bool,
    pub dry_run: bool,
    pub json: bool,
    pub concurrency: usize,
    pub rate: Option<u32>,
}

/// `lancet cleanup <ds> ...`.
pub async fn cleanup(uri: &str, o: Options) -> Result<std::process::ExitCode, CliError> {
    let older_than = o.older_than.as_deref().map(parse_duration).transpose()?;
    let mut policy = CleanupPolicy {
        older_than,
        retain_versions: o.retain_versions,
        dry_run: o.dry_run,
        delete_concurrency: o.concurrency,
        deletes_per_second: o.rate,
        ..Default::default()
    };
    if o.delete_unverified {
        // objects no version names wait only as long as versions do: that age must be given
        // (an in-progress commit's objects are younger than it)
        policy.unverified_older_than = older_than.ok_or_else(|| {
            CliError::Usage(
                "--delete-unverified needs --older-than: files no version names are deleted once older than it".into(),
            )
        })?;
    }
    let ds = Dataset::open(uri).await?;
    let bar = Bar::new();
    let report = ds.cleanup_with_progress(&policy, |p| bar.show(p)).await?;
    bar.finish();
    if o.json {
        println!("{}", report_json(&report));
    } else {
        print_report(&report);
    }
    Ok(if report.failed.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        for (path, error) in &report.failed {
            eprintln!("lancet: deleting {path}: {error}");
        }
        std::process::ExitCode::FAILURE
    })
}

fn report_json(r: &CleanupReport) -> serde_json::Value {
    let kinds: serde_json::Map<String, serde_json::Value> = r
        .deleted
        .iter()
        .map(|(k, t)| {
            (
                k.name().to_string(),
                json!({"objects": t.objects, "bytes": t.bytes}),
            )
        })
        .collect();
    let total = r.total();
    json!({
        "dry_run": r.dry_run,
        "kept_versions": r.kept_versions,
        "removed_versions": r.removed_versions,
        "deleted": kinds,
        "total": {"objects": total.objects, "bytes": total.bytes},
        "kept_young": r.kept_young,
        "failed": r.failed.iter().map(|(p, e)| json!({"path": p, "error": e})).collect::<Vec<_>>(),
        "deleted_paths": r.deleted_paths,
        "kept_outside": r.kept_outside,
    })
}

fn print_report(r: &CleanupReport) {
    let verb = if r.dry_run { "would delete" } else { "deleted" };
    let total = r.total();
    println!(
        "{} {} versions, kept {} ({}); {verb} {} objects, {} bytes",
        if r.dry_run { "would remove" } else { "removed" },
        r.removed_versions.len(),
        r.kept_versions.len(),
        list(&r.kept_versions),
        total.objects,
        total.bytes
    );
    for (kind, t) in &r.deleted {
        println!(
            "  {:<12} {:>8} objects {:>14} bytes",
            kind.name(),
            t.objects,
            t.bytes
        );
    }
    if r.kept_young > 0 {
        println!(
            "  kept {} objects no version names: younger than the threshold (an in-progress commit may own them)",
            r.kept_young
        );
    }
    if !r.kept_outside.is_empty() {
        println!(
            "  kept {} objects reached through links leading out of the table (never deleted): {}",
            r.kept_outside.len(),
            r.kept_outside.join(", ")
        );
    }
}

/// `1, 2, 5..9`.
fn list(versions: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(&start) = versions.get(i) {
        let mut end = start;
        while versions.get(i + 1) == Some(&(end + 1)) {
            end += 1;
            i += 1;
        }
        out.push(if end > start {
            format!("{start}..{end}")
        } else {
            start.to_string()
        });
        i += 1;
    }
    out.join(", ")
}

/// A duration as humantime reads it: `0s`, `90m`, `36h`, `7d`, `2w`, `1h 30m`, `7 days`.
pub fn parse_duration(text: &str) -> Result<Duration, CliError> {
    humantime::parse_duration(text.trim()).map_err(|e| {
        CliError::Usage(format!(
            "duration {text:?}: {e} (a number and a unit, like 90m, 36h or 7d)"
        ))
    })
}

/// A progress bar on stderr when it is a terminal (hidden otherwise), one phase at a time.
struct Bar {
    bar: indicatif::ProgressBar,
}

impl Bar {
    fn new() -> Self {
        let bar = if std::io::stderr().is_terminal() {
            indicatif::ProgressBar::new(0).with_style(
                indicatif::ProgressStyle::with_template("{msg:<16} {bar:30} {pos}/{len}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            )
        } else {
            indicatif::ProgressBar::hidden()
        };
        Self { bar }
    }

    fn show(&self, p: CleanupProgress) {
        let (phase, done, total) = match p {
            CleanupProgress::Reading { done, total } => ("reading versions", done, total),
            CleanupProgress::Deleting { done, total } => ("deleting", done, total),
        };
        self.bar.set_message(phase);
        self.bar.set_length(total);
        self.bar.set_position(done);
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_documented() {
        assert_eq!(parse_duration("0s").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("90m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("7d").unwrap(), Duration::from_secs(604_800));
        assert_eq!(
            parse_duration("2w").unwrap(),
            Duration::from_secs(1_209_600)
        );
        assert_eq!(parse_duration("1h 30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(
            parse_duration("7 days").unwrap(),
            Duration::from_secs(604_800)
        );
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        for bad in ["", "7", "d", "-1s", "7 parsecs", "99999999999999999999w"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn version_lists_fold_runs() {
        assert_eq!(list(&[1, 2, 3, 5, 7, 8]), "1..3, 5, 7..8");
        assert_eq!(list(&[]), "");
    }
}
