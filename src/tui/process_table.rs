//! The process table's UI state: which GPUs it lists, its sort, filter and tree mode, the row
//! selected (kept by PID, so a re-sort between ticks does not move the selection to another
//! process), the filter prompt being typed and how far the commands are scrolled sideways.

use crate::engine::Snapshot;
use crate::host::{process_rows, ProcessRow, ProcessView, SortKey};

/// The process table's state.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessTableState {
    pub view: ProcessView,
    /// List the processes of every GPU (false: the selected GPU's only).
    pub all_gpus: bool,
    /// PID of the selected row (`None`: the first row).
    pub selected_pid: Option<u32>,
    /// The filter being typed (`Some` while the prompt is open).
    pub prompt: Option<String>,
    /// Characters of each command scrolled past (← →); 0 shows commands shortened in the middle.
    pub hscroll: usize,
}

/// Characters one ← or → scrolls the commands.
pub const HSCROLL_STEP: usize = 8;

impl Default for ProcessTableState {
    fn default() -> Self {
        ProcessTableState {
            view: ProcessView {
                sort: SortKey::GpuMemory,
                descending: true,
                filter: String::new(),
                tree: false,
            },
            all_gpus: false,
            selected_pid: None,
            prompt: None,
            hscroll: 0,
        }
    }
}

impl ProcessTableState {
    /// The filter in effect: the one being typed while the prompt is open.
    pub fn effective_view(&self) -> ProcessView {
        let mut v = self.view.clone();
        if let Some(p) = &self.prompt {
            v.filter = p.clone();
        }
        v
    }

    /// The rows to show for `snapshot` with the GPU at position `gpu` selected.
    pub fn rows(&self, snapshot: &Snapshot, gpu: usize) -> Vec<ProcessRow> {
        let view = self.effective_view();
        if self.all_gpus {
            process_rows(
                snapshot
                    .gpus
                    .iter()
                    .flat_map(|g| g.processes.iter().map(move |p| (g.info.index, p))),
                &view,
            )
        } else {
            match snapshot.gpus.get(gpu) {
                Some(g) => process_rows(g.processes.iter().map(|p| (g.info.index, p)), &view),
                None => Vec::new(),
            }
        }
    }

    /// Position of the selected row in `rows` (the first row when the selected PID is gone).
    pub fn selected_index(&self, rows: &[ProcessRow]) -> Option<usize> {
        if rows.is_empty() {
            return None;
        }
        Some(
            self.selected_pid
                .and_then(|pid| rows.iter().position(|r| r.pid == pid))
                .unwrap_or(0),
        )
    }

    /// The selected row, if the table has any.
    pub fn selected_row<'a>(&self, rows: &'a [ProcessRow]) -> Option<&'a ProcessRow> {
        self.selected_index(rows).and_then(|i| rows.get(i))
    }

    /// Move the selection by `delta` rows, stopping at the ends.
    pub fn move_selection(&mut self, rows: &[ProcessRow], delta: isize) {
        let Some(i) = self.selected_index(rows) else {
            self.selected_pid = None;
            return;
        };
        let j = (i as isize + delta).clamp(0, rows.len() as isize - 1) as usize;
        self.selected_pid = rows.get(j).map(|r| r.pid);
    }

    /// Scroll the commands one step right (`steps` > 0) or left.
    pub fn scroll_sideways(&mut self, steps: isize) {
        self.hscroll = self
            .hscroll
            .saturating_add_signed(steps * HSCROLL_STEP as isize);
    }

    /// Sort by the next column (largest first for numbers, A–Z for text).
    pub fn sort_next(&mut self) {
        self.view.sort = self.view.sort.next();
        self.view.descending = !matches!(
            self.view.sort,
            SortKey::Pid | SortKey::User | SortKey::Command
        );
    }

    pub fn sort_reverse(&mut self) {
        self.view.descending = !self.view.descending;
    }

    pub fn open_prompt(&mut self) {
        self.prompt = Some(self.view.filter.clone());
    }

    pub fn type_char(&mut self, c: char) {
        if let Some(p) = &mut self.prompt {
            p.push(c);
        }
    }

    pub fn backspace(&mut self) {
        if let Some(p) = &mut self.prompt {
            p.pop();
        }
    }

    /// Enter: keep what was typed as the filter.
    pub fn apply_prompt(&mut self) {
        if let Some(p) = self.prompt.take() {
            self.view.filter = p.trim().to_string();
        }
    }

    /// Esc: no filter at all.
    pub fn clear_filter(&mut self) {
        self.prompt = None;
        self.view.filter.clear();
    }
}
