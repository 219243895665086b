//! One GPU of the fleet in detail: its history and its findings.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use crate::fleet::{FleetGpu, FleetLedger, Trace};

use super::view::{ago, memory_text, verdict_text, FleetView};

/// ```text
/// node-a · GPU 0 · NVIDIA H200 · GPU-1234… · 127.0.0.1:9401 (gpulse)
/// verdict: input starvation · 41% util · 70/141G · 350 W · scraped every 1 s
/// ┌ utilization, last 2 min, every scrape ──────────────────────────────┐
/// │▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁▃█▁│
/// └─────────────────────────────────────────────────────────────────────┘
/// ┌ utilization, 10 min ┐ ┌ memory used ┐ ┌ power ┐   (stacked)
/// findings: • input starvation (warn): a dip every 1.7 s, 60% of the time lost — advice
/// Over the last 24.00 h: 2.10 h lost of 24.00 h watched, most to input starvation (--range)
/// notes:    • scrape interval 15 s: …
/// ```
pub fn render(view: &FleetView<'_>, g: &FleetGpu, area: Rect, buf: &mut Buffer) {
    heading(view, g, area, buf);
    // The text (findings and notes) gets the lines it needs, the charts the rest.
    let text = findings_text(g);
    let text_lines = (text.lines().count() as u16 + 1).clamp(3, area.height / 2);
    let chart_h = area.height.saturating_sub(2 + text_lines);
    let raw = raw_trace(g);
    let y = draw_charts(view, charts(g, raw.as_ref()), area, chart_h, buf);
    let rect = Rect::new(area.x, y, area.width, area.bottom().saturating_sub(y));
    Paragraph::new(text)
        .wrap(Wrap { trim: false })
        .render(rect, buf);
}

/// The two top lines: who the GPU is, then its verdict and newest readings in the verdict's style.
fn heading(view: &FleetView<'_>, g: &FleetGpu, area: Rect, buf: &mut Buffer) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let title = format!(
        "{} · GPU {} · {} · {} · {} ({})",
        g.hostname,
        g.gpu,
        g.model.as_deref().unwrap_or("unknown model"),
        g.uuid.as_deref().unwrap_or("no UUID"),
        g.instance,
        g.source.as_str()
    );
    buf.set_stringn(area.x, area.y, title, area.width as usize, bold);
    let mut facts = vec![format!("verdict: {}", verdict_text(g))];
    if let Some(u) = g.utilization_gpu {
        facts.push(format!("{u:.0}% util"));
    }
    facts.push(format!("memory {}", memory_text(g)));
    if let Some(p) = g.power_watts {
        facts.push(format!("{p:.0} W"));
    }
    if let Some(iv) = g.scrape_interval_seconds {
        facts.push(format!("scraped every {iv:.1} s"));
    }
    if let Some(a) = g.last_sample_age_seconds {
        facts.push(format!("newest sample {} ago", ago(a)));
    }
    buf.set_stringn(
        area.x,
        area.y + 1,
        facts.join(" · "),
        area.width as usize,
        view.verdict_style(g),
    );
}

/// The charts to draw, top to bottom: label, trace and the value at the top of the chart (none
/// to scale to the trace). The every-scrape utilization leads where raw samples exist.
fn charts<'t>(g: &'t FleetGpu, raw: Option<&'t Trace>) -> Vec<(String, &'t Trace, Option<f64>)> {
    let span = |t: &Trace| ago(t.step * t.values.len().saturating_sub(1) as f64);
    let mut c = Vec::new();
    if let Some(r) = raw {
        c.push((
            format!(" utilization, last {}, every scrape ", span(r)),
            r,
            Some(100.0),
        ));
    }
    c.push((
        format!(" utilization, last {} ", span(&g.util)),
        &g.util,
        Some(100.0),
    ));
    c.push((
        format!(" memory used, last {} ", span(&g.memory_used)),
        &g.memory_used,
        g.memory_total_bytes.map(|t| t as f64),
    ));
    c.push((format!(" power, last {} ", span(&g.power)), &g.power, None));
    c
}

