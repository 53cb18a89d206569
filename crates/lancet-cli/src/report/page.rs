//! The report page: one HTML file, styles and charts inline, no script and no request
//! beyond itself. Each chart is an `<svg class="chart">` with a stable id the browser test
//! looks for: `fragment-sizes`, `deleted-share`, `index-coverage`, `tree-shape`, `versions`,
//! `row-ids` (the last two only when the table has a tree or stable row ids; a note stands
//! in their place otherwise).

use std::collections::BTreeMap;
use std::ops::Range;

use lancet::tree::{NodeShape, TreeWriterConfig};
use maud::{html, Markup, DOCTYPE};

use super::chart::{bytes, count, Bars, Grid, Row, Series};
use super::facts::{Facts, Fragment, HISTORY};

/// At most this many columns in a grid: more fragments or nodes share a column.
const COLUMNS: usize = 120;
const KEPT: &str = "#4e79a7";
const REWRITTEN: &str = "#f28e2b";
const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];

const STYLE: &str =
    "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:820px;color:#222}\
h1{font-size:22px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd}\
table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}\
svg.chart{width:100%;height:auto;display:block;margin:8px 0}\
.grid{stroke:#eee}.axis{stroke:#888}.tick{font-size:11px;fill:#555}\
.title{font-size:12px;fill:#333}.legend{font-size:12px;fill:#333}p.note{color:#666}";

pub fn render(f: &Facts) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "lancet report: " (f.uri) " version " (f.version) }
                style { (STYLE) }
            }
            body {
                h1 { "Table " code { (f.uri) } ", version " (f.version) }
                (summary(f))
                (fragments(f))
                (indexes(f))
                (tree(f))
                (versions(f))
                (row_ids(f))
            }
        }
    }
    .into_string()
}

fn summary(f: &Facts) -> Markup {
    let sum = |v: &mut dyn Iterator<Item = u64>| v.fold(0u64, u64::saturating_add);
    let deleted = sum(&mut f.fragments.iter().filter_map(|x| x.deleted_rows));
    let data = sum(&mut f.fragments.iter().filter_map(|x| x.bytes));
    html! {
        table {
            tr { th { "visible rows" } td.n { (f.rows.map_or("unknown".into(), count)) } }
            tr { th { "deleted rows still stored" } td.n { (count(deleted)) } }
            tr { th { "fragments" } td.n { (count(f.fragments.len() as u64)) } }
            tr { th { "data files" } td.n { (bytes(data)) } }
            tr { th { "manifest" } td.n { (bytes(f.manifest_bytes)) } }
            tr { th { "fragment records" } td { (if f.tree.is_some() { "fragment tree" } else { "flat manifest" }) } }
            tr { th { "stable row ids" } td { (if f.stable_row_ids { "yes" } else { "no" }) } }
        }
    }
}

/// `0`, `1`, `2–3`, `4–7`, ...: the power-of-two bin of `n`.
fn log_bin(n: u64) -> usize {
    (u64::BITS - n.leading_zeros()) as usize
}

fn log_label(bin: usize) -> String {
    match bin {
        0 => "0".into(),
        1 => "1".into(),
        b => {
            let low = 1u64 << (b - 1);
            if low < 1 << 10 {
                format!("{low}–{}", low * 2 - 1)
            } else {
                // short edges read as a half-open range: 1K–2K is 1,024 to 2,047
                format!("{}–{}", short(low), short(low.saturating_mul(2)))
            }
        }
    }
}

/// `4K`, `1M`: a bin edge short enough for an axis.
fn short(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{}G", n >> 30),
        n if n >= 1 << 20 => format!("{}M", n >> 20),
        n if n >= 1 << 10 => format!("{}K", n >> 10),
        n => n.to_string(),
    }
}

/// Kept and rewritten fragments per bin, the bins up to the largest used.
fn split_bins(f: &Facts, bins: usize, bin: impl Fn(&Fragment) -> usize) -> Vec<Series> {
    let mut kept = vec![0u64; bins];
    let mut rewritten = vec![0u64; bins];
    for x in &f.fragments {
        let slot = if f.compacted.contains(&x.id) {
            &mut rewritten
        } else {
            &mut kept
        };
        if let Some(v) = slot.get_mut(bin(x).min(bins - 1)) {
            *v += 1;
        }
    }
    vec![
        Series {
            name: "kept".into(),
            color: KEPT,
            values: kept,
        },
        Series {
            name: "rewritten by compaction".into(),
            color: REWRITTEN,
            values: rewritten,
        },
    ]
}

