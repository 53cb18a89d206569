"""Names pylance 14.0.2 exports for features lancet does not implement: each is there, so a
pylance script imports it, and using it (constructing or calling it) raises
:class:`lancet.errors.UnsupportedError` (a ``NotImplementedError``) naming the feature, never
an ``AttributeError``."""

from __future__ import annotations

from .errors import UnsupportedError

_FEATURES = {
    "blob columns": ["Blob", "BlobArray", "BlobColumn", "BlobFile", "DedicatedBlobWriter",
                     "BlobDescriptorArrayBuilder", "PackedBlobWriter", "BlobDescriptor", "blob_array",
                     "blob_field"],
    "cleanup explanations": ["CleanupCandidateFile", "CleanupExplanation", "CleanupReferencedBranch"],
    "tables with several base paths created from Python": ["DatasetBasePath"],
    "per-field data statistics": ["DataStatistics", "FieldStatistics"],
    "full-text search": ["FtsToken", "tokenize"],
    "Lance's Rust logger (lancet logs through tracing: RUST_LOG)": ["set_logger"],
    "SIMD reports": ["simd_info"],
    "the DataFusion FFI table provider": ["FFILanceTableProvider"],
    "the MemWAL and LSM tables": ["ExecutionPlan", "LsmPointLookupPlanner", "LsmScanner",
                                 "LsmVectorSearchPlanner", "CompactedSsTable", "ShardSnapshot",
                                 "ShardWriter", "ShardingField", "ShardingSpec",
                                 "evaluate_sharding_spec"],
}


def _absent(name: str, feature: str) -> type:
    """A class standing for pylance's `name`: constructing or calling it raises."""

    def refuse(cls, *args, **kwargs):
        raise UnsupportedError(f"lancet.{name}: {feature} are not implemented by lancet")

    return type(name, (), {"__new__": refuse, "__doc__": f"pylance's ``{name}``: {feature}, "
                                                          "not implemented by lancet."})


NAMES = {name: _absent(name, feature) for feature, names in _FEATURES.items() for name in names}
