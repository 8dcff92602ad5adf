//! `trt serve`'s connection bounds against slow and half-open clients, on
//! 127.0.0.1 with an empty model repository (no model is needed: the
//! health routes answer). Half-open HTTP requests (a request line and one
//! header, never finished) and silent gRPC connections are each closed
//! within the header timeout, the server's descriptor count
//! (`/proc/<pid>/fd`) returns to its idle level, and a valid client is
//! answered throughout; a keep-alive connection is closed after the idle
//! timeout (not before), and a body that stops arriving gets 408.
//!
//! Bounded: `TRT_SLOWLORIS_CONNECTIONS` half-open connections (default 200),
//! every wait has a deadline. `TRT_SLOWLORIS_HEADER_SECS` (default 2) sets
//! the header timeout; `TRT_SLOWLORIS_HOLD_SECS` (default 0) holds the
//! connections that long before counting descriptors, for measuring the
//! figure quoted in docs/serving.md (3,000 connections held 35 s).

mod common;
#[path = "common/serve.rs"]
#[allow(dead_code)]
mod serve;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serve::{closed, fd_count, settle_fds, Server};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One complete request on its own connection; the status line's code.
fn get(addr: &str, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.split_whitespace().nth(1)?.parse().ok()
}

/// Watches `socks` for at least `at_least` and until every one is closed or
/// `within` passes; the time each closed at, from `started`.
fn wait_closed(
    socks: &mut [TcpStream],
    started: Instant,
    at_least: Duration,
    within: Duration,
    mut probe: impl FnMut(),
) -> Vec<Option<Duration>> {
    let mut at = vec![None; socks.len()];
    let now = Instant::now();
    let (until, deadline) = (now + at_least, now + within.max(at_least));
    while Instant::now() < deadline && (Instant::now() < until || at.iter().any(Option::is_none)) {
        for (s, t) in socks.iter_mut().zip(at.iter_mut()) {
            if t.is_none() && closed(s) {
                *t = Some(started.elapsed());
            }
        }
        probe();
        std::thread::sleep(Duration::from_millis(50));
    }
    at
}

