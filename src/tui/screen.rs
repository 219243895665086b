//! The whole screen, laid out for the terminal's size and the number of GPUs.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};

use crate::engine::Snapshot;

use super::canvas::Canvas;

use super::app::{App, Focus, Overlay};
use super::theme::Theme;
use super::widgets::dialog::SignalDialogView;
use super::widgets::findings::DetectorPanel;
use super::widgets::footer::Footer;
use super::widgets::gpu_list::GpuList;
use super::widgets::gpu_panel::GpuPanel;
use super::widgets::header::Header;
use super::widgets::help::HelpOverlay;
use super::widgets::host::HostPanel;
use super::widgets::log::LogPanel;
use super::widgets::processes::ProcessTable;

/// Below this size the screen only says that it is too small.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;

/// Rows the expanded panel needs at least: six one-row charts and its border.
const PANEL_MIN: u16 = 8;
/// Rows of the detector and event panels at least.
const BOTTOM_MIN: u16 = 5;
/// From this height on, the host line is shown under the header.
const HOST_LINE_MIN_HEIGHT: u16 = 20;

/// Draw the dashboard into `buf` (the whole terminal).
///
/// ```text
/// gpulse │ host │ driver │ CUDA │ backend every 250 ms │ window 60 s         ● LIVE 12:00:00
///  host CPU 52% ▁▂▇█▇▂ 16c mem 41/503 GiB load 8.25 7.50 iowait 2%   (20 rows and more)
/// ┌ 8 GPUs ───────────────────────────────────────────────────────────────────────────┐
/// │▶ 0 H200  ▂▅█▇▆▅▃▁ 97% ███··· 81/140G 612/700W 55°C healthy     (more than 1 GPU,│
/// │  1 H200  ▁▁▁▁▁▁▁▁  0% ······  0/140G  80/700W 34°C idle          or collapsed)  │
/// └───────────────────────────────────────────────────────────────────────────────────┘
/// ┌ GPU 0 · NVIDIA H200 · 00000000:18:00.0 ──────────────────────── healthy ┐  (Enter
/// │util        97%  ▅▇█▇█▆▇█▇█▇█▇▆█  │ temp      55 °C                     │ hides it)
/// │                 ^ ^              │ SM clock  1980/1980 MHz             │
/// │mem GiB  81/140  ▅▅▅▅▅▅▅▅▅▅▅▅▅▅▅  │ PCIe link gen5 x16 of gen5 x16      │
/// │PCIe rx / tx, power, SM active: one chart each, sharing the rows         │
/// └─────────────────────────────────────────────────────────────────────────┘
/// ┌ Processes · GPU 0 · sort GPU MEM ▼ tree ────────────────────────────────┐ (P focuses it:
/// │PID  USER GPU MEM SM% MEMBW% CPU% RSS TIME COMMAND  (narrow: fewer cols) │ it then gets
/// │4102 sim  —       —   —      95%  …   —    └ [running] python train.py   │ rows first)
/// └─────────────────────────────────────────────────────────────────────────┘
/// ┌ Detector ──────────────────────────┐┌ Events ───────────────────────────┐
/// │verdict 0 healthy · 1 idle          ││12:00:01 W GPU 1 input starvation  │
/// └────────────────────────────────────┘└───────────────────────────────────┘
///  ● REC file (N ticks)  REPLAY file 12:03:04 (+35 s of 6 min) ×2 ▶  q quit  ? help  ...
/// ```
///
/// The signal dialog and the help overlay are drawn over everything.
///
/// Rows go first to the header and footer, then the GPU list, then the selected GPU's panel, then
/// processes, detector and events as space allows. Below [`MIN_WIDTH`]×[`MIN_HEIGHT`] it only
/// says so.
pub fn render(area: Rect, buf: &mut Buffer, app: &App, snapshot: &Snapshot) {
    render_on(area, buf, app, snapshot);
}

