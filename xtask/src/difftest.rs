//! `cargo xtask difftest`: builds the `lancet` binary, makes sure the pylance 14.0.2
//! virtualenv exists (`tests/interop/venv.sh`, the one the interop tests use), and runs
//! `tests/interop/difftest.py` with it. The tester itself is Python because one of its two
//! engines is pylance, driven in-process; lancet takes its turns through the CLI.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

pub struct Args {
    pub seed: Option<u64>,
    pub steps: u32,
    pub runs: u32,
    pub minutes: Option<f64>,
    pub stable: String,
    pub replay: Option<PathBuf>,
    pub release: bool,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn fail(what: &str) -> ExitCode {
    eprintln!("xtask difftest: {what}");
    ExitCode::FAILURE
}

pub fn main(args: Args) -> ExitCode {
    let root = workspace();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(&cargo);
    build
        .current_dir(&root)
        .args(["build", "-q", "-p", "lancet-cli"]);
    if args.release {
        build.arg("--release");
    }
    match build.status() {
        Ok(s) if s.success() => {}
        _ => return fail("building lancet-cli failed"),
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("target"));
    let bin = target
        .join(if args.release { "release" } else { "debug" })
        .join("lancet");
    let venv = Command::new("bash")
        .arg(root.join("tests/interop/venv.sh"))
        .output();
    let python = match venv {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        _ => return fail("creating the pylance virtualenv failed (tests/interop/venv.sh)"),
    };
    let mut run = Command::new(python);
    run.arg(root.join("tests/interop/difftest.py"))
        .arg("--lancet")
        .arg(&bin)
        .args(["--steps", &args.steps.to_string()])
        .args(["--runs", &args.runs.to_string()])
        .args(["--stable", &args.stable]);
    if let Some(seed) = args.seed {
        run.args(["--seed", &seed.to_string()]);
    }
    if let Some(m) = args.minutes {
        run.args(["--minutes", &m.to_string()]);
    }
    if let Some(r) = &args.replay {
        run.arg("--replay").arg(r);
    }
    match run.status() {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => fail(&format!("running difftest.py: {e}")),
    }
}
