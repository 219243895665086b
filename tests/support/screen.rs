//! The dashboard drawn into a test terminal and read back as text.

use std::sync::Arc;

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;

use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use super::api::{
    render, App, HostDetail, HostReading, LedgerView, Scenario, SimRun, Snapshot, Theme,
};

/// The dashboard over `snapshot` with its window of 60 s and history of 600 s, in colour or not,
/// without the live log panel (its lines depend on what else this process logged).
pub fn dashboard(snapshot: Arc<Snapshot>, color: bool) -> App {
    let mut app = App::new(snapshot, 60.0, 600.0, color);
    app.live_log = false;
    app
}

/// `app` drawn whole into a `w`×`h` terminal.
pub fn draw(app: &App, w: u16, h: u16) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("test backend");
    terminal
        .draw(|f| {
            let area = f.area();
            render(area, f.buffer_mut(), app, app.displayed());
        })
        .expect("draw");
    terminal.backend().buffer().clone()
}

/// The cells of `buf` as text, a line per row.
pub fn text(buf: &Buffer) -> String {
    let w = buf.area.width as usize;
    let mut out = String::new();
    for (i, cell) in buf.content.iter().enumerate() {
        out.push_str(cell.symbol());
        if (i + 1) % w == 0 {
            out.push('\n');
        }
    }
    out
}

/// `app` drawn into a `w`×`h` terminal, as text.
pub fn screen(app: &App, w: u16, h: u16) -> String {
    text(&draw(app, w, h))
}

/// The ledger view of `app` alone (what `L` shows between the header and the footer), drawn
/// into a `w`×`h` buffer, as text.
pub fn ledger_view(app: &App, w: u16, h: u16) -> String {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    let view = LedgerView {
        snapshot: app.displayed(),
        prices: &app.prices,
        theme: Theme::new(app.color),
        scroll: app.ledger_scroll.first,
    };
    (&view).render(area, &mut buf);
    text(&buf)
}

/// `gpus` simulated GPUs running `scenario` for `seconds` on a 16-core host with half its cores
/// busy and a little iowait (so a starving GPU's host evidence asks for more workers).
pub fn sim_on_16_cores(scenario: Scenario, gpus: u32, seconds: f64) -> SimRun {
    let mut run = SimRun::new(scenario, gpus);
    run.host = HostReading {
        cpu_percent: Some(52.5),
        cpu_count: Some(16),
        memory_used_bytes: Some(41 << 30),
        memory_total_bytes: Some(503 << 30),
        load1: Some(8.25),
        iowait_percent: Some(1.5),
    };
    run.host_detail = HostDetail {
        per_core_percent: (0..16).map(|i| f64::from(i % 8) * 14.0).collect(),
        load5: Some(7.5),
        load15: Some(6.0),
        swap_used_bytes: None,
        swap_total_bytes: None,
    };
    run.advance(seconds);
    run
}
