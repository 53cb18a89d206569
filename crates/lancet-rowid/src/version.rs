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
