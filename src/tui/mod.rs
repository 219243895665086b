//! The terminal front end. The only module that touches the terminal.
//!
//! [`run`] owns the terminal and the event loop; everything it draws comes from [`render`], which
//! takes a buffer, the [`App`] (UI state) and a snapshot, so screens can be tested without a
//! terminal.

pub mod action;
pub mod app;
pub mod background_recording;
pub mod canvas;
pub mod cost;
pub mod diagnosis;
pub mod dialog;
pub mod event_log;
pub mod fatal_signal;
#[cfg(any(test, feature = "testing"))]
pub mod fixture;
pub mod fleet;
pub mod focus;
pub mod format;
pub mod layout;
pub mod ledger_rows;
pub mod mouse;
pub mod process_table;
pub mod replay_bar;
pub mod screen;
pub mod term;
pub mod theme;
pub mod widgets;
pub mod zoom;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::Event;
use ratatui::Frame;
use tokio::signal::unix::{signal, SignalKind};

use crate::config::ColorChoice;
use crate::config::Settings;
use crate::pipeline::Live;

pub use action::Action;
pub use app::App;
pub use replay_bar::ReplaySession;
pub use screen::render;

use background_recording::Recording;

use widgets::status::STALE_INTERVALS;

/// Send `tracing` events (INFO and above) to the dashboard's event panel and to tui-logger for the
/// log view (call before [`run`]). If a subscriber is already installed in this process, that one
/// stays and neither shows anything new. Nothing is started (tui-logger's `init_logger` would
/// start a thread that wakes every 10 ms): each frame moves the events logged since the last one
/// into the log view's buffer, so an idle dashboard costs no wake-ups.
pub fn init_tui_logging() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        tui_logger::set_default_level(tui_logger::LevelFilter::Info);
        let _ = tracing_subscriber::registry()
            .with(tracing_subscriber::filter::LevelFilter::INFO)
            .with(event_log::EventLayer)
            .with(tui_logger::TuiTracingSubscriberLayer)
            .try_init();
    });
}

/// The action a key asks for in the app's current state, if any.
pub fn map_key(key: crossterm::event::KeyEvent, app: &App) -> Option<Action> {
    action::map_key(key, &app.key_context())
}

/// Draw one frame on a terminal as the dashboard does: in parts, each drawn again only when it
/// changed (the event panel only if events were logged since its last drawing).
pub fn draw_frame<B: ratatui::backend::Backend>(
    terminal: &mut canvas::PartsTerminal<B>,
    app: &mut App,
) -> Result<(), B::Error> {
    app.log_events = Some(event_log::logged());
    // tui-logger keeps events in a bounded hot buffer until they are moved to the log view's.
    tui_logger::move_events();
    if let Ok(size) = terminal.backend().size() {
        app.screen_rows = size.height;
    }
    draw_parts(terminal, app)
}

/// Draw one frame of the app's displayed snapshot on a terminal that keeps parts.
fn draw_parts<B: ratatui::backend::Backend>(
    terminal: &mut canvas::PartsTerminal<B>,
    app: &App,
) -> Result<(), B::Error> {
    terminal.draw(|area, canvas| screen::render_on(area, canvas, app, app.displayed()))
}

/// Draw one frame of the app's displayed snapshot on a ratatui terminal, whole.
pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    render(area, frame.buffer_mut(), app, app.displayed());
}

/// Restores the terminal when dropped: on return, on error and while unwinding from a panic
/// (the panic hook set by [`term::init`] restores it too, before the message is printed).
pub(crate) struct RestoreTerminal;

impl Drop for RestoreTerminal {
    fn drop(&mut self) {
        term::restore();
    }
}

/// What the dashboard does besides showing the snapshots.
#[derive(Debug, Default)]
pub struct RunOptions {
    /// The snapshots come from a recording: its controls, file and warnings.
    pub replay: Option<ReplaySession>,
    /// `/metrics` is served on this address (shown in the status line).
    pub serving: Option<SocketAddr>,
    /// Where `r` writes recordings (the current directory when `None`).
    pub record_dir: Option<PathBuf>,
}