fn fragments(f: &Facts) -> Markup {
    let rows = |x: &Fragment| x.physical_rows.unwrap_or(0);
    let size_bins = f
        .fragments
        .iter()
        .map(|x| log_bin(rows(x)))
        .max()
        .unwrap_or(0)
        + 1;
    let sizes = Bars {
        id: "fragment-sizes",
        bins: (0..size_bins).map(log_label).collect(),
        series: split_bins(f, size_bins, |x| log_bin(rows(x))),
        x_title: "rows in the fragment (physical, deleted included)",
        y_title: "fragments",
        unit: count,
    };
    // 0%, then ten bins of 10%, then unknown
    let share_bin = |x: &Fragment| match (x.physical_rows, x.deleted_rows) {
        (_, Some(0)) => 0,
        (Some(p), Some(d)) if p > 0 => {
            1 + ((d.min(p).saturating_mul(10)).saturating_sub(1) / p) as usize
        }
        _ => 11,
    };
    let mut share_labels: Vec<String> = vec!["none".into()];
    share_labels.extend((0..10).map(|k| format!("≤{}%", (k + 1) * 10)));
    share_labels.push("unknown".into());
    let shares = Bars {
        id: "deleted-share",
        bins: share_labels,
        series: split_bins(f, 12, share_bin),
        x_title: "share of the fragment's rows deleted",
        y_title: "fragments",
        unit: count,
    };
    html! {
        h2 { "Fragments" }
        p { "Compaction with Lance's default options (" code { "lancet compact --plan" } ") would rewrite "
            (count(f.compacted.len() as u64)) " of " (count(f.fragments.len() as u64))
            " fragments in " (f.compaction_tasks) (if f.compaction_tasks == 1 { " task." } else { " tasks." }) }
        (sizes.render())
        (shares.render())
    }
}

/// `n` items in at most [`COLUMNS`] consecutive groups of nearly equal size.
fn groups(n: usize) -> Vec<Range<usize>> {
    let per = n.div_ceil(COLUMNS).max(1);
    (0..n).step_by(per).map(|s| s..(s + per).min(n)).collect()
}

fn indexes(f: &Facts) -> Markup {
    let mut ids: Vec<u64> = f.fragments.iter().map(|x| x.id).collect();
    ids.sort_unstable();
    let columns = groups(ids.len());
    let label = |r: &Range<usize>| match (ids.get(r.start), ids.get(r.end.saturating_sub(1))) {
        (Some(a), Some(b)) if a == b => format!("fragment {a}"),
        (Some(a), Some(b)) => format!("fragments {a}–{b}"),
        _ => String::new(),
    };
    let row = |name: String, covered: &dyn Fn(u64) -> bool| Row {
        label: name,
        cells: (columns.iter())
            .map(|r| {
                let part = ids.get(r.clone()).unwrap_or(&[]);
                let n = part.iter().filter(|id| covered(**id)).count();
                let share = n as f64 / part.len().max(1) as f64;
                (
                    share,
                    format!("{}: {n} of {} covered", label(r), part.len()),
                )
            })
            .collect(),
    };
    let mut rows: Vec<Row> = (f.indexes.iter())
        .map(|i| match &i.fragments {
            Some(set) => row(format!("{} ({})", i.name, i.columns), &|id| {
                set.contains(&id)
            }),
            None => row(format!("{} (no bitmap)", i.name), &|_| false),
        })
        .collect();
    if let Some(fri) = &f.fri {
        let moved: std::collections::HashSet<u64> = fri
            .iter()
            .flat_map(|t| t.destinations.iter().copied())
            .collect();
        rows.push(row("FRI destinations".into(), &|id| moved.contains(&id)));
    }
    let grid = Grid {
        id: "index-coverage",
        rows,
        color: "#59a14f",
        caption: "fragments in id order; darker: more of the column's fragments covered",
    };
    html! {
        h2 { "Indexes" }
        @if f.indexes.is_empty() && f.fri.is_none() {
            p.note { "No indexes." }
        } @else {
            (grid.render())
        }
        @if let Some(fri) = &f.fri {
            p { "The Fragment Reuse Index records " (fri.len()) " transitions: compactions whose row moves indexes still read through it." }
            table {
                tr { th { "version" } th { "from fragments" } th { "to fragments" } th { "mapping" } }
                @for t in fri {
                    tr {
                        td.n { (t.dataset_version.map_or("-".into(), |v| v.to_string())) }
                        td { (ids_text(&t.sources)) }
                        td { (ids_text(&t.destinations)) }
                        td { (t.mapping) }
                    }
                }
            }
        }
    }
}

