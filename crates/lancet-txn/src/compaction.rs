//! Which fragments a compaction rewrites together: Lance 14.0.2's compaction planner, over
//! the fragments' counts and the index entries that cover them.
//!
//! Rules kept from Lance (`DefaultCompactionPlanner`; each checked against pylance's
//! `compact_files` in the interop tests):
//! - fragments are walked in id order; a fragment is a candidate when it holds more data
//!   overlays than allowed, or (with `materialize_deletions`) when the share of its rows
//!   deleted is above `materialize_deletions_threshold` ("compact itself"), or when it has
//!   fewer physical rows than `target_rows_per_fragment` ("compact with neighbours");
//! - candidates in a row form a bin; a fragment that is no candidate closes the bin, and so
//!   does a candidate covered by another set of index segments than the bin's (an index's
//!   remap needs all or none of a group's fragments);
//! - a bin of one fragment that only wanted neighbours is dropped;
//! - a bin is cut into groups of at least `target_rows_per_fragment` live rows: after a
//!   fragment when the group so far has that many and so do the fragments left; the rest
//!   joins the last group;
//! - with stable row ids, `defer_index_remap` is refused (release 14.0.2 cannot record the
//!   moves of stable rows in a Fragment Reuse Index).
//!
//! Pure: the caller hands in the counts (deletion files read) and the index entries.

use lancet_proto::table::IndexMetadata;

use crate::error::{Result, TxnError};
use crate::FRI_INDEX_NAME;

/// What a compaction does, as Lance 14's `CompactionOptions` says it (the options that change
/// which fragments are rewritten and how). Serializes, so a plan's tasks carry it to other
/// processes; a field left out takes Lance's default.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct CompactionOptions {
    /// Rows a compacted fragment should hold (Lance's default: 1,048,576).
    pub target_rows_per_fragment: u64,
    /// Rows handed to the file writer at once (Lance's default: 1,024).
    pub max_rows_per_group: u64,
    /// Rewrite fragments with many deleted rows even when they are large enough.
    pub materialize_deletions: bool,
    /// The share of deleted rows above which a fragment is rewritten (Lance's default: 0.1).
    pub materialize_deletions_threshold: f64,
    /// Record the row moves in the Fragment Reuse Index instead of rewriting the indexes.
    pub defer_index_remap: bool,
    /// Data overlays a fragment may hold before it is rewritten (Lance's default: 10).
    pub max_overlays_per_fragment: usize,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        CompactionOptions {
            target_rows_per_fragment: 1024 * 1024,
            max_rows_per_group: 1024,
            materialize_deletions: true,
            materialize_deletions_threshold: 0.1,
            defer_index_remap: false,
            max_overlays_per_fragment: 10,
        }
    }
}

/// One fragment as the planner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentCounts {
    pub id: u64,
    pub physical_rows: u64,
    pub deleted_rows: u64,
    pub overlays: usize,
}

