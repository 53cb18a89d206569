//! `RowDatasetVersionSequence`: the dataset version each physical row was created at
//! (`_row_created_at_version`) or last updated at (`_row_last_updated_at_version`), as runs.
//!
//! A run's `span` is a `U64Segment` of row offsets; runs are positional: run `k` covers the
//! `len(span_k)` rows after those of runs `0..k`, in physical order.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use lancet_proto::table::{RowDatasetVersionRun, RowDatasetVersionSequence as PbVersions};
use prost::Message;

use crate::error::DecodeError;
use crate::segment::U64Segment;
use crate::strict;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VersionSequence {
    runs: Vec<(U64Segment, u64)>,
    ends: Vec<u64>,
}

impl VersionSequence {
    fn from_runs(runs: Vec<(U64Segment, u64)>) -> Result<Self, DecodeError> {
        let mut ends = Vec::with_capacity(runs.len());
        let mut total = 0u64;
        for (span, _) in &runs {
            total = total
                .checked_add(span.len())
                .ok_or_else(|| DecodeError::rule("version sequence length overflows u64"))?;
            ends.push(total);
        }
        Ok(Self { runs, ends })
    }

    /// One run per maximal stretch of equal versions, with `Range` spans of offsets (how Lance
    /// builds them).
    pub fn from_versions(versions: &[u64]) -> Self {
        let stretches: Vec<(u64, u64)> = versions.iter().map(|v| (1, *v)).collect();
        Self::from_run_lengths(&stretches)
    }

    /// One run per `(rows, version)` stretch, equal neighbours merged, with `Range` spans of
    /// offsets: what [`VersionSequence::from_versions`] builds, without a value per row.
    pub fn from_run_lengths(stretches: &[(u64, u64)]) -> Self {
        let mut runs: Vec<(U64Segment, u64)> = Vec::new();
        let mut ends = Vec::new();
        let mut at = 0u64;
        for &(rows, version) in stretches.iter().filter(|(rows, _)| *rows > 0) {
            let end = at.saturating_add(rows);
            match runs.last_mut() {
                Some((U64Segment::Range(r), last)) if *last == version && r.end == at => {
                    r.end = end;
                    if let Some(e) = ends.last_mut() {
                        *e = end;
                    }
                }
                _ => {
                    runs.push((U64Segment::Range(at..end), version));
                    ends.push(end);
                }
            }
            at = end;
        }
        Self { runs, ends }
    }

    /// Lance 14.0.2's refresh after a partial in-place column rewrite committed as `version`:
    /// `rows` rows whose versions are `base`'s (cut to `rows`, rows past its end at `fill`),
    /// with those at `updated` (offsets past `rows` ignored) at `version`; built by stretches,
    /// never one value per row.
    pub fn refreshed(
        base: Option<&VersionSequence>,
        rows: u64,
        updated: &roaring::RoaringBitmap,
        version: u64,
        fill: u64,
    ) -> Self {
        // the base as (start, end, version) stretches covering 0..rows
        let mut base_stretches = Vec::new();
        let mut at = 0u64;
        for (span, v) in base.into_iter().flat_map(|b| b.runs()) {
            let end = at.saturating_add(span.len()).min(rows);
            if end > at {
                base_stretches.push((at, end, v));
            }
            at = end;
        }
        if at < rows {
            base_stretches.push((at, rows, fill));
        }
        // the updated offsets as ranges below `rows`
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for o in updated.iter().map(u64::from).take_while(|&o| o < rows) {
            match ranges.last_mut() {
                Some((_, e)) if *e == o => *e = o + 1,
                _ => ranges.push((o, o + 1)),
            }
        }
        let mut stretches = Vec::new();
        let mut next = ranges.iter().peekable();
        for (start, end, v) in base_stretches {
            let mut at = start;
            while at < end {
                // skip ranges wholly before `at`
                while next.peek().is_some_and(|(_, e)| *e <= at) {
                    next.next();
                }
                match next.peek() {
                    Some(&&(s, e)) if s <= at => {
                        let to = e.min(end);
                        stretches.push((to - at, version));
                        at = to;
                    }
                    Some(&&(s, _)) => {
                        let to = s.min(end);
                        stretches.push((to - at, v));
                        at = to;
                    }
                    None => {
                        stretches.push((end - at, v));
                        at = end;
                    }
                }
            }
        }
        Self::from_run_lengths(&stretches)
    }

