//! One metric over time: a label column (name, current value) beside a sparkline, and an
//! optional marker row under it (dips inside a stall finding).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols;
use ratatui::text::Line;
use ratatui::widgets::{RenderDirection, Sparkline, SparklineBar, Widget};

use crate::tui::canvas::{key_of, Canvas};

use super::series::Binned;

/// Width of the label column beside each chart.
pub const LABEL_WIDTH: u16 = 19;

/// The glyph under a marked dip.
pub const DIP_MARK: &str = "^";

/// A labelled sparkline.
pub struct MetricChart<'a> {
    pub label: Vec<Line<'a>>,
    pub binned: &'a Binned,
    /// The value drawn at full height.
    pub full_scale: f64,
    pub style: Style,
    /// Style of columns with no reading.
    pub absent_style: Style,
    /// Per column: draw a dip marker under it (the marker row takes the chart's last line).
    pub marks: Option<&'a [bool]>,
    pub mark_style: Style,
}

impl MetricChart<'_> {
    /// How many columns the sparkline gets in an area this wide.
    pub fn columns_for(width: u16) -> usize {
        width.saturating_sub(LABEL_WIDTH) as usize
    }
}

/// Sparkline bars from columns, in eighths of a cell for a chart `rows` high: absent columns stay
/// absent, a value above zero gets at least one eighth (so it never looks like a zero), and
/// columns before history are left out (the chart is drawn right to left, so they stay blank).
/// Newest first.
pub fn bars(binned: &Binned, full_scale: f64, rows: u16) -> Vec<Option<u64>> {
    let steps = f64::from(rows.max(1)) * 8.0;
    let scale = if full_scale > 0.0 && full_scale.is_finite() {
        full_scale
    } else {
        1.0
    };
    binned.values[binned.leading.min(binned.values.len())..]
        .iter()
        .rev()
        .map(|v| {
            v.map(|v| {
                let eighths = ((v / scale).clamp(0.0, 1.0) * steps).round() as u64;
                if v > 0.0 {
                    eighths.max(1)
                } else {
                    eighths
                }
            })
        })
        .collect()
}

/// A sparkline of the columns, newest at the right edge; gaps drawn as light shade.
pub fn sparkline<'a>(
    binned: &Binned,
    full_scale: f64,
    rows: u16,
    style: Style,
    absent_style: Style,
) -> Sparkline<'a> {
    sparkline_of(&bars(binned, full_scale, rows), rows, style, absent_style)
}

/// A sparkline of [`bars`] (newest first) for a chart `rows` high.
fn sparkline_of<'a>(
    bars: &[Option<u64>],
    rows: u16,
    style: Style,
    absent_style: Style,
) -> Sparkline<'a> {
    Sparkline::default()
        .data(bars.iter().map(|&b| SparklineBar::from(b)))
        .max(u64::from(rows.max(1)) * 8)
        .direction(RenderDirection::RightToLeft)
        .style(style)
        .absent_value_symbol(symbols::shade::LIGHT)
        .absent_value_style(absent_style)
}

impl MetricChart<'_> {
    /// Draw the chart as one part of a screen: drawn again when its label, its bars (the
    /// columns as drawn, in eighths of a cell) or its marks change.
    pub fn draw_on(&self, area: Rect, canvas: &mut dyn Canvas) {
        if area.is_empty() {
            return;
        }
        let label_w = LABEL_WIDTH.min(area.width);
        let chart_w = (area.width - label_w) as usize;
        let mark_row = self.marks.is_some() && area.height >= 2;
        let chart_h = area.height - u16::from(mark_row);
        let bars = bars(self.binned, self.full_scale, chart_h);
        let marks = self
            .marks
            .filter(|_| mark_row)
            .map(|m| &m[..m.len().min(chart_w)]);
        let key = key_of(&(
            &self.label,
            &bars[..bars.len().min(chart_w)],
            marks,
            (self.style, self.absent_style, self.mark_style),
        ));
        canvas.part("chart", area, key, &mut |buf| self.draw(area, buf, &bars));
    }

    fn draw(&self, area: Rect, buf: &mut Buffer, bars: &[Option<u64>]) {
        let label_w = LABEL_WIDTH.min(area.width);
        let label_area = Rect::new(area.x, area.y, label_w, area.height);
        for (i, line) in self.label.iter().take(area.height as usize).enumerate() {
            buf.set_line(
                label_area.x,
                label_area.y + i as u16,
                line,
                label_w.saturating_sub(1),
            );
        }
        let chart_w = area.width - label_w;
        if chart_w == 0 {
            return;
        }
        let mark_row = self.marks.is_some() && area.height >= 2;
        let chart_h = area.height - u16::from(mark_row);
        let chart_area = Rect::new(area.x + label_w, area.y, chart_w, chart_h);
        sparkline_of(bars, chart_h, self.style, self.absent_style).render(chart_area, buf);
        if let (true, Some(marks)) = (mark_row, self.marks) {
            let y = area.y + chart_h;
            for (i, &m) in marks.iter().take(chart_w as usize).enumerate() {
                if m {
                    buf[(chart_area.x + i as u16, y)]
                        .set_symbol(DIP_MARK)
                        .set_style(self.mark_style);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_shaded_and_time_before_history_is_blank() {
        let binned = Binned {
            values: vec![None, None, Some(0.0), Some(50.0), None, Some(100.0)],
            leading: 2,
        };
        let marks = [false, false, true, false, false, false];
        let chart = MetricChart {
            label: vec![Line::from("util 100%")],
            binned: &binned,
            full_scale: 100.0,
            style: Style::default(),
            absent_style: Style::default(),
            marks: Some(&marks),
            mark_style: Style::default(),
        };
        let area = Rect::new(0, 0, LABEL_WIDTH + 6, 2);
        let mut buf = Buffer::empty(area);
        chart.draw_on(area, &mut buf);
        let expected =
            Buffer::with_lines(["util 100%             ▄░█", "                     ^   "]);
        assert_eq!(buf, expected);
    }
}
