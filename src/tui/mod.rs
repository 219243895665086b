//! The terminal front end. The only module that touches the terminal.

use crate::config::Settings;
use crate::live::Live;

/// Run the dashboard until the user quits.
pub fn run(live: Live, settings: &Settings) -> anyhow::Result<()> {
    let _ = (live, settings);
    anyhow::bail!("the dashboard is not built yet")
}
pub mod fleet;