/// Draw the dashboard on a canvas in parts (see [`render`] for the screen): each panel, chart
/// and line of readings is a part, kept on a [`super::canvas::PartsTerminal`] while it does not
/// change. The help overlay and the signal dialog lie over the others: while one is shown the
/// screen is a single part.
pub fn render_on(area: Rect, canvas: &mut dyn Canvas, app: &App, snapshot: &Snapshot) {
    let theme = Theme::new(app.color);
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        canvas.part("too-small", area, None, &mut |buf| {
            render_too_small(area, buf, theme)
        });
        return;
    }
    if (app.dialog.is_some() || app.overlay.is_some()) && !canvas.draws_everything() {
        canvas.part("overlaid", area, None, &mut |buf| {
            render_on(area, buf, app, snapshot)
        });
        return;
    }
    let host_h = u16::from(area.height >= HOST_LINE_MIN_HEIGHT);
    let [header, host, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(host_h),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area);
    Header {
        snapshot,
        theme,
        paused: app.paused(),
        window_s: app.window_s,
        now: app.display_now(),
        replay: app.replay.as_ref().map(|r| r.paused),
    }
    .draw_on(header, canvas);
    if host_h > 0 {
        HostPanel {
            host: &snapshot.host,
            detail: snapshot.sample.as_deref().map(|s| &s.host_detail),
            theme,
        }
        .draw_on(host, canvas);
    }
    Footer {
        app,
        t: snapshot.t,
        theme,
    }
    .draw_on(footer, canvas);

    let n = snapshot.gpus.len() as u16;
    let selected = app.selected.min(snapshot.gpus.len().saturating_sub(1));
    let show_list = n > 1 || !app.expanded;
    let show_panel = app.expanded && n > 0;
    let mut rest = body;
    if show_list {
        let want = n + 2;
        let cap = if show_panel {
            body.height / 2
        } else {
            body.height.saturating_sub(BOTTOM_MIN + 4)
        };
        let h = want.min(cap.max(3)).min(rest.height);
        let [list, below] =
            Layout::vertical([Constraint::Length(h), Constraint::Fill(1)]).areas(rest);
        let gpus = GpuList {
            snapshot,
            theme,
            selected,
            now: app.display_now(),
            window_s: app.window_s,
        };
        // Every row's chart moves with each snapshot.
        canvas.part("gpu-list", list, None, &mut |buf| (&gpus).render(list, buf));
        rest = below;
    }
    let Some(gpu) = snapshot.gpus.get(selected) else {
        draw_overlays(area, canvas, app, theme);
        return;
    };
    let rows = app.table.rows(snapshot, selected);
    let focused = app.focus == Focus::Processes;
    let procs_h = (rows.len().clamp(1, if focused { 8 } else { 4 }) as u16) + 3;
    let bottom_h = (rest.height / 4).clamp(BOTTOM_MIN, 12);
    let panel_h = if !show_panel {
        0
    } else if rest.height >= PANEL_MIN + procs_h + bottom_h {
        rest.height - procs_h - bottom_h
    } else if focused && rest.height >= PANEL_MIN + 4 + BOTTOM_MIN {
        // The table has the keys: it gets rows before the charts do.
        PANEL_MIN.max(rest.height - procs_h.min(rest.height) - BOTTOM_MIN.min(rest.height))
    } else if rest.height >= PANEL_MIN + BOTTOM_MIN {
        rest.height - BOTTOM_MIN
    } else {
        rest.height
    };
    let [panel, lower] =
        Layout::vertical([Constraint::Length(panel_h), Constraint::Fill(1)]).areas(rest);
    if show_panel {
        GpuPanel {
            gpu,
            theme,
            t: snapshot.t,
            now: app.display_now(),
            interval_s: snapshot.stats.interval_s,
            window_s: app.window_s,
            selected: true,
        }
        .draw_on(panel, canvas);
    }
    let procs = ProcessTable {
        rows: &rows,
        state: &app.table,
        gpu_index: Some(gpu.info.index),
        focused,
        theme,
    };
    let detector = DetectorPanel {
        snapshot,
        theme,
        selected,
    };
    let log = LogPanel {
        theme,
        live: app.live_log,
        logged: app.log_events,
    };
    if lower.height >= procs_h + BOTTOM_MIN || (focused && lower.height >= 4 + BOTTOM_MIN) {
        let h = procs_h.min(lower.height - BOTTOM_MIN);
        let [p, b] = Layout::vertical([Constraint::Length(h), Constraint::Fill(1)]).areas(lower);
        procs.draw_on(p, canvas);
        let [d, l] = Layout::horizontal([Constraint::Percentage(55), Constraint::Fill(1)]).areas(b);
        detector.draw_on(d, canvas);
        log.draw_on(l, canvas);
    } else if lower.height >= 3 {
        let [p, d] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Fill(1)]).areas(lower);
        procs.draw_on(p, canvas);
        detector.draw_on(d, canvas);
    }
    draw_overlays(area, canvas, app, theme);
}

/// The overlays over a screen drawn whole (on a canvas that keeps parts, a screen with an overlay
/// is drawn whole as one part: see [`render_on`]).
fn draw_overlays(area: Rect, canvas: &mut dyn Canvas, app: &App, theme: Theme) {
    if app.dialog.is_some() || app.overlay.is_some() {
        canvas.part("overlays", area, None, &mut |buf| {
            render_overlays(area, buf, app, theme)
        });
    }
}

/// The help overlay and the signal dialog, over everything else.
fn render_overlays(area: Rect, buf: &mut Buffer, app: &App, theme: Theme) {
    if let Some(dialog) = &app.dialog {
        (&SignalDialogView { dialog, theme }).render(area, buf);
    }
    if app.overlay == Some(Overlay::Help) {
        (&HelpOverlay { theme }).render(area, buf);
    }
}

fn render_too_small(area: Rect, buf: &mut Buffer, theme: Theme) {
    let msg = format!(
        "terminal too small (need {MIN_WIDTH}×{MIN_HEIGHT}, have {}×{})",
        area.width, area.height
    );
    let width = msg.chars().count() as u16;
    let lines = if area.width == 0 {
        0
    } else {
        width.div_ceil(area.width)
    };
    let y = area.y + area.height.saturating_sub(lines) / 2;
    let h = area.bottom().saturating_sub(y);
    Paragraph::new(Line::styled(msg, theme.warn()))
        .wrap(Wrap { trim: true })
        .centered()
        .render(Rect::new(area.x, y, area.width, h), buf);
}
