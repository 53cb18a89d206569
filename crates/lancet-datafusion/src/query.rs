//! SQL over lancet tables: a DataFusion session with tables registered by name, a query run
//! to a stream of batches, and DataFusion's errors as lancet's (a lancet error a scan raised
//! comes back as it was; a query DataFusion refuses is bad input).

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use datafusion::common::DataFusionError;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::stream::{BoxStream, StreamExt, TryStreamExt};

use crate::table::LancetTable;

/// A session with each of `tables` registered under its name; `batch_size`: at most this many
/// rows per batch DataFusion produces (its default otherwise).
pub fn session(
    tables: impl IntoIterator<Item = (String, LancetTable)>,
    batch_size: Option<usize>,
) -> lancet::Result<SessionContext> {
    let mut config = SessionConfig::new();
    if let Some(rows) = batch_size {
        config = config.with_batch_size(rows.max(1));
    }
    let ctx = SessionContext::new_with_config(config);
    for (name, table) in tables {
        ctx.register_table(name.as_str(), Arc::new(table))
            .map_err(into_lancet)?;
    }
    Ok(ctx)
}

/// Runs `query` in `ctx`: its output schema and its batches as they are produced.
pub async fn run(
    ctx: &SessionContext,
    query: &str,
) -> lancet::Result<(SchemaRef, BoxStream<'static, lancet::Result<RecordBatch>>)> {
    let frame = ctx.sql(query).await.map_err(into_lancet)?;
    let stream = frame.execute_stream().await.map_err(into_lancet)?;
    let schema = stream.schema();
    Ok((schema, stream.map_err(into_lancet).boxed()))
}

/// The plan DataFusion runs for `query` in `ctx` (`EXPLAIN`, or `EXPLAIN ANALYZE` when
/// `analyze`: the query is run and each operator's metrics shown), as text.
pub async fn explain(ctx: &SessionContext, query: &str, analyze: bool) -> lancet::Result<String> {
    let prefix = if analyze {
        "EXPLAIN ANALYZE"
    } else {
        "EXPLAIN"
    };
    let (_, stream) = run(ctx, &format!("{prefix} {query}")).await?;
    let batches: Vec<RecordBatch> = stream.try_collect().await?;
    let mut out = String::new();
    for b in &batches {
        let (Some(kind), Some(plan)) = (b.column_by_name("plan_type"), b.column_by_name("plan"))
        else {
            continue;
        };
        let kinds = arrow_array::cast::AsArray::as_string_opt::<i32>(kind.as_ref());
        let plans = arrow_array::cast::AsArray::as_string_opt::<i32>(plan.as_ref());
        let (Some(kinds), Some(plans)) = (kinds, plans) else {
            continue;
        };
        for (k, p) in kinds.iter().zip(plans.iter()) {
            out.push_str(&format!("{}:\n{}\n", k.unwrap_or(""), p.unwrap_or("")));
        }
    }
    Ok(out)
}

/// A DataFusion error as lancet's: a lancet error carried through DataFusion as it was; a
/// query DataFusion cannot plan (SQL, schema, a feature it lacks) as invalid input; anything
/// else as internal.
pub fn into_lancet(e: DataFusionError) -> lancet::Error {
    match e {
        DataFusionError::External(inner) => match inner.downcast::<lancet::Error>() {
            Ok(lancet) => *lancet,
            Err(other) => lancet::Error::Internal(other.to_string()),
        },
        DataFusionError::Diagnostic(_, inner) => into_lancet(*inner),
        DataFusionError::Collection(mut errors) if !errors.is_empty() => {
            into_lancet(errors.swap_remove(0))
        }
        DataFusionError::Shared(shared) => match std::sync::Arc::try_unwrap(shared) {
            Ok(inner) => into_lancet(inner),
            Err(shared) => lancet::Error::Internal(shared.to_string()),
        },
        DataFusionError::Context(context, inner) => match into_lancet(*inner) {
            lancet::Error::InvalidArgument { what, reason } => lancet::Error::InvalidArgument {
                what,
                reason: format!("{context}: {reason}"),
            },
            other => other,
        },
        e @ (DataFusionError::SQL(..)
        | DataFusionError::Plan(..)
        | DataFusionError::SchemaError(..)
        | DataFusionError::NotImplemented(..)
        | DataFusionError::Configuration(..)
        | DataFusionError::Execution(..)
        | DataFusionError::ArrowError(..)) => lancet::Error::InvalidArgument {
            what: "SQL query".into(),
            reason: e.strip_backtrace(),
        },
        e => lancet::Error::Internal(e.strip_backtrace()),
    }
}
