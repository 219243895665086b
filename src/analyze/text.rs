//! The report for people: per GPU the verdict, statistics, a strip of the verdict timeline and
//! the findings with their fixes.

use std::fmt::Write;

use super::report::{GpuReport, Report};
use crate::model::{FindingKind, UnixTime};
use crate::printable;
use crate::timeline::{dominant_verdict, VerdictSegment};

/// Characters the verdict strip spans.
const STRIP_WIDTH: usize = 60;

/// A Unix time as local wall-clock time, `2026-12-02 13:28:37.1`.
pub fn local_time(t: UnixTime) -> String {
    let secs = t.floor();
    let tenth = (((t - secs) * 10.0).floor() as i64).clamp(0, 9);
    match jiff::Timestamp::from_second(secs as i64) {
        Ok(ts) => format!(
            "{}.{tenth}",
            ts.to_zoned(jiff::tz::TimeZone::system())
                .strftime("%Y-%m-%d %H:%M:%S")
        ),
        Err(_) => format!("{t:.1}"),
    }
}

fn opt_pct(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.0}%"))
        .unwrap_or_else(|| "n/a".into())
}

/// The character a verdict is drawn with in the strip.
pub fn verdict_mark(kind: FindingKind) -> char {
    match kind {
        FindingKind::Pending => '?',
        FindingKind::Idle => '.',
        FindingKind::Healthy => '=',
        // Busy, but slower than it could be: a thinner bar than healthy.
        FindingKind::TensorCoresIdle => '-',
        FindingKind::Stalling => '~',
        FindingKind::InputStarvation => 'S',
        FindingKind::ErraticStalls => 'E',
        FindingKind::HostBound => 'H',
        FindingKind::PeriodicStall => 'P',
        FindingKind::BusyButIdle => 'B',
        FindingKind::TransferBound => 'T',
        FindingKind::MemoryIdle => 'M',
        FindingKind::MemoryPressure => 'O',
        FindingKind::Throttled => 'C',
        FindingKind::PcieDegraded => 'L',
        FindingKind::SingleGpuBusy => '1',
        FindingKind::Imbalance => 'I',
        FindingKind::GpuFault => 'X',
    }
}

/// The timeline as a strip of [`STRIP_WIDTH`] characters, each the verdict covering most of its
/// share of the span, and a legend of the verdicts drawn. `None` without a span.
pub fn verdict_strip(segments: &[VerdictSegment]) -> Option<(String, String, f64)> {
    let (first, last) = (segments.first()?, segments.last()?);
    let span = last.end - first.start;
    if span <= 0.0 {
        return None;
    }
    let cell = span / STRIP_WIDTH as f64;
    let mut strip = String::new();
    let mut drawn: Vec<FindingKind> = Vec::new();
    for i in 0..STRIP_WIDTH {
        let from = first.start + i as f64 * cell;
        let kind = dominant_verdict(segments, from, from + cell)?;
        strip.push(verdict_mark(kind));
        if !drawn.contains(&kind) {
            drawn.push(kind);
        }
    }
    let legend = drawn
        .iter()
        .map(|k| format!("{} {}", verdict_mark(*k), k.title()))
        .collect::<Vec<_>>()
        .join("  ");
    Some((strip, legend, cell))
}

/// One GPU's part of the text report.
fn gpu_text(o: &mut String, g: &GpuReport) {
    let s = &g.stats;
    let name = if g.name.is_empty() {
        String::new()
    } else {
        format!(" ({})", printable::text(&g.name))
    };
    let _ = writeln!(o, "\nGPU {}{name}: {}", g.index, g.verdict);
    let _ = writeln!(
        o,
        "  utilization mean {} p5 {} p95 {}, idle {} of the time, time lost {:.1} s",
        opt_pct(s.util_mean),
        opt_pct(s.util_p5),
        opt_pct(s.util_p95),
        opt_pct(s.idle_fraction.map(|x| x * 100.0)),
        s.time_lost_s
    );
    if let Some((strip, legend, cell)) = verdict_strip(&g.timeline) {
        let _ = writeln!(o, "  timeline |{strip}| (1 character = {cell:.1} s)");
        let _ = writeln!(o, "           {legend}");
    }
    for limit in &g.limits {
        let _ = writeln!(o, "  cannot judge: {limit}");
    }
    if g.findings.is_empty() {
        let _ = writeln!(o, "  no findings");
    }
    for f in &g.findings {
        let until = f.end.map(local_time).unwrap_or_else(|| "end".into());
        let _ = writeln!(
            o,
            "  [{}] {} {} → {} (detected {}): {}",
            f.severity.as_str(),
            f.kind.title(),
            local_time(f.start),
            until,
            local_time(f.detected_at),
            f.summary
        );
        for note in &f.evidence.notes {
            let _ = writeln!(o, "      {note}");
        }
        if !f.advice.is_empty() {
            let _ = writeln!(o, "      fix: {}", f.advice);
        }
    }
}

/// The report for people (the warnings go to stderr apart).
pub fn render_text(r: &Report) -> String {
    let mut o = String::new();
    let when = match (r.start, r.end) {
        (Some(s), Some(e)) => format!("{} → {} ({:.0} s)", local_time(s), local_time(e), e - s),
        _ => "no samples".into(),
    };
    let _ = writeln!(
        o,
        "{}: {} GPU(s), {} samples, {when} [{}]",
        r.file,
        r.gpus.len(),
        r.samples,
        r.source
    );
    for a in &r.assumptions {
        let _ = writeln!(o, "  {a}");
    }
    for g in &r.gpus {
        gpu_text(&mut o, g);
    }
    if !r.gpus.is_empty() {
        let _ = writeln!(o, "\nledger");
    }
    for g in &r.gpus {
        for (i, line) in g.ledger.text().iter().enumerate() {
            let lead = if i == 0 {
                format!("  GPU {}: ", g.index)
            } else {
                "    ".into()
            };
            let _ = writeln!(o, "{lead}{line}");
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::timeline_of;

    #[test]
    fn the_strip_draws_each_verdict_where_it_held_with_a_legend() {
        let s = timeline_of(
            [
                (0.0, FindingKind::Pending),
                (6.0, FindingKind::Healthy),
                (30.0, FindingKind::InputStarvation),
            ],
            60.0,
        );
        let (strip, legend, cell) = verdict_strip(&s).expect("a strip");
        assert_eq!(strip.chars().count(), STRIP_WIDTH);
        assert_eq!(cell, 1.0);
        assert_eq!(&strip[..6], "??????");
        assert_eq!(&strip[6..30], "=".repeat(24));
        assert_eq!(&strip[30..], "S".repeat(30));
        assert_eq!(legend, "? no verdict yet  = healthy  S input starvation");
        assert!(verdict_strip(&[]).is_none());
    }
}
