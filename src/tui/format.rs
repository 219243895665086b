//! Numbers in words for the screen. Absent readings are shown as `—`, never as zero.

use ratatui::text::{Line, Span};

use crate::model::UnixTime;

/// What an absent reading looks like.
pub const ABSENT: &str = "—";

/// Bytes as GiB with one decimal (`81.2`), or `—`.
pub fn gib(bytes: Option<u64>) -> String {
    bytes.map_or_else(
        || ABSENT.to_string(),
        |b| format!("{:.1}", b as f64 / (1u64 << 30) as f64),
    )
}

/// Bytes with a binary unit (`512 MiB`, `81.2 GiB`), or `—`.
pub fn bytes(bytes: Option<u64>) -> String {
    let Some(b) = bytes else {
        return ABSENT.to_string();
    };
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 || v >= 100.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A rate in bytes per second with a decimal unit (`1.2 GB/s`), or `—`.
pub fn rate(bps: Option<f64>) -> String {
    let Some(v) = bps.filter(|v| v.is_finite()) else {
        return ABSENT.to_string();
    };
    const UNITS: [&str; 5] = ["B/s", "kB/s", "MB/s", "GB/s", "TB/s"];
    let mut v = v.max(0.0);
    let mut unit = 0;
    while v >= 1000.0 && unit < UNITS.len() - 1 {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 || v >= 100.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A percentage without decimals (`97%`), or `—`.
pub fn pct(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(|| ABSENT.to_string(), |v| format!("{v:.0}%"))
}

/// A number with no decimals and a unit (`612 W`), or `—`.
pub fn num(v: Option<f64>, unit: &str) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(|| ABSENT.to_string(), |v| format!("{v:.0}{unit}"))
}

/// `a/b unit` where either side may be absent (`1980/1980 MHz`, `—/700 W`).
pub fn of(a: Option<f64>, b: Option<f64>, unit: &str) -> String {
    let side = |v: Option<f64>| {
        v.filter(|v| v.is_finite())
            .map_or_else(|| ABSENT.to_string(), |v| format!("{v:.0}"))
    };
    format!("{}/{}{unit}", side(a), side(b))
}

/// Seconds for people: `250 ms`, `4.2 s`, `60 s`, `5 min`, `1 h`.
pub fn seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else if s < 10.0 {
        format!("{s:.1} s")
    } else if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        let m = s / 60.0;
        if (m - m.round()).abs() < 0.05 {
            format!("{m:.0} min")
        } else {
            format!("{m:.1} min")
        }
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// An age in whole minutes (`under 1 min`, `3 min`, `2.5 h`): for times that grow while on
/// screen, so that the text changes once a minute, not every tick.
pub fn minutes(s: f64) -> String {
    if s < 60.0 {
        "under 1 min".to_string()
    } else if s < 7200.0 {
        format!("{:.0} min", (s / 60.0).floor())
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// The time of day (UTC) of a Unix time, `HH:MM:SS`.
pub fn clock(t: UnixTime) -> String {
    if !t.is_finite() || t <= 0.0 {
        return "--:--:--".to_string();
    }
    let secs = (t.floor() as i64).rem_euclid(86_400);
    format!(
        "{:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// Cut `s` to at most `width` characters, ending in `…` when cut.
pub fn truncate(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(width - 1).collect();
    out.push('…');
    out
}

/// Cut `s` to at most `width` characters keeping its start and end, `…` in the middle: the end of
/// a command (its arguments, where jobs differ) survives.
pub fn shorten_middle(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    if width < 8 {
        return truncate(s, width);
    }
    let head = (width - 1) * 2 / 5;
    let tail = width - 1 - head;
    let mut out: String = s.chars().take(head).collect();
    out.push('…');
    out.extend(s.chars().skip(n - tail));
    out
}

/// `s` from character `skip` on, cut to `width` characters with `…` at either end where
/// something is hidden (a command scrolled sideways).
pub fn window_of(s: &str, skip: usize, width: usize) -> String {
    if skip == 0 {
        return truncate(s, width);
    }
    if width == 0 {
        return String::new();
    }
    let rest: String = s.chars().skip(skip + 1).collect();
    let mut out = String::from("…");
    out.push_str(&truncate(&rest, width - 1));
    out
}

/// `text` in lines of at most `width` characters, broken between words (a word longer than a
/// line is cut).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut len = 0;
    for word in text.split_whitespace() {
        let mut word: String = word.to_string();
        let mut wlen = word.chars().count();
        while wlen > width {
            if len > 0 {
                lines.push(std::mem::take(&mut line));
                len = 0;
            }
            let head: String = word.chars().take(width).collect();
            lines.push(head);
            word = word.chars().skip(width).collect();
            wlen -= width;
        }
        if len > 0 && len + 1 + wlen > width {
            lines.push(std::mem::take(&mut line));
            len = 0;
        }
        if len > 0 {
            line.push(' ');
            len += 1;
        }
        line.push_str(&word);
        len += wlen;
    }
    if len > 0 {
        lines.push(line);
    }
    lines
}

/// A line cut to `width` columns, ending in `…` when cut.
pub fn fit_line(line: Line<'static>, width: usize) -> Line<'static> {
    if line.width() <= width {
        return line;
    }
    let mut left = width.saturating_sub(1);
    let mut spans = Vec::new();
    for span in line.spans {
        if left == 0 {
            break;
        }
        let n = span.content.chars().count();
        if n <= left {
            left -= n;
            spans.push(span);
        } else {
            let cut: String = span.content.chars().take(left).collect();
            spans.push(Span::styled(cut, span.style));
            left = 0;
        }
    }
    if width > 0 {
        let style = spans.last().map(|s| s.style).unwrap_or_default();
        spans.push(Span::styled("…", style));
    }
    Line::from(spans).style(line.style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_is_a_dash_never_zero() {
        assert_eq!(gib(None), "—");
        assert_eq!(rate(None), "—");
        assert_eq!(pct(None), "—");
        assert_eq!(bytes(None), "—");
        assert_eq!(of(None, Some(700.0), " W"), "—/700 W");
        assert_eq!(pct(Some(0.0)), "0%");
    }

    #[test]
    fn units() {
        assert_eq!(gib(Some(3 << 30)), "3.0");
        assert_eq!(bytes(Some(512 << 20)), "512 MiB");
        assert_eq!(bytes(Some(1536 << 20)), "1.5 GiB");
        assert_eq!(rate(Some(1.25e9)), "1.2 GB/s");
        assert_eq!(rate(Some(2e5)), "200 kB/s");
        assert_eq!(seconds(0.25), "250 ms");
        assert_eq!(seconds(4.24), "4.2 s");
        assert_eq!(seconds(60.0), "60 s");
        assert_eq!(seconds(600.0), "10 min");
        assert_eq!(clock(3600.0 * 25.0 + 61.0), "01:01:01");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }

    #[test]
    fn cutting_keeps_what_matters() {
        assert_eq!(
            shorten_middle("python train.py --data /mnt/data/steps.csv --ckpt", 30),
            "python trai…a/steps.csv --ckpt"
        );
        assert_eq!(shorten_middle("short", 30), "short");
        assert_eq!(window_of("abcdefghij", 0, 5), "abcd…");
        assert_eq!(window_of("abcdefghij", 3, 5), "…efg…");
        assert_eq!(window_of("abcdefghij", 6, 5), "…hij");
        assert_eq!(
            wrap("raise num_workers (now 4) or make transforms cheaper", 20),
            ["raise num_workers", "(now 4) or make", "transforms cheaper"]
        );
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert!(wrap("", 4).is_empty());
        let l = fit_line(
            Line::from(vec![Span::raw("GPU 0 "), Span::raw("input starvation")]),
            12,
        );
        assert_eq!(l.width(), 12);
        assert_eq!(l.spans.last().map(|s| s.content.as_ref()), Some("…"));
    }
}
