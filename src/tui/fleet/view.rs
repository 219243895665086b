//! What every part of the fleet screen reads: the frame's state and the app, the styles of a
//! verdict, and GPUs' figures in words.

use ratatui::style::{Color, Modifier, Style};

use crate::fleet::rank::class;
use crate::fleet::{FleetGpu, FleetState};

use super::app::FleetApp;

/// Everything one frame needs.
pub struct FleetView<'a> {
    pub state: &'a FleetState,
    pub app: &'a FleetApp,
    pub url: &'a str,
    pub now: f64,
    pub color: bool,
}

impl FleetView<'_> {
    pub fn style(&self, s: Style) -> Style {
        if self.color {
            s
        } else {
            Style::default().add_modifier(s.add_modifier)
        }
    }

    /// The colour of a GPU's line by how bad it is.
    pub fn verdict_style(&self, g: &FleetGpu) -> Style {
        self.style(match class(g) {
            0 => Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            1 => Style::default().fg(Color::Yellow),
            2 => Style::default().fg(Color::Magenta),
            3 => Style::default().fg(Color::Green),
            _ => Style::default().fg(Color::DarkGray),
        })
    }
}

/// The verdict in words; `no data` when nothing is known, `stale` when the data stopped.
pub fn verdict_text(g: &FleetGpu) -> String {
    if g.is_stale() {
        return "no recent data".into();
    }
    match g.verdict {
        Some(v) => v.title().to_string(),
        None => "unknown".into(),
    }
}

/// `70/141G`, or the used amount alone when the total is unknown.
pub fn memory_text(g: &FleetGpu) -> String {
    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
    match (g.memory_used_bytes, g.memory_total_bytes) {
        (Some(u), Some(t)) => format!("{:.0}/{:.0}G", u as f64 / GIB, t as f64 / GIB),
        (Some(u), None) => format!("{:.1}G", u as f64 / GIB),
        _ => "–".into(),
    }
}

/// `3 s`, `2 min`, `1.5 h`.
pub fn ago(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}
