//! `trt serve`'s gRPC connection bounds, on 127.0.0.1 with an empty model
//! repository (the health RPCs answer without a model), driven by a minimal
//! HTTP/2 client written here over a plain socket so the test controls each
//! frame (a gRPC library would hide the idle connection and queue streams
//! past the cap instead of sending them):
//! - a connection with no stream open is closed after
//!   `--grpc-idle-timeout-secs`, although the server pings it (keepalive)
//!   and the client answers every ping; one that keeps calling stays open
//!   throughout, and so does one whose single stream stays open (a request
//!   whose body has not arrived); each is closed once idle; the server's
//!   descriptor count returns to its idle level; a grpcio client whose
//!   connection was closed as idle connects again for its next call, and
//!   `grpc.health.v1.Health/Check` (Kubernetes' grpc probe) answers without
//!   the API key;
//! - `--grpc-max-streams` is announced in the server's SETTINGS and a stream
//!   past it is refused (RST_STREAM REFUSED_STREAM) while the others are
//!   answered.
//!
//! Bounded: every read has a deadline, every loop a count or a deadline.

mod common;
#[path = "common/serve.rs"]
#[allow(dead_code)]
mod serve;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use serve::{fd_count, settle_fds, Server};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
const REFUSED_STREAM: u32 = 0x7;
const SERVER_LIVE: &str = "/inference.GRPCInferenceService/ServerLive";
/// ServerLive's answer as one gRPC message: no compression, length 2, `live: true` (field 1, varint 1).
const LIVE_TRUE: [u8; 7] = [0, 0, 0, 0, 2, 0x08, 0x01];

#[derive(Debug)]
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

fn encode(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A gRPC request's header block in HPACK without Huffman coding or the dynamic table
/// (RFC 7541: indexed fields for the static table's entries, literals for the rest).
fn request_headers(path: &str) -> Vec<u8> {
    let mut h = vec![0x83, 0x86]; // :method POST, :scheme http
    let literal = |h: &mut Vec<u8>, name_index: Option<u8>, name: &str, value: &str| {
        match name_index {
            // Literal without indexing, the name from the static table (4-bit prefix).
            Some(i) if i < 15 => h.push(i),
            Some(i) => h.extend_from_slice(&[0x0f, i - 15]),
            None => {
                h.push(0x00);
                h.push(name.len() as u8);
                h.extend_from_slice(name.as_bytes());
            }
        }
        h.push(value.len() as u8);
        h.extend_from_slice(value.as_bytes());
    };
    literal(&mut h, Some(4), ":path", path);
    literal(&mut h, Some(1), ":authority", "127.0.0.1");
    literal(&mut h, Some(31), "content-type", "application/grpc");
    literal(&mut h, None, "te", "trailers");
    h
}

/// One client HTTP/2 connection: frames in and out, PINGs answered as they arrive.
struct H2 {
    s: TcpStream,
    buf: Vec<u8>,
    /// The server's SETTINGS: (identifier, value).
    settings: Vec<(u16, u32)>,
    pings_answered: usize,
}

impl H2 {
    /// Connects, sends the preface and empty SETTINGS, and acknowledges the server's.
    fn connect(addr: &str) -> H2 {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let mut c = H2 { s, buf: Vec::new(), settings: Vec::new(), pings_answered: 0 };
        let mut hello = PREFACE.to_vec();
        hello.extend(encode(SETTINGS, 0, 0, &[]));
        c.s.write_all(&hello).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while c.settings.is_empty() {
            assert!(Instant::now() < deadline, "no SETTINGS from the server within 10 s");
            for f in c.poll().expect("the server closed the connection before its SETTINGS") {
                if f.kind == SETTINGS && f.flags & ACK == 0 {
                    c.settings = f
                        .payload
                        .chunks(6)
                        .map(|e| (u16::from_be_bytes([e[0], e[1]]), u32::from_be_bytes([e[2], e[3], e[4], e[5]])))
                        .collect();
                    c.s.write_all(&encode(SETTINGS, ACK, 0, &[])).unwrap();
                }
            }
        }
        c
    }

    /// One read (at most 50 ms): the complete frames received, PINGs already
    /// answered; `None` once the server has closed the connection.
    fn poll(&mut self) -> Option<Vec<Frame>> {
        let mut chunk = [0u8; 16384];
        match self.s.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return None,
        }
        let mut frames = Vec::new();
        while self.buf.len() >= 9 {
            let len = (usize::from(self.buf[0]) << 16) | (usize::from(self.buf[1]) << 8) | usize::from(self.buf[2]);
            if self.buf.len() < 9 + len {
                break;
            }
            let head: Vec<u8> = self.buf.drain(..9 + len).collect();
            let f = Frame {
                kind: head[3],
                flags: head[4],
                stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
                payload: head[9..].to_vec(),
            };
            if f.kind == PING && f.flags & ACK == 0 {
                // A closed connection shows in the next read.
                let _ = self.s.write_all(&encode(PING, ACK, 0, &f.payload));
                self.pings_answered += 1;
            }
            frames.push(f);
        }
        Some(frames)
    }

    /// Opens stream `id` to `path`: the request's headers, no body yet.
    fn open(&mut self, id: u32, path: &str) {
        self.s.write_all(&encode(HEADERS, END_HEADERS, id, &request_headers(path))).unwrap();
    }

    /// Sends stream `id`'s body (one empty message) and ends it.
    fn finish(&mut self, id: u32) {
        self.s.write_all(&encode(DATA, END_STREAM, id, &[0, 0, 0, 0, 0])).unwrap();
    }

    /// The frames of stream `id` until it ends (END_STREAM or RST_STREAM), within 10 s.
    fn until_end(&mut self, id: u32) -> Vec<Frame> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut mine = Vec::new();
        loop {
            assert!(Instant::now() < deadline, "stream {id} did not end within 10 s: {mine:?}");
            let frames = self.poll().unwrap_or_else(|| panic!("the server closed the connection while stream {id} was open"));
            for f in frames.into_iter().filter(|f| f.stream == id) {
                let end = f.kind == RST_STREAM || (f.flags & END_STREAM != 0 && matches!(f.kind, DATA | HEADERS));
                mine.push(f);
                if end {
                    return mine;
                }
            }
        }
    }

    /// One ServerLive call on stream `id`; panics unless it answers `live: true`.
    fn server_live(&mut self, id: u32) {
        self.open(id, SERVER_LIVE);
        self.finish(id);
        self.expect_live(id);
    }

    fn expect_live(&mut self, id: u32) {
        let frames = self.until_end(id);
        assert!(frames.iter().all(|f| f.kind != RST_STREAM), "stream {id} was reset: {frames:?}");
        assert!(frames.iter().any(|f| f.kind == DATA && f.payload == LIVE_TRUE), "stream {id} did not answer live: {frames:?}");
    }

    /// Reads (answering PINGs) until the server closes the connection or `within` passes;
    /// when it closed, measured from `since`.
    fn wait_closed(&mut self, since: Instant, within: Duration) -> Option<Duration> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.poll().is_none() {
                return Some(since.elapsed());
            }
        }
        None
    }
}

