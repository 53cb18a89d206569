//! Structure-aware fuzzing without a nightly toolchain.
//!
//! Each target supplies valid seed encodings of one on-disk structure and a check that runs the
//! decoder on mutated bytes. The driver mutates with a seeded RNG (bit flips, interesting
//! integers at aligned offsets, truncation, insertion, splicing between seeds, and rewriting
//! length and offset fields the target points at), and fails on:
//! - a panic (caught per input; the seed and iteration are printed to reproduce it);
//! - a hang: one input taking longer than [`HANG_LIMIT`];
//! - an unbounded allocation: any single allocation over [`alloc::LIMIT`] bytes aborts the run.
//!
//! Targets also assert properties of what decodes (for example that a path that validates
//! never escapes `_bt/`), so a wrong accept is a failure too.

mod alloc;
mod base_id;
mod btree;
mod fri;
mod manifest;
mod mutate;
mod rowid;
mod tree;
mod tree_writer;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

pub use mutate::Mutator;

/// One fuzz target.
pub trait Target {
    fn name(&self) -> &'static str;
    /// Valid encodings to start from.
    fn seeds(&self) -> Vec<Vec<u8>>;
    /// Byte offsets of length/offset fields worth rewriting in a seed (may be empty).
    fn hot_offsets(&self, _seed: &[u8]) -> Vec<usize> {
        Vec::new()
    }
    /// Largest single allocation the target may make. Lancet's own decoders stay under
    /// [`alloc::LIMIT`]; a target that reaches into a third-party decoder with a known,
    /// bounded trust of a length field says so here.
    fn allocation_limit(&self) -> usize {
        alloc::LIMIT
    }
    /// Longest time one input may take before it counts as a hang.
    fn hang_limit(&self) -> Duration {
        HANG_LIMIT
    }
    /// Runs the decoder on `input`; panics (an `assert!`) when a property is violated.
    /// Returns whether the input was accepted (decoded) rather than rejected with an error.
    fn check(&self, input: &[u8]) -> bool;
}

const HANG_LIMIT: Duration = Duration::from_secs(2);

