//! One cell's value: numbers with or without units, text, hexadecimal masks; the not-available
//! markers (`[N/A]`, `[Not Supported]`, `N/A`, and dmon's `-`) are absent.

/// A text cell; `None` for the not-available markers.
pub(super) fn text(v: &str) -> Option<String> {
    let v = v.trim();
    (!v.is_empty() && !v.starts_with('[') && !v.eq_ignore_ascii_case("n/a")).then(|| v.to_string())
}

/// A `0x`-prefixed hexadecimal cell.
pub(super) fn hex(v: &str) -> Option<u64> {
    let v = v.trim();
    let digits = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X"))?;
    u64::from_str_radix(digits, 16).ok()
}

/// Powers of ten that are exact in an `f64`.
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// A numeric cell: `Ok(None)` for the not-available markers, `Err` for garbage.
pub(super) fn cell(v: &str) -> Result<Option<f64>, ()> {
    // The common shape first: spaces, digits with at most one '.', then the end or a space
    // before the unit. Anything else takes the general path below (same values).
    let b = v.as_bytes();
    let mut i = b.iter().take_while(|&&c| c == b' ').count();
    let (mut int, mut digits, mut frac) = (0u64, 0usize, 0usize);
    let mut seen_point = false;
    while let Some(&c) = b.get(i) {
        if c.is_ascii_digit() {
            int = int.wrapping_mul(10).wrapping_add((c - b'0') as u64);
            digits += 1;
            frac += usize::from(seen_point);
        } else if c == b'.' && !seen_point && digits > 0 {
            seen_point = true;
        } else {
            break;
        }
        i += 1;
    }
    let ends = b.get(i).is_none_or(|&c| c == b' ');
    if ends && digits > 0 && digits <= 15 && (!seen_point || frac > 0) {
        return Ok(Some(int as f64 / POW10[frac]));
    }
    cell_general(v)
}

/// [`cell`] for any shape of cell.
fn cell_general(v: &str) -> Result<Option<f64>, ()> {
    let v = v.trim();
    let num = match v.as_bytes().iter().position(|&b| b == b' ') {
        Some(end) => &v[..end],
        None => v,
    };
    if num.is_empty() || num == "-" || num.starts_with('[') || num.eq_ignore_ascii_case("n/a") {
        return Ok(None);
    }
    // Most cells are small integers ("31 %", "7288 MiB") or short decimals ("436.07 W"): read
    // those without the float parser. With at most 15 digits the digits are an exact integer and
    // one division by an exact power of ten rounds once, as the parser does (the same value).
    let b = num.as_bytes();
    if b.len() <= 16 {
        let (mut int, mut point, mut digits) = (0u64, None, 0usize);
        let mut plain = true;
        for (i, &c) in b.iter().enumerate() {
            if c.is_ascii_digit() {
                int = int * 10 + (c - b'0') as u64;
                digits += 1;
            } else if c == b'.' && point.is_none() && i > 0 && i + 1 < b.len() {
                point = Some(i);
            } else {
                plain = false;
                break;
            }
        }
        if plain && digits <= 15 {
            let frac = point.map_or(0, |p| b.len() - p - 1);
            return Ok(Some(int as f64 / POW10[frac]));
        }
    }
    match num.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(Some(x)),
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_read_without_the_float_parser_equal_the_parser_bit_for_bit() {
        let mut cases: Vec<String> = [
            "0",
            "7",
            "100",
            "436.07",
            "0.5",
            "00.50",
            "123456789012345",
            "1234567890.12345",
            "99999999999.9999",
            "5.",
            ".5",
            "1e3",
            "-3.5",
            "12345678901234567",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for i in 0..20_000u32 {
            cases.push(format!("{}.{:02}", i / 7, i % 100));
            cases.push(format!("{}.{:03}", i * 13, i % 1000));
        }
        for c in &cases {
            let want = c.parse::<f64>().ok().filter(|x| x.is_finite());
            for shape in [
                format!(" {c} W"),
                c.to_string(),
                format!("  {c}"),
                format!("\t{c} %"),
            ] {
                let got = cell(&shape).ok().flatten();
                assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{shape:?}");
                assert_eq!(cell(&shape), cell_general(&shape), "{shape:?}");
            }
        }
        for odd in [
            "",
            " ",
            "1 2",
            "12a",
            "1.2.3",
            "[Not Supported]",
            " n/A",
            "7 MiB ",
        ] {
            assert_eq!(cell(odd), cell_general(odd), "{odd:?}");
        }
        assert_eq!(cell(" [N/A]"), Ok(None));
        assert_eq!(cell("N/A"), Ok(None));
        assert_eq!(cell("1.2.3 W"), Err(()));
    }
}
