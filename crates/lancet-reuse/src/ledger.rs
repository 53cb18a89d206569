//! Decoding a history: `FragmentReuseIndexDetails` → `InlineContent` → transitions.
//!
//! Field by field, as Lance 14's ledger: legacy `Version`s (field 1) become ordered-compaction
//! transitions; `Transition`s (field 2) need `index_version` 1; a transition carrying any field
//! other than 1–4 is skipped and the history marked as having unsupported transitions (readers
//! fall back to scanning; writers that must extend the history refuse); any other
//! `InlineContent` field marks it too. Every kept transition is checked (see [`check`]).
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use lancet_proto::table::fragment_reuse_index_details::{
    transition::Mapping as PbMapping, FragmentDigest, Transition as PbTransition,
    Version as PbVersion,
};
use lancet_proto::wire::{self, WireType};
use lancet_proto::RowAddress;
use prost::Message;
use roaring::RoaringTreemap;

use crate::error::{corrupt, Result, ReuseError};

/// One fragment as a transition saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    pub id: u32,
    pub physical_rows: u64,
    pub num_deleted_rows: u64,
}

impl Digest {
    pub fn survivors(&self) -> u64 {
        self.physical_rows - self.num_deleted_rows
    }
}

/// How a transition moved rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Mapping {
    /// Surviving source rows concatenated in source order, split into the destinations.
    OrderedCompaction { surviving: RoaringTreemap },
    /// Source rows distributed by label; the labels live in `_fri/{map_id}/stable_partition.lance`.
    StablePartition {
        map_id: String,
        map_size_bytes: u64,
        base_id: Option<u32>,
    },
}

/// One rewrite of source fragments into destination fragments.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// Set for legacy (v0) groups: the dataset version of their `Version` record.
    pub dataset_version: Option<u64>,
    pub sources: Vec<Digest>,
    pub destinations: Vec<Digest>,
    pub mapping: Mapping,
}

/// A decoded history.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ledger {
    pub index_version: i32,
    pub transitions: Vec<Transition>,
    /// Some transition or field could not be interpreted and was skipped.
    pub has_unsupported: bool,
    /// The row maps (`map_id`, `base_id`) that skipped transitions name: a transition with a
    /// field outside 1–4 (the spec allows other fields for ordinary metadata) is not
    /// translated through, but its row map is still needed by the version that holds it, so
    /// cleanup and `fri unreferenced` keep it.
    pub unmodelled_row_maps: Vec<(String, Option<u32>)>,
}

impl Ledger {
    /// Every row map (`map_id`, `base_id`) the history names: its stable partitions and those
    /// of the transitions it skipped.
    pub fn row_maps(&self) -> impl Iterator<Item = (&str, Option<u32>)> {
        self.transitions
            .iter()
            .filter_map(|t| match &t.mapping {
                Mapping::StablePartition {
                    map_id, base_id, ..
                } => Some((map_id.as_str(), *base_id)),
                Mapping::OrderedCompaction { .. } => None,
            })
            .chain(
                self.unmodelled_row_maps
                    .iter()
                    .map(|(m, b)| (m.as_str(), *b)),
            )
    }
}

impl Ledger {
    /// The history a shallow clone records, whose source dataset is the clone's base
    /// `source_base`: every stable partition whose row map inherits the source dataset
    /// (`base_id` unset) names it explicitly. `Ok(None)` when none inherits (the source's
    /// entry, with its own `base_id`, is the clone's as it is).
    ///
    /// A history with transitions lancet does not model cannot be written again without
    /// them (and a row map of theirs that inherits would resolve in the clone, where it does
    /// not exist), so such a clone is refused when it would re-encode the history.
    pub fn for_clone(&self, what: &str, source_base: u32) -> Result<Option<Ledger>> {
        let inherits = |b: &Option<u32>| b.is_none();
        let modelled = self.transitions.iter().any(
            |t| matches!(&t.mapping, Mapping::StablePartition { base_id, .. } if inherits(base_id)),
        );
        let unmodelled = self.unmodelled_row_maps.iter().any(|(_, b)| inherits(b));
        if !modelled && !unmodelled {
            return Ok(None);
        }
        if self.has_unsupported {
            return Err(ReuseError::Unsupported {
                what: what.to_string(),
                rule: "its history holds transitions lancet does not model; a clone would \
                       drop them or point their row maps at the clone"
                    .into(),
            });
        }
        let mut clone = self.clone();
        for t in &mut clone.transitions {
            if let Mapping::StablePartition { base_id, .. } = &mut t.mapping {
                if base_id.is_none() {
                    *base_id = Some(source_base);
                }
            }
        }
        Ok(Some(clone))
    }
}

