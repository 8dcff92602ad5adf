//! A minimal HTTP/1.1 keep-alive client for the load benches: one request at
//! a time per connection, bodies framed by Content-Length (what trt serve and
//! TEI both send), so the client costs the same against either server. A
//! request leaves in one write, as HTTP clients send a small request (Python's
//! http.client joins head and body for that reason): with TCP_NODELAY, a
//! write per piece would be a segment per piece, and the server would wake
//! and parse once per segment.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A whole POST of `body` into `out` (head and body, sent in one write).
fn request(out: &mut Vec<u8>, host: &str, path: &str, body: &[u8]) {
    out.clear();
    out.extend_from_slice(
        format!("POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len())
            .as_bytes(),
    );
    out.extend_from_slice(body);
}

/// One keep-alive HTTP/1.1 connection.
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    /// The request being sent, reused from one request to the next.
    out: Vec<u8>,
}

impl Conn {
    pub fn open(addr: &str) -> std::io::Result<Conn> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Conn { reader: BufReader::new(s.try_clone()?), writer: s, out: Vec::new() })
    }

    /// POSTs `body`; returns the status and the response body.
    pub fn post(&mut self, host: &str, path: &str, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        request(&mut self.out, host, path, body);
        self.writer.write_all(&self.out)?;
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
        let mut len = 0usize;
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; len];
        self.reader.read_exact(&mut body)?;
        Ok((status, body))
    }
}

/// The same client on tokio: one keep-alive connection, one request at a
/// time, the request in one write; only the status is returned (the load
/// levels read and drop the body).
pub struct AsyncConn {
    stream: tokio::net::TcpStream,
    out: Vec<u8>,
    /// Bytes read and not yet consumed (a response's head, its body, and
    /// whatever of the next response came with it: none, one at a time).
    buf: Vec<u8>,
}

impl AsyncConn {
    pub async fn open(addr: &str) -> std::io::Result<AsyncConn> {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(AsyncConn { stream, out: Vec::new(), buf: Vec::with_capacity(16 << 10) })
    }

    /// POSTs `body`; returns the status once the whole response is read.
    pub async fn post(&mut self, host: &str, path: &str, body: &[u8]) -> std::io::Result<u16> {
        use tokio::io::AsyncWriteExt;
        request(&mut self.out, host, path, body);
        let timeout = Duration::from_secs(60);
        let io = async {
            self.stream.write_all(&self.out).await?;
            self.buf.clear();
            let head_end = loop {
                if let Some(p) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break p + 4;
                }
                if self.read_more().await? == 0 {
                    return Err(std::io::Error::other("connection closed in a response head"));
                }
            };
            let head = std::str::from_utf8(&self.buf[..head_end]).map_err(|_| std::io::Error::other("response head is not UTF-8"))?;
            let mut lines = head.split("\r\n");
            let status_line = lines.next().unwrap_or_default();
            let status: u16 = status_line
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| std::io::Error::other(format!("bad status line {status_line:?}")))?;
            let len: usize = lines
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.trim().parse().ok())
                .unwrap_or(0);
            while self.buf.len() < head_end + len {
                if self.read_more().await? == 0 {
                    return Err(std::io::Error::other("connection closed in a response body"));
                }
            }
            Ok(status)
        };
        tokio::time::timeout(timeout, io).await.map_err(|_| std::io::Error::other("no response within 60 s"))?
    }

    async fn read_more(&mut self) -> std::io::Result<usize> {
        use tokio::io::AsyncReadExt;
        if self.buf.capacity() - self.buf.len() < 4096 {
            self.buf.reserve(16 << 10);
        }
        self.stream.read_buf(&mut self.buf).await
    }
}