/// Why a screen could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// The terminal (or the runtime driving it) failed.
    #[error(transparent)]
    Terminal(#[from] std::io::Error),
    /// The fleet screen's refresh thread ended or could not start.
    #[error("the fleet refresh thread stopped")]
    RefreshStopped,
}

/// Run the dashboard until the user quits or a signal (SIGTERM, SIGHUP, SIGINT) arrives.
///
/// The sampler thread is never joined: `q` returns at once even if a GPU call hangs.
pub fn run(live: Live, settings: &Settings, options: RunOptions) -> Result<(), TuiError> {
    init_tui_logging();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        // Signals first: one that arrives once the terminal is changed must still restore it.
        let signals = Signals::new()?;
        let mut terminal = term::init_screen(settings.mouse)?;
        let _restore = RestoreTerminal;
        event_loop(&mut terminal, signals, live, settings, options).await
    });
    runtime.shutdown_background();
    result
}

/// The signals that end the dashboard (each restores the terminal on the way out).
struct Signals {
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            int: signal(SignalKind::interrupt())?,
        })
    }
}

async fn event_loop(
    terminal: &mut term::Screen,
    mut signals: Signals,
    live: Live,
    settings: &Settings,
    options: RunOptions,
) -> Result<(), TuiError> {
    let mut snapshots = live.snapshots.clone();
    let first = snapshots.borrow_and_update().clone();
    let mut app = start_app(first, &live, settings, &options);
    let record_dir = options.record_dir.unwrap_or_else(|| PathBuf::from("."));
    let mut recording: Option<Recording> = None;
    let mut events = term::Input::spawn()?;
    let mut second = tokio::time::interval(Duration::from_secs(1));
    second.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut sampling = true;
    let mut dirty = true;
    loop {
        if dirty {
            app.now = crate::clock::now();
            draw_frame(terminal, &mut app)?;
            dirty = false;
        }
        if app.quit {
            break;
        }
        tokio::select! {
            changed = snapshots.changed(), if sampling => match changed {
                Ok(()) => {
                    let s = snapshots.borrow_and_update().clone();
                    dirty = app.on_snapshot(s);
                }
                Err(_) => {
                    tracing::error!(target: "gpulse::events", "sampling stopped: the sampler thread ended");
                    sampling = false;
                    dirty = true;
                }
            },
            event = events.next() => match event {
                Some(Ok(Event::Key(key))) => {
                    if let Some(action) = map_key(key, &app) {
                        if action == Action::ToggleRecord {
                            toggle_recording(&mut recording, &mut app, &record_dir, &live);
                        }
                        app.apply(action);
                        dirty = true;
                    }
                }
                Some(Ok(Event::Mouse(m))) => dirty = on_mouse(m, terminal, &mut app)?,
                Some(Ok(Event::Resize(..))) => {
                    // Drawn whole at the new size (even one the same as before: a terminal
                    // resized and back may have lost what it showed).
                    terminal.backend().forget_size();
                    terminal.forget();
                    dirty = true;
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e.into()),
                None => break,
            },
            _ = second.tick() => {
                // Only ages change with time alone: redraw while the data shown is getting old.
                let shown = app.displayed();
                let age = crate::clock::now() - shown.t;
                dirty = !app.paused() && age > STALE_INTERVALS * shown.stats.interval_s.max(0.01);
                // The recording's tick count goes on while the display is paused.
                dirty |= app.recording.is_some();
            }
            _ = signals.term.recv() => break,
            _ = signals.hup.recv() => break,
            _ = signals.int.recv() => break,
        }
    }
    if let Some(r) = recording.take() {
        r.stop();
    }
    live.stop();
    Ok(())
}