impl FragmentCounts {
    fn live_rows(&self) -> u64 {
        self.physical_rows.saturating_sub(self.deleted_rows)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Candidacy {
    Itself,
    WithNeighbours,
}

/// The groups of fragment ids to rewrite together (each a task), in id order. `fragments` are
/// the version's, in id order; `indices` its index entries.
pub fn plan_compaction(
    fragments: &[FragmentCounts],
    indices: &[IndexMetadata],
    options: &CompactionOptions,
    stable_row_ids: bool,
) -> Result<Vec<Vec<u64>>> {
    check_options(options, stable_row_ids)?;
    let covering = Covering::new(indices)?;
    let mut bins: Vec<Vec<(FragmentCounts, Candidacy)>> = Vec::new();
    let mut current: Vec<(FragmentCounts, Candidacy)> = Vec::new();
    let mut current_cover: Option<Vec<usize>> = None;
    for f in fragments {
        let Some(candidacy) = candidacy(f, options) else {
            bins.push(std::mem::take(&mut current));
            current_cover = None;
            continue;
        };
        let cover = covering.of(f.id);
        if current_cover.as_ref().is_some_and(|c| *c != cover) {
            bins.push(std::mem::take(&mut current));
        }
        current_cover = Some(cover);
        current.push((*f, candidacy));
    }
    bins.push(current);
    let mut groups = Vec::new();
    for bin in bins {
        match bin.as_slice() {
            [] | [(_, Candidacy::WithNeighbours)] => continue,
            _ => groups.extend(split_for_size(&bin, options.target_rows_per_fragment)),
        }
    }
    Ok(groups)
}

/// The options Lance refuses: a target of no rows, a threshold outside 0..=1, and a deferred
/// remap on a stable-row-id table.
pub fn check_options(options: &CompactionOptions, stable_row_ids: bool) -> Result<()> {
    let refuse = |reason: &str| Err(TxnError::operation("Rewrite", reason));
    if options.target_rows_per_fragment == 0 || options.max_rows_per_group == 0 {
        return refuse("target_rows_per_fragment and max_rows_per_group must be at least 1");
    }
    if !(0.0..=1.0).contains(&options.materialize_deletions_threshold) {
        return refuse("materialize_deletions_threshold must lie between 0 and 1");
    }
    if stable_row_ids && options.defer_index_remap {
        return Err(TxnError::unsupported(
            "Rewrite",
            "Cannot compact with defer_index_remap: the dataset uses stable row IDs, and recording their row-address moves in a fragment reuse index is not supported (as in Lance 14.0.2 release builds)",
        ));
    }
    Ok(())
}

fn candidacy(f: &FragmentCounts, options: &CompactionOptions) -> Option<Candidacy> {
    if f.overlays > options.max_overlays_per_fragment {
        return Some(Candidacy::Itself);
    }
    if options.materialize_deletions && f.physical_rows > 0 {
        let share = f.deleted_rows as f64 / f.physical_rows as f64;
        if share > options.materialize_deletions_threshold {
            return Some(Candidacy::Itself);
        }
    }
    (f.physical_rows < options.target_rows_per_fragment).then_some(Candidacy::WithNeighbours)
}

/// Cuts a bin after a fragment when the group so far and the fragments left each hold at
/// least `target` live rows.
fn split_for_size(bin: &[(FragmentCounts, Candidacy)], target: u64) -> Vec<Vec<u64>> {
    let total: u64 = bin.iter().map(|(f, _)| f.live_rows()).sum();
    let mut groups = Vec::new();
    let mut group = Vec::new();
    let (mut in_group, mut done) = (0u64, 0u64);
    for (f, _) in bin {
        group.push(f.id);
        in_group += f.live_rows();
        done += f.live_rows();
        if in_group >= target && total - done >= target {
            groups.push(std::mem::take(&mut group));
            in_group = 0;
        }
    }
    // the rest (fewer than `target` rows after the last cut) is the last group
    if !group.is_empty() {
        groups.push(group);
    }
    groups
}

/// The row counts of the fragments a task of `live_rows` rows writes, as Lance 14.0.2's
/// compaction plans them (`optimize.rs`): `live_rows / target` outputs (rounded down, at least
/// one), balanced: each holds `live_rows / n` rows and the first `live_rows % n` one more.
/// 2,400 live rows at a target of 1,000 are two fragments of 1,200, not 1,000 + 1,000 + 400.
/// Empty for a task with no live row.
pub fn output_rows(live_rows: u64, target_rows_per_fragment: u64) -> Vec<u64> {
    if live_rows == 0 {
        return Vec::new();
    }
    let n = live_rows
        .checked_div(target_rows_per_fragment)
        .unwrap_or(1)
        .max(1);
    let (base, extra) = (live_rows / n, live_rows % n);
    (0..n).map(|i| base + u64::from(i < extra)).collect()
}

/// One rewrite group's fragment ids: the sources it removes and the destinations it adds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupIds {
    pub sources: Vec<u32>,
    pub destinations: Vec<u32>,
}

/// An index's fragment bitmap after a Rewrite of `groups`, group by group as Lance 14.0.2
/// recalculates it (`recalculate_fragment_bitmap`): a group whose sources the index covers
/// entirely trades them for its destinations; a group it covers none of leaves it alone; a
/// group it covers in part is refused (its destinations would hold rows the index never
/// indexed; the planner never makes one, as a bin holds one covering).
pub fn rewritten_bitmap(
    index: &str,
    bitmap: &roaring::RoaringBitmap,
    groups: &[GroupIds],
) -> Result<roaring::RoaringBitmap> {
    let mut out = bitmap.clone();
    for g in groups {
        let covered = g.sources.iter().filter(|s| bitmap.contains(**s)).count();
        if covered == 0 {
            continue;
        }
        if covered < g.sources.len() {
            return Err(TxnError::operation(
                "Rewrite",
                format!(
                    "index {index:?} covers only some of the rewrite group {:?}: a rewrite group must be a split of indexed or of non-indexed data, never both",
                    g.sources
                ),
            ));
        }
        for s in &g.sources {
            out.remove(*s);
        }
        out.extend(g.destinations.iter().copied());
    }
    Ok(out)
}

/// An address-domain index lancet cannot rewrite (ZoneMap, BloomFilter) on a stable-row-id
/// table after a Rewrite of `groups`: it loses every source and gains nothing (Lance 14.0.2's
/// `drop_rewritten_fragments`).
pub fn drop_rewritten(
    bitmap: &roaring::RoaringBitmap,
    groups: &[GroupIds],
) -> roaring::RoaringBitmap {
    let mut out = bitmap.clone();
    for s in groups.iter().flat_map(|g| &g.sources) {
        out.remove(*s);
    }
    out
}

/// What a compaction that rewrites `groups` (not deferring index remaps) does to one index
/// entry, as Lance 14.0.2 decides it.
#[derive(Debug, Clone, PartialEq)]
pub enum IndexRemap {
    /// The entry as it goes on (its fragment bitmap recalculated where it has one): it
    /// covers none of the rewritten fragments, it is the Fragment Reuse Index, it indexes
    /// stable row ids (the rows keep theirs), or it is an address-domain index (ZoneMap,
    /// BloomFilter) on a stable-row-id table, which loses the rewritten fragments.
    Keep(IndexMetadata),
    /// The entry's data holds row addresses the rewrite moves: rewritten with the new
    /// addresses, covering `fragments`. The entry carries the recalculated bitmap already.
    Rewrite {
        entry: IndexMetadata,
        fragments: roaring::RoaringBitmap,
    },
}

/// The remap of `index` (an entry of the version compacted) for a rewrite of `groups`;
/// `covered`: its fragment bitmap (`None`: it names none, so covers every fragment).
/// `is_fri`: the entry is the version's Fragment Reuse Index.
pub fn remap_index(
    index: &IndexMetadata,
    covered: Option<&roaring::RoaringBitmap>,
    groups: &[GroupIds],
    stable_row_ids: bool,
    is_fri: bool,
) -> Result<IndexRemap> {
    let touches = covered.is_none_or(|c| {
        groups
            .iter()
            .any(|g| g.sources.iter().any(|s| c.contains(*s)))
    });
    if is_fri || !touches {
        return Ok(IndexRemap::Keep(index.clone()));
    }
    let is_btree = (index.index_details.as_ref())
        .is_some_and(|d| lancet_proto::is_btree_type_url(&d.type_url));
    // addresses no rewrite can remap (ZoneMap, BloomFilter, FM): the moved rows leave them
    let by_address_only = lancet_proto::results_are_row_addrs(index) && !is_btree;
    let mut out = index.clone();
    if stable_row_ids && by_address_only {
        if let Some(c) = covered {
            let kept = drop_rewritten(c, groups);
            out.fragment_bitmap = lancet_proto::roaring_wire::encode_roaring32(&kept);
        }
        return Ok(IndexRemap::Keep(out));
    }
    // no bitmap: the index covers every fragment, and still does
    let fragments = match covered {
        Some(c) => {
            let b = rewritten_bitmap(&index.name, c, groups)?;
            out.fragment_bitmap = lancet_proto::roaring_wire::encode_roaring32(&b);
            b
        }
        None => roaring::RoaringBitmap::new(),
    };
    // row ids survive the move: the index follows its rows (Lance's
    // `recalculate_fragment_bitmap`), whatever its type or version
    if stable_row_ids && !lancet_proto::results_are_row_addrs(index) {
        return Ok(IndexRemap::Keep(out));
    }
    Ok(IndexRemap::Rewrite {
        entry: out,
        fragments,
    })
}

/// Whether a deferred compaction of `groups` records its moves in a Fragment Reuse Index, as
/// Lance 14.0.2 decides it: always on a stable-row-id table, otherwise when some group's
/// source is covered by a (non-system) index or by the existing reuse index's destinations.
/// A compaction nothing indexes is a plain Rewrite.
pub fn defer_records_moves(
    groups: &[GroupIds],
    indices: &[IndexMetadata],
    stable_row_ids: bool,
) -> Result<bool> {
    if stable_row_ids {
        return Ok(true);
    }
    let mut covered = roaring::RoaringBitmap::new();
    for m in indices {
        if m.fragment_bitmap.is_empty() {
            // an index that names no bitmap covers every fragment
            if m.name != FRI_INDEX_NAME {
                return Ok(true);
            }
            continue;
        }
        covered |= crate::coverage::index_bitmap(m, "Rewrite")?.unwrap_or_default();
    }
    Ok(groups
        .iter()
        .any(|g| g.sources.iter().any(|s| covered.contains(*s))))
}

/// Which index segments cover each fragment (system indexes, the Fragment Reuse Index among
/// them, do not count).
struct Covering {
    segments: Vec<Option<roaring::RoaringBitmap>>,
}

impl Covering {
    fn new(indices: &[IndexMetadata]) -> Result<Self> {
        let mut segments = Vec::new();
        for m in indices.iter().filter(|m| m.name != FRI_INDEX_NAME) {
            // no bitmap: it covers every fragment
            segments.push(crate::coverage::index_bitmap(m, "Rewrite")?);
        }
        Ok(Covering { segments })
    }

