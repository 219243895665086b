//! Colours and emphasis. In monochrome (`--color never` or `NO_COLOR`) every style is built from
//! modifiers only (bold, reversed, dim, underline), so nothing on screen depends on colour.

use ratatui::style::{Color, Modifier, Style};

use crate::model::Severity;

/// The styles every widget draws with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Theme {
    color: bool,
}

impl Theme {
    pub fn new(color: bool) -> Self {
        Theme { color }
    }

    pub fn colored() -> Self {
        Theme::new(true)
    }

    pub fn monochrome() -> Self {
        Theme::new(false)
    }

    pub fn is_color(&self) -> bool {
        self.color
    }

    fn pick(&self, color: Style, mono: Style) -> Style {
        if self.color {
            color
        } else {
            mono
        }
    }

    /// Plain text.
    pub fn text(&self) -> Style {
        Style::default()
    }

    /// Labels and secondary text.
    pub fn dim(&self) -> Style {
        self.pick(
            Style::default().fg(Color::DarkGray),
            Style::default().add_modifier(Modifier::DIM),
        )
    }

    /// Panel titles and the header.
    pub fn title(&self) -> Style {
        self.pick(
            Style::default()
                .fg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
            Style::default().add_modifier(Modifier::BOLD),
        )
    }

    /// Borders of panels.
    pub fn border(&self) -> Style {
        self.pick(Style::default().fg(Color::DarkGray), Style::default())
    }

    /// The border of the focused or selected panel.
    pub fn border_selected(&self) -> Style {
        self.pick(
            Style::default().fg(Color::Cyan),
            Style::default().add_modifier(Modifier::BOLD),
        )
    }

    /// The selected row of a list.
    pub fn selected(&self) -> Style {
        self.pick(
            Style::default()
                .bg(Color::DarkGray)
                .add_modifier(Modifier::BOLD),
            Style::default().add_modifier(Modifier::REVERSED),
        )
    }

    /// Chart bars, by the metric they show.
    pub fn chart(&self, metric: ChartMetric) -> Style {
        let c = match metric {
            ChartMetric::Util => Color::Green,
            ChartMetric::Memory => Color::Magenta,
            ChartMetric::PcieRx | ChartMetric::PcieTx => Color::Cyan,
            ChartMetric::Power => Color::Yellow,
            ChartMetric::SmActive => Color::LightGreen,
        };
        self.pick(Style::default().fg(c), Style::default())
    }

    /// Absent readings (gaps).
    pub fn absent(&self) -> Style {
        self.dim()
    }

    /// Good news (healthy verdict, live status).
    pub fn ok(&self) -> Style {
        self.pick(
            Style::default().fg(Color::Green),
            Style::default().add_modifier(Modifier::BOLD),
        )
    }

    /// Something worth attention.
    pub fn warn(&self) -> Style {
        self.pick(
            Style::default()
                .fg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
            Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
        )
    }

    /// Something wrong (lost GPU, high-severity finding).
    pub fn bad(&self) -> Style {
        self.pick(
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            Style::default().add_modifier(Modifier::BOLD | Modifier::REVERSED),
        )
    }

    /// A finding's style by severity.
    pub fn severity(&self, s: Severity) -> Style {
        match s {
            Severity::Info => self.text(),
            Severity::Warn => self.warn(),
            Severity::High => self.bad(),
        }
    }

    /// What to read first in a line (the fix of a finding).
    pub fn emphasis(&self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    /// Key names in the help and the footer.
    pub fn key(&self) -> Style {
        self.pick(
            Style::default()
                .fg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
            Style::default().add_modifier(Modifier::BOLD),
        )
    }
}

/// Which metric a chart shows (for its colour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartMetric {
    Util,
    Memory,
    PcieRx,
    PcieTx,
    Power,
    SmActive,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monochrome_styles_carry_no_colour() {
        let t = Theme::monochrome();
        let all = [
            t.text(),
            t.dim(),
            t.title(),
            t.border(),
            t.border_selected(),
            t.selected(),
            t.absent(),
            t.ok(),
            t.warn(),
            t.bad(),
            t.key(),
            t.chart(ChartMetric::Util),
            t.chart(ChartMetric::Power),
        ];
        for s in all {
            assert_eq!(s.fg, None, "{s:?}");
            assert_eq!(s.bg, None, "{s:?}");
        }
        // Emphasis survives without colour.
        assert!(t.selected().add_modifier.contains(Modifier::REVERSED));
        assert!(t.bad().add_modifier.contains(Modifier::BOLD));
        assert!(Theme::colored().bad().fg.is_some());
    }
}
