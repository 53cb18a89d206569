//! Decoding tree objects: interiors and roots (raw protobufs, every mutation payload checked
//! and modelled), leaves (Lance files) on the blocking pool.

use super::*;

/// Decodes a buffer of mutations, each checked; null base ids inherit `base`.
pub(crate) fn decode_buffer(
    buffer: &[lancet_proto::table::FragmentTreeMutation],
    base: Option<u32>,
) -> std::result::Result<(Vec<Mutation>, WideTotals), Violation> {
    let mut sum = WideTotals::default();
    let mut out = Vec::with_capacity(buffer.len());
    for m in buffer {
        let m = Mutation::decode(m, base)?;
        sum.add_deltas(m.deltas);
        out.push(m);
    }
    Ok((out, sum))
}

/// The buffered mutations of the encoded object `container` (field `buffer_field`) hold only
/// fields lancet models ([`Rule::MutationField`]).
pub(crate) fn modelled_mutations(container: &[u8], buffer_field: u32) -> Checked<()> {
    let name = if buffer_field == 3 {
        "mutations_since_root"
    } else {
        "buffer"
    };
    let fields = lancet_proto::modelled::unmodelled_mutation_fields(container, buffer_field, name)
        .map_err(|e| Violation::new(Rule::ObjectDecode, e.to_string()))?;
    match fields.is_empty() {
        true => Ok(()),
        false => Err(Violation::new(
            Rule::MutationField,
            format!(
                "fields lancet does not model, which a rewrite would drop: {}",
                fields.join(", ")
            ),
        )),
    }
}

/// Decodes a `.node` object's bytes.
pub(crate) fn decode_node(object: &str, bytes: &[u8], base: Option<u32>) -> Result<DecodedNode> {
    let node = FragmentTreeNode::decode(bytes).map_err(|e| {
        TreeError::corrupt(
            object,
            Rule::ObjectDecode,
            format!("FragmentTreeNode protobuf does not decode: {e}"),
        )
    })?;
    modelled_mutations(bytes, 2).map_err(|v| v.at(object))?;
    let (buffer, buffer_deltas) = decode_buffer(&node.buffer, base).map_err(|v| v.at(object))?;
    Ok(DecodedNode {
        children: node.children,
        sequences: SequenceSpan::of(&buffer).unwrap_or(SequenceSpan {
            min: u64::MAX,
            max: 0,
            repeats: false,
        }),
        buffer,
        buffer_deltas,
        size: bytes.len() as u64,
        checked: std::sync::Mutex::new(None),
    })
}

/// Runs `work` as a task of the current multi-threaded tokio runtime, so that leaves fetched
/// together (a walk's read-ahead, a commit's prior records) decode on every worker instead of
/// one after another in the caller's task. Elsewhere it runs inline.
pub(super) async fn on_pool<T: Send + 'static>(
    work: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            match handle.spawn(work).await {
                Ok(done) => done,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => Err(TreeError::InvalidInput(
                    "the tokio runtime shut down while a leaf was decoding".into(),
                )),
            }
        }
        _ => work.await,
    }
}

/// [`decode_leaf`] on the runtime's workers (see [`on_pool`]).
pub(crate) async fn decode_leaf_on_pool(
    object: String,
    bytes: Bytes,
    base: Option<u32>,
) -> Result<DecodedLeaf> {
    on_pool(async move { decode_leaf(&object, bytes, base).await }).await
}

/// Decodes a `.lance` leaf's bytes: exact schema, then the records (see [`crate::leaf`]).
pub(crate) async fn decode_leaf(
    object: &str,
    bytes: Bytes,
    base: Option<u32>,
) -> Result<DecodedLeaf> {
    let size = bytes.len() as u64;
    let batch = lancet_file::read_bytes_exact(&object_path(object), bytes, &leaf_schema())
        .await
        .map_err(|e| leaf_file_error(object, e))?;
    let mut records = decode_records(&batch).map_err(|v| v.at(object))?;
    let mut sum = WideTotals::default();
    for f in &mut records {
        let (total, visible) = record_counts(f).map_err(|v| v.at(object))?;
        sum.add_totals(Totals {
            fragments: 1,
            total_rows: total,
            visible_rows: visible,
        });
        crate::records::inherit_base(f, base);
    }
    let totals = sum
        .to_totals()
        .map_err(|d| TreeError::corrupt(object, Rule::LeafSummary, d))?;
    Ok(DecodedLeaf {
        records,
        totals,
        size,
    })
}

pub(super) fn leaf_file_error(object: &str, e: lancet_file::FileError) -> TreeError {
    match e {
        lancet_file::FileError::SchemaMismatch { rule, .. } => {
            TreeError::corrupt(object, Rule::LeafSchema, rule)
        }
        e => TreeError::corrupt(object, Rule::LeafFile, e.to_string()),
    }
}

/// The store path `object` spells (a store path's text, already encoded: parsed, not encoded
/// again, so a message shows `%20` rather than `%2520`).
pub(crate) fn object_path(object: &str) -> Path {
    Path::parse(object).unwrap_or_else(|_| Path::from(object))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use lancet_proto::table::{fragment_action, FragmentAction, FragmentTreeMutation};

    fn removal(sequence: u64, target: u64) -> FragmentTreeMutation {
        FragmentTreeMutation {
            action_sequence: sequence,
            action: Some(FragmentAction {
                action: Some(fragment_action::Action::RemoveFragment(target)),
            }),
            fragment_count_delta: -1,
            ..Default::default()
        }
    }

    #[test]
    fn a_node_decodes_with_its_buffer_span_and_deltas() {
        let node = FragmentTreeNode {
            children: Vec::new(),
            buffer: vec![removal(4, 1), removal(7, 2)],
        };
        let decoded = decode_node("n", &node.encode_to_vec(), None).unwrap();
        assert_eq!(decoded.buffer.len(), 2);
        assert_eq!((decoded.sequences.min, decoded.sequences.max), (4, 7));
        assert_eq!(decoded.buffer_deltas.fragments, -2);
    }

    #[test]
    fn bytes_that_are_not_a_node_are_corrupt() {
        let e = decode_node("n", &[0xff, 0xff, 0xff], None).unwrap_err();
        assert_eq!(e.rule(), Some(Rule::ObjectDecode));
    }

    #[test]
    fn a_mutation_at_sequence_zero_is_refused() {
        let node = FragmentTreeNode {
            children: Vec::new(),
            buffer: vec![removal(0, 1)],
        };
        let e = decode_node("n", &node.encode_to_vec(), None).unwrap_err();
        assert_eq!(e.rule(), Some(Rule::SequenceZero));
    }

    #[test]
    fn an_unmodelled_mutation_field_is_refused() {
        let node = FragmentTreeNode {
            children: Vec::new(),
            buffer: vec![removal(3, 1)],
        };
        // field 2 (buffer) holding one mutation with an extra field 99 (varint 1)
        let mut mutation = removal(3, 1).encode_to_vec();
        mutation.extend([0x98, 0x06, 0x01]);
        let mut bytes = Vec::new();
        bytes.push(0x12);
        prost::encoding::encode_varint(mutation.len() as u64, &mut bytes);
        bytes.extend(mutation);
        assert!(decode_node("n", &node.encode_to_vec(), None).is_ok());
        let e = decode_node("n", &bytes, None).unwrap_err();
        assert_eq!(e.rule(), Some(Rule::MutationField));
    }
}
