//! Where each panel of the dashboard goes for the terminal's size, the number of GPUs and the
//! focus: what the screen draws and where a click lands.

use ratatui::layout::{Constraint, Layout, Rect};

use crate::engine::Snapshot;
use crate::host::ProcessRow;

use super::app::App;
use super::focus::Focus;
use super::theme::Theme;
use super::widgets::findings::DiagnosisPanel;

/// Below this size the screen only says that it is too small.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;

/// Rows the GPU panel needs at least: three one-row charts and its border.
const PANEL_MIN: u16 = 5;
/// Rows of the GPU panel before the other panels grow: six one-row charts, the dip marks, the
/// time axis and its border.
const PANEL_COMFORT: u16 = 10;
/// From this height on, the host line is shown under the header.
const HOST_LINE_MIN_HEIGHT: u16 = 20;
/// Rows of the event panel before the GPU panel takes the rest (more while it has the focus).
const EVENTS_WANT: u16 = 8;
const EVENTS_FOCUSED_WANT: u16 = 14;

/// Where each panel of the dashboard goes on a screen, and the first row each list shows: what
/// [`render_on`] draws, and where a click lands. Panels not shown have an empty area.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScreenLayout {
    pub header: Rect,
    pub host: Rect,
    /// One row per GPU (shown with more than one GPU).
    pub list: Rect,
    /// The list's line on its first row (a GPU's, or a MIG instance's under it: see
    /// [`crate::tui::widgets::gpu_list::list_lines`]).
    pub list_first: usize,
    pub diagnosis: Rect,
    /// The selected GPU's charts.
    pub panel: Rect,
    pub processes: Rect,
    /// Position of the process row on the table's first row.
    pub process_first: usize,
    pub events: Rect,
    pub footer: Rect,
}

/// Rows for one panel: `want` at most, what is left at most.
fn take(rest: &mut u16, want: u16) -> u16 {
    let h = want.min(*rest);
    *rest -= h;
    h
}

/// What the panels of the body ask for.
struct Wants {
    gpus: u16,
    /// Lines the diagnosis would show with room enough.
    diag_lines: u16,
    /// Rows of the process table with its border and header.
    procs: u16,
    focus: Focus,
}

/// Rows of each panel of the body.
#[derive(Debug, Default)]
struct Rows {
    list: u16,
    diag: u16,
    panel: u16,
    procs: u16,
    events: u16,
}

/// Share `body` rows: first every panel's least, in order of importance (see [`layout`]).
fn least_rows(body: u16, w: &Wants, rest: &mut u16) -> Rows {
    let n = w.gpus;
    let list_cap = body.saturating_sub(3 + PANEL_MIN).max(3);
    let mut r = Rows {
        list: if n > 1 {
            take(rest, (n + 2).min(list_cap))
        } else {
            0
        },
        diag: take(rest, 3),
        ..Rows::default()
    };
    // The focused table or event panel keeps a few rows even when the charts go.
    match w.focus {
        Focus::Processes if n > 0 && *rest >= 4 => r.procs = take(rest, 4),
        Focus::Events if *rest >= 3 => r.events = take(rest, 3),
        _ => {}
    }
    if *rest >= PANEL_MIN && n > 0 {
        r.panel = take(rest, PANEL_MIN);
    }
    if w.diag_lines > 1 && r.diag > 0 {
        r.diag += take(rest, 1);
    }
    if r.procs == 0 && *rest >= 4 && n > 0 {
        r.procs = take(rest, 4);
    }
    if r.events == 0 && *rest >= 3 {
        r.events = take(rest, 3);
    }
    r
}

