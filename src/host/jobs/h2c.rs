//! One unary gRPC call over HTTP/2 in clear text on a Unix socket: the least of RFC 9113 and
//! RFC 7541 the kubelet's pod-resources socket needs, so that no gRPC stack is linked for it.
//!
//! The request's headers are encoded with static-table indices and literals (no Huffman, no
//! dynamic table); the answer's headers are not decoded (only its DATA frames are read), so a
//! gRPC error shows as an answer without a message. The client opens its windows to 2³¹−1 so the
//! server never waits on flow control, answers the server's SETTINGS and PINGs, and stops at the
//! stream's end, a reset, a GOAWAY, [`MAX_ANSWER`] bytes or the socket's timeout.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// The most bytes of answer read.
pub const MAX_ANSWER: usize = 16 << 20;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const MAX_WINDOW: u32 = 0x7fff_ffff;
const STREAM: u32 = 1;

/// Why a call gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("cannot reach the socket: {0}")]
    Connect(std::io::Error),
    #[error("the connection failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the server ended the call: {0}")]
    Refused(String),
    #[error("the answer is malformed: {0}")]
    Malformed(String),
}

/// Call gRPC method `path` (`/package.Service/Method`) on the socket at `socket` with the encoded
/// request message `request`, and return the answer's message (empty when the server sent none).
pub fn unary_call(
    socket: &Path,
    path: &str,
    request: &[u8],
    timeout: Duration,
) -> Result<Vec<u8>, CallError> {
    let mut stream = UnixStream::connect(socket).map_err(CallError::Connect)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut out = PREFACE.to_vec();
    // INITIAL_WINDOW_SIZE = 2^31-1, ENABLE_PUSH = 0.
    let mut settings = Vec::new();
    settings.extend_from_slice(&4u16.to_be_bytes());
    settings.extend_from_slice(&MAX_WINDOW.to_be_bytes());
    settings.extend_from_slice(&2u16.to_be_bytes());
    settings.extend_from_slice(&0u32.to_be_bytes());
    frame(&mut out, SETTINGS, 0, 0, &settings);
    frame(
        &mut out,
        WINDOW_UPDATE,
        0,
        0,
        &(MAX_WINDOW - 65_535).to_be_bytes(),
    );
    frame(
        &mut out,
        HEADERS,
        END_HEADERS,
        STREAM,
        &request_headers(path),
    );
    let mut message = vec![0u8];
    message.extend_from_slice(&(request.len() as u32).to_be_bytes());
    message.extend_from_slice(request);
    frame(&mut out, DATA, END_STREAM, STREAM, &message);
    stream.write_all(&out)?;
    let body = read_answer(&mut stream)?;
    grpc_message(&body)
}

/// Append one frame.
fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = payload.len() as u32;
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// The request's header block: `:method POST`, `:scheme http` (static indices 3 and 6), and
/// literals without indexing for `:path`, `:authority`, `content-type` and `te`.
fn request_headers(path: &str) -> Vec<u8> {
    let mut h = vec![0x83, 0x86];
    let string = |h: &mut Vec<u8>, s: &str| {
        integer(h, 0x00, 7, s.len());
        h.extend_from_slice(s.as_bytes());
    };
    integer(&mut h, 0x00, 4, 4);
    string(&mut h, path);
    integer(&mut h, 0x00, 4, 1);
    string(&mut h, "localhost");
    integer(&mut h, 0x00, 4, 31);
    string(&mut h, "application/grpc");
    h.push(0x00);
    string(&mut h, "te");
    string(&mut h, "trailers");
    h
}