/// The app for the first snapshot, with the event log told what is watched or replayed.
fn start_app(
    first: Arc<crate::engine::Snapshot>,
    live: &Live,
    settings: &Settings,
    options: &RunOptions,
) -> App {
    let mut app = App::new(
        first,
        settings.window_s,
        settings.engine.retention_s,
        settings.color != ColorChoice::Never,
    );
    app.signaller = Arc::new(crate::host::Signaller::new(
        &live.system.backend,
        settings.readonly,
    ));
    app.serving = options.serving;
    app.prices = settings.prices.clone();
    app.replay = options.replay.as_ref().map(replay_bar::ReplayState::new);
    match &options.replay {
        Some(r) => {
            tracing::info!(
                target: "gpulse::events",
                "replaying {} ({} of {} GPU(s))",
                r.file.display(),
                format::seconds(r.end - r.start),
                live.system.devices.len()
            );
            for w in &r.warnings {
                tracing::warn!(target: "gpulse::events", "{w}");
            }
        }
        None => tracing::info!(
            target: "gpulse::events",
            "watching {} GPU(s) on {} every {}",
            live.system.devices.len(),
            live.system.backend,
            format::seconds(settings.engine.interval_s)
        ),
    }
    if let Some(addr) = options.serving {
        tracing::info!(target: "gpulse::events", "serving http://{addr}/metrics");
    }
    app
}

/// A click or the wheel: what it asks for on the screen as laid out now, or over the overlay shown
/// (nothing while a dialog is open). Returns whether the screen changes.
fn on_mouse(
    event: crossterm::event::MouseEvent,
    terminal: &term::Screen,
    app: &mut App,
) -> std::io::Result<bool> {
    if app.dialog.is_some() {
        return Ok(false);
    }
    if let Some(overlay) = app.overlay {
        let action = mouse::map_overlay_mouse(event, overlay);
        if let Some(action) = action {
            app.apply(action);
        }
        return Ok(action.is_some());
    }
    let size = ratatui::backend::Backend::size(terminal.backend())?;
    let area = ratatui::layout::Rect::new(0, 0, size.width, size.height);
    let layout = layout::layout(area, app, app.displayed());
    // A click lands on a line of the GPU list: a MIG instance's line selects its GPU.
    let action = mouse::map_mouse(event, &layout).map(|a| match a {
        Action::SelectGpu(line) => {
            Action::SelectGpu(widgets::gpu_list::gpu_at_line(app.displayed(), line))
        }
        other => other,
    });
    Ok(match action {
        Some(action) => {
            app.apply(action);
            true
        }
        None => false,
    })
}

/// `r`: start a recording in `dir`, or stop the one running. Errors go to the event log.
fn toggle_recording(
    recording: &mut Option<Recording>,
    app: &mut App,
    dir: &std::path::Path,
    live: &Live,
) {
    match recording.take() {
        Some(r) => {
            r.stop();
            app.recording = None;
        }
        None => match Recording::start(dir, live.snapshots.clone()) {
            Ok(r) => {
                app.recording = Some(r.status().clone());
                *recording = Some(r);
            }
            Err(e) => tracing::error!(target: "gpulse::events", "recording not started: {e}"),
        },
    }
}

/// A terminal that draws into memory: the dashboard's draw path (layout, widgets, the parts
/// that changed compared with the previous frame) without a real terminal, for benchmarks and
/// tools.
pub struct OffscreenTerminal {
    terminal: canvas::PartsTerminal<ratatui::backend::TestBackend>,
}

impl OffscreenTerminal {
    pub fn new(width: u16, height: u16) -> std::io::Result<Self> {
        let terminal =
            canvas::PartsTerminal::new(ratatui::backend::TestBackend::new(width, height));
        Ok(OffscreenTerminal { terminal })
    }

    /// Draw one frame of the app's displayed snapshot.
    pub fn draw(&mut self, app: &App) -> std::io::Result<()> {
        draw_parts(&mut self.terminal, app).map_err(|e| std::io::Error::other(e.to_string()))
    }

    /// Forget what the last frame drew: the next is drawn whole (the most a frame costs).
    pub fn forget(&mut self) {
        self.terminal.forget();
    }

    /// Parts drawn (not kept) in the last frame, and in all frames so far.
    pub fn parts_drawn(&self) -> (usize, u64) {
        self.terminal.parts_drawn()
    }

    /// The screen as text, one line per row.
    pub fn text(&self) -> String {
        let buf = self.terminal.backend().buffer();
        let w = buf.area.width.max(1) as usize;
        let mut out = String::new();
        for (i, cell) in buf.content.iter().enumerate() {
            out.push_str(cell.symbol());
            if (i + 1) % w == 0 {
                out.push('\n');
            }
        }
        out
    }
}
