//! Where the keys go, and what is drawn over the dashboard.

/// The panel the arrow keys act on; Tab moves to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Focus {
    /// ↑↓ move between GPUs.
    #[default]
    Gpus,
    /// ↑↓ move between process rows, ←→ scroll the commands.
    Processes,
    /// ↑↓ scroll the events.
    Events,
}

impl Focus {
    const ORDER: [Focus; 3] = [Focus::Gpus, Focus::Processes, Focus::Events];

    /// The next panel (Tab), wrapping around.
    pub fn next(self) -> Focus {
        let i = Focus::ORDER.iter().position(|f| *f == self).unwrap_or(0);
        Focus::ORDER[(i + 1) % Focus::ORDER.len()]
    }

    /// The previous panel (Shift-Tab), wrapping around.
    pub fn prev(self) -> Focus {
        let i = Focus::ORDER.iter().position(|f| *f == self).unwrap_or(0);
        Focus::ORDER[(i + Focus::ORDER.len() - 1) % Focus::ORDER.len()]
    }
}

/// A window drawn over the dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    Help,
    /// The waste ledger, over everything between the header and the footer.
    Ledger,
    /// The log view: every event whole, by target and level.
    Log,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tab_visits_every_panel_and_comes_back() {
        let mut f = Focus::Gpus;
        let mut seen = vec![f];
        for _ in 0..3 {
            f = f.next();
            seen.push(f);
        }
        assert_eq!(
            seen,
            [Focus::Gpus, Focus::Processes, Focus::Events, Focus::Gpus]
        );
        assert_eq!(Focus::Gpus.prev(), Focus::Events);
        assert_eq!(Focus::Events.prev().next(), Focus::Events);
    }
}
