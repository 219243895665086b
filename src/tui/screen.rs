//! The whole screen, laid out for the terminal's size and the number of GPUs.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};

use crate::engine::Snapshot;
use crate::host::ProcessRow;

use super::canvas::Canvas;

use super::app::{App, Focus, Overlay};
use super::layout::diagnosis_panel;
use super::layout::layout_for;
pub use super::layout::{layout, ScreenLayout, MIN_HEIGHT, MIN_WIDTH};
use super::theme::Theme;
use super::widgets::dialog::SignalDialogView;
use super::widgets::footer::Footer;
use super::widgets::gpu_list::GpuList;
use super::widgets::gpu_panel::GpuPanel;
use super::widgets::header::Header;
use super::widgets::help::HelpOverlay;
use super::widgets::host::HostPanel;
use super::widgets::ledger::LedgerView;
use super::widgets::log::LogPanel;
use super::widgets::log_view::LogView;
use super::widgets::processes::ProcessTable;

/// Draw the dashboard into `buf` (the whole terminal).
///
/// ```text
/// gpulse │ host │ driver │ CUDA │ backend every 250 ms │ window 60 s         ● LIVE 12:00:00
///  host CPU 52% ▁▂▇█▇▂ 16c mem 41/503 GiB load 8.25 7.50 iowait 2%   (20 rows and more)
/// ┌ 8 GPUs ───────────────────────────────────────────────────────────────────────────┐
/// │▶ 0 H200  ▂▅█▇▆▅▃▁ 97% ███··· 81/140G 612/700W 55°C input starvation · 61% lost   │
/// │  1 H200  ▁▁▁▁▁▁▁▁  0% ······  0/140G  80/700W 34°C idle          (more than 1 GPU) │
/// └───────────────────────────────────────────────────────────────────────────────────┘
/// ┌ Diagnosis ────────────────────────────────────────────────────────────────────────┐
/// │GPU 0 input starvation · 61% lost → num_workers 4→8: 4 workers at 100% CPU, 11 c…  │
/// │  GPU 0 idle ~1.0 s every 1.8 s, ... (what was seen, since when, the advice)        │
/// └───────────────────────────────────────────────────────────────────────────────────┘
/// ┌ GPU 0 · NVIDIA H200 · 00000000:18:00.0 ─────────────────────── input starvation ┐
/// │util  45% now   0%  ▅▇█▇█▆▇█▇█▇█▇▆█                │ (Enter: readings that rarely
/// │mem GiB  81/140     ▅▅▅▅▅▅▅▅▅▅▅▅▅▅▅                │  change, at the right)
/// │PCIe rx / tx, power, SM active: one chart each     │
/// │0.25 s per column        45s        30s        15s │
/// └───────────────────────────────────── 55 °C · throttle none · Enter: details ──┘
/// ┌ Processes · GPU 0 · sort GPU MEM ▼ ──────────────────────────────────────────────┐
/// │PID  USER S GPU MEM UTIL% CPU% TIME COMMAND (shortened in the middle; ← → scroll)  │
/// └───────────────────────────────────────────────────────────────────────────────────┘
/// ┌ Events ───────────────────────────────────────────────────────────────────────────┐
/// │12:00:01 W GPU 1 input starvation, 61% of time lost → ...                 (one line) │
/// └───────────────────────────────────────────────────────────────────────────────────┘
///  ● REC file (N ticks)  REPLAY file 12:03:04 (+35 s of 6 min) ×2 ▶  q quit  ? help  ...
/// ```
///
/// The signal dialog and the help overlay are drawn over everything; the ledger view (`L`)
/// takes everything between the header and the footer. Rows are shared as
/// [`layout`] says. Below [`MIN_WIDTH`]×[`MIN_HEIGHT`] it only says so.
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
    if matches!(app.overlay, Some(Overlay::Ledger | Overlay::Log)) && app.dialog.is_none() {
        render_full_view(area, canvas, app, snapshot);
        return;
    }
    if (app.dialog.is_some() || app.overlay.is_some()) && !canvas.draws_everything() {
        canvas.part("overlaid", area, None, &mut |buf| {
            render_on(area, buf, app, snapshot)
        });
        return;
    }
    let selected = app.selected_gpu();
    let rows = app.table.rows(snapshot, selected);
    let diagnosis = diagnosis_panel(app, snapshot, snapshot.gpus.len() > 1);
    let lines = diagnosis.lines(area.width.saturating_sub(2));
    let l = layout_for(area, app, snapshot, lines.len(), &rows);
    Header {
        snapshot,
        theme,
        paused: app.paused(),
        window_s: app.window_s,
        now: app.display_now(),
        replay: app.replay.as_ref().map(|r| r.paused),
    }
    .draw_on(l.header, canvas);
    if !l.host.is_empty() {
        HostPanel {
            host: &snapshot.host,
            detail: snapshot.sample.as_deref().map(|s| &s.host_detail),
            theme,
        }
        .draw_on(l.host, canvas);
    }
    Footer {
        app,
        t: snapshot.t,
        theme,
    }
    .draw_on(l.footer, canvas);
    let selected = app.selected_gpu();
    if !l.list.is_empty() {
        let gpus = GpuList {
            snapshot,
            theme,
            selected,
            first: l.list_first,
            now: app.display_now(),
            window_s: app.window_s,
            focused: app.focus == Focus::Gpus,
        };
        // Every row's chart moves with each snapshot.
        canvas.part("gpu-list", l.list, None, &mut |buf| {
            (&gpus).render(l.list, buf)
        });
    }
    if !l.diagnosis.is_empty() {
        diagnosis.draw_on(l.diagnosis, lines, canvas);
    }
    draw_selected_gpu(&l, canvas, app, snapshot, &rows);
    if !l.events.is_empty() {
        LogPanel {
            theme,
            live: app.live_log,
            logged: app.log_events,
            bottom: app.events_bottom,
            focused: app.focus == Focus::Events,
        }
        .draw_on(l.events, canvas);
    }
    draw_overlays(area, canvas, app, theme);
}