/// An HPACK integer with an `n`-bit prefix after the bits in `first`.
fn integer(out: &mut Vec<u8>, first: u8, n: u32, value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// Read frames until the stream ends; the DATA of stream 1, joined.
fn read_answer(stream: &mut UnixStream) -> Result<Vec<u8>, CallError> {
    let mut body = Vec::new();
    loop {
        let mut head = [0u8; 9];
        stream.read_exact(&mut head)?;
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & MAX_WINDOW;
        if len > MAX_ANSWER || body.len() + len > MAX_ANSWER {
            return Err(CallError::Malformed(format!(
                "more than {MAX_ANSWER} bytes"
            )));
        }
        let mut payload = vec![0u8; len];
        stream.read_exact(&mut payload)?;
        match kind {
            SETTINGS if flags & ACK == 0 => {
                let mut ack = Vec::new();
                frame(&mut ack, SETTINGS, ACK, 0, &[]);
                stream.write_all(&ack)?;
            }
            PING if flags & ACK == 0 => {
                let mut pong = Vec::new();
                frame(&mut pong, PING, ACK, 0, &payload);
                stream.write_all(&pong)?;
            }
            GOAWAY => return Err(CallError::Refused("GOAWAY".into())),
            RST_STREAM if id == STREAM => {
                return Err(CallError::Refused("the stream was reset".into()))
            }
            DATA if id == STREAM => body.extend_from_slice(unpadded(&payload, flags)?),
            _ => {}
        }
        if id == STREAM && flags & END_STREAM != 0 && matches!(kind, DATA | HEADERS) {
            return Ok(body);
        }
    }
}

/// A DATA payload without its padding.
fn unpadded(payload: &[u8], flags: u8) -> Result<&[u8], CallError> {
    if flags & PADDED == 0 {
        return Ok(payload);
    }
    let pad = usize::from(
        *payload
            .first()
            .ok_or_else(|| CallError::Malformed("a padded frame without its pad length".into()))?,
    );
    payload
        .get(1..payload.len().saturating_sub(pad))
        .ok_or_else(|| CallError::Malformed("padding longer than the frame".into()))
}

/// The message of a gRPC body: a 5-byte prefix (compressed flag, length) and the message.
fn grpc_message(body: &[u8]) -> Result<Vec<u8>, CallError> {
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let (prefix, rest) = body
        .split_at_checked(5)
        .ok_or_else(|| CallError::Malformed("a gRPC message shorter than its prefix".into()))?;
    if prefix[0] != 0 {
        return Err(CallError::Malformed("a compressed gRPC message".into()));
    }
    let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
    rest.get(..len)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| CallError::Malformed("a gRPC message cut short".into()))
}

/// A fake server for tests: answers one call on `listener` with `message`, in DATA frames of at
/// most `chunk` bytes, after a SETTINGS frame and a PING.
#[cfg(any(test, feature = "testing"))]
pub fn serve_once(listener: std::os::unix::net::UnixListener, message: Vec<u8>, chunk: usize) {
    let (mut conn, _) = listener.accept().expect("accept");
    let mut preface = [0u8; 24];
    conn.read_exact(&mut preface).expect("preface");
    assert_eq!(&preface, PREFACE);
    // Read the client's frames up to its END_STREAM DATA.
    loop {
        let mut head = [0u8; 9];
        conn.read_exact(&mut head).expect("head");
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0u8; len];
        conn.read_exact(&mut payload).expect("payload");
        if head[3] == DATA && head[4] & END_STREAM != 0 {
            break;
        }
    }
    let mut out = Vec::new();
    frame(&mut out, SETTINGS, 0, 0, &[]);
    frame(&mut out, PING, 0, 0, &[7; 8]);
    frame(&mut out, HEADERS, END_HEADERS, STREAM, &[0x88]);
    let mut body = vec![0u8];
    body.extend_from_slice(&(message.len() as u32).to_be_bytes());
    body.extend_from_slice(&message);
    for part in body.chunks(chunk.max(1)) {
        frame(&mut out, DATA, 0, STREAM, part);
    }
    frame(&mut out, HEADERS, END_HEADERS | END_STREAM, STREAM, &[0x40]);
    conn.write_all(&out).expect("answer");
    // Drain the client's ACKs until it closes.
    let mut sink = Vec::new();
    let _ = conn.read_to_end(&mut sink);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hpack_integers_use_their_prefix_then_continuation_bytes() {
        let mut out = Vec::new();
        integer(&mut out, 0x00, 4, 31);
        assert_eq!(out, [0x0f, 0x10]);
        out.clear();
        integer(&mut out, 0x00, 5, 1337);
        assert_eq!(out, [31, 154, 10], "RFC 7541 C.1.2");
        out.clear();
        integer(&mut out, 0x00, 7, 10);
        assert_eq!(out, [10]);
    }

    #[test]
    fn a_call_reads_the_message_across_frames_and_answers_pings() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("kubelet.sock");
        let listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
        let message: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
        let expected = message.clone();
        let server = std::thread::spawn(move || serve_once(listener, message, 16_384));
        let got = unary_call(
            &socket,
            "/v1.PodResourcesLister/List",
            &[],
            Duration::from_secs(5),
        )
        .expect("answer");
        assert_eq!(got, expected);
        server.join().expect("server");
    }

    #[test]
    fn an_absent_socket_is_a_connect_error() {
        let err = unary_call(
            Path::new("/nonexistent/kubelet.sock"),
            "/x/y",
            &[],
            Duration::from_millis(100),
        )
        .expect_err("no socket");
        assert!(matches!(err, CallError::Connect(_)), "{err}");
    }
}
