//! `lancet clone` and `lancet cleanup`: printing only; the work is `Dataset::shallow_clone`
//! and `Dataset::cleanup`.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use lancet::{CleanupPolicy, CleanupProgress, CleanupReport, Dataset};
use serde_json::json;

use crate::error::CliError;

/// `lancet clone <src> <dst> [--version N]`.
pub async fn clone(source: &str, target: &str, version: Option<u64>) -> Result<(), CliError> {
    let ds = Dataset::open(source).await?;
    let clone = ds.shallow_clone(target, version).await?;
    let fragments = clone.fragments().await?.len();
    println!(
        "cloned version {} of {source} to {target}: {fragments} fragments shared through base path {}",
        clone.version(),
        clone
            .manifest()
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

/// `0s`, `90m`, `36h`, `7d`, `2w`: a whole number and a unit.
pub fn parse_duration(text: &str) -> Result<Duration, CliError> {
    let bad = || {
        CliError::Usage(format!(
            "duration {text:?}: expected a whole number and a unit (s, m, h, d or w), like 90m or 7d"
        ))
    };
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(bad()),
    };
    n.checked_mul(seconds)
        .map(Duration::from_secs)
        .ok_or_else(bad)
}

/// A one-line progress bar on stderr, drawn only on a terminal, at most ten times a second.
struct Bar {
    on: bool,
    last: std::sync::Mutex<Option<Instant>>,
}

impl Bar {
    fn new() -> Self {
        Self {
            on: std::io::stderr().is_terminal(),
            last: std::sync::Mutex::new(None),
        }
    }

    fn show(&self, p: CleanupProgress) {
        if !self.on {
            return;
        }
        let (phase, done, total) = match p {
            CleanupProgress::Reading { done, total } => ("reading versions", done, total),
            CleanupProgress::Deleting { done, total } => ("deleting", done, total),
        };
        if let Ok(mut last) = self.last.lock() {
            let due = last.is_none_or(|t| t.elapsed() >= Duration::from_millis(100));
            if !due && done < total {
                return;
            }
            *last = Some(Instant::now());
        }
        let width = 30u64;
        let filled = (done * width)
            .checked_div(total)
            .unwrap_or(width)
            .min(width);
        let bar: String = (0..width)
            .map(|i| if i < filled { '#' } else { ' ' })
            .collect();
        eprint!("\r{phase:<16} [{bar}] {done}/{total}");
    }

    fn finish(&self) {
        if self.on {
            eprintln!();
        }
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
        for bad in [
            "",
            "7",
            "d",
            "7 days",
            "-1s",
            "1.5h",
            "99999999999999999999w",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn version_lists_fold_runs() {
        assert_eq!(list(&[1, 2, 3, 5, 7, 8]), "1..3, 5, 7..8");
        assert_eq!(list(&[]), "");
    }
}
