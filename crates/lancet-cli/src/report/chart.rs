//! The report's two kinds of chart, as inline SVG: stacked bars over labelled bins, and a
//! grid of cells shaded by a share. Every mark carries a `<title>`, the browser's own
//! tooltip, so the page needs no script. maud escapes every label.

use maud::{html, Markup};

/// Width and height of a chart's drawing, in SVG units (the page scales it to fit).
const WIDTH: f64 = 760.0;
const PLOT_HEIGHT: f64 = 200.0;
const LEFT: f64 = 64.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 44.0;
/// Legend entries per line, and the width each takes.
const LEGEND_PER_ROW: usize = 4;
const LEGEND_WIDTH: f64 = 170.0;

/// One series of a stacked bar chart: a name, a colour and a value per bin.
pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub values: Vec<u64>,
}

/// A stacked bar chart: a bar per bin, the series stacked in order, a value axis from 0.
pub struct Bars<'a> {
    pub id: &'a str,
    pub bins: Vec<String>,
    pub series: Vec<Series>,
    pub x_title: &'a str,
    pub y_title: &'a str,
    /// How a value reads in a tooltip and on the axis (a count, bytes, ...).
    pub unit: fn(u64) -> String,
}

/// A step for about five ticks up to `max`: 1, 2 or 5 times a power of ten.
fn tick_step(max: u64) -> u64 {
    let rough = (max / 5).max(1);
    let mut power = 1u64;
    while power.saturating_mul(10) <= rough {
        power *= 10;
    }
    [1, 2, 5, 10]
        .iter()
        .map(|m| power.saturating_mul(*m))
        .find(|s| *s >= rough)
        .unwrap_or(power)
}

impl Bars<'_> {
    pub fn render(&self) -> Markup {
        let totals: Vec<u64> = (0..self.bins.len())
            .map(|i| {
                (self.series.iter())
                    .map(|s| s.values.get(i).copied().unwrap_or(0))
                    .fold(0u64, u64::saturating_add)
            })
            .collect();
        let step = tick_step(totals.iter().copied().max().unwrap_or(0));
        let top = totals
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .div_ceil(step)
            .max(1)
            .saturating_mul(step);
        let scale = PLOT_HEIGHT / top as f64;
        let slot = (WIDTH - LEFT - 8.0) / self.bins.len().max(1) as f64;
        let bar = (slot * 0.8).max(1.0);
        let legend_rows = self.series.len().div_ceil(LEGEND_PER_ROW).max(1);
        let height = TOP + PLOT_HEIGHT + BOTTOM + 20.0 * legend_rows as f64;
        let base = TOP + PLOT_HEIGHT;
        let every = self.bins.len().div_ceil(16).max(1);
        html! {
            svg id=(self.id) class="chart" viewBox={"0 0 " (WIDTH) " " (height)}
                role="img" xmlns="http://www.w3.org/2000/svg" {
                @for t in (0..=top / step).map(|k| k * step) {
                    @let y = base - t as f64 * scale;
                    line class="grid" x1=(LEFT) x2=(WIDTH - 8.0) y1=(y) y2=(y) {}
                    text class="tick" x=(LEFT - 6.0) y=(y + 4.0) text-anchor="end" { ((self.unit)(t)) }
                }
                @for (i, label) in self.bins.iter().enumerate() {
                    @let x = LEFT + slot * i as f64 + (slot - bar) / 2.0;
                    g class="bar" {
                        title { (label) ": " (bin_tooltip(&self.series, i, self.unit)) }
                        @for (y, h, s) in stack(&self.series, i, base, scale) {
                            rect x=(x) y=(y) width=(bar) height=(h) fill=(s.color) {}
                        }
                    }
                    @if i % every == 0 {
                        text class="tick" x=(x + bar / 2.0) y=(base + 14.0) text-anchor="middle" { (label) }
                    }
                }
                line class="axis" x1=(LEFT) x2=(WIDTH - 8.0) y1=(base) y2=(base) {}
                text class="title" x=(LEFT + (WIDTH - LEFT) / 2.0) y=(base + 32.0) text-anchor="middle" { (self.x_title) }
                text class="title" x="12" y=(TOP + PLOT_HEIGHT / 2.0) text-anchor="middle"
                    transform={"rotate(-90 12 " (TOP + PLOT_HEIGHT / 2.0) ")"} { (self.y_title) }
                @for (k, s) in self.series.iter().enumerate() {
                    @let x = LEFT + LEGEND_WIDTH * (k % LEGEND_PER_ROW) as f64;
                    @let y = base + BOTTOM + 20.0 * (k / LEGEND_PER_ROW) as f64;
                    rect x=(x) y=(y) width="12" height="12" fill=(s.color) {}
                    text class="legend" x=(x + 16.0) y=(y + 10.0) { (s.name) }
                }
            }
        }
    }
}

