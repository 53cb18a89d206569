//! Redoing a row operation on a newer version after a retryable conflict, as Lance 14.0.2's
//! `execute_with_retry` does for `delete`, `update` and `merge_insert`: the operation is
//! planned again from the latest version (its filter or join answered there), after a
//! jittered backoff spread over the lost attempt's length, at most `retries` times (Lance's
//! `conflict_retries`, 10 by default) and within 30 seconds (Lance's `retry_timeout`). Then
//! the last conflict is returned. Incompatible conflicts and other errors are returned at
//! once.
//!
//! This sits above the commit loop: the commit loop rebases a prepared change when the
//! versions published since are compatible with it; a retryable conflict means they are
//! not (another writer changed the rows this operation read), so only planning again from
//! the newer rows gives Lance's answer.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::committed::Committed;
use lancet_read::error::{Error, Result};
use lancet_read::snapshot::Snapshot;

/// Lance 14.0.2's default `conflict_retries` for delete, update and merge_insert.
pub(crate) const CONFLICT_RETRIES: u32 = 10;

/// Lance 14.0.2's default `retry_timeout`.
const RETRY_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `operation` on `snap`, and again on the latest version after each retryable
/// conflict (see the module docs). [`Committed::attempts`] counts every commit attempt of
/// every plan.
pub(crate) async fn redo_on_conflict<F, Fut>(
    snap: &Snapshot,
    retries: u32,
    what: &str,
    mut operation: F,
) -> Result<Committed>
where
    F: FnMut(Snapshot) -> Fut,
    Fut: Future<Output = Result<Committed>>,
{
    let started = Instant::now();
    let mut base = snap.clone();
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let began = Instant::now();
        match Box::pin(operation(base)).await {
            Err(Error::CommitConflict {
                retryable: true,
                ref reason,
                ..
            }) if attempt <= retries && started.elapsed() < RETRY_TIMEOUT => {
                tracing::info!(attempt, %reason, "{what} redone on a newer version");
                let random = lancet_paths::ObjectUuid::new_v4().as_bytes()[0];
                let delay = lancet_txn::rebase::backoff_delay(attempt, began.elapsed(), random);
                tokio::time::sleep(delay).await;
                base = snap.open_sibling(None).await?;
            }
            Ok(mut done) => {
                done.attempts += attempt - 1;
                return Ok(done);
            }
            Err(e) => return Err(e),
        }
    }
}
