//! The one tokio runtime every call runs on, with the GIL released while it waits.

use std::future::Future;
use std::sync::OnceLock;

use pyo3::prelude::*;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("lancet")
            .build()
            .unwrap_or_else(|e| panic!("lancet: cannot start the tokio runtime: {e}"))
    })
}

/// Runs `f` to completion with the GIL released (other Python threads run meanwhile).
pub fn block_on<F>(py: Python<'_>, f: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    py.allow_threads(|| runtime().block_on(f))
}

/// Runs `f` on the runtime's workers, in the background.
pub fn spawn<F>(f: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    runtime().spawn(f);
}

/// Runs the future `make` builds to completion with the GIL released; the future itself
/// need not be `Send` (only what `make` captures), for futures rustc cannot prove `Send`.
pub fn run<M, F>(py: Python<'_>, make: M) -> F::Output
where
    M: FnOnce() -> F + Send,
    F: Future,
    F::Output: Send,
{
    py.allow_threads(move || runtime().block_on(make()))
}
