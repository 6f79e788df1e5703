//! A line plot as an SVG document, written by hand (no plotting crate): a logarithmic x axis
//! (the sizes of the scale curves, 1 to 10,000), a linear y axis from 0, one polyline per series,
//! a legend. Used by [`super::scale`] for `bench/plots/`.

use super::table::thousands;
use std::fmt::Write;

/// One line of the plot: its name in the legend and its points `(x, y)`; `x` must be > 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A plot: its title, the axis labels and its series.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 400.0;
/// Margins: left (y tick labels), right (legend), top (title), bottom (x ticks and label).
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A tick label: `1,000`, `2.5`, `0.01`.
fn tick_label(v: f64) -> String {
    if v >= 1000.0 {
        thousands(v.round() as u64)
    } else if v >= 10.0 || v == 0.0 {
        format!("{}", v.round())
    } else {
        let text = format!("{v:.2}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A round upper bound for the y axis at or above `max`, and its step (1, 2 or 5 × 10^k, 5 steps
/// or fewer).
fn y_axis(max: f64) -> (f64, f64) {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(10.0 * magnitude);
    ((max / step).ceil() * step, step)
}

/// Where the data goes on the page: the axes' ranges and the plot area.
struct Frame {
    x_min: f64,
    x_max: f64,
    y_max: f64,
    y_step: f64,
    plot_w: f64,
    plot_h: f64,
}

impl Frame {
    /// The ranges that hold `points`: x from a power of ten to a power of ten, y from 0 to a
    /// round bound.
    fn around(points: &[(f64, f64)]) -> Frame {
        let (x_min, x_max) = points.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &(x, _)| {
            (lo.min(10f64.powf(x.log10().floor())), hi.max(10f64.powf(x.log10().ceil())))
        });
        let (x_min, x_max) = if x_min < x_max {
            (x_min, x_max)
        } else if x_min.is_finite() {
            (x_min / 10.0, x_min * 10.0)
        } else {
            (1.0, 10.0)
        };
        let y_max_data = points.iter().map(|&(_, y)| y).fold(0.0, f64::max);
        let (y_max, y_step) = y_axis(y_max_data);
        Frame { x_min, x_max, y_max, y_step, plot_w: WIDTH - LEFT - RIGHT, plot_h: HEIGHT - TOP - BOTTOM }
    }

    fn px(&self, x: f64) -> f64 {
        LEFT + (x.log10() - self.x_min.log10()) / (self.x_max.log10() - self.x_min.log10()) * self.plot_w
    }

    fn py(&self, y: f64) -> f64 {
        TOP + self.plot_h - (y.max(0.0) / self.y_max) * self.plot_h
    }
}

/// A point that can be drawn: `x` positive (the axis is logarithmic), both finite.
fn valid(&(x, y): &(f64, f64)) -> bool {
    x > 0.0 && x.is_finite() && y.is_finite()
}

impl Plot {
    /// The SVG document. Points with a non-positive or non-finite `x`, or a non-finite `y`, are
    /// left out; a plot without points has its axes and a "no data" label.
    pub fn svg(&self) -> String {
        let points: Vec<(f64, f64)> = self.series.iter().flat_map(|s| s.points.iter().copied()).filter(valid).collect();
        let frame = Frame::around(&points);
        let mut out = String::new();
        let _ = writeln!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(out, r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
        let _ = writeln!(
            out,
            r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
            LEFT + frame.plot_w / 2.0,
            escape(&self.title)
        );
        self.axes(&frame, &mut out);
        if points.is_empty() {
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">no data</text>"#,
                LEFT + frame.plot_w / 2.0,
                TOP + frame.plot_h / 2.0
            );
        }
        for (i, series) in self.series.iter().enumerate() {
            series.draw(i, &frame, &mut out);
        }
        out.push_str("</svg>\n");
        out
    }

    /// The grid, the ticks (one per power of ten on x, round steps from 0 on y), the frame and
    /// the axis labels.
    fn axes(&self, frame: &Frame, out: &mut String) {
        let (plot_w, plot_h) = (frame.plot_w, frame.plot_h);
        let mut decade = frame.x_min;
        while decade <= frame.x_max * 1.000_001 {
            let x = frame.px(decade);
            let _ =
                writeln!(out, r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/>"##, TOP + plot_h);
            let _ = writeln!(
                out,
                r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                TOP + plot_h + 16.0,
                tick_label(decade)
            );
            decade *= 10.0;
        }
        let mut tick = 0.0;
        while tick <= frame.y_max * 1.000_001 {
            let y = frame.py(tick);
            let _ = writeln!(
                out,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/>"##,
                LEFT + plot_w
            );
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                LEFT - 6.0,
                y + 4.0,
                tick_label(tick)
            );
            tick += frame.y_step;
        }
        let _ = writeln!(
            out,
            r#"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="black"/>"#
        );
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            LEFT + plot_w / 2.0,
            HEIGHT - 10.0,
            escape(&self.x_label)
        );
        let _ = writeln!(
            out,
            r#"<text x="16" y="{:.1}" text-anchor="middle" transform="rotate(-90 16 {:.1})">{}</text>"#,
            TOP + plot_h / 2.0,
            TOP + plot_h / 2.0,
            escape(&self.y_label)
        );
    }
}

impl Series {
    /// The `i`th series: its line and points in x order, and its entry in the legend.
    fn draw(&self, i: usize, frame: &Frame, out: &mut String) {
        let color = COLORS[i % COLORS.len()];
        let mut pts: Vec<(f64, f64)> = self.points.iter().copied().filter(valid).collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let path: Vec<String> = pts.iter().map(|&(x, y)| format!("{:.1},{:.1}", frame.px(x), frame.py(y))).collect();
        if !path.is_empty() {
            let _ = writeln!(
                out,
                r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
                path.join(" ")
            );
        }
        for &(x, y) in &pts {
            let _ = writeln!(out, r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#, frame.px(x), frame.py(y));
        }
        let ly = TOP + 10.0 + 20.0 * i as f64;
        let lx = LEFT + frame.plot_w + 12.0;
        let _ = writeln!(
            out,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="2"/>"#,
            lx + 20.0
        );
        let _ = writeln!(out, r#"<text x="{:.1}" y="{:.1}">{}</text>"#, lx + 26.0, ly + 4.0, escape(&self.name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plot(series: Vec<Series>) -> Plot {
        Plot { title: "turns/s over ws".into(), x_label: "connections".into(), y_label: "turns/s".into(), series }
    }

    #[test]
    fn a_plot_places_points_on_a_log_x_axis() {
        let svg =
            plot(vec![Series { name: "ours".into(), points: vec![(10.0, 50.0), (1000.0, 100.0), (100.0, 0.0)] }]).svg();
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"), "{svg}");
        // x from 10 to 1,000: 100 is in the middle of the plot's width (70 + 420 / 2), and the
        // points are drawn in x order whatever their order in the series.
        assert!(svg.contains(r#"points="70.0,195.0 280.0,350.0 490.0,40.0""#), "{svg}");
        assert!(svg.contains(">1,000</text>") && svg.contains(">100</text>"), "{svg}");
        assert!(svg.contains(">ours</text>"), "{svg}");
        assert!(!svg.contains("no data"));
    }

    #[test]
    fn bad_points_are_left_out_and_text_is_escaped() {
        let svg =
            plot(vec![Series { name: "a<b & \"c\"".into(), points: vec![(0.0, 1.0), (10.0, f64::NAN), (-1.0, 3.0)] }])
                .svg();
        assert!(svg.contains("a&lt;b &amp; &quot;c&quot;"), "{svg}");
        assert!(svg.contains("no data") && !svg.contains("<polyline"), "{svg}");
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }

    #[test]
    fn y_axes_end_on_round_steps() {
        assert_eq!(y_axis(9_300.0), (10_000.0, 2_000.0));
        assert_eq!(y_axis(0.8), (0.8, 0.2));
        assert_eq!(y_axis(0.0), (1.0, 0.2));
        assert_eq!(tick_label(2500.0), "2,500");
        assert_eq!(tick_label(0.25), "0.25");
    }
}