    pub fn len(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn runs(&self) -> impl Iterator<Item = (&U64Segment, u64)> {
        self.runs.iter().map(|(s, v)| (s, *v))
    }

    /// The version of physical row `offset`.
    pub fn version_at(&self, offset: u64) -> Option<u64> {
        let k = self.ends.partition_point(|&e| e <= offset);
        self.runs.get(k).map(|(_, v)| *v)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        strict::check(bytes, &strict::VERSION_SEQUENCE)?;
        let pb = PbVersions::decode(bytes)
            .map_err(|e| DecodeError::Rule(format!("RowDatasetVersionSequence: {e}")))?;
        let runs = pb
            .runs
            .iter()
            .map(|r| {
                let span = r
                    .span
                    .as_ref()
                    .ok_or_else(|| DecodeError::rule("RowDatasetVersionRun has no span"))?;
                Ok((U64Segment::from_proto(span)?, r.version))
            })
            .collect::<Result<Vec<_>, DecodeError>>()?;
        Self::from_runs(runs)
    }

    pub fn encode(&self) -> Vec<u8> {
        PbVersions {
            runs: self
                .runs
                .iter()
                .map(|(span, version)| RowDatasetVersionRun {
                    span: Some(span.to_proto()),
                    version: *version,
                })
                .collect(),
        }
        .encode_to_vec()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;

    /// Lance's refresh, one value per row.
    fn refreshed_per_row(
        base: &[u64],
        rows: usize,
        updated: &[u32],
        version: u64,
        fill: u64,
    ) -> Vec<u64> {
        let mut v: Vec<u64> = base.iter().copied().take(rows).collect();
        v.resize(rows, fill);
        for &o in updated {
            if let Some(x) = v.get_mut(o as usize) {
                *x = version;
            }
        }
        v
    }

    #[test]
    fn refreshed_is_lances_per_row_refresh_in_stretches() {
        let cases: &[(&[u64], usize, &[u32])] = &[
            (&[1, 1, 1, 1], 4, &[1, 2]),
            (&[1, 1, 2, 2, 2, 3], 6, &[0, 2, 3, 5]),
            (&[1, 1], 5, &[4]),
            (&[1, 2, 3, 4, 5, 6], 4, &[3, 9]),
            (&[], 3, &[1]),
            (&[7, 7, 7], 3, &[]),
            (&[7, 7, 7], 3, &[0, 1, 2]),
        ];
        for (versions, rows, updated) in cases {
            let seq = VersionSequence::from_versions(versions);
            let bitmap: roaring::RoaringBitmap = updated.iter().copied().collect();
            let base = (!versions.is_empty()).then_some(&seq);
            let got = VersionSequence::refreshed(base, *rows as u64, &bitmap, 9, 2);
            let want = refreshed_per_row(versions, *rows, updated, 9, 2);
            let got_rows: Vec<u64> = (0..*rows as u64)
                .map(|i| got.version_at(i).unwrap())
                .collect();
            assert_eq!(
                got_rows, want,
                "base {versions:?} rows {rows} updated {updated:?}"
            );
            // byte for byte what Lance builds from the per-row versions
            assert_eq!(got.encode(), VersionSequence::from_versions(&want).encode());
        }
    }

    #[test]
    fn runs_and_lookup() {
        let v = VersionSequence::from_versions(&[1, 1, 1, 4, 4, 1]);
        assert_eq!(v.runs().count(), 3);
        assert_eq!(v.len(), 6);
        let got: Vec<_> = (0..7).map(|i| v.version_at(i)).collect();
        assert_eq!(
            got,
            vec![Some(1), Some(1), Some(1), Some(4), Some(4), Some(1), None]
        );
        let back = VersionSequence::decode(&v.encode()).unwrap();
        assert_eq!(back, v);
        assert_eq!(back.encode(), v.encode());
    }

    #[test]
    fn rejects_missing_span_and_unknown_fields() {
        // run with only a version
        let pb = PbVersions {
            runs: vec![RowDatasetVersionRun {
                span: None,
                version: 3,
            }],
        };
        assert!(VersionSequence::decode(&pb.encode_to_vec()).is_err());
        let mut bytes = VersionSequence::from_versions(&[2]).encode();
        bytes.extend_from_slice(&[0x18, 0x01]);
        assert!(VersionSequence::decode(&bytes).is_err());
    }
}
