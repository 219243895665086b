//! Frame render time: 8 simulated GPUs with 10 minutes of history at 200×60 (each frame drawn
//! whole, every part of it, as after a resize: the most a frame costs; also with the ledger view
//! open), and a new snapshot to a drawn frame for 1 GPU at 80×24 and at 160×48 (only the parts
//! that changed are drawn). Run with `cargo bench --bench render`;
//! `GPULSE_BENCH_PAUSE_MS=250` pauses before each snapshot-to-frame tick as the dashboard does
//! (cold caches: the cost a real tick pays); `GPULSE_BENCH_ONLY=160x48` runs only the sections
//! whose name holds that text (to profile one).

use std::time::Instant;

use gpulse::backend::sim::Scenario;
use gpulse::tui::fixture::SimRun;
use gpulse::tui::{App, OffscreenTerminal};

/// CPU time of this thread, µs: unlike wall time, not inflated when other processes share the
/// cores.
fn thread_cpu_us() -> f64 {
    gpulse::clock::thread_cpu_s().map_or(f64::NAN, |s| s * 1e6)
}

/// Runs `f` `n` times; prints wall and CPU time per run.
fn measure(name: &str, n: usize, mut f: impl FnMut()) {
    let mut wall = Vec::with_capacity(n);
    let mut cpu = Vec::with_capacity(n);
    for _ in 0..n {
        let c = thread_cpu_us();
        let t = Instant::now();
        f();
        wall.push(t.elapsed().as_secs_f64() * 1e6);
        cpu.push(thread_cpu_us() - c);
    }
    stats(&format!("{name} [wall]"), wall);
    stats(&format!("{name} [cpu]"), cpu);
}