fn digest(d: &FragmentDigest, what: &str) -> Result<Digest> {
    let id = u32::try_from(d.id)
        .ok()
        .filter(|id| *id != u32::MAX)
        .ok_or_else(|| corrupt(what, format!("fragment id {} is not below 2^32 - 1", d.id)))?;
    if d.physical_rows > u64::from(u32::MAX) {
        return Err(corrupt(
            what,
            format!("fragment {id} has {} physical rows", d.physical_rows),
        ));
    }
    if d.num_deleted_rows > d.physical_rows {
        return Err(corrupt(
            what,
            format!("fragment {id} deletes more rows than it has"),
        ));
    }
    Ok(Digest {
        id,
        physical_rows: d.physical_rows,
        num_deleted_rows: d.num_deleted_rows,
    })
}

/// The per-transition rules (all `Corrupt`).
pub fn check(t: &Transition, what: &str) -> Result<()> {
    if t.sources.is_empty() {
        return Err(corrupt(what, "a transition has no sources"));
    }
    for (side, list) in [("sources", &t.sources), ("destinations", &t.destinations)] {
        let mut ids: Vec<u32> = list.iter().map(|d| d.id).collect();
        ids.sort_unstable();
        if ids.windows(2).any(|w| matches!(w, [a, b] if a == b)) {
            return Err(corrupt(what, format!("duplicate fragment id in {side}")));
        }
    }
    if t.destinations.iter().any(|d| d.num_deleted_rows != 0) {
        return Err(corrupt(what, "a destination records deleted rows"));
    }
    let survivors: u64 = t.sources.iter().map(Digest::survivors).sum();
    let written: u64 = t.destinations.iter().map(|d| d.physical_rows).sum();
    if survivors != written {
        return Err(corrupt(
            what,
            format!("{survivors} surviving source rows but {written} destination rows"),
        ));
    }
    match &t.mapping {
        Mapping::OrderedCompaction { surviving } => {
            if surviving.len() != survivors {
                return Err(corrupt(
                    what,
                    format!(
                        "changed_row_addrs holds {} rows, the sources keep {survivors}",
                        surviving.len()
                    ),
                ));
            }
            for s in &t.sources {
                let n = surviving.range_cardinality(RowAddress::fragment_range(s.id));
                if n != s.survivors() {
                    return Err(corrupt(
                        what,
                        format!(
                            "source {} keeps {} rows but changed_row_addrs lists {n}",
                            s.id,
                            s.survivors()
                        ),
                    ));
                }
                let max_offset = surviving
                    .bitmaps()
                    .find(|(high, _)| *high == s.id)
                    .and_then(|(_, b)| b.max());
                if max_offset.is_some_and(|o| u64::from(o) >= s.physical_rows) {
                    return Err(corrupt(
                        what,
                        format!("source {} lists an offset past its rows", s.id),
                    ));
                }
            }
        }
        Mapping::StablePartition {
            map_id,
            map_size_bytes,
            ..
        } => {
            lancet_paths::ObjectUuid::parse(map_id)
                .map_err(|_| corrupt(what, format!("map_id {map_id:?} is not a UUID")))?;
            if *map_size_bytes == 0 {
                return Err(corrupt(what, "map_size_bytes is 0"));
            }
            if t.destinations.len() > crate::counts::MAX_DESTINATIONS {
                return Err(corrupt(
                    what,
                    "a stable partition has more than 65536 destinations",
                ));
            }
        }
    }
    Ok(())
}

