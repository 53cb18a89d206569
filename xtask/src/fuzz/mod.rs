//! Structure-aware fuzzing without a nightly toolchain.
//!
//! Each target supplies valid seed encodings of one on-disk structure and a check that runs the
//! decoder on mutated bytes. The driver mutates with a seeded RNG (bit flips, interesting
//! integers at aligned offsets, truncation, insertion, splicing between seeds, and rewriting
//! length and offset fields the target points at), and fails on:
//! - a panic (caught per input; the seed and iteration are printed to reproduce it);
//! - a hang: one input taking longer than [`HANG_LIMIT`], reported by a watchdog thread while
//!   the input is still running (an infinite loop never returns to be timed) and after it
//!   returns;
//! - a seed its own decoder rejects (the run would start from nothing valid);
//! - an unbounded allocation: any single allocation over [`alloc::LIMIT`] bytes aborts the run.
//!
//! Targets also assert properties of what decodes (for example that a path that validates
//! never escapes `_bt/`), so a wrong accept is a failure too.

mod alloc;
mod base_id;
mod btree;
mod cleanup;
mod filter;
mod fri;
mod manifest;
mod mutate;
mod rowid;
mod tree;
mod tree_writer;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

pub use mutate::Mutator;

/// One fuzz target.
pub trait Target {
    fn name(&self) -> &'static str;
    /// Valid encodings to start from: each must be accepted as is.
    fn seeds(&self) -> Vec<Vec<u8>>;
    /// Invalid inputs worth mutating too (near misses a validator must refuse): each must be
    /// rejected as is.
    fn near_misses(&self) -> Vec<Vec<u8>> {
        Vec::new()
    }
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
        Box::new(cleanup::RefsTarget),
        Box::new(cleanup::CleanupPlanTarget),
        Box::new(filter::FilterTarget),
    ]
}

/// What the watchdog does with a hang it sees: the message names the target, seed,
/// iteration and input.
type OnHang = Arc<dyn Fn(String) + Send + Sync>;

/// Prints the hang and ends the process: the input may never return.
fn exit_on_hang() -> OnHang {
    Arc::new(|message| {
        println!("fuzz FAILED {message}");
        std::process::exit(1);
    })
}

#[derive(Default)]
struct WatchState {
    running: Option<(Instant, u64, Vec<u8>)>,
    done: bool,
}

