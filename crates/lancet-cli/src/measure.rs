//! `--store-latency` and `--store-stats`: every store the command opens wrapped in lancet-paths'
//! latency store (`lancet_paths::latency`), one request log shared by all of them, printed at
//! exit. What the cold-start benchmark (`benches/cold_compare.py`) reads.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lancet::paths::latency::{Latency, LatencyStore, RequestLog};

use crate::error::CliError;

/// `50ms`, or `20ms-80ms` (humantime's units).
pub fn parse_latency(text: &str) -> Result<Latency, CliError> {
    let duration = |t: &str| {
        humantime::parse_duration(t.trim())
            .map_err(|e| CliError::Usage(format!("--store-latency {text:?}: {e}")))
    };
    match text.split_once('-') {
        None => Ok(Latency::Fixed(duration(text)?)),
        Some((low, high)) => {
            let (low, high) = (duration(low)?, duration(high)?);
            if high < low {
                return Err(CliError::Usage(format!(
                    "--store-latency {text:?}: the range ends below its start"
                )));
            }
            Ok(Latency::Uniform { low, high })
        }
    }
}

/// The measuring of one command: installed before it runs, reported after.
pub struct Measure {
    log: Arc<RequestLog>,
    began: Instant,
}

impl Measure {
    /// Wraps every store the process opens from now on.
    pub fn install(latency: Option<Latency>) -> Self {
        let log = Arc::new(RequestLog::default());
        let shared = log.clone();
        let latency = latency.unwrap_or(Latency::Fixed(Duration::ZERO));
        let seed = std::sync::atomic::AtomicU64::new(0);
        lancet::paths::set_store_layer(Box::new(move |inner| {
            // each store draws its own sequence, the same in every run
            let n = seed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Arc::new(LatencyStore::with_log(inner, latency, n, shared.clone()))
        }));
        Self {
            log,
            began: Instant::now(),
        }
    }

    /// One JSON line: the request log's totals and the wall time in milliseconds.
    pub fn report(&self) -> String {
        let mut v = serde_json::to_value(self.log.stats()).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "wall_ms".into(),
                serde_json::json!(self.began.elapsed().as_secs_f64() * 1000.0),
            );
        }
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_read_as_written() {
        assert_eq!(
            parse_latency("50ms").unwrap(),
            Latency::Fixed(Duration::from_millis(50))
        );
        assert_eq!(
            parse_latency("20ms-80ms").unwrap(),
            Latency::Uniform {
                low: Duration::from_millis(20),
                high: Duration::from_millis(80)
            }
        );
        assert!(parse_latency("80ms-20ms").is_err());
        assert!(parse_latency("soon").is_err());
    }
}
