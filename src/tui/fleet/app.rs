//! The fleet screen's UI state (selection, page, detail open) and the keys that change it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::fleet::{Fleet, FleetGpu};

/// Something the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Open,
    Back,
    Refresh,
    Help,
    Quit,
}

/// Keys → actions, in one place.
pub fn action_for(key: KeyEvent) -> Option<Action> {
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    Some(match key.code {
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::PageUp | KeyCode::Char('b') => Action::PageUp,
        KeyCode::PageDown | KeyCode::Char(' ') => Action::PageDown,
        KeyCode::Home | KeyCode::Char('g') => Action::Top,
        KeyCode::End | KeyCode::Char('G') => Action::Bottom,
        KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') => Action::Open,
        KeyCode::Esc | KeyCode::Left | KeyCode::Backspace | KeyCode::Char('h') => Action::Back,
        KeyCode::Char('r') => Action::Refresh,
        KeyCode::Char('?') => Action::Help,
        KeyCode::Char('q') => Action::Quit,
        _ => return None,
    })
}

/// One line of the list: a host header, or one of its GPUs (host, position in the host, position
/// among all GPUs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    Host(usize),
    Gpu(usize, usize, usize),
}

/// The list's lines for `fleet`, in display order.
pub fn rows(fleet: &Fleet) -> Vec<Row> {
    let mut out = Vec::with_capacity(fleet.gpu_count() + fleet.hosts.len());
    let mut ordinal = 0;
    for (h, host) in fleet.hosts.iter().enumerate() {
        out.push(Row::Host(h));
        for g in 0..host.gpus.len() {
            out.push(Row::Gpu(h, g, ordinal));
            ordinal += 1;
        }
    }
    out
}

/// UI state only; the data lives in the refresher's state.
#[derive(Debug, Clone, Default)]
pub struct FleetApp {
    /// Position of the selected GPU among all GPUs in display order.
    pub selected: usize,
    /// The selected GPU's identity, to keep the selection on it when the order changes.
    pub selected_key: Option<(String, String)>,
    /// Lines of the list that fit on screen (set by the renderer).
    pub page_rows: usize,
    pub detail: bool,
    pub help: bool,
    pub quit: bool,
    pub refresh_requested: bool,
}

impl FleetApp {
    pub fn apply(&mut self, action: Action, gpu_count: usize) {
        let last = gpu_count.saturating_sub(1);
        let page = self.page_rows.max(1);
        match action {
            Action::Up => self.selected = self.selected.saturating_sub(1),
            Action::Down => self.selected = (self.selected + 1).min(last),
            Action::PageUp => self.selected = self.selected.saturating_sub(page),
            Action::PageDown => self.selected = (self.selected + page).min(last),
            Action::Top => self.selected = 0,
            Action::Bottom => self.selected = last,
            Action::Open => self.detail = gpu_count > 0,
            Action::Back => {
                if self.help {
                    self.help = false;
                } else {
                    self.detail = false;
                }
            }
            Action::Refresh => self.refresh_requested = true,
            Action::Help => self.help = !self.help,
            Action::Quit => self.quit = true,
        }
        self.selected = self.selected.min(last);
        self.selected_key = None;
    }

    /// After new data: follow the selected GPU to its new place, or stay in range.
    pub fn follow(&mut self, fleet: &Fleet) {
        let n = fleet.gpu_count();
        if let Some(key) = &self.selected_key {
            if let Some(pos) = fleet
                .gpus()
                .position(|g| (&g.instance, &g.gpu) == (&key.0, &key.1))
            {
                self.selected = pos;
            }
        }
        self.selected = self.selected.min(n.saturating_sub(1));
        self.selected_key = fleet
            .gpus()
            .nth(self.selected)
            .map(|g| (g.instance.clone(), g.gpu.clone()));
        if n == 0 {
            self.detail = false;
        }
    }

    /// The selected GPU.
    pub fn selected_gpu<'a>(&self, fleet: &'a Fleet) -> Option<&'a FleetGpu> {
        fleet.gpus().nth(self.selected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_stays_in_range() {
        let mut app = FleetApp {
            page_rows: 10,
            ..Default::default()
        };
        app.apply(Action::PageDown, 25);
        assert_eq!(app.selected, 10);
        app.apply(Action::PageDown, 25);
        app.apply(Action::PageDown, 25);
        assert_eq!(app.selected, 24);
        app.apply(Action::PageUp, 25);
        assert_eq!(app.selected, 14);
        app.apply(Action::Top, 25);
        app.apply(Action::Up, 25);
        assert_eq!(app.selected, 0);
        app.apply(Action::Down, 0);
        assert_eq!(app.selected, 0);
    }
}