/// A thread that watches the input being checked and calls `on_hang` once it has run past
/// the limit, while it is still running.
struct Watchdog {
    state: Arc<(Mutex<WatchState>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    fn start(name: &'static str, seed: u64, limit: Duration, on_hang: OnHang) -> Self {
        let state = Arc::new((Mutex::new(WatchState::default()), Condvar::new()));
        let watched = state.clone();
        let thread = std::thread::spawn(move || {
            let (lock, wake) = &*watched;
            let Ok(mut s) = lock.lock() else { return };
            while !s.done {
                if let Some((since, iteration, input)) = &s.running {
                    if since.elapsed() > limit {
                        on_hang(format!(
                            "{name}: input still running after {limit:?} at iteration {iteration} (seed {seed}); input ({} bytes): {}",
                            input.len(),
                            hex_prefix(input)
                        ));
                        s.running = None;
                    }
                }
                s = match wake.wait_timeout(s, Duration::from_millis(20)) {
                    Ok((s, _)) => s,
                    Err(_) => return,
                };
            }
        });
        Self {
            state,
            thread: Some(thread),
        }
    }

    fn begin(&self, iteration: u64, input: &[u8]) {
        if let Ok(mut s) = self.state.0.lock() {
            s.running = Some((Instant::now(), iteration, input.to_vec()));
        }
    }

    fn end(&self) {
        if let Ok(mut s) = self.state.0.lock() {
            s.running = None;
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Ok(mut s) = self.state.0.lock() {
            s.done = true;
        }
        self.state.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run_target(target: &dyn Target, seconds: u64, seed: u64) -> Result<(u64, u64), String> {
    run_target_watched(target, seconds, seed, exit_on_hang())
}

fn run_target_watched(
    target: &dyn Target,
    seconds: u64,
    seed: u64,
    on_hang: OnHang,
) -> Result<(u64, u64), String> {
    let mut seeds = target.seeds();
    if seeds.is_empty() {
        return Err(format!("{}: no seeds", target.name()));
    }
    // Every seed must pass as is, and every near miss must not.
    for (i, s) in seeds.iter().enumerate() {
        if !target.check(s) {
            return Err(format!(
                "{}: seed {i} is rejected by its own decoder",
                target.name()
            ));
        }
    }
    for (i, s) in target.near_misses().into_iter().enumerate() {
        if target.check(&s) {
            return Err(format!(
                "{}: near miss {i} is accepted by the decoder",
                target.name()
            ));
        }
        seeds.push(s);
    }
    let hot: Vec<Vec<usize>> = seeds.iter().map(|s| target.hot_offsets(s)).collect();
    let watchdog = Watchdog::start(target.name(), seed, target.hang_limit(), on_hang);
    let mut accepted = 0u64;
    let mut rng = SmallRng::seed_from_u64(seed);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut iterations = 0u64;
    while Instant::now() < deadline {
        let pick = rng.random_range(0..seeds.len());
        let input = Mutator::new(&mut rng).mutate(&seeds, pick, &hot[pick]);
        let started = Instant::now();
        alloc::set_input(&input);
        watchdog.begin(iterations, &input);
        let outcome = catch_unwind(AssertUnwindSafe(|| target.check(&input)));
        watchdog.end();
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

    /// Accepts its seed; sleeps past its hang limit on anything else, then records whether
    /// the watchdog had already reported it.
    struct Sleeper {
        reports: Arc<Mutex<Vec<String>>>,
        seen_while_running: Arc<std::sync::atomic::AtomicBool>,
    }
    impl Target for Sleeper {
        fn name(&self) -> &'static str {
            "sleeper"
        }
        fn seeds(&self) -> Vec<Vec<u8>> {
            vec![vec![1, 2, 3, 4]]
        }
        fn hang_limit(&self) -> Duration {
            Duration::from_millis(50)
        }
        fn check(&self, input: &[u8]) -> bool {
            if input != [1, 2, 3, 4] {
                std::thread::sleep(Duration::from_millis(400));
                let reported = self.reports.lock().map(|r| !r.is_empty()).unwrap_or(false);
                self.seen_while_running
                    .store(reported, std::sync::atomic::Ordering::SeqCst);
            }
            true
        }
    }

    #[test]
    fn the_watchdog_reports_a_hang_while_the_input_still_runs() {
        let reports = Arc::new(Mutex::new(Vec::new()));
        let target = Sleeper {
            reports: reports.clone(),
            seen_while_running: Default::default(),
        };
        let sink = reports.clone();
        let on_hang: OnHang = Arc::new(move |m| sink.lock().unwrap().push(m));
        let err = run_target_watched(&target, 5, 3, on_hang).unwrap_err();
        assert!(err.contains("input took"), "{err}");
        assert!(target
            .seen_while_running
            .load(std::sync::atomic::Ordering::SeqCst));
        let reports = reports.lock().unwrap();
        assert!(
            reports[0].contains("sleeper: input still running"),
            "{reports:?}"
        );
        assert!(reports[0].contains("(seed 3)"), "{reports:?}");
    }

    struct Picky;
    impl Target for Picky {
        fn name(&self) -> &'static str {
            "picky"
        }
        fn seeds(&self) -> Vec<Vec<u8>> {
            vec![vec![1], vec![2]]
        }
        fn check(&self, input: &[u8]) -> bool {
            input == [1]
        }
    }

    #[test]
    fn a_rejected_seed_fails_the_run() {
        let err = run_target(&Picky, 1, 1).unwrap_err();
        assert!(err.contains("seed 1 is rejected"), "{err}");
    }

    struct PickyNearMiss(Vec<u8>);
    impl Target for PickyNearMiss {
        fn name(&self) -> &'static str {
            "picky_near_miss"
        }
        fn seeds(&self) -> Vec<Vec<u8>> {
            vec![vec![1]]
        }
        fn near_misses(&self) -> Vec<Vec<u8>> {
            vec![self.0.clone()]
        }
        fn check(&self, input: &[u8]) -> bool {
            input == [1]
        }
    }

    #[test]
    fn near_misses_must_be_rejected() {
        assert!(run_target(&PickyNearMiss(vec![2]), 0, 1).is_ok());
        let err = run_target(&PickyNearMiss(vec![1]), 0, 1).unwrap_err();
        assert!(err.contains("near miss 0 is accepted"), "{err}");
    }

    #[test]
    fn every_target_accepts_its_seeds_and_runs() {
        for t in targets() {
            let (n, _) = run_target(t.as_ref(), 0, 1).unwrap();
            assert_eq!(n, 0);
        }
    }
}
