//! The activation scales in TensorRT's calibration-cache text format, so the
//! TensorRT 10 implicit-quantization path (`trt::BuilderConfig::set_int8_calibrator`
//! with a calibrator whose `read_cache` returns this text) reuses the same
//! calibration as the Q/DQ model.
//!
//! Format (what IInt8EntropyCalibrator2 writes): a header line
//! `TRT-<NV_TENSORRT_VERSION>-EntropyCalibration2`, then one line per tensor,
//! `<name>: <scale>` with the scale (amax / 127) as the 8 hex digits of its
//! IEEE-754 f32 bits. Tensors not listed get no INT8 scale, so TensorRT keeps
//! the layers reading them in float.

/// TensorRT 10.16's `NV_TENSORRT_VERSION` (major * 10000 + minor * 100 + patch).
pub const DEFAULT_VERSION: u32 = 101600;

/// The cache text for `amax` (tensor name, clipping value).
pub fn calibration_cache(amax: &[(String, f32)], trt_version: u32) -> String {
    let mut out = format!("TRT-{trt_version}-EntropyCalibration2\n");
    for (name, a) in amax {
        out.push_str(&format!("{name}: {:08x}\n", (a / 127.0).to_bits()));
    }
    out
}

/// Reads a cache back (header checked, lines `name: hex`) into (name, scale).
pub fn parse_calibration_cache(text: &str) -> Option<Vec<(String, f32)>> {
    let mut lines = text.lines();
    let header = lines.next()?;
    if !header.starts_with("TRT-") || !header.ends_with("Calibration2") && !header.ends_with("Calibration") {
        return None;
    }
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (name, hex) = l.rsplit_once(": ")?;
            Some((name.to_string(), f32::from_bits(u32::from_str_radix(hex.trim(), 16).ok()?)))
        })
        .collect()
}
