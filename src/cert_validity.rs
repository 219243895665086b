//! When an X.509 certificate is valid: its `notBefore` and `notAfter`, read from its DER.
//!
//! The exporter serves whatever certificate it is given; a client refuses one that has expired
//! (or is not valid yet), and the scrape fails with a TLS error at the client's end only. So the
//! exporter warns at start. Only the fields needed are read, from the certificate's structure
//! (RFC 5280, §4.1): `Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL,
//! serialNumber, signature, issuer, validity SEQUENCE { notBefore, notAfter }, ... }, ... }`; any
//! other bytes read as "unknown", never as an error or a panic.

use jiff::Timestamp;

/// A certificate's period of validity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    pub not_before: Timestamp,
    pub not_after: Timestamp,
}

const SEQUENCE: u8 = 0x30;
const VERSION: u8 = 0xa0;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// The validity of the certificate `der`, when it can be read.
pub fn validity(der: &[u8]) -> Option<Validity> {
    let (tag, cert, _) = element(der)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, mut tbs, _) = element(cert)?;
    if tag != SEQUENCE {
        return None;
    }
    if tbs.first() == Some(&VERSION) {
        tbs = element(tbs)?.2;
    }
    // serialNumber, signature, issuer.
    for _ in 0..3 {
        tbs = element(tbs)?.2;
    }
    let (tag, period, _) = element(tbs)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, before, rest) = element(period)?;
    let not_before = time(tag, before)?;
    let (tag, after, _) = element(rest)?;
    let not_after = time(tag, after)?;
    Some(Validity {
        not_before,
        not_after,
    })
}

/// A warning about the certificate in `path` when `now` is outside its validity.
pub fn warning(path: &str, v: &Validity, now: Timestamp) -> Option<String> {
    let day = |t: Timestamp| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string();
    if now > v.not_after {
        Some(format!(
            "the certificate '{path}' expired on {}: clients refuse it; renew it and restart",
            day(v.not_after)
        ))
    } else if now < v.not_before {
        Some(format!(
            "the certificate '{path}' is not valid before {}: clients refuse it until then; check this machine's clock or the certificate",
            day(v.not_before)
        ))
    } else {
        None
    }
}

/// One DER element at the start of `bytes`: its tag, its content and what follows it.
fn element(bytes: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = bytes.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let digits = rest.get(..n)?;
        let len = digits
            .iter()
            .fold(0usize, |l, d| (l << 8) | usize::from(*d));
        (len, &rest[n..])
    };
    let content = rest.get(..len)?;
    Some((tag, content, &rest[len..]))
}

/// A `UTCTime` (`YYMMDDHHMMSSZ`, years 1950–2049) or `GeneralizedTime` (`YYYYMMDDHHMMSSZ`).
fn time(tag: u8, text: &[u8]) -> Option<Timestamp> {
    let text = std::str::from_utf8(text).ok()?.strip_suffix('Z')?;
    let (year, rest) = match (tag, text.len()) {
        (UTC_TIME, 12) => {
            let yy: i16 = text.get(..2)?.parse().ok()?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &text[2..])
        }
        (GENERALIZED_TIME, 14) => (text.get(..4)?.parse().ok()?, &text[4..]),
        _ => return None,
    };
    let num = |i: usize| -> Option<i8> { rest.get(i..i + 2)?.parse().ok() };
    let dt = jiff::civil::DateTime::new(year, num(0)?, num(2)?, num(4)?, num(6)?, num(8)?, 0);
    dt.ok()?
        .to_zoned(jiff::tz::TimeZone::UTC)
        .ok()
        .map(|z| z.timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A certificate's outline: the elements `validity` walks, with `times` as its validity.
    fn outline(times: &[u8]) -> Vec<u8> {
        let tlv = |tag: u8, content: &[u8]| {
            let mut out = vec![tag, content.len() as u8];
            out.extend_from_slice(content);
            out
        };
        let mut tbs = tlv(VERSION, &tlv(0x02, &[2]));
        tbs.extend(tlv(0x02, &[1, 2, 3]));
        tbs.extend(tlv(SEQUENCE, &[]));
        tbs.extend(tlv(SEQUENCE, &[]));
        tbs.extend(tlv(SEQUENCE, times));
        tlv(SEQUENCE, &tlv(SEQUENCE, &tbs))
    }

    #[test]
    fn reads_both_time_forms_and_says_when_a_certificate_is_out_of_date() {
        let mut times = vec![UTC_TIME, 13];
        times.extend_from_slice(b"200101000000Z");
        times.extend_from_slice(&[GENERALIZED_TIME, 15]);
        times.extend_from_slice(b"20500102030405Z");
        let v = validity(&outline(&times)).expect("readable");
        assert_eq!(v.not_before.to_string(), "2020-01-01T00:00:00Z");
        assert_eq!(v.not_after.to_string(), "2050-01-02T03:04:05Z");
        let at = |s: &str| s.parse::<Timestamp>().expect("time");
        assert_eq!(warning("c.crt", &v, at("2030-01-01T00:00:00Z")), None);
        let late = warning("c.crt", &v, at("2051-01-01T00:00:00Z")).expect("expired");
        assert!(
            late.contains("expired on 2050-01-02 03:04:05 UTC"),
            "{late}"
        );
        let early = warning("c.crt", &v, at("2019-01-01T00:00:00Z")).expect("early");
        assert!(early.contains("not valid before 2020-01-01"), "{early}");
    }

    #[test]
    fn any_other_bytes_read_as_unknown() {
        let mut times = vec![UTC_TIME, 13];
        times.extend_from_slice(b"200101000000Z");
        times.extend_from_slice(&[UTC_TIME, 13]);
        times.extend_from_slice(b"201301000000Z");
        let whole = outline(&times);
        for cut in 0..whole.len() {
            assert_eq!(validity(&whole[..cut]), None, "cut at {cut}");
        }
        assert_eq!(validity(&whole), None, "month 13");
        assert_eq!(validity(&[SEQUENCE, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(validity(&[SEQUENCE, 0x89]), None);
    }
}