thread_local! {
    static LAST_PANIC: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn targets() -> Vec<Box<dyn Target>> {
    vec![
        Box::new(manifest::ManifestTarget),
        Box::new(manifest::TransactionTarget),
        Box::new(base_id::BaseIdTarget),
        Box::new(base_id::TreePathTarget),
        Box::new(rowid::SequenceTarget),
        Box::new(rowid::VersionTarget),
        Box::new(rowid::ArrowDeletionTarget),
        Box::new(rowid::BitmapDeletionTarget),
        Box::new(btree::LookupTarget::new()),
        Box::new(btree::DataTarget::new()),
        Box::new(fri::DetailsTarget),
        Box::new(fri::CountsTarget),
        Box::new(fri::RowMapTarget::new()),
        Box::new(tree::TreeRootTarget::new()),
        Box::new(tree::TreeNodeTarget::new()),
        Box::new(tree::TreeLeafTarget::new()),
        Box::new(tree::TreeMutationTarget::new()),
        Box::new(tree_writer::TreeWriterTarget),
    ]
}

fn run_target(target: &dyn Target, seconds: u64, seed: u64) -> Result<(u64, u64), String> {
    let seeds = target.seeds();
    if seeds.is_empty() {
        return Err(format!("{}: no seeds", target.name()));
    }
    let hot: Vec<Vec<usize>> = seeds.iter().map(|s| target.hot_offsets(s)).collect();
    // Every seed must pass as is.
    for s in &seeds {
        target.check(s);
    }
    let mut accepted = 0u64;
    let mut rng = SmallRng::seed_from_u64(seed);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut iterations = 0u64;
    while Instant::now() < deadline {
        let pick = rng.random_range(0..seeds.len());
        let input = Mutator::new(&mut rng).mutate(&seeds, pick, &hot[pick]);
        let started = Instant::now();
        alloc::set_input(&input);
        let outcome = catch_unwind(AssertUnwindSafe(|| target.check(&input)));
        alloc::clear_input();
        let took = started.elapsed();
        if matches!(outcome, Ok(true)) {
            accepted += 1;
        }
        if let Err(payload) = &outcome {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let location = LAST_PANIC.with(|l| l.borrow().clone());
            return Err(format!(
                "{}: panic at iteration {iterations} (seed {seed}) at {location}: {message}; input ({} bytes): {}",
                target.name(),
                input.len(),
                hex_prefix(&input)
            ));
        }
        if took > target.hang_limit() {
            return Err(format!(
                "{}: input took {took:?} at iteration {iterations} (seed {seed})",
                target.name()
            ));
        }
        iterations += 1;
    }
    Ok((iterations, accepted))
}

fn hex_prefix(bytes: &[u8]) -> String {
    let shown: String = bytes.iter().take(256).map(|b| format!("{b:02x}")).collect();
    if bytes.len() > 256 {
        format!("{shown}...")
    } else {
        shown
    }
}

pub fn main(
    target: Option<&str>,
    all: bool,
    list: bool,
    seconds: u64,
    seed: Option<u64>,
    replay: Option<&std::path::Path>,
) -> std::process::ExitCode {
    let all_targets = targets();
    if list {
        for t in &all_targets {
            println!("{}", t.name());
        }
        return std::process::ExitCode::SUCCESS;
    }
    let chosen: Vec<&dyn Target> = match (target, all) {
        (_, true) => all_targets.iter().map(|t| t.as_ref()).collect(),
        (Some(name), false) => match all_targets.iter().find(|t| t.name() == name) {
            Some(t) => vec![t.as_ref()],
            None => {
                eprintln!("unknown fuzz target {name:?}; try --list");
                return std::process::ExitCode::FAILURE;
            }
        },
        (None, false) => {
            eprintln!("name a target or pass --all (see --list)");
            return std::process::ExitCode::FAILURE;
        }
    };
    if let Some(path) = replay {
        // one saved input through each chosen target, allocation limit enforced
        let Ok(input) = std::fs::read(path) else {
            eprintln!("cannot read {}", path.display());
            return std::process::ExitCode::FAILURE;
        };
        for t in chosen {
            alloc::set_limit(t.allocation_limit());
            alloc::arm();
            let accepted = t.check(&input);
            println!("replay {}: accepted = {accepted}", t.name());
        }
        return std::process::ExitCode::SUCCESS;
    }
    let seed = seed.unwrap_or_else(|| rand::rng().random());
    // Panics are caught and reported once with their input; the hook only records where.
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        LAST_PANIC.with(|l| *l.borrow_mut() = at);
    }));
    alloc::arm();
    let mut failed = false;
    for t in chosen {
        alloc::set_limit(t.allocation_limit());
        match run_target(t, seconds, seed) {
            Ok((n, accepted)) => println!(
                "fuzz {}: {n} inputs ({accepted} accepted), 0 failures (seed {seed})",
                t.name()
            ),
            Err(e) => {
                println!("fuzz FAILED {e}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// Shared helper for targets: a fresh RNG-independent random source for property inputs.
pub fn unstructured(input: &[u8]) -> arbitrary::Unstructured<'_> {
    arbitrary::Unstructured::new(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decoder with a planted bug: it panics on any input containing 0xEE.
    struct Planted;
    impl Target for Planted {
        fn name(&self) -> &'static str {
            "planted"
        }
        fn seeds(&self) -> Vec<Vec<u8>> {
            vec![vec![1, 2, 3, 4]]
        }
        fn check(&self, input: &[u8]) -> bool {
            assert!(!input.contains(&0xee), "planted bug");
            true
        }
    }

    #[test]
    fn driver_reports_a_panicking_decoder() {
        std::panic::set_hook(Box::new(|_| {}));
        let err = run_target(&Planted, 5, 7).unwrap_err();
        assert!(err.contains("panic at iteration"), "{err}");
        assert!(err.contains("seed 7"), "{err}");
    }

    #[test]
    fn every_target_accepts_its_seeds_and_runs() {
        for t in targets() {
            let (n, _) = run_target(t.as_ref(), 0, 1).unwrap();
            assert_eq!(n, 0);
        }
    }
}
