//! Processes and HTTP on loopback: child-process guards, free ports, tools found on PATH, a tiny
//! HTTP client, and a simulated exporter to scrape.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the child when dropped, so a failing test leaves no process behind.
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `cmd` with its stderr kept for the test to read.
pub fn spawn(mut cmd: Command) -> ChildGuard {
    ChildGuard(
        cmd.stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the process"),
    )
}

/// Start `cmd` with its output thrown away (a server that logs a lot must not fill a pipe).
pub fn spawn_quiet(mut cmd: Command) -> ChildGuard {
    ChildGuard(
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the process"),
    )
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A tool the test needs: found on PATH, or (outside CI) `None` with a note.
pub fn tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "`{name}` is required in CI; .ci/run installs it"
        );
        eprintln!("note: `{name}` is not installed; this test is skipped outside CI");
    }
    found
}

/// One HTTP/1.1 request with `Connection: close`; returns (status, body).
pub fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    parse_response(&buf)
}

pub fn parse_response(buf: &[u8]) -> std::io::Result<(u16, String)> {
    let text = String::from_utf8_lossy(buf).to_string();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other(format!("no response head in {text:?}")))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line in {head:?}")))?;
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    Ok((
        status,
        if chunked {
            dechunk(body)?
        } else {
            body.to_string()
        },
    ))
}

/// Decode a `Transfer-Encoding: chunked` body.
fn dechunk(mut body: &str) -> std::io::Result<String> {
    let mut out = String::new();
    loop {
        let (size, rest) = body
            .split_once("\r\n")
            .ok_or_else(|| std::io::Error::other("truncated chunk size"))?;
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| std::io::Error::other(format!("bad chunk size {size:?}")))?;
        if size == 0 {
            return Ok(out);
        }
        let chunk = rest
            .get(..size)
            .ok_or_else(|| std::io::Error::other("truncated chunk"))?;
        out.push_str(chunk);
        body = rest.get(size + 2..).unwrap_or("");
    }
}

/// Wait until `f` gives `Some`, or panic after `timeout` with `what`.
pub fn wait_until<T>(timeout: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Start `gpulse --backend sim serve` on a free loopback port and wait until it answers.
pub fn start_exporter(extra: &[&str]) -> (ChildGuard, SocketAddr) {
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
    let mut cmd = super::cli::gpulse();
    cmd.args(["--backend", "sim"])
        .args(extra)
        .args(["serve", "--listen", &addr.to_string()]);
    let guard = spawn(cmd);
    wait_until(Duration::from_secs(20), "the exporter to answer", || {
        http_get(addr, "/metrics")
            .ok()
            .filter(|(s, b)| *s == 200 && b.contains("DCGM_FI_DEV_GPU_UTIL"))
    });
    (guard, addr)
}

/// The value of the first line of an exposition that starts with `prefix`.
pub fn metric_value(exposition: &str, prefix: &str) -> Option<f64> {
    exposition
        .lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}