/// The charts stacked in the `chart_h` lines under the heading, each at least 3 lines high; the
/// ones that do not fit are left out. Returns the line below the last chart drawn.
fn draw_charts(
    view: &FleetView<'_>,
    charts: Vec<(String, &Trace, Option<f64>)>,
    area: Rect,
    chart_h: u16,
    buf: &mut Buffer,
) -> u16 {
    let mut y = area.y + 2;
    let each = (chart_h / charts.len() as u16).max(3);
    for (label, trace, max) in charts {
        if y + each > area.y + 2 + chart_h {
            break;
        }
        let rect = Rect::new(area.x, y, area.width, each);
        let block = Block::default().borders(Borders::ALL).title(label);
        let inner = block.inner(rect);
        block.render(rect, buf);
        view.spark(
            trace,
            max,
            inner,
            view.style(Style::default().fg(Color::Cyan)),
            buf,
        );
        y += each;
    }
    y
}

/// Findings with their summaries and advice, then notes.
fn findings_text(g: &FleetGpu) -> String {
    let mut text = String::new();
    if g.findings.is_empty() {
        text.push_str("No active findings.\n");
    } else {
        text.push_str("Findings:\n");
        for f in &g.findings {
            text.push_str(&format!(
                "• {} ({}): {}",
                f.kind.title(),
                f.severity.as_str(),
                f.summary
            ));
            if !f.advice.is_empty() {
                text.push_str(&format!(" → {}", f.advice));
            }
            text.push('\n');
        }
    }
    if let Some(l) = &g.ledger {
        text.push_str(&range_text(l));
    }
    if !g.jobs_lost.is_empty() {
        use crate::ledger::report::duration;
        let jobs: Vec<String> = g
            .jobs_lost
            .iter()
            .map(|(job, s)| format!("{job} {}", duration(*s)))
            .collect();
        text.push_str(&format!("Jobs that lost time here: {}\n", jobs.join(", ")));
    }
    if !g.notes.is_empty() {
        text.push_str("Notes:\n");
        for n in &g.notes {
            text.push_str(&format!("• {n}\n"));
        }
    }
    text
}

/// What the GPU lost over `--range`, in one line.
fn range_text(l: &FleetLedger) -> String {
    use crate::ledger::report::{duration, energy};
    let mut line = format!(
        "Over the last {}: {} lost",
        duration(l.range_s),
        duration(l.lost_gpu_seconds)
    );
    if let Some(booked) = l.gpu_seconds.filter(|b| *b > 0.0) {
        line.push_str(&format!(" of {} watched", duration(booked)));
    }
    if let Some(k) = l.top_lost_kind {
        line.push_str(&format!(", most to {}", k.title()));
    }
    if let Some(j) = l.energy_joules {
        line.push_str(&format!("; {} drawn", energy(j)));
    }
    line.push('\n');
    line
}

/// The raw (per-scrape) utilization samples as an evenly spaced trace, if there are enough.
fn raw_trace(g: &FleetGpu) -> Option<Trace> {
    let iv = g.scrape_interval_seconds?;
    let first = g.raw_util.first()?.0;
    let last = g.raw_util.last()?.0;
    let len = ((last - first) / iv).round() as usize + 1;
    if !(2..=10_000).contains(&len) {
        return None;
    }
    let mut t = Trace::on_grid(first, iv, len);
    t.fill(&g.raw_util);
    Some(t)
}

/// The key help, over the screen.
pub fn render_help(view: &FleetView<'_>, area: Rect, buf: &mut Buffer) {
    let lines = "↑/k ↓/j   select a GPU\n\
                 PgUp/b PgDn/space   page\n\
                 Home/g End/G   first / last GPU\n\
                 Enter   history and findings of the GPU\n\
                 Esc   back to the list\n\
                 r   refresh now\n\
                 q   quit\n\n\
                 Order: starving, erratic, throttled, memory held idle; other warnings;\n\
                 no recent data; healthy; idle.";
    let w = area.width.min(76);
    let h = area.height.min(13);
    let rect = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    Clear.render(rect, buf);
    Paragraph::new(lines)
        .block(Block::default().borders(Borders::ALL).title(" keys "))
        .style(view.style(Style::default()))
        .render(rect, buf);
}