fn secs(n: u64) -> String {
    n.to_string()
}

#[test]
fn idle_grpc_connections_are_closed_and_active_ones_kept() {
    let timeout = 3u64;
    let repo = tempfile::tempdir().unwrap();
    let (t, ping) = (secs(timeout), secs(1));
    // With an API key: the health RPCs (ServerLive here, grpc.health.v1 below) need none.
    let flags = ["--grpc-idle-timeout-secs", t.as_str(), "--grpc-keepalive-secs", ping.as_str(), "--api-key", "k1"];
    let server = Server::start(std::path::Path::new(env!("CARGO_BIN_EXE_trt")), repo.path(), &flags, Duration::from_secs(60));
    let (code, _, _) = serve::http_request(&server.http, "GET", "/v2/health/live", "", "");
    assert_eq!(code, 200, "the server answers before the test");
    std::thread::sleep(Duration::from_millis(200));
    let pid = server.pid();
    let idle_fds = fd_count(pid);

    let started = Instant::now();
    let mut idle = H2::connect(&server.grpc);
    let mut active = H2::connect(&server.grpc);
    let mut pending = H2::connect(&server.grpc);
    pending.open(1, SERVER_LIVE);
    // Calls every 250 ms on `active` for the timeout and 2 s more, while the
    // idle connection is watched (and its pings answered) between them.
    let (mut calls, mut idle_closed) = (0u32, None);
    let until = started + Duration::from_secs(timeout + 2);
    while Instant::now() < until {
        active.server_live(2 * calls + 1);
        calls += 1;
        if idle_closed.is_none() && idle.poll().is_none() {
            idle_closed = Some(started.elapsed());
        }
        let _ = pending.poll().expect("the connection with an open stream was closed");
        std::thread::sleep(Duration::from_millis(200));
    }
    let idle_at = idle_closed.or_else(|| idle.wait_closed(started, Duration::from_secs(3)));
    println!(
        "grpc idle timeout {timeout} s: the idle connection closed at {idle_at:?} after answering {} pings; \
         {calls} calls answered on the active one, the pending stream held its connection {:.1?}",
        idle.pings_answered,
        started.elapsed()
    );
    let idle_at = idle_at.expect("the idle gRPC connection was not closed within the timeout and 3 s");
    assert!(idle_at >= Duration::from_secs(timeout), "the idle connection was closed after {idle_at:?}, before the timeout");
    assert!(idle.pings_answered >= 1, "the server did not ping the idle connection (keepalive 1 s), so pings were not shown not to count");

    // The open stream is still served; then both connections, idle, are closed.
    pending.finish(1);
    pending.expect_live(1);
    let quiet = Instant::now();
    let slack = Duration::from_secs(timeout + 3);
    let active_at = active.wait_closed(quiet, slack).expect("the active connection, once idle, was not closed");
    let pending_at = pending.wait_closed(quiet, slack).expect("the connection of the finished stream, once idle, was not closed");
    assert!(pending_at + Duration::from_millis(300) >= Duration::from_secs(timeout), "closed {pending_at:?} after its stream ended");
    println!("once idle: the active connection closed {active_at:.1?}, the pending one {pending_at:.1?} after the last answer");
    let after_fds = settle_fds(pid, idle_fds);
    assert!(after_fds <= idle_fds, "descriptors did not return to the idle level: {after_fds}, idle {idle_fds}");

    // A real gRPC client (grpcio) keeps its channel; the server closes the idle
    // connection under it, and the next call connects again. Then the health
    // checking protocol as Kubernetes' grpc probe calls it (no metadata): the
    // messages by hand (HealthCheckRequest field 1 = service; the answer's
    // field 1 = status, SERVING = 1), since grpcio's health package is not installed.
    let deps = common::deps();
    let python = serve::venv_python(&deps, "grpc, tritonclient.grpc", "tritonclient[grpc]");
    let script = r#"
import sys, time, grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc
channel = grpc.insecure_channel(sys.argv[1])
stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
assert stub.ServerLive(service_pb2.ServerLiveRequest(), timeout=10).live
time.sleep(float(sys.argv[2]))
assert stub.ServerLive(service_pb2.ServerLiveRequest(), timeout=10).live
print("grpcio: answered before and after the idle close")
check = channel.unary_unary("/grpc.health.v1.Health/Check")
for service in (b"", b"readiness", b"liveness", b"inference.GRPCInferenceService"):
    request = b"\n" + bytes([len(service)]) + service if service else b""
    answer = check(request, timeout=10)
    assert answer == b"\x08\x01", (service, answer)
for call, want in ((lambda: check(b"\n\x04nope", timeout=10), grpc.StatusCode.NOT_FOUND),
                   (lambda: stub.ServerMetadata(service_pb2.ServerMetadataRequest(), timeout=10), grpc.StatusCode.UNAUTHENTICATED)):
    try:
        call()
        sys.exit(f"answered although {want} was expected")
    except grpc.RpcError as e:
        assert e.code() == want, (e.code(), e.details())
print("grpc.health.v1.Health/Check: SERVING for '', readiness, liveness and the inference service without a key; NOT_FOUND for another name; ServerMetadata needs the key")
"#;
    let wait = format!("{}", timeout as f64 + 1.5);
    let mut cmd = Command::new(&python);
    cmd.args(["-c", script, &server.grpc, &wait]);
    serve::run_client(cmd, "the grpcio client", Duration::from_secs(60));

    let exit = server.terminate(Duration::from_secs(30));
    assert!(exit.success(), "trt serve exited with {exit} after SIGTERM");
}

