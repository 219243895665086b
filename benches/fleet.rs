//! The cost of one fleet refresh at scale: 1,000 hosts × 8 GPUs.
//!
//! Synthetic Prometheus answers in the exact API format (half the hosts run `gpulse serve`, with
//! its 14-series verdict and finding state sets; half run a plain dcgm-exporter, whose GPUs go
//! through the detector), then: parse every answer, build the model (join, detector, sort), and
//! render one page of the screen. Run with `cargo bench --bench fleet`.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use gpulse::detector::DetectorConfig;
use gpulse::fleet::api::parse_answer;
use gpulse::fleet::build::build;
use gpulse::fleet::queries::Grid;
use gpulse::fleet::queries::{Query, QueryResults};
use gpulse::fleet::{DetectorCache, FleetState};
use gpulse::model::FindingKind;
use gpulse::tui::fleet::app::{Action, FleetApp};
use gpulse::tui::fleet::render_lines;

const HOSTS: usize = 1000;
const GPUS: usize = 8;
const NOW: f64 = 1_800_000_000.0;
const POINTS: usize = 60;
const RAW_POINTS: usize = 120;

fn labels(h: usize, g: usize) -> String {
    format!(
        r#""__name__":"X","Hostname":"node-{h:04}","UUID":"GPU-{h:04}-{g}","device":"nvidia{g}","gpu":"{g}","instance":"10.1.{}.{}:9400","job":"{}","modelName":"NVIDIA H200""#,
        h / 250,
        h % 250,
        if h % 2 == 0 { "gpulse" } else { "dcgm" }
    )
}

fn short_labels(h: usize, g: usize) -> String {
    format!(
        r#""gpu":"{g}","instance":"10.1.{}.{}:9400","job":"gpulse""#,
        h / 250,
        h % 250
    )
}

/// Utilization of GPU (h, g) at step i: a mix of starving, healthy and idle GPUs.
fn util(h: usize, g: usize, i: usize) -> f64 {
    match (h + g) % 4 {
        0 if i % 4 < 2 => 100.0,
        0 => 0.0,
        1 | 2 => 85.0 + (i % 7) as f64,
        _ => 0.0,
    }
}

fn matrix(
    step: f64,
    points: usize,
    start: f64,
    value: impl Fn(usize, usize, usize) -> f64,
) -> String {
    matrix_of(|_| true, step, points, start, value)
}

