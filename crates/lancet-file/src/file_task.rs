//! A data file written in a task of its own. A write hands each file its batches through a
//! channel and goes on to the next file while earlier ones are still encoding, so the files
//! of one write are encoded side by side (one core each). What the tasks have not yet
//! written is bounded in bytes ([`InFlight`]); a task's error reaches the write when it
//! collects the file.

use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use crate::error::{FileError, Result};
use crate::write::{StreamingWriter, WrittenFile};

/// Bytes of batches handed to file tasks and not yet written, in MiB, at most.
const IN_FLIGHT_MIB: u32 = 256;

/// The byte budget the file tasks of one write share.
#[derive(Clone)]
pub(crate) struct InFlight(Arc<Semaphore>);

impl InFlight {
    pub fn new() -> Self {
        InFlight(Arc::new(Semaphore::new(IN_FLIGHT_MIB as usize)))
    }

    /// Waits until `batch`'s bytes fit the budget; they count until the permit is dropped.
    async fn admit(&self, batch: &RecordBatch) -> Result<OwnedSemaphorePermit> {
        let bytes: usize = batch
            .columns()
            .iter()
            .map(|c| {
                c.to_data()
                    .get_slice_memory_size()
                    .unwrap_or_else(|_| c.get_array_memory_size())
            })
            .sum();
        let mib = u32::try_from(bytes.div_ceil(1 << 20))
            .unwrap_or(u32::MAX)
            .clamp(1, IN_FLIGHT_MIB);
        self.0
            .clone()
            .acquire_many_owned(mib)
            .await
            .map_err(|_| internal("the write's byte budget was closed"))
    }
}

fn internal(rule: &str) -> FileError {
    FileError::InvalidInput {
        path: object_store::path::Path::default(),
        rule: rule.into(),
    }
}

/// One file being written by its task.
pub(crate) struct FileTask {
    tx: mpsc::UnboundedSender<(RecordBatch, OwnedSemaphorePermit)>,
    /// `None` once closed.
    done: Option<JoinHandle<Result<WrittenFile>>>,
    rows: u64,
    budget: InFlight,
}

impl FileTask {
    /// Starts the task writing `writer`'s file.
    pub fn start(writer: StreamingWriter, budget: InFlight) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<(RecordBatch, OwnedSemaphorePermit)>();
        let done = tokio::spawn(async move {
            let mut writer = writer;
            while let Some((batch, permit)) = rx.recv().await {
                writer.write(&batch).await?;
                drop(permit);
            }
            writer.finish(&Default::default(), &[]).await
        });
        FileTask {
            tx,
            done: Some(done),
            rows: 0,
            budget,
        }
    }

    /// Rows handed to the file so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Hands `batch` to the file (waiting while the write's budget is spent). An error here
    /// means the task stopped: [`Closed::written`] then says why.
    pub async fn write(&mut self, batch: RecordBatch) -> Result<()> {
        let permit = self.budget.admit(&batch).await?;
        self.rows += batch.num_rows() as u64;
        self.tx
            .send((batch, permit))
            .map_err(|_| internal("a data file's writer stopped before its rows were written"))
    }

    /// No more rows: the file is finished by its task; its summary comes from [`Closed`].
    pub fn close(mut self) -> Closed {
        // the channel closes when `self` drops here; the task then finishes the file
        Closed(self.done.take())
    }
}

/// A write that stops (an error) stops its files' tasks: nothing more is written.
impl Drop for FileTask {
    fn drop(&mut self) {
        if let Some(done) = &self.done {
            done.abort();
        }
    }
}

/// A file whose rows were all handed over, finishing in its task.
pub(crate) struct Closed(Option<JoinHandle<Result<WrittenFile>>>);

impl Closed {
    /// The written file, once its task is done.
    pub async fn written(mut self) -> Result<WrittenFile> {
        let done = self
            .0
            .as_mut()
            .ok_or_else(|| internal("a data file's writer was already collected"))?;
        done.await
            .map_err(|e| internal(&format!("a data file's writer failed: {e}")))?
    }
}

/// A closed file dropped before it was collected (the write failed elsewhere) is not
/// finished.
impl Drop for Closed {
    fn drop(&mut self) {
        if let Some(done) = &self.0 {
            done.abort();
        }
    }
}