#[test]
fn streams_past_the_cap_are_refused() {
    let cap = 3u32;
    let repo = tempfile::tempdir().unwrap();
    let c = cap.to_string();
    let server =
        Server::start(std::path::Path::new(env!("CARGO_BIN_EXE_trt")), repo.path(), &["--grpc-max-streams", &c], Duration::from_secs(60));
    let mut h2 = H2::connect(&server.grpc);
    assert!(
        h2.settings.contains(&(SETTINGS_MAX_CONCURRENT_STREAMS, cap)),
        "the server's SETTINGS do not announce {cap} streams: {:?}",
        h2.settings
    );
    // `cap` streams open (headers, no body), then one more.
    let ids: Vec<u32> = (0..cap).map(|i| 2 * i + 1).collect();
    for &id in &ids {
        h2.open(id, SERVER_LIVE);
    }
    let over = 2 * cap + 1;
    h2.open(over, SERVER_LIVE);
    let frames = h2.until_end(over);
    let reset =
        frames.iter().find(|f| f.kind == RST_STREAM).unwrap_or_else(|| panic!("stream {over} past the cap was not reset: {frames:?}"));
    assert_eq!(u32::from_be_bytes(reset.payload[..4].try_into().unwrap()), REFUSED_STREAM, "reset with another code: {reset:?}");
    // The streams under the cap are answered; then there is room for another.
    for &id in &ids {
        h2.finish(id);
        h2.expect_live(id);
    }
    h2.server_live(over + 2);
    println!(
        "--grpc-max-streams {cap}: announced, stream {over} refused (REFUSED_STREAM), the {cap} open ones and one after them answered"
    );
    drop(h2);
    let exit = server.terminate(Duration::from_secs(30));
    assert!(exit.success(), "trt serve exited with {exit} after SIGTERM");
}
