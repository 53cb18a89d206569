//! Lance's distributed compaction as data: a task planned on one version, which any process
//! executes, and its result, which one commit takes with the others of the plan. Both
//! serialize (JSON; a result's fragments each their `DataFragment` protobuf in base64).

use lancet_proto::table::DataFragment;

use crate::compaction::CompactionOptions;
use crate::error::{Result, TxnError};

/// One group of fragments to rewrite together, as planned on `read_version`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompactionTask {
    pub read_version: u64,
    pub fragments: Vec<u64>,
    pub options: CompactionOptions,
}

impl CompactionTask {
    /// The task's fragments as a rewrite group's sources (row addresses hold 32-bit ids).
    pub fn source_ids(&self) -> Result<Vec<u32>> {
        (self.fragments.iter())
            .map(|id| {
                u32::try_from(*id).map_err(|_| {
                    TxnError::operation("Rewrite", format!("fragment id {id} exceeds 32 bits"))
                })
            })
            .collect()
    }
}

/// What executing a task wrote: the new fragments (data files written, ids assigned at
/// commit).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompactionResult {
    pub task: CompactionTask,
    #[serde(with = "fragments_b64")]
    pub new_fragments: Vec<DataFragment>,
}

/// The version the tasks of `results` were all planned on (`None` for no result); results
/// of different plans are refused: each plan commits alone.
pub fn planned_version(results: &[CompactionResult]) -> Result<Option<u64>> {
    let Some(first) = results.first() else {
        return Ok(None);
    };
    let read_version = first.task.read_version;
    if results.iter().any(|r| r.task.read_version != read_version) {
        return Err(TxnError::operation(
            "Rewrite",
            "compaction results planned on different versions: commit each plan alone",
        ));
    }
    Ok(Some(read_version))
}

/// `DataFragment`s as base64 protobufs in JSON.
mod fragments_b64 {
    use base64::Engine;
    use lancet_proto::prost::Message;
    use lancet_proto::table::DataFragment;

    pub fn serialize<S: serde::Serializer>(f: &[DataFragment], s: S) -> Result<S::Ok, S::Error> {
        let encoded: Vec<String> = f
            .iter()
            .map(|f| base64::engine::general_purpose::STANDARD.encode(f.encode_to_vec()))
            .collect();
        serde::Serialize::serialize(&encoded, s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<DataFragment>, D::Error> {
        let encoded: Vec<String> = serde::Deserialize::deserialize(d)?;
        encoded
            .iter()
            .map(|e| {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(e)
                    .map_err(serde::de::Error::custom)?;
                DataFragment::decode(bytes.as_slice()).map_err(serde::de::Error::custom)
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn result(read_version: u64) -> CompactionResult {
        CompactionResult {
            task: CompactionTask {
                read_version,
                fragments: vec![1, 2],
                options: CompactionOptions::default(),
            },
            new_fragments: vec![DataFragment {
                id: 0,
                physical_rows: 7,
                ..Default::default()
            }],
        }
    }

    #[test]
    fn a_result_round_trips_through_json() {
        let r = result(3);
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<CompactionResult>(&json).unwrap(), r);
        let bad = json.replace(
            &json[json.find("new_fragments").unwrap()..],
            "new_fragments\":[\"!!\"]}",
        );
        assert!(serde_json::from_str::<CompactionResult>(&bad).is_err());
    }

    #[test]
    fn results_of_one_plan_commit_together_and_ids_fit_32_bits() {
        assert_eq!(planned_version(&[]).unwrap(), None);
        assert_eq!(planned_version(&[result(3), result(3)]).unwrap(), Some(3));
        assert!(planned_version(&[result(3), result(4)]).is_err());
        assert_eq!(result(3).task.source_ids().unwrap(), [1, 2]);
        let mut wide = result(3).task;
        wide.fragments.push(u64::from(u32::MAX) + 1);
        assert!(wide.source_ids().is_err());
    }
}
