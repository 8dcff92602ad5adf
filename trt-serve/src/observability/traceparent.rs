//! W3C Trace Context's `traceparent` header, parsed strictly
//! (<https://www.w3.org/TR/trace-context/#traceparent-header>).
//!
//! | part | rule |
//! |---|---|
//! | `version` | 2 lowercase hex digits; `ff` is invalid |
//! | `trace-id` | 32 lowercase hex digits, not all zero |
//! | `parent-id` | 16 lowercase hex digits, not all zero |
//! | `trace-flags` | 2 lowercase hex digits (bit 0: sampled) |
//!
//! Version `00` is exactly `00-{trace-id}-{parent-id}-{flags}` (55
//! characters). A later version is read by the `00` rules over its first 55
//! characters and may go on only after a `-`, as the specification asks of
//! parsers that do not know it. The server records a valid header on the
//! request's span and ignores an invalid one (never a refusal).

use std::fmt;

/// A valid `traceparent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    /// The header's version (`0` for `00`).
    pub version: u8,
    /// The trace's id.
    pub trace_id: [u8; 16],
    /// The caller's span id.
    pub parent_id: [u8; 8],
    /// The trace flags.
    pub flags: u8,
}

/// Why a `traceparent` value is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceParentError {
    /// Not 55 characters (version `00`), or shorter than 55 (a later version).
    #[error("a traceparent is 55 characters (version 00), got {0}")]
    Length(usize),
    /// A field is not lowercase hex of its length, or the separators are not `-`.
    #[error("a traceparent is version-traceid-parentid-flags in lowercase hex")]
    Format,
    /// Version `ff`.
    #[error("traceparent version ff is invalid")]
    Version,
    /// An all-zero trace id.
    #[error("the traceparent's trace id is all zero")]
    ZeroTraceId,
    /// An all-zero parent id.
    #[error("the traceparent's parent id is all zero")]
    ZeroParentId,
    /// More than one `traceparent` header.
    #[error("more than one traceparent header")]
    Repeated,
}

/// Lowercase hex digits into `out` (`hex` is twice its length).
fn hex_into(hex: &[u8], out: &mut [u8]) -> Result<(), TraceParentError> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        _ => Err(TraceParentError::Format),
    };
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        *o = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Ok(())
}

impl TraceParent {
    /// Parses a header value.
    pub fn parse(value: &[u8]) -> Result<TraceParent, TraceParentError> {
        const LEN: usize = 55;
        if value.len() < LEN {
            return Err(TraceParentError::Length(value.len()));
        }
        let mut version = [0u8; 1];
        hex_into(&value[0..2], &mut version)?;
        let version = version[0];
        if version == 0xff {
            return Err(TraceParentError::Version);
        }
        if value.len() > LEN && (version == 0 || value[LEN] != b'-') {
            return Err(if version == 0 { TraceParentError::Length(value.len()) } else { TraceParentError::Format });
        }
        if value[2] != b'-' || value[35] != b'-' || value[52] != b'-' {
            return Err(TraceParentError::Format);
        }
        let mut t = TraceParent { version, trace_id: [0; 16], parent_id: [0; 8], flags: 0 };
        hex_into(&value[3..35], &mut t.trace_id)?;
        hex_into(&value[36..52], &mut t.parent_id)?;
        let mut flags = [0u8; 1];
        hex_into(&value[53..55], &mut flags)?;
        t.flags = flags[0];
        if t.trace_id == [0; 16] {
            return Err(TraceParentError::ZeroTraceId);
        }
        if t.parent_id == [0; 8] {
            return Err(TraceParentError::ZeroParentId);
        }
        Ok(t)
    }

    /// Whether the caller sampled the trace (flag bit 0).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The trace id as 32 lowercase hex digits.
    pub fn trace_id_hex(&self) -> String {
        hex(&self.trace_id)
    }

    /// The parent id as 16 lowercase hex digits.
    pub fn parent_id_hex(&self) -> String {
        hex(&self.parent_id)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The version-`00` form of the same ids and flags.
impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "00-{}-{}-{:02x}", self.trace_id_hex(), self.parent_id_hex(), self.flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_specifications_example_parses_and_prints_back() {
        let t = TraceParent::parse(VALID.as_bytes()).unwrap();
        assert_eq!(t.version, 0);
        assert_eq!(t.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.parent_id_hex(), "00f067aa0ba902b7");
        assert!(t.sampled());
        assert_eq!(t.to_string(), VALID);
        let unsampled = TraceParent::parse(b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").unwrap();
        assert!(!unsampled.sampled());
    }

    #[test]
    fn invalid_values_are_refused_with_their_reason() {
        use TraceParentError as E;
        let cases: &[(&str, E)] = &[
            ("", E::Length(0)),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0", E::Length(54)),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", E::Length(56)),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", E::Length(56)),
            ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", E::Version),
            ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", E::Format),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01", E::Format),
            ("0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", E::Format),
            ("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", E::Format),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01", E::Format),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01", E::Format),
            ("00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", E::Format),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0z", E::Format),
            ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", E::ZeroTraceId),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", E::ZeroParentId),
            (" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", E::Format),
            ("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", E::Format),
        ];
        for (value, why) in cases {
            assert_eq!(TraceParent::parse(value.as_bytes()), Err(*why), "{value:?}");
        }
    }

    #[test]
    fn a_later_version_is_read_by_the_00_rules() {
        let t = TraceParent::parse(b"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(t.version, 0xcc);
        let t = TraceParent::parse(b"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds").unwrap();
        assert_eq!(t.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.to_string(), VALID);
    }
}