#[test]
fn half_open_and_slow_clients_are_disconnected_and_valid_ones_served() {
    let n = env_or("TRT_SLOWLORIS_CONNECTIONS", 200) as usize;
    let header = env_or("TRT_SLOWLORIS_HEADER_SECS", 2);
    let hold = Duration::from_secs(env_or("TRT_SLOWLORIS_HOLD_SECS", 0));
    let idle = header + 3;
    let repo = tempfile::tempdir().unwrap();
    let flags = [
        "--header-timeout-secs".to_string(),
        header.to_string(),
        "--idle-timeout-secs".to_string(),
        idle.to_string(),
        "--body-timeout-secs".to_string(),
        "2".to_string(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = Server::start(std::path::Path::new(env!("CARGO_BIN_EXE_trt")), repo.path(), &flags, Duration::from_secs(60));
    let pid = server.pid();
    assert_eq!(get(&server.http, "/v2/health/live"), Some(200), "the server answers before the test");
    std::thread::sleep(Duration::from_millis(200));
    let idle_fds = fd_count(pid);

    // Half-open HTTP requests and silent gRPC connections.
    let started = Instant::now();
    let mut half_open = Vec::with_capacity(n);
    for i in 0..n {
        let mut s = TcpStream::connect(&server.http).unwrap_or_else(|e| panic!("connection {i}: {e}"));
        s.write_all(b"POST /v2/models/m/infer HTTP/1.1\r\nHost: t\r\n").unwrap();
        s.set_nonblocking(true).unwrap();
        half_open.push(s);
    }
    let silent_grpc: Vec<TcpStream> = (0..n.min(50)).map(|_| TcpStream::connect(&server.grpc).unwrap()).collect();
    for s in &silent_grpc {
        s.set_nonblocking(true).unwrap();
    }
    // The server accepts them one by one (past the listen backlog, clients
    // retry their SYNs): watch, bounded, until it holds them all, and keep
    // the peak.
    let all_held = idle_fds + n + silent_grpc.len();
    let held_by = Instant::now() + Duration::from_secs(20);
    let (mut during_fds, mut accepted_within) = (0, Duration::ZERO);
    while during_fds < all_held && Instant::now() < held_by {
        let now = fd_count(pid);
        if now > during_fds {
            (during_fds, accepted_within) = (now, started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(during_fds >= idle_fds + n / 2, "the server never held the half-open connections (peak {during_fds} fds, idle {idle_fds})");

    let mut served = 0usize;
    let mut failed = Vec::new();
    let mut probe = || match get(&server.http, "/v2/health/ready") {
        Some(200) => served += 1,
        other => failed.push(other),
    };
    let within = Duration::from_secs(header) + Duration::from_secs(5);
    let grpc_count = silent_grpc.len();
    let mut all: Vec<TcpStream> = half_open.into_iter().chain(silent_grpc).collect();
    let closed_at = wait_closed(&mut all, started, hold, within, &mut probe);
    let (http_closed, grpc_closed) = closed_at.split_at(n);
    let after_fds = settle_fds(pid, idle_fds);
    let open = http_closed.iter().filter(|t| t.is_none()).count();
    let slowest = closed_at.iter().flatten().max().copied().unwrap_or_default();
    println!(
        "half-open: {n} HTTP + {} gRPC connections; server fds idle {idle_fds}, peak {during_fds}, after {after_fds} \
         (held {hold:?}); peak reached {accepted_within:.1?} after the first connect, last closed at {slowest:.1?} (header timeout {header} s); {served} valid requests served, {} failed",
        grpc_count,
        failed.len()
    );
    assert_eq!(open, 0, "{open} half-open HTTP connections still open after {within:?}");
    assert!(grpc_closed.iter().all(Option::is_some), "silent gRPC connections still open after {within:?}");
    // The header timeout runs from each accept; the last accepts came up to `accepted_within` after the first connect.
    let limit = Duration::from_secs(header) + accepted_within + Duration::from_millis(1500);
    assert!(
        slowest <= limit,
        "a half-open connection was closed only after {slowest:?} (header timeout {header} s, accepted within {accepted_within:?})"
    );
    assert!(after_fds <= idle_fds, "descriptors did not return to the idle level: {after_fds}, idle {idle_fds}");
    assert!(failed.is_empty() && served > 0, "valid requests failed during the attack: {failed:?} ({served} served)");

    // A keep-alive connection: open past the header timeout, closed after the idle timeout.
    let mut ka = TcpStream::connect(&server.http).unwrap();
    ka.write_all(b"GET /v2/health/live HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    ka.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 512];
    let got = ka.read(&mut buf).unwrap();
    assert!(buf[..got].starts_with(b"HTTP/1.1 200"), "{:?}", String::from_utf8_lossy(&buf[..got]));
    let answered = Instant::now();
    ka.set_nonblocking(true).unwrap();
    std::thread::sleep(Duration::from_secs(header) + Duration::from_millis(500));
    assert!(!closed(&mut ka), "an idle keep-alive connection was closed at the header timeout, before the idle timeout");
    let ka_closed = wait_closed(std::slice::from_mut(&mut ka), answered, Duration::ZERO, Duration::from_secs(idle + 5), || {});
    let ka_at = ka_closed[0].expect("the idle keep-alive connection was never closed");
    assert!(ka_at >= Duration::from_secs(idle), "closed after {ka_at:?}, before the idle timeout of {idle} s");

    // A body that stops arriving: 408 after the body timeout.
    let mut slow = TcpStream::connect(&server.http).unwrap();
    slow.write_all(b"POST /v2/models/m/infer HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{\"inputs\"").unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut out = Vec::new();
    let _ = slow.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 408"), "a stalled body got {text:?}");
    assert!(text.contains("did not arrive within"), "{text}");

    let exit = server.terminate(Duration::from_secs(30));
    assert!(exit.success(), "trt serve exited with {exit} after SIGTERM");
}
