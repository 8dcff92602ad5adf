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
        self.out.clear();
        write!(
            self.out,
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )?;
        self.out.extend_from_slice(body);
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