fn ids_text(ids: &[u64]) -> String {
    let shown: Vec<String> = ids.iter().take(8).map(u64::to_string).collect();
    if ids.len() > 8 {
        format!("{} … ({} in all)", shown.join(", "), ids.len())
    } else {
        shown.join(", ")
    }
}

fn tree(f: &Facts) -> Markup {
    let Some(s) = &f.tree else {
        return html! {
            h2 { "Fragment tree" }
            p.note { "This version lists its " (count(f.fragments.len() as u64))
                " fragment records in the flat manifest (" (bytes(f.manifest_bytes))
                "), rewritten by every commit. " code { "lancet tree convert" } " moves them into a fragment tree." }
        };
    };
    let config = TreeWriterConfig::default();
    let fullest = (s.nodes.iter().filter(|n| n.leaf))
        .map(|n| n.entries)
        .max()
        .unwrap_or(0)
        .max(1);
    let mut levels: BTreeMap<(bool, u32), Vec<NodeShape>> = BTreeMap::new();
    for n in &s.nodes {
        levels.entry((n.leaf, n.level)).or_default().push(*n);
    }
    let rows = (levels.iter())
        .map(|((leaf, level), nodes)| Row {
            label: if *leaf {
                format!("leaves ({})", nodes.len())
            } else {
                format!("level {level} ({})", nodes.len())
            },
            cells: groups(nodes.len())
                .into_iter()
                .map(|r| {
                    let part = nodes.get(r).unwrap_or(&[]);
                    let fill = |n: &NodeShape| {
                        if n.leaf {
                            n.entries as f64 / fullest as f64
                        } else {
                            n.buffer_bytes as f64 / config.node_buffer_max_bytes as f64
                        }
                    };
                    let share = part.iter().map(fill).sum::<f64>() / part.len().max(1) as f64;
                    (share, node_tip(part))
                })
                .collect(),
        })
        .collect();
    let grid = Grid {
        id: "tree-shape",
        rows,
        color: "#b07aa1",
        caption: "a cell per node or run of nodes; darker: more records (leaves), more buffered (interiors)",
    };
    html! {
        h2 { "Fragment tree" }
        p { "Height " (s.height) ": " (count(s.interiors)) " interiors (" (bytes(s.interior_bytes)) "), "
            (count(s.leaves)) " leaves (" (bytes(s.leaf_bytes)) "), root "
            (if s.root_bytes > 0 { bytes(s.root_bytes) } else { "inline".into() }) "; "
            (count(s.root_buffer)) " mutations buffered in the root, "
            (count(s.mutations_since_root)) " since it was written. An interior flushes its buffer at "
            (bytes(config.node_buffer_max_bytes as u64)) " (the writer's default)." }
        (grid.render())
    }
}

fn node_tip(part: &[NodeShape]) -> String {
    let sum = |f: fn(&NodeShape) -> u64| part.iter().map(f).fold(0u64, u64::saturating_add);
    let (total, entries, buffered) = (sum(|n| n.bytes), sum(|n| n.entries), sum(|n| n.buffered));
    match part {
        [n] if n.leaf => format!("a leaf: {entries} fragments, {}", bytes(total)),
        [_] => format!(
            "an interior: {entries} children, {buffered} buffered mutations, {}",
            bytes(total)
        ),
        _ => format!(
            "{} nodes: {entries} entries, {buffered} buffered mutations, {}",
            part.len(),
            bytes(total)
        ),
    }
}