fn digests(list: &[FragmentDigest], what: &str) -> Result<Vec<Digest>> {
    list.iter().map(|d| digest(d, what)).collect()
}

fn ordered(bytes: &[u8], what: &str) -> Result<Mapping> {
    let surviving = lancet_proto::roaring_wire::decode_treemap(bytes)
        .map_err(|e| corrupt(what, format!("changed_row_addrs: {e}")))?;
    Ok(Mapping::OrderedCompaction { surviving })
}

/// Decodes `InlineContent` bytes of an entry with `index_version`.
pub fn decode_inline(bytes: &[u8], index_version: i32, what: &str) -> Result<Ledger> {
    if !(0..=1).contains(&index_version) {
        return Err(ReuseError::Unsupported {
            what: what.to_string(),
            rule: format!("index_version {index_version} needs a newer reader"),
        });
    }
    let mut ledger = Ledger {
        index_version,
        ..Default::default()
    };
    for field in wire::fields(bytes) {
        let field = field.map_err(|e| corrupt(what, format!("InlineContent: {e}")))?;
        let body = bytes.get(field.value.clone()).unwrap_or_default();
        match (field.number, field.wire_type) {
            (1, WireType::LengthDelimited) => {
                let v = PbVersion::decode(body)
                    .map_err(|e| corrupt(what, format!("legacy Version: {e}")))?;
                for g in &v.groups {
                    let t = Transition {
                        dataset_version: Some(v.dataset_version),
                        sources: digests(&g.old_fragments, what)?,
                        destinations: digests(&g.new_fragments, what)?,
                        mapping: ordered(&g.changed_row_addrs, what)?,
                    };
                    check(&t, what)?;
                    ledger.transitions.push(t);
                }
            }
            (2, WireType::LengthDelimited) => {
                if index_version == 0 {
                    return Err(corrupt(what, "a transition in an index_version 0 history"));
                }
                let mut arms = 0;
                let mut unknown = false;
                for f in wire::fields(body) {
                    let f = f.map_err(|e| corrupt(what, format!("Transition: {e}")))?;
                    match f.number {
                        1 | 2 => {}
                        3 | 4 => arms += 1,
                        _ => unknown = true,
                    }
                }
                if unknown {
                    ledger.has_unsupported = true;
                    // prost skips the unknown fields; a stable partition's map is still named
                    if let Ok(PbTransition {
                        mapping: Some(PbMapping::StablePartition(s)),
                        ..
                    }) = PbTransition::decode(body)
                    {
                        ledger.unmodelled_row_maps.push((s.map_id, s.base_id));
                    }
                    continue;
                }
                if arms != 1 {
                    return Err(corrupt(
                        what,
                        format!("a transition has {arms} mappings, not 1"),
                    ));
                }
                let pb = PbTransition::decode(body)
                    .map_err(|e| corrupt(what, format!("Transition: {e}")))?;
                let mapping = match &pb.mapping {
                    Some(PbMapping::OrderedCompaction(o)) => ordered(&o.changed_row_addrs, what)?,
                    Some(PbMapping::StablePartition(s)) => Mapping::StablePartition {
                        map_id: s.map_id.clone(),
                        map_size_bytes: s.map_size_bytes,
                        base_id: s.base_id,
                    },
                    None => return Err(corrupt(what, "a transition has no mapping")),
                };
                let t = Transition {
                    dataset_version: None,
                    sources: digests(&pb.sources, what)?,
                    destinations: digests(&pb.destinations, what)?,
                    mapping,
                };
                check(&t, what)?;
                ledger.transitions.push(t);
            }
            _ => ledger.has_unsupported = true,
        }
    }
    Ok(ledger)
}