/// A matrix answer for the hosts `which` accepts.
fn matrix_of(
    which: impl Fn(usize) -> bool,
    step: f64,
    points: usize,
    start: f64,
    value: impl Fn(usize, usize, usize) -> f64,
) -> String {
    let mut s = String::with_capacity(HOSTS * GPUS * points * 24);
    s.push_str(r#"{"status":"success","data":{"resultType":"matrix","result":["#);
    let mut first = true;
    for h in (0..HOSTS).filter(|&h| which(h)) {
        for g in 0..GPUS {
            if !first {
                s.push(',');
            }
            first = false;
            let _ = write!(s, r#"{{"metric":{{{}}},"values":["#, labels(h, g));
            for i in 0..points {
                if i > 0 {
                    s.push(',');
                }
                let _ = write!(
                    s,
                    r#"[{:.3},"{}"]"#,
                    start + i as f64 * step,
                    value(h, g, i)
                );
            }
            s.push_str("]}");
        }
    }
    s.push_str("]}}");
    s
}

fn vector(now: f64, items: impl Iterator<Item = (String, f64)>) -> String {
    let mut s = String::new();
    s.push_str(r#"{"status":"success","data":{"resultType":"vector","result":["#);
    for (n, (l, v)) in items.enumerate() {
        if n > 0 {
            s.push(',');
        }
        let _ = write!(s, r#"{{"metric":{{{l}}},"value":[{now:.3},"{v}"]}}"#);
    }
    s.push_str("]}}");
    s
}

fn gpulse_gpus() -> impl Iterator<Item = (usize, usize)> {
    (0..HOSTS)
        .step_by(2)
        .flat_map(|h| (0..GPUS).map(move |g| (h, g)))
}

fn verdict_of(h: usize, g: usize) -> FindingKind {
    match (h + g) % 4 {
        0 => FindingKind::InputStarvation,
        1 | 2 => FindingKind::Healthy,
        _ => FindingKind::Idle,
    }
}

fn answers(grid: Grid, now: f64) -> Vec<(Query, String)> {
    let all = || (0..HOSTS).flat_map(|h| (0..GPUS).map(move |g| (h, g)));
    vec![
        (Query::Util, matrix(grid.step, POINTS, grid.start, util)),
        (
            Query::MemoryUsed,
            matrix(grid.step, POINTS, grid.start, |h, g, _| {
                ((h + g) % 140 * 1000) as f64
            }),
        ),
        (
            Query::Power,
            matrix(grid.step, POINTS, grid.start, |h, g, i| {
                100.0 + util(h, g, i) * 5.0
            }),
        ),
        (
            Query::LastSample,
            vector(now, all().map(|(h, g)| (labels(h, g), now - 0.4))),
        ),
        (Query::RecentRaw, matrix(1.0, 30, now - 29.0, util)),
        (
            Query::SampleCount,
            vector(now, all().map(|(h, g)| (labels(h, g), 300.0))),
        ),
        (
            // Asked only for the dcgm-exporter hosts (odd ones).
            Query::RawUtil,
            matrix_of(
                |h| h % 2 == 1,
                1.0,
                RAW_POINTS,
                now - RAW_POINTS as f64 + 1.0,
                util,
            ),
        ),
        (
            Query::MemoryFree,
            vector(
                now,
                all().map(|(h, g)| (labels(h, g), 143_000.0 - ((h + g) % 140 * 1000) as f64)),
            ),
        ),
        (
            Query::Verdict,
            vector(
                now,
                gpulse_gpus().flat_map(|(h, g)| {
                    FindingKind::ALL.into_iter().map(move |k| {
                        (
                            format!(r#"{},"verdict":"{}""#, short_labels(h, g), k.as_str()),
                            if k == verdict_of(h, g) { 1.0 } else { 0.0 },
                        )
                    })
                }),
            ),
        ),
        (
            Query::Findings,
            vector(
                now,
                gpulse_gpus().flat_map(|(h, g)| {
                    FindingKind::ALL.into_iter().map(move |k| {
                        let on = k == FindingKind::InputStarvation && verdict_of(h, g) == k;
                        (
                            format!(
                                r#"{},"kind":"{}","severity":"{}""#,
                                short_labels(h, g),
                                k.as_str(),
                                if on { "warn" } else { "none" }
                            ),
                            if on { 1.0 } else { 0.0 },
                        )
                    })
                }),
            ),
        ),
        (
            Query::LostFraction,
            vector(
                now,
                gpulse_gpus()
                    .filter(|&(h, g)| verdict_of(h, g) == FindingKind::InputStarvation)
                    .map(|(h, g)| {
                        (
                            format!(r#"{},"kind":"input_starvation""#, short_labels(h, g)),
                            0.5,
                        )
                    }),
            ),
        ),
        (
            Query::StarvationPeriod,
            vector(
                now,
                gpulse_gpus()
                    .filter(|&(h, g)| verdict_of(h, g) == FindingKind::InputStarvation)
                    .map(|(h, g)| {
                        (
                            format!(r#"{},"kind":"input_starvation""#, short_labels(h, g)),
                            4.0,
                        )
                    }),
            ),
        ),
        (
            Query::Up,
            vector(
                now,
                (0..HOSTS).map(|h| {
                    (
                        format!(
                            r#""instance":"10.1.{}.{}:9400","job":"x""#,
                            h / 250,
                            h % 250
                        ),
                        1.0,
                    )
                }),
            ),
        ),
    ]
}

fn ms(s: f64) -> String {
    format!("{:.1} ms", s * 1000.0)
}

/// CPU seconds this process has used (user + system), from /proc (ticks of 1/100 s).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|v| v.parse::<f64>().ok()))
        .sum();
    ticks / 100.0
}

/// Wall and CPU seconds of each phase of one refresh.
#[derive(Default, Clone, Copy)]
struct Phases {
    parse: f64,
    build: f64,
    render: f64,
    wall: f64,
    cpu: f64,
    parse_cpu: f64,
    build_cpu: f64,
}

fn refresh(
    bodies: &[(Query, String)],
    grid: Grid,
    now: f64,
    cache: &mut DetectorCache,
) -> (Phases, Vec<String>, usize) {
    let c0 = cpu_seconds();
    let t0 = Instant::now();
    let results = QueryResults {
        results: bodies
            .iter()
            .map(|(q, b)| (*q, parse_answer(200, b.as_bytes())))
            .collect(),
        took_s: 0.0,
    };
    let t1 = Instant::now();
    let c1 = cpu_seconds();
    let fleet = build(&results, grid, now, &DetectorConfig::default(), cache);
    let t2 = Instant::now();
    let c2 = cpu_seconds();
    let gpus = fleet.gpu_count();
    let state = FleetState {
        fleet: Some(Arc::new(fleet)),
        fetched_at: Some(now),
        ..Default::default()
    };
    let mut app = FleetApp::default();
    let lines = render_lines(&state, &mut app, "http://prometheus:9090", now, 200, 50);
    let t3 = Instant::now();
    // Paging: the next page after PgDn.
    app.apply(Action::PageDown, gpus);
    let _ = render_lines(&state, &mut app, "http://prometheus:9090", now, 200, 50);
    let phases = Phases {
        parse: (t1 - t0).as_secs_f64(),
        build: (t2 - t1).as_secs_f64(),
        render: (t3 - t2).as_secs_f64(),
        wall: (t3 - t0).as_secs_f64(),
        cpu: cpu_seconds() - c0,
        parse_cpu: c1 - c0,
        build_cpu: c2 - c1,
    };
    (phases, lines, gpus)
}

fn report(what: &str, runs: &mut [Phases]) {
    runs.sort_by(|a, b| a.wall.total_cmp(&b.wall));
    let m = runs[runs.len() / 2];
    println!(
        "{what}: parse {} ({:.2} s CPU) · build {} ({:.2} s CPU) · render one 200×50 page {} · total {} wall, {:.2} s CPU (median of {})",
        ms(m.parse),
        m.parse_cpu,
        ms(m.build),
        m.build_cpu,
        ms(m.render),
        ms(m.wall),
        m.cpu,
        runs.len()
    );
}

/// Serve `body` once per connection on loopback, in 32 KiB chunks (as Prometheus's Go server
/// sends a large answer), and time `PromClient` reading it.
fn http_read_seconds(body: &str) -> f64 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let body = body.to_string();
    std::thread::spawn(move || {
        if let Some(Ok(mut conn)) = listener.incoming().next() {
            let mut head = [0u8; 4096];
            let _ = conn.read(&mut head);
            let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            for piece in body.as_bytes().chunks(32 * 1024) {
                out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                out.extend_from_slice(piece);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"0\r\n\r\n");
            let _ = conn.write_all(&out);
        }
    });
    let client = gpulse::fleet::PromClient::new(
        &format!("http://127.0.0.1:{port}"),
        std::time::Duration::from_secs(30),
    )
    .expect("client");
    let t = Instant::now();
    let answer = client.instant("DCGM_FI_DEV_GPU_UTIL", NOW).expect("answer");
    let took = t.elapsed().as_secs_f64();
    assert_eq!(answer.series.len(), HOSTS * GPUS);
    took
}

fn main() {
    let grid = Grid::ending_at(NOW, 600.0, POINTS);
    let bodies = answers(grid, NOW);
    let later = NOW + 5.0;
    let grid_later = Grid::ending_at(later, 600.0, POINTS);
    let bodies_later = answers(grid_later, later);
    let bytes: usize = bodies.iter().map(|(_, b)| b.len()).sum();
    println!(
        "fleet: {HOSTS} hosts × {GPUS} GPUs ({} behind plain dcgm-exporters), {} answers, {:.1} MiB of JSON ({} points per sparkline, {} raw samples per GPU)",
        HOSTS / 2 * GPUS,
        bodies.len(),
        bytes as f64 / (1024.0 * 1024.0),
        POINTS,
        RAW_POINTS
    );
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    let mut gpus = 0;
    let mut first_line = String::new();
    for _ in 0..3 {
        let mut cache = DetectorCache::default();
        let (p, lines, n) = refresh(&bodies, grid, NOW, &mut cache);
        cold.push(p);
        gpus = n;
        first_line = lines.get(3).cloned().unwrap_or_default();
        // The next refresh, 5 s later: the detectors are fed only the 5 new scrapes.
        let (p, _, _) = refresh(&bodies_later, grid_later, later, &mut cache);
        warm.push(p);
    }
    let util = &bodies[0].1;
    println!(
        "HTTP: one {:.1} MiB chunked answer read and parsed by the client over loopback in {}",
        util.len() as f64 / (1024.0 * 1024.0),
        ms(http_read_seconds(util))
    );
    println!("GPUs in the model: {gpus}");
    println!("first GPU line: {}", first_line.trim_end());
    report(
        "first refresh (detectors start from 2 min of scrapes)",
        &mut cold,
    );
    report("each later refresh (5 s of new scrapes)", &mut warm);
    let worst = warm.iter().map(|p| p.cpu).fold(0.0, f64::max);
    println!(
        "target: a refresh ≤ 1 s of CPU — {} (worst later refresh {worst:.2} s CPU)",
        if worst <= 1.0 { "met" } else { "NOT met" }
    );
}