fn versions(f: &Facts) -> Markup {
    let shown: Vec<_> = f.versions.iter().filter(|v| v.detail.is_some()).collect();
    let mut operations: Vec<&str> = Vec::new();
    for v in &shown {
        if let Some(d) = &v.detail {
            if !operations.contains(&d.operation.as_str()) {
                operations.push(&d.operation);
            }
        }
    }
    let series = (operations.iter().enumerate())
        .map(|(k, op)| Series {
            name: op.to_string(),
            color: PALETTE[k % PALETTE.len()],
            values: (shown.iter())
                .map(|v| match &v.detail {
                    Some(d) if d.operation == *op => v.manifest_bytes.saturating_add(d.data_bytes),
                    _ => 0,
                })
                .collect(),
        })
        .collect();
    let chart = Bars {
        id: "versions",
        bins: shown.iter().map(|v| v.version.to_string()).collect(),
        series,
        x_title: "version (colour: its operation)",
        y_title: "bytes written",
        unit: bytes,
    };
    let manifests = (f.versions.iter().map(|v| v.manifest_bytes)).fold(0u64, u64::saturating_add);
    html! {
        h2 { "Versions" }
        p { (f.versions.len()) " versions listed up to this one, their manifests " (bytes(manifests))
            " in all. Bytes written per commit: its manifest and the data files its operation adds"
            " (deletion files and indexes record no size); the last " (HISTORY) " versions." }
        (chart.render())
        table {
            tr { th { "version" } th { "committed" } th { "operation" } th { "manifest" } th { "data" } }
            @for v in shown.iter().rev().take(12) {
                @if let Some(d) = &v.detail {
                    tr {
                        td.n { (v.version) }
                        td { (d.timestamp.map_or("-".into(), when)) }
                        td { (d.operation) }
                        td.n { (bytes(v.manifest_bytes)) }
                        td.n { (bytes(d.data_bytes)) }
                    }
                }
            }
        }
    }
}

/// A commit time as `2026-12-07 05:17:09 UTC`.
fn when(seconds: i64) -> String {
    // RFC 3339 stops at year 9999: a later (hostile) stamp is shown as its seconds
    if seconds >= 253_402_300_800 {
        return format!("{seconds} s after 1970");
    }
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds.max(0) as u64);
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replacen('T', " ", 1)
        .replacen('Z', " UTC", 1)
}

fn row_ids(f: &Facts) -> Markup {
    let Some(seqs) = &f.row_ids else {
        return html! {
            h2 { "Row ids" }
            p.note { "This table has no stable row ids: a row's id is its address." }
        };
    };
    // 0, 1, 2, 3–4, 5–8, 9–16, 17+ segments
    let bin = |n: usize| match n {
        0..=2 => n,
        3..=4 => 3,
        5..=8 => 4,
        9..=16 => 5,
        _ => 6,
    };
    let labels = ["0", "1", "2", "3–4", "5–8", "9–16", "17+"];
    let mut ranges = vec![0u64; labels.len()];
    let mut mixed = vec![0u64; labels.len()];
    let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
    for segments in seqs {
        for k in segments {
            *kinds.entry(k).or_default() += 1;
        }
        let slot = if segments.iter().all(|k| *k == "range") {
            &mut ranges
        } else {
            &mut mixed
        };
        if let Some(v) = slot.get_mut(bin(segments.len())) {
            *v += 1;
        }
    }
    let chart = Bars {
        id: "row-ids",
        bins: labels.iter().map(|l| l.to_string()).collect(),
        series: vec![
            Series {
                name: "ranges only".into(),
                color: KEPT,
                values: ranges,
            },
            Series {
                name: "holes, bitmaps or arrays".into(),
                color: REWRITTEN,
                values: mixed,
            },
        ],
        x_title: "segments in the fragment's row-id sequence",
        y_title: "fragments",
        unit: count,
    };
    html! {
        h2 { "Row ids" }
        p { "Segments by encoding: "
            (kinds.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", "))
            ". A fragment of one range costs a few bytes; many segments or arrays mean rows moved or deleted one by one." }
        (chart.render())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_of_two_bins() {
        assert_eq!(log_bin(0), 0);
        assert_eq!(log_bin(1), 1);
        assert_eq!(log_bin(3), 2);
        assert_eq!(log_bin(1 << 20), 21);
        assert_eq!(log_label(21), "1M–2M");
        assert_eq!(log_label(3), "4–7");
        assert_eq!(log_label(10), "512–1023");
        assert_eq!(log_label(11), "1K–2K");
        assert!(log_label(64).starts_with("8589934592G–"));
    }

    #[test]
    fn any_stored_time_prints() {
        assert_eq!(when(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(when(-5), "1970-01-01 00:00:00 UTC");
        assert!(when(i64::MAX).ends_with("s after 1970"));
        assert_eq!(when(253_402_300_799), "9999-12-31 23:59:59 UTC");
    }

    #[test]
    fn groups_cover_every_item_once() {
        for n in [0, 1, 119, 120, 121, 1_000_003] {
            let g = groups(n);
            assert!(g.len() <= COLUMNS);
            assert_eq!(g.iter().map(|r| r.len()).sum::<usize>(), n);
            assert!(g.windows(2).all(|w| w[0].end == w[1].start));
        }
    }
}
