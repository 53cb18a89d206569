//! `lancet verify`: checks every rule on one version; exit 0 when valid, 1 with the broken
//! rule and object otherwise.

use lancet::paths::PathsError;
use lancet::tree::TreeError;
use lancet::Dataset;
use serde::Serialize;

use crate::error::CliError;

#[derive(Serialize)]
struct Outcome {
    valid: bool,
    version: Option<u64>,
    rule: Option<String>,
    object: Option<String>,
    detail: Option<String>,
}

/// The broken rule of an error: the tree rule's name, `manifest` for a manifest that breaks
/// the manifest layout or flag rules, otherwise the error's kind.
fn classify(e: &lancet::Error) -> (String, Option<String>, String) {
    match e {
        lancet::Error::Tree(TreeError::Corrupt { at, rule, detail }) => (
            rule.name().to_string(),
            Some(at.to_string()),
            detail.clone(),
        ),
        lancet::Error::Tree(t) => (
            "unreadable".into(),
            t.object().map(str::to_string),
            t.to_string(),
        ),
        lancet::Error::Paths(PathsError::CorruptManifest { at, rule }) => {
            ("manifest".into(), Some(at.to_string()), rule.clone())
        }
        lancet::Error::RowId(r) => (
            "row-id-sequence-decode".into(),
            e.object().map(|at| at.to_string()),
            r.to_string(),
        ),
        lancet::Error::Unsupported { uri, rule, .. } => {
            ("unsupported".into(), Some(uri.clone()), rule.clone())
        }
        // an invariant the version breaks is named as such
        lancet::Error::BrokenInvariant {
            at,
            invariant,
            detail,
        } => (
            invariant.to_string(),
            Some(at.to_string()),
            format!("{invariant} ({}): {detail}", invariant.rule()),
        ),
        lancet::Error::Corrupt { at, rule } => {
            ("manifest".into(), Some(at.to_string()), rule.clone())
        }
        other => (
            "unreadable".into(),
            other.object().map(|at| at.to_string()),
            other.to_string(),
        ),
    }
}

async fn check(
    uri: &str,
    version: Option<u64>,
    check_previous: bool,
    data: bool,
) -> Result<u64, (Option<u64>, String, Option<String>, String)> {
    let fail = |v: Option<u64>| {
        move |e: lancet::Error| {
            let (rule, object, detail) = classify(&e);
            (v, rule, object, detail)
        }
    };
    let store = lancet::paths::DatasetStore::open(uri).map_err(|e| fail(version)(e.into()))?;
    let caches = lancet::Caches::new(Default::default());
    let ds = Dataset::open_with(store.clone(), version, caches.clone())
        .await
        .map_err(fail(version))?;
    let v = ds.version();
    let verified = match data {
        true => ds.storage().verify_data().await,
        false => ds.verify().await,
    };
    verified.map_err(fail(Some(v)))?;
    if check_previous && v > 0 {
        // Only this version is judged: a missing or broken previous version is not its fault.
        if let Ok(prev) = Dataset::open_with(store, Some(v - 1), caches).await {
            ds.storage().check_lineage(&prev).map_err(fail(Some(v)))?;
        }
    }
    Ok(v)
}

pub async fn run(
    uri: &str,
    version: Option<u64>,
    json: bool,
    check_previous: bool,
    data: bool,
) -> Result<std::process::ExitCode, CliError> {
    let outcome = match check(uri, version, check_previous, data).await {
        Ok(v) => Outcome {
            valid: true,
            version: Some(v),
            rule: None,
            object: None,
            detail: None,
        },
        Err((v, rule, object, detail)) => Outcome {
            valid: false,
            version: v,
            rule: Some(rule),
            object,
            detail: Some(detail),
        },
    };
    if json {
        println!(
            "{}",
            serde_json::to_string(&outcome).map_err(std::io::Error::other)?
        );
    } else if outcome.valid {
        println!("version {} is valid", outcome.version.unwrap_or_default());
    }
    if !outcome.valid {
        eprintln!(
            "lancet: {} in {}",
            outcome.rule.as_deref().unwrap_or("?"),
            outcome.object.as_deref().unwrap_or(uri)
        );
        return Ok(std::process::ExitCode::FAILURE);
    }
    Ok(std::process::ExitCode::SUCCESS)
}
