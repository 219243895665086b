//! The host line: CPU total with a compact per-core strip, memory, load and iowait.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::model::{HostDetail, HostReading};
use crate::tui::canvas::{key_of, Canvas};
use crate::tui::format::{self, ABSENT};
use crate::tui::theme::Theme;

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

pub struct HostPanel<'a> {
    pub host: &'a HostReading,
    /// Per-core detail of the newest sample (`None` before the first).
    pub detail: Option<&'a HostDetail>,
    pub theme: Theme,
}

/// One glyph per core (or per group of adjacent cores, their mean, when there are more cores than
/// `width`): `▁` idle to `█` busy.
pub fn core_strip(cores: &[f64], width: usize) -> String {
    if cores.is_empty() || width == 0 {
        return String::new();
    }
    let per = cores.len().div_ceil(width);
    cores
        .chunks(per)
        .map(|c| {
            let mean = c.iter().sum::<f64>() / c.len() as f64;
            let i = ((mean.clamp(0.0, 100.0) / 100.0) * 7.0).round() as usize;
            BARS[i.min(7)]
        })
        .collect()
}

impl HostPanel<'_> {
    /// Draw the line as one part of a screen.
    pub fn draw_on(&self, area: Rect, canvas: &mut dyn Canvas) {
        let t = self.theme;
        let h = self.host;
        let load = match (h.load1, self.detail.and_then(|d| d.load5)) {
            (Some(l1), Some(l5)) => format!("{l1:.2} {l5:.2}"),
            (Some(l1), None) => format!("{l1:.2}"),
            _ => ABSENT.to_string(),
        };
        let mem = format!(
            "{}/{} GiB",
            format::gib(h.memory_used_bytes),
            format::gib(h.memory_total_bytes)
        );
        let cpu = format::pct(h.cpu_percent);
        let cores = self
            .detail
            .map(|d| d.per_core_percent.as_slice())
            .unwrap_or(&[]);
        let mut tail = vec![
            Span::styled(" mem ", t.dim()),
            Span::raw(mem),
            Span::styled(" load ", t.dim()),
            Span::raw(load),
            Span::styled(" iowait ", t.dim()),
            Span::styled(
                format::pct(h.iowait_percent),
                if h.iowait_percent.is_some_and(|w| w >= 10.0) {
                    t.warn()
                } else {
                    t.text()
                },
            ),
        ];
        let head = vec![Span::styled(" host CPU ", t.dim()), Span::raw(cpu)];
        let used: usize = head
            .iter()
            .chain(tail.iter())
            .map(|s| s.content.chars().count())
            .sum();
        let count = format!(" {}c", cores.len());
        let room = (area.width as usize).saturating_sub(used + 1 + count.chars().count());
        let mut spans = head;
        if !cores.is_empty() && room >= 4 {
            let strip = core_strip(cores, room.min(cores.len()));
            spans.push(Span::raw(" "));
            spans.push(Span::styled(
                strip,
                t.chart(crate::tui::theme::ChartMetric::Util),
            ));
            spans.push(Span::styled(count, t.dim()));
        }
        spans.append(&mut tail);
        let line = Line::from(spans);
        canvas.part("host", area, key_of(&line), &mut |buf| {
            buf.set_line(area.x, area.y, &line, area.width);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_glyph_per_core_or_per_group_of_cores() {
        assert_eq!(core_strip(&[0.0, 50.0, 100.0], 10), "▁▅█");
        // 8 cores in 4 glyphs: the mean of each pair.
        assert_eq!(
            core_strip(&[0.0, 0.0, 100.0, 100.0, 0.0, 100.0, 50.0, 50.0], 4),
            "▁█▅▅"
        );
        assert_eq!(core_strip(&[], 10), "");
    }
}