    /// The positions of the segments that cover fragment `id`.
    fn of(&self, id: u64) -> Vec<usize> {
        let id = u32::try_from(id).unwrap_or(u32::MAX);
        self.segments
            .iter()
            .enumerate()
            .filter(|(_, b)| b.as_ref().is_none_or(|b| b.contains(id)))
            .map(|(i, _)| i)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lancet_proto::roaring_wire::encode_roaring32;

    fn counts(n: u64, rows: u64, deleted: u64) -> Vec<FragmentCounts> {
        (0..n)
            .map(|id| FragmentCounts {
                id,
                physical_rows: rows,
                deleted_rows: deleted,
                overlays: 0,
            })
            .collect()
    }

    fn options(target: u64) -> CompactionOptions {
        CompactionOptions {
            target_rows_per_fragment: target,
            ..Default::default()
        }
    }

    fn sizes(groups: &[Vec<u64>]) -> Vec<usize> {
        groups.iter().map(Vec::len).collect()
    }

    fn entry(name: &str, kind: &str, covers: &[u32], index_version: i32) -> IndexMetadata {
        IndexMetadata {
            name: name.into(),
            fragment_bitmap: encode_roaring32(&covers.iter().copied().collect()),
            index_details: Some(lancet_proto::prost_types::Any {
                type_url: format!("/lance.table.{kind}IndexDetails"),
                value: Vec::new(),
            }),
            index_version: Some(index_version),
            ..Default::default()
        }
    }

    fn bitmap(m: &IndexMetadata) -> Vec<u32> {
        lancet_proto::roaring_wire::decode_roaring32(&m.fragment_bitmap)
            .unwrap()
            .iter()
            .collect()
    }

    #[test]
    fn a_compaction_rewrites_what_an_index_holds_only_where_lance_does() {
        let groups = [GroupIds {
            sources: vec![1, 2],
            destinations: vec![5],
        }];
        let remap = |m: &IndexMetadata, stable: bool, fri: bool| {
            let covered = lancet_proto::roaring_wire::decode_roaring32(&m.fragment_bitmap).ok();
            remap_index(m, covered.as_ref(), &groups, stable, fri).unwrap()
        };
        // untouched, or the reuse index: as it is
        let apart = entry("v_idx", "BTree", &[0, 3], 1);
        assert_eq!(remap(&apart, false, false), IndexRemap::Keep(apart.clone()));
        let fri = entry(FRI_INDEX_NAME, "FragmentReuse", &[1, 2], 1);
        assert_eq!(remap(&fri, true, true), IndexRemap::Keep(fri.clone()));
        // a BTree over addresses: rewritten, covering the destinations
        let btree = entry("v_idx", "BTree", &[0, 1, 2], 1);
        match remap(&btree, false, false) {
            IndexRemap::Rewrite { entry, fragments } => {
                assert_eq!(bitmap(&entry), [0, 5]);
                assert_eq!(fragments.iter().collect::<Vec<_>>(), [0, 5]);
            }
            other => panic!("{other:?}"),
        }
        // a legacy BTree over stable row ids follows its fragments without a rewrite
        let legacy = entry("v_idx", "BTree", &[0, 1, 2], 0);
        match remap(&legacy, true, false) {
            IndexRemap::Keep(e) => assert_eq!(bitmap(&e), [0, 5]),
            other => panic!("{other:?}"),
        }
        // an address-domain index on a stable-row-id table loses the rewritten fragments
        let zones = entry("z_idx", "ZoneMap", &[0, 1, 2], 1);
        match remap(&zones, true, false) {
            IndexRemap::Keep(e) => assert_eq!(bitmap(&e), [0]),
            other => panic!("{other:?}"),
        }
        // row-id indexes of any version follow their rows (Lance's results_are_row_addrs)
        for (kind, version) in [("LabelList", 1), ("Inverted", 3), ("Bitmap", 0)] {
            match remap(&entry("l_idx", kind, &[0, 1, 2], version), true, false) {
                IndexRemap::Keep(e) => assert_eq!(bitmap(&e), [0, 5], "{kind}"),
                other => panic!("{kind}: {other:?}"),
            }
        }
        let mut fm = entry("f_idx", "FM", &[0, 1, 2], 10);
        if let Some(d) = fm.index_details.as_mut() {
            d.type_url = "/lance.index.pb.FMIndexDetails".into();
        }
        match remap(&fm, true, false) {
            IndexRemap::Keep(e) => assert_eq!(bitmap(&e), [0]),
            other => panic!("{other:?}"),
        }
        // covering part of a group is refused
        let part = entry("v_idx", "BTree", &[1], 1);
        let covered = lancet_proto::roaring_wire::decode_roaring32(&part.fragment_bitmap).ok();
        assert!(remap_index(&part, covered.as_ref(), &groups, false, false).is_err());
    }

    #[test]
    fn small_fragments_are_grouped_by_the_target_as_pylance_groups_them() {
        // pylance 14.0.2: 40 fragments of 500 rows, 10% deleted, target 3,000 -> groups of
        // 3,150, 3,150, 3,150, 3,150 and 5,400 live rows
        let groups = plan_compaction(&counts(40, 500, 50), &[], &options(3000), false).unwrap();
        assert_eq!(sizes(&groups), [7, 7, 7, 7, 12]);
        // 20 fragments, 9,000 live rows, target 5,000: one group
        let groups = plan_compaction(&counts(20, 500, 50), &[], &options(5000), false).unwrap();
        assert_eq!(sizes(&groups), [20]);
    }

    #[test]
    fn large_fragments_are_kept_unless_they_carry_deletions() {
        let mut fragments = counts(4, 1000, 0);
        assert!(plan_compaction(&fragments, &[], &options(500), false)
            .unwrap()
            .is_empty());
        // over the threshold: rewritten alone; at it: kept
        fragments[1].deleted_rows = 101;
        fragments[2].deleted_rows = 100;
        let groups = plan_compaction(&fragments, &[], &options(500), false).unwrap();
        assert_eq!(groups, [vec![1]]);
        let keep = CompactionOptions {
            materialize_deletions: false,
            ..options(500)
        };
        assert!(plan_compaction(&fragments, &[], &keep, false)
            .unwrap()
            .is_empty());
        // a lone small fragment between large ones has no neighbour to join
        let mut lone = counts(3, 1000, 0);
        lone[1].physical_rows = 10;
        assert!(plan_compaction(&lone, &[], &options(500), false)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_bin_never_spans_two_index_coverings() {
        let index = |uuid: u8, covered: &[u32]| IndexMetadata {
            name: "id_idx".into(),
            uuid: Some(lancet_proto::table::Uuid {
                uuid: vec![uuid; 16],
            }),
            fragment_bitmap: encode_roaring32(&covered.iter().copied().collect()),
            ..Default::default()
        };
        let fri = IndexMetadata {
            name: FRI_INDEX_NAME.into(),
            fragment_bitmap: encode_roaring32(&[0, 5].into_iter().collect()),
            ..Default::default()
        };
        let indices = [index(1, &[0, 1, 2]), index(2, &[3, 4]), fri];
        let groups = plan_compaction(&counts(6, 10, 0), &indices, &options(1000), false).unwrap();
        assert_eq!(groups, [vec![0, 1, 2], vec![3, 4]]);
    }

    #[test]
    fn a_task_writes_balanced_outputs_as_lance_plans_them() {
        // pylance 14.0.2: 3,000 rows, 600 deleted, target 1,000 -> two fragments of 1,200
        assert_eq!(output_rows(2400, 1000), [1200, 1200]);
        assert_eq!(output_rows(4100, 1000), [1025; 4]);
        assert_eq!(output_rows(2000, 500), [500; 4]);
        assert_eq!(output_rows(7, 3), [4, 3]);
        assert_eq!(output_rows(999, 1000), [999]);
        assert!(output_rows(0, 1000).is_empty());
    }

    #[test]
    fn an_index_bitmap_is_recalculated_group_by_group() {
        let g = |s: &[u32], d: &[u32]| GroupIds {
            sources: s.to_vec(),
            destinations: d.to_vec(),
        };
        let bitmap: roaring::RoaringBitmap = [0, 1, 7].into_iter().collect();
        // the index covers the first group whole and none of the second: only the first moves
        let groups = [g(&[0, 1], &[4]), g(&[2, 3], &[5])];
        let out = rewritten_bitmap("v_idx", &bitmap, &groups).unwrap();
        assert_eq!(out.iter().collect::<Vec<_>>(), [4, 7]);
        // an address index lancet cannot rewrite only loses the sources, split or not
        let dropped = drop_rewritten(&bitmap, &[g(&[1, 2], &[4])]);
        assert_eq!(dropped.iter().collect::<Vec<_>>(), [0, 7]);
        // a group covered in part is refused
        let e = rewritten_bitmap("v_idx", &bitmap, &[g(&[1, 2], &[4])]).unwrap_err();
        assert!(e.to_string().contains("only some"), "{e}");
        // the reuse index decides only when deferred and an index covers a source
        let covering = |b: &[u32]| IndexMetadata {
            name: "v_idx".into(),
            fragment_bitmap: encode_roaring32(&b.iter().copied().collect()),
            ..Default::default()
        };
        assert!(defer_records_moves(&groups, &[covering(&[3])], false).unwrap());
        assert!(!defer_records_moves(&groups, &[covering(&[9])], false).unwrap());
        assert!(!defer_records_moves(&groups, &[], false).unwrap());
        assert!(defer_records_moves(&groups, &[], true).unwrap());
    }

    #[test]
    fn bad_options_are_refused_as_lance_refuses_them() {
        let deferred = CompactionOptions {
            defer_index_remap: true,
            ..Default::default()
        };
        let e = plan_compaction(&counts(2, 1, 0), &[], &deferred, true).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Unsupported);
        assert!(plan_compaction(&counts(2, 1, 0), &[], &deferred, false).is_ok());
        assert!(plan_compaction(&counts(2, 1, 0), &[], &options(0), false).is_err());
        let bad = CompactionOptions {
            materialize_deletions_threshold: 1.5,
            ..Default::default()
        };
        assert!(plan_compaction(&counts(2, 1, 0), &[], &bad, false).is_err());
    }
}
