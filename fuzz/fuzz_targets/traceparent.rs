//! `traceparent` header bytes into `trt_serve::traceparent::TraceParent::parse`
//! (W3C Trace Context), as the server reads each request's header.
//!
//! What must hold: no panic; a parsed value has non-zero trace and parent
//! ids, was at least 55 bytes of which the first 55 are lowercase hex and
//! dashes where the specification puts them, is not version `ff`, and is
//! exactly 55 bytes when its version is `00`; its printed (version `00`)
//! form parses back to the same ids and flags, and equals the input when
//! that was version `00`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trt_serve::test_support::traceparent::TraceParent;

fuzz_target!(|data: &[u8]| {
    let Ok(t) = TraceParent::parse(data) else { return };
    assert!(t.trace_id != [0; 16] && t.parent_id != [0; 8]);
    assert!(data.len() >= 55 && t.version != 0xff);
    assert!(t.version != 0 || data.len() == 55);
    for (i, &c) in data[..55].iter().enumerate() {
        let dash = matches!(i, 2 | 35 | 52);
        assert!(if dash { c == b'-' } else { c.is_ascii_digit() || (b'a'..=b'f').contains(&c) }, "byte {i}: {c:#x}");
    }
    let printed = t.to_string();
    let back = TraceParent::parse(printed.as_bytes()).expect("the printed form parses");
    assert_eq!((back.version, back.trace_id, back.parent_id, back.flags), (0, t.trace_id, t.parent_id, t.flags));
    if t.version == 0 {
        assert_eq!(printed.as_bytes(), data);
    }
});