/// Share `body` rows: the least first ([`least_rows`]), then more to the focused panel, the GPU
/// panel's comfort, the rest of the diagnosis, the processes and the events; the GPU panel
/// takes what is left.
fn share_rows(body: u16, w: &Wants) -> Rows {
    let mut rest = body;
    let mut r = least_rows(body, w, &mut rest);
    let grow = |h: &mut u16, want: u16, rest: &mut u16| {
        if *h > 0 {
            *h += take(rest, want.saturating_sub(*h));
        }
    };
    match w.focus {
        Focus::Processes => grow(&mut r.procs, w.procs, &mut rest),
        Focus::Events => grow(&mut r.events, EVENTS_FOCUSED_WANT, &mut rest),
        Focus::Gpus => {}
    }
    grow(&mut r.panel, PANEL_COMFORT, &mut rest);
    grow(
        &mut r.diag,
        (w.diag_lines + 2).min((body / 4).max(4)),
        &mut rest,
    );
    grow(&mut r.procs, w.procs, &mut rest);
    grow(&mut r.events, EVENTS_WANT, &mut rest);
    if r.panel > 0 {
        r.panel += rest;
    } else if r.events > 0 {
        r.events += rest;
    } else {
        r.diag += rest;
    }
    r
}

/// Lay out the dashboard in `area` for this app and snapshot (empty when the terminal is too
/// small).
///
/// Rows go first to the header and footer, then the GPU list (every GPU while the rest keeps
/// the diagnosis's first line and a small panel), the diagnosis's first line (the worst GPU's
/// fix), the focused table or event panel at its least, the GPU panel at its least, the
/// diagnosis's second line, the processes and the events at their least; then the focused
/// panel, the GPU panel's comfort, the rest of the diagnosis, the processes and the events; the
/// GPU panel takes what is left.
pub fn layout(area: Rect, app: &App, snapshot: &Snapshot) -> ScreenLayout {
    let rows = app.table.rows(snapshot, app.selected_gpu());
    let diag_lines = diagnosis_panel(app, snapshot, snapshot.gpus.len() > 1)
        .lines(area.width.saturating_sub(2))
        .len();
    layout_for(area, app, snapshot, diag_lines, &rows)
}

/// [`layout`] for a diagnosis of `diag_lines` lines and these process rows (a frame computes
/// them once, for the layout and the drawing).
pub fn layout_for(
    area: Rect,
    app: &App,
    snapshot: &Snapshot,
    diag_lines: usize,
    rows: &[ProcessRow],
) -> ScreenLayout {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        return ScreenLayout::default();
    }
    let host_h = u16::from(area.height >= HOST_LINE_MIN_HEIGHT);
    let [header, host, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(host_h),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let lines = crate::tui::widgets::gpu_list::list_lines(snapshot);
    let n = lines.len() as u16;
    let selected = app.selected_gpu();
    let focus = app.focus;
    let wants = Wants {
        gpus: n,
        diag_lines: diag_lines.min(usize::from(u16::MAX)) as u16,
        procs: rows
            .len()
            .clamp(1, if focus == Focus::Processes { 8 } else { 4 }) as u16
            + 3,
        focus,
    };
    let r = share_rows(body.height, &wants);
    let [list, diagnosis, panel, processes, events] =
        Layout::vertical([r.list, r.diag, r.panel, r.procs, r.events].map(Constraint::Length))
            .areas(body);
    let visible = usize::from(list.height.saturating_sub(2));
    let table_rows = usize::from(processes.height.saturating_sub(3));
    let process_first = match app.table.selected_index(rows) {
        Some(sel) if focus == Focus::Processes && table_rows > 0 => {
            (sel + 1).saturating_sub(table_rows)
        }
        _ => 0,
    };
    ScreenLayout {
        header,
        host,
        list,
        list_first: crate::tui::widgets::gpu_list::line_of_gpu(&lines, selected)
            .saturating_sub(visible.saturating_sub(1)),
        diagnosis,
        panel,
        processes,
        process_first,
        events,
        footer,
    }
}

/// The diagnosis panel of this app's state.
pub fn diagnosis_panel<'a>(
    app: &'a App,
    snapshot: &'a Snapshot,
    list_shown: bool,
) -> DiagnosisPanel<'a> {
    DiagnosisPanel {
        snapshot,
        theme: Theme::new(app.color),
        selected: app.selected_gpu(),
        list_shown,
        now: app.display_now(),
        prices: &app.prices,
    }
}