/// The ledger or the log view, over everything between the header and the footer; the panels
/// under it are not drawn (it covers them all), and the ledger's rows are put into words only
/// while it is shown.
fn render_full_view(area: Rect, canvas: &mut dyn Canvas, app: &App, snapshot: &Snapshot) {
    let theme = Theme::new(app.color);
    let header = Rect::new(area.x, area.y, area.width, 1);
    let footer = Rect::new(area.x, area.bottom().saturating_sub(1), area.width, 1);
    let body = Rect::new(
        area.x,
        area.y + 1,
        area.width,
        area.height.saturating_sub(2),
    );
    Header {
        snapshot,
        theme,
        paused: app.paused(),
        window_s: app.window_s,
        now: app.display_now(),
        replay: app.replay.as_ref().map(|r| r.paused),
    }
    .draw_on(header, canvas);
    Footer {
        app,
        t: snapshot.t,
        theme,
    }
    .draw_on(footer, canvas);
    if app.overlay == Some(Overlay::Log) {
        let view = LogView {
            state: &app.log_view,
            theme,
        };
        // Events arrive at any time: the view is drawn with each frame.
        canvas.part("log", body, None, &mut |buf| (&view).render(body, buf));
        return;
    }
    let view = LedgerView {
        snapshot,
        prices: &app.prices,
        theme,
        scroll: app.ledger_scroll.first,
    };
    // Every tick books more time: the view is drawn with each snapshot.
    canvas.part("ledger", body, None, &mut |buf| (&view).render(body, buf));
}

/// The selected GPU's panel and processes.
fn draw_selected_gpu(
    l: &ScreenLayout,
    canvas: &mut dyn Canvas,
    app: &App,
    snapshot: &Snapshot,
    rows: &[ProcessRow],
) {
    let theme = Theme::new(app.color);
    let selected = app.selected_gpu();
    if let Some(gpu) = snapshot.gpus.get(selected) {
        if !l.panel.is_empty() {
            GpuPanel {
                gpu,
                theme,
                t: snapshot.t,
                now: app.display_now(),
                interval_s: snapshot.stats.interval_s,
                window_s: app.window_s,
                selected: snapshot.gpus.len() == 1 || app.focus == Focus::Gpus,
                details: app.details,
            }
            .draw_on(l.panel, canvas);
        }
        if !l.processes.is_empty() {
            ProcessTable {
                rows,
                state: &app.table,
                gpu_index: Some(gpu.info.index),
                focused: app.focus == Focus::Processes,
                first: l.process_first,
                theme,
            }
            .draw_on(l.processes, canvas);
        }
    }
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
        (&HelpOverlay {
            theme,
            scroll: app.help_scroll,
        })
            .render(area, buf);
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
