//! Reading a request head: the request line and the headers the exporter acts on.

/// A parsed request head.
#[derive(Debug, PartialEq)]
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    /// The connection stays open after the response.
    pub keep_alive: bool,
    pub has_body: bool,
    /// The `Authorization` header's value.
    pub authorization: Option<&'a str>,
}

/// Why a request head is rejected: the status and a line of text for the body.
#[derive(Debug, PartialEq)]
pub struct Reject(pub u16, pub &'static str);

/// Parse a request head (everything before the blank line).
pub fn parse_head(head: &[u8]) -> Result<Request<'_>, Reject> {
    let text = std::str::from_utf8(head).map_err(|_| Reject(400, "request is not text"))?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Reject(400, "malformed request line"));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(Reject(400, "malformed method"));
    }
    let http11 = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => return Err(Reject(400, "unsupported HTTP version")),
    };
    if !target.starts_with('/') || target.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(Reject(400, "malformed request target"));
    }
    let mut keep_alive = http11;
    let mut has_body = false;
    let mut authorization = None;
    for h in lines {
        if h.is_empty() {
            continue;
        }
        let Some((name, value)) = h.split_once(':') else {
            return Err(Reject(400, "malformed header"));
        };
        if name.is_empty() || name.bytes().any(|b| b <= b' ' || b >= 0x7f) {
            return Err(Reject(400, "malformed header name"));
        }
        let value = value.trim();
        if name.eq_ignore_ascii_case("connection") {
            if value.eq_ignore_ascii_case("close") {
                keep_alive = false;
            } else if value.eq_ignore_ascii_case("keep-alive") {
                keep_alive = true;
            }
        } else if name.eq_ignore_ascii_case("authorization") {
            authorization = Some(value);
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            || (name.eq_ignore_ascii_case("content-length") && value != "0")
        {
            has_body = true;
        }
    }
    let path = target.split('?').next().unwrap_or(target);
    Ok(Request {
        method,
        path,
        keep_alive,
        has_body,
        authorization,
    })
}

pub fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_scrape() {
        let r = parse_head(b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: */*").expect("valid");
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/metrics");
        assert!(r.keep_alive);
        let r = parse_head(b"GET / HTTP/1.0").expect("valid");
        assert!(!r.keep_alive);
        let r = parse_head(b"GET / HTTP/1.1\r\nConnection: close").expect("valid");
        assert!(!r.keep_alive);
        assert_eq!(r.authorization, None);
        let r = parse_head(b"GET / HTTP/1.1\r\nauthorization:  Basic YTpi ").expect("valid");
        assert_eq!(r.authorization, Some("Basic YTpi"));
    }

    #[test]
    fn rejects_malformed_heads() {
        assert_eq!(
            parse_head(b"GARBAGE").map(|_| ()),
            Err(Reject(400, "malformed request line"))
        );
        assert!(parse_head(b"GET /metrics HTTP/2.0").is_err());
        assert!(parse_head(b"GET metrics HTTP/1.1").is_err());
        assert!(parse_head(b"get / HTTP/1.1").is_err());
        assert!(parse_head(b"GET / HTTP/1.1\r\nno colon here").is_err());
        assert!(parse_head(b"GET /\x01 HTTP/1.1").is_err());
        assert!(parse_head(&[0xff, 0xfe, b' ', b'/']).is_err());
        assert!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: 5")
                .expect("parses")
                .has_body
        );
    }
}
