//! `gpulse fleet`: the screen of every GPU a Prometheus server knows, worst first.
//!
//! The refresher thread talks to Prometheus; this loop only waits on keys, on new fleet states and
//! on a one-second tick (so the age of the data keeps counting while Prometheus is silent).

pub mod app;
pub mod detail;
pub mod render;
pub mod view;

use std::time::Duration;

use crossterm::event::{Event, KeyEventKind};

use crate::config::ColorChoice;
use crate::config::Settings;
use crate::fleet::{unix_now, FleetOptions, FleetState, PromClient, Refresher};

use app::{action_for, FleetApp};
use render::page_rows;
use view::FleetView;

/// Run the fleet screen until the user quits.
pub fn run(
    client: PromClient,
    opts: FleetOptions,
    settings: &Settings,
) -> Result<(), super::TuiError> {
    let url = client.url();
    let refresher = Refresher::start(client, opts)?;
    let color = match settings.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut terminal = super::term::init()?;
    let restore = super::RestoreTerminal;
    let result = runtime.block_on(event_loop(&mut terminal, refresher, &url, color));
    drop(restore);
    runtime.shutdown_background();
    result
}

async fn event_loop(
    terminal: &mut super::term::Term,
    mut refresher: Refresher,
    url: &str,
    color: bool,
) -> Result<(), super::TuiError> {
    let mut app = FleetApp::default();
    let mut events = super::term::Input::spawn()?;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    loop {
        let state = refresher.state.borrow().clone();
        if let Some(f) = state.fleet.as_deref() {
            app.follow(f);
        }
        terminal.draw(|frame| {
            let area = frame.area();
            app.page_rows = page_rows(area.height);
            let view = FleetView {
                state: &state,
                app: &app,
                url,
                now: unix_now(),
                color,
            };
            frame.render_widget(&view, area);
        })?;
        #[cfg(unix)]
        let terminate = term.recv();
        #[cfg(not(unix))]
        let terminate = std::future::pending::<Option<()>>();
        tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => {
                    if let Some(action) = action_for(key) {
                        let n = state.fleet.as_deref().map_or(0, |f| f.gpu_count());
                        app.apply(action, n);
                        if let Some(f) = state.fleet.as_deref() {
                            app.follow(f);
                        }
                    }
                }
                Some(Ok(Event::Resize(..))) => terminal.backend().forget_size(),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(()),
            },
            changed = refresher.state.changed() => {
                if changed.is_err() {
                    return Err(super::TuiError::RefreshStopped);
                }
            }
            _ = tick.tick() => {}
            _ = terminate => return Ok(()),
        }
        if app.refresh_requested {
            app.refresh_requested = false;
            refresher.refresh_now();
        }
        if app.quit {
            return Ok(());
        }
    }
}

/// Draw one frame of the screen `width`×`height` into memory and return its lines of text (for
/// tests and benchmarks: the same code path as the terminal, without one).
pub fn render_lines(
    state: &FleetState,
    app: &mut FleetApp,
    url: &str,
    now: f64,
    width: u16,
    height: u16,
) -> Vec<String> {
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::widgets::Widget;
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    app.page_rows = page_rows(height);
    if let Some(f) = state.fleet.as_deref() {
        app.follow(f);
    }
    let view = FleetView {
        state,
        app,
        url,
        now,
        color: false,
    };
    (&view).render(area, &mut buf);
    (0..height)
        .map(|y| (0..width).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect()
}

#[cfg(test)]
mod tests;