fn stats(name: &str, mut us: Vec<f64>) {
    us.sort_by(f64::total_cmp);
    let mean = us.iter().sum::<f64>() / us.len() as f64;
    let pct = |p: f64| us[((us.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{name:<60} n={:<5} mean {mean:>8.1} µs  p50 {:>8.1} µs  p99 {:>8.1} µs  max {:>8.1} µs",
        us.len(),
        pct(0.5),
        pct(0.99),
        pct(1.0)
    );
}

fn frames(name: &str, app: &App, w: u16, h: u16, n: usize) {
    if !wanted(name) {
        return;
    }
    let mut term = OffscreenTerminal::new(w, h).expect("offscreen terminal");
    // Warm up: the first frame allocates the buffers.
    for _ in 0..5 {
        term.draw(app).expect("draw");
    }
    measure(name, n, || {
        term.forget();
        term.draw(app).expect("draw")
    });
}

/// Whether the section `name` runs: all of them, or with `GPULSE_BENCH_ONLY=TEXT` those whose
/// name holds TEXT (to profile one).
fn wanted(name: &str) -> bool {
    std::env::var("GPULSE_BENCH_ONLY").map_or(true, |only| name.contains(&only))
}

fn main() {
    let built = Instant::now();
    let mut run = SimRun::new(Scenario::Mixed, 8);
    // A large host for the host line: 128 cores, 96 of them busy.
    run.host = gpulse::model::HostReading {
        cpu_percent: Some(76.0),
        cpu_count: Some(128),
        memory_used_bytes: Some(212 << 30),
        memory_total_bytes: Some(2015 << 30),
        load1: Some(97.5),
        iowait_percent: Some(4.0),
    };
    run.host_detail = gpulse::model::HostDetail {
        per_core_percent: (0..128).map(|i| if i < 96 { 99.0 } else { 3.0 }).collect(),
        load5: Some(90.0),
        load15: Some(60.0),
        ..Default::default()
    };
    run.advance(600.0);
    println!(
        "8 simulated GPUs, 10 min of history ({} ticks each) built in {:.1} s",
        run.snapshot().gpus[0].history.ticks.len(),
        built.elapsed().as_secs_f64()
    );
    for window in [60.0, 600.0] {
        let app = App::new(run.snapshot(), window, 600.0, true);
        frames(
            &format!("frame 200x60, 8 GPUs, window {window:.0} s"),
            &app,
            200,
            60,
            1000,
        );
    }
    // The selected GPU's details (clocks, link, GPM counters) beside its charts.
    let mut app = App::new(run.snapshot(), 60.0, 600.0, true);
    app.apply(gpulse::tui::Action::ToggleExpand);
    frames("frame 200x60, 8 GPUs, details shown", &app, 200, 60, 1000);
    // The process table of every GPU in tree mode (each job's workers), focused, with the
    // status line showing a recording and the exporter.
    let mut app = App::new(run.snapshot(), 60.0, 600.0, true);
    app.apply(gpulse::tui::Action::ToggleAllGpus);
    app.apply(gpulse::tui::Action::ToggleTree);
    app.apply(gpulse::tui::Action::ToggleFocus);
    app.serving = "127.0.0.1:9400".parse().ok();
    frames(
        "frame 200x60, 8 GPUs, all processes as a tree",
        &app,
        200,
        60,
        1000,
    );
    let app = App::new(run.snapshot(), 60.0, 600.0, true);
    frames("frame 80x24, 8 GPUs, window 60 s", &app, 80, 24, 1000);
    // The ledger view (`L`) over 10 minutes of 8 GPUs, priced: its rows are built from the
    // snapshot and the page on screen put into words on every frame while it is open.
    let mut app = App::new(run.snapshot(), 60.0, 600.0, true);
    app.prices = gpulse::ledger::Prices {
        price_per_gpu_hour: Some(2.5),
        price_per_kwh: Some(0.3),
        currency: Some("USD".into()),
    };
    app.apply(gpulse::tui::Action::ToggleLedger);
    frames("frame 200x60, 8 GPUs, ledger view", &app, 200, 60, 1000);
    frames("frame 80x24, 8 GPUs, ledger view", &app, 80, 24, 1000);

    // A new snapshot to a drawn frame, one GPU at 80x24: the engine builds the snapshot, the
    // app takes it, the frame is drawn (what happens on every tick).
    let mut one = SimRun::new(Scenario::Starving, 1);
    one.advance(600.0);
    let mut app = App::new(one.snapshot(), 60.0, 600.0, true);
    let mut term = OffscreenTerminal::new(80, 24).expect("offscreen terminal");
    snapshot_to_frame(
        "snapshot -> frame, 1 GPU, 80x24, window 60 s",
        &mut one,
        &mut app,
        |app| term.draw(app).expect("draw"),
    );
    // The same at 160x48 into a sink, escape sequences included, as the dashboard draws (its
    // own backend, the event panel copied while no event is logged): the UI thread's whole cost
    // per tick, less the write to the terminal. The backend is told its size: asked, it would
    // give the size of the terminal the benchmark runs in (80x24 without one). (ratatui's
    // crossterm backend is not measured here: with no terminal its size query runs `tput` on
    // every frame.)
    gpulse::tui::init_tui_logging();
    tracing::info!(target: "gpulse::events", "watching 1 GPU(s) on sim every 250 ms");
    let size = ratatui::layout::Size::new(160, 48);
    let backend = gpulse::tui::term::TermBackend::sized(std::io::sink(), size);
    let mut term = gpulse::tui::canvas::PartsTerminal::new(backend);
    assert_eq!(
        ratatui::backend::Backend::size(term.backend()).expect("size"),
        size
    );
    snapshot_to_frame(
        "snapshot -> frame, 1 GPU, 160x48, gpulse backend",
        &mut one,
        &mut app,
        |app| gpulse::tui::draw_frame(&mut term, app).expect("draw"),
    );
}

/// 1000 ticks of `run`: each advances the simulator (not measured), then the engine's snapshot
/// goes to the app and `draw` draws it (measured).
fn snapshot_to_frame(name: &str, run: &mut SimRun, app: &mut App, mut draw: impl FnMut(&mut App)) {
    if !wanted(name) {
        return;
    }
    let mut wall = Vec::new();
    let mut cpu = Vec::new();
    // With GPULSE_BENCH_PAUSE_MS the thread sleeps that long before each tick (100 ticks), as the
    // dashboard does between ticks: the caches have gone cold, as they are on a busy machine.
    let pause = std::env::var("GPULSE_BENCH_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    for _ in 0..if pause.is_some() { 100 } else { 1000 } {
        run.advance(0.25);
        if let Some(ms) = pause {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        let c = thread_cpu_us();
        let t = Instant::now();
        app.on_snapshot(run.snapshot());
        draw(app);
        wall.push(t.elapsed().as_secs_f64() * 1e6);
        cpu.push(thread_cpu_us() - c);
    }
    stats(&format!("{name} [wall]"), wall);
    stats(&format!("{name} [cpu]"), cpu);
}
