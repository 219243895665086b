//! The lines of the plain `nvidia-smi` table that carry readings: the date line above it, and
//! each GPU's two rows.
//!
//! ```text
//! Tue Oct 29 19:01:23 2024
//! |   0  NVIDIA L40S                    On  |   00000000:4A:00.0 Off |                    0 |
//! | N/A   53C    P0            305W /  350W |   11948MiB /  46068MiB |     93%      Default |
//! ```
//! Older drivers draw narrower cells (`| 23%   34C    P8    17W / 250W |  0MiB / 11178MiB |`).

use super::cell::cell;
use super::MIB;
use crate::model::Metrics;

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const WEEKDAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/// A date line, `Tue Oct 29 19:01:23 2024` (or as `date` writes it, with a time zone name before
/// the year): the local date and the seconds into that day.
pub(super) fn date_line(line: &str) -> Option<((i16, i8, i8), f64)> {
    let t: Vec<&str> = line.split_ascii_whitespace().collect();
    if !(5..=6).contains(&t.len()) || !WEEKDAYS.contains(&t[0]) {
        return None;
    }
    let month = MONTHS.iter().position(|m| *m == t[1])? as i8 + 1;
    let day: i8 = t[2].parse().ok().filter(|d| (1..=31).contains(d))?;
    let secs = super::clock::time_of_day(t[3])?;
    let year: i16 = t[t.len() - 1].parse().ok().filter(|y| *y >= 1970)?;
    Some(((year, month, day), secs))
}

/// The cells between the `|` of a table row, when it has three.
fn cells(line: &str) -> Option<[&str; 3]> {
    let inner = line.strip_prefix('|')?.strip_suffix('|')?;
    let mut it = inner.split('|');
    let cells = [it.next()?, it.next()?, it.next()?];
    it.next().is_none().then_some(cells)
}

/// A GPU's first row: its index, name and bus id.
pub(super) fn gpu_line(line: &str) -> Option<(u32, String, String)> {
    let [who, bus, _] = cells(line)?;
    let mut words = who.split_ascii_whitespace();
    let index: u32 = words.next()?.parse().ok()?;
    let mut name: Vec<&str> = words.collect();
    // The last word is the persistence mode.
    name.pop()?;
    let bus_id = bus.split_ascii_whitespace().next()?;
    if !(bus_id.contains(':') && bus_id.contains('.')) {
        return None;
    }
    Some((index, name.join(" "), bus_id.to_string()))
}

/// A GPU's second row into `m`: fan, temperature, performance state, power and its cap, memory
/// used and total, utilization. `None` when the row is not one.
pub(super) fn readings_line(line: &str, m: &mut Metrics) -> Option<()> {
    let [state, memory, util] = cells(line)?;
    let words: Vec<&str> = state.split_ascii_whitespace().collect();
    let [fan, temp, perf, power @ ..] = words.as_slice() else {
        return None;
    };
    m.fan_pct = number(fan.strip_suffix('%').unwrap_or(fan))?.map(|x| x as u32);
    m.temp_c = number(temp.strip_suffix('C').unwrap_or(temp))?;
    m.pstate = perf.strip_prefix('P').and_then(|p| p.parse().ok());
    let power = power.join(" ");
    let (draw, cap) = pair(&power)?;
    m.power_w = number(draw.strip_suffix('W').unwrap_or(draw))?;
    m.power_limit_w = number(cap.strip_suffix('W').unwrap_or(cap))?;
    let (used, total) = pair(memory)?;
    m.mem_used_bytes = mib(used)?;
    m.mem_total_bytes = mib(total)?;
    let u = util.split_ascii_whitespace().next()?;
    m.util_gpu = number(u.strip_suffix('%').unwrap_or(u))?.map(|x| x.clamp(0.0, 100.0));
    Some(())
}

/// `a / b`, both sides trimmed (`N/A / N/A` too).
fn pair(s: &str) -> Option<(&str, &str)> {
    let (a, b) = s.split_once(" / ")?;
    Some((a.trim(), b.trim()))
}

/// A number, `Some(None)` for `N/A` (or `ERR!`, the table's mark of a failed read).
fn number(s: &str) -> Option<Option<f64>> {
    if s == "ERR!" {
        return Some(None);
    }
    cell(s).ok()
}

/// `11948MiB` as bytes.
fn mib(s: &str) -> Option<Option<u64>> {
    let n = s.strip_suffix("MiB").unwrap_or(s);
    Some(number(n)?.map(|x| (x * MIB) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_and_old_table_rows_read_alike() {
        assert_eq!(
            date_line("Tue Oct 29 19:01:23 2024       "),
            Some(((2024, 10, 29), 68_483.0))
        );
        assert_eq!(
            date_line("Mon Feb  9 00:38:34 CST 2026"),
            Some(((2026, 2, 9), 2_314.0))
        );
        assert_eq!(date_line("| NVIDIA-SMI 550.54.15"), None);
        let new = "|   0  NVIDIA L40S                    On  |   00000000:4A:00.0 Off |                    0 |";
        assert_eq!(
            gpu_line(new),
            Some((0, "NVIDIA L40S".into(), "00000000:4A:00.0".into()))
        );
        let old = "|   1  GeForce GTX 108...  Off  | 00000000:02:00.0 Off |                  N/A |";
        assert_eq!(gpu_line(old).map(|g| g.0), Some(1));
        let mut m = Metrics::default();
        readings_line(
            "| N/A   53C    P0            305W /  350W |   11948MiB /  46068MiB |     93%      Default |",
            &mut m,
        )
        .expect("a readings row");
        assert_eq!(
            (
                m.util_gpu,
                m.power_w,
                m.power_limit_w,
                m.temp_c,
                m.fan_pct,
                m.pstate
            ),
            (
                Some(93.0),
                Some(305.0),
                Some(350.0),
                Some(53.0),
                None,
                Some(0)
            )
        );
        assert_eq!(m.mem_used_bytes, Some(11948 * 1048576));
        let mut m = Metrics::default();
        readings_line(
            "| 23%   34C    P8    N/A /  N/A |      0MiB / 11178MiB |      0%      Default |",
            &mut m,
        )
        .expect("an old readings row");
        assert_eq!(
            (m.fan_pct, m.power_w, m.util_gpu),
            (Some(23), None, Some(0.0))
        );
        // The process table's rows are not a GPU's.
        assert_eq!(
            gpu_line("|    0   N/A  N/A   3794277      C   python                                      11942MiB |"),
            None
        );
    }
}