/// The rectangles of bin `i`, bottom up: `(y, height, series)` for each non-zero value.
fn stack(series: &[Series], i: usize, base: f64, scale: f64) -> Vec<(f64, f64, &Series)> {
    let mut y = base;
    let mut out = Vec::new();
    for s in series {
        let v = s.values.get(i).copied().unwrap_or(0);
        if v == 0 {
            continue;
        }
        let h = (v as f64 * scale).max(1.0);
        y -= h;
        out.push((y, h, s));
    }
    out
}

fn bin_tooltip(series: &[Series], i: usize, unit: fn(u64) -> String) -> String {
    (series.iter())
        .map(|s| format!("{} {}", unit(s.values.get(i).copied().unwrap_or(0)), s.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One row of a grid: a label and its cells, each a share in `[0, 1]` with a tooltip.
pub struct Row {
    pub label: String,
    pub cells: Vec<(f64, String)>,
}

/// A grid of cells, a row per label whose cells share its width, each shaded from light (0)
/// to `color` (1).
pub struct Grid<'a> {
    pub id: &'a str,
    pub rows: Vec<Row>,
    pub color: &'static str,
    pub caption: &'a str,
}

impl Grid<'_> {
    pub fn render(&self) -> Markup {
        let left = 150.0;
        let row_height = 22.0;
        let height = TOP + row_height * self.rows.len() as f64 + 28.0;
        html! {
            svg id=(self.id) class="chart" viewBox={"0 0 " (WIDTH) " " (height)}
                role="img" xmlns="http://www.w3.org/2000/svg" {
                @for (r, row) in self.rows.iter().enumerate() {
                    @let y = TOP + row_height * r as f64;
                    // each row's cells share the row's width
                    @let cell = (WIDTH - left - 8.0) / row.cells.len().max(1) as f64;
                    text class="tick" x=(left - 6.0) y=(y + row_height * 0.65) text-anchor="end" { (row.label) }
                    @for (c, (share, tip)) in row.cells.iter().enumerate() {
                        rect x=(left + cell * c as f64) y=(y + 2.0) width=(cell.max(1.0))
                            height=(row_height - 4.0) fill=(self.color) stroke="#fff" stroke-width="1"
                            fill-opacity=(format!("{:.3}", 0.08 + 0.92 * share.clamp(0.0, 1.0))) {
                            title { (tip) }
                        }
                    }
                }
                text class="title" x=(left + (WIDTH - left) / 2.0) y=(height - 8.0) text-anchor="middle" { (self.caption) }
            }
        }
    }
}

/// A count with thousands separated: `1,048,576`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in the largest unit that keeps a number ≥ 1: `2.5 KB`, `88.7 MB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_maximum() {
        assert_eq!(tick_step(0), 1);
        assert_eq!(tick_step(7), 1);
        assert_eq!(tick_step(48), 10);
        assert_eq!(tick_step(1_000_000), 200_000);
        assert_eq!(tick_step(u64::MAX) % 10, 0);
    }

    #[test]
    fn hostile_totals_draw_without_overflow() {
        let chart = Bars {
            id: "c",
            bins: vec!["a".into(), "b".into()],
            series: vec![
                Series {
                    name: "x".into(),
                    color: "#000",
                    values: vec![u64::MAX, 1],
                },
                Series {
                    name: "y".into(),
                    color: "#111",
                    values: vec![u64::MAX, 0],
                },
            ],
            x_title: "x",
            y_title: "y",
            unit: count,
        }
        .render()
        .into_string();
        assert!(chart.contains("18,446,744,073,709,551,615 x"));
    }

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1_048_576), "1,048,576");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(88_700_000), "88.7 MB");
    }

    #[test]
    fn a_bar_stacks_its_series_and_escapes_labels() {
        let chart = Bars {
            id: "c",
            bins: vec!["<1".into(), "2".into()],
            series: vec![
                Series {
                    name: "a&b".into(),
                    color: "#000",
                    values: vec![3, 0],
                },
                Series {
                    name: "c".into(),
                    color: "#111",
                    values: vec![1, 4],
                },
            ],
            x_title: "x",
            y_title: "y",
            unit: count,
        }
        .render()
        .into_string();
        assert!(chart.contains("&lt;1: 3 a&amp;b, 1 c"), "{chart}");
        assert!(!chart.contains("<1"));
        // three non-zero values, three bars, plus one legend swatch per series
        assert_eq!(chart.matches("<rect").count(), 3 + 2);
    }
}
