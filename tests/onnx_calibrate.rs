//! The calibrators against an independent numpy implementation
//! (scripts/calibration_reference.py, a port of pytorch-quantization's
//! entropy and percentile amax) on known distributions, and the
//! calibration-cache format. Runs anywhere; the numpy comparison needs the
//! setup venv (CI has it).

#[path = "onnx_support.rs"]
mod support;

use trt_onnx::quantize::cache;
use trt_onnx::quantize::calibrate::{Calibrator, Histogram};

/// A fixed xorshift stream of uniform (0, 1) values.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        (-2.0 * self.uniform().ln()).sqrt() * (std::f64::consts::TAU * self.uniform()).cos()
    }
}

/// name, batches of samples
fn distributions() -> Vec<(&'static str, Vec<Vec<f32>>)> {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let batch = |r: &mut Rng, f: &dyn Fn(&mut Rng) -> f64| (0..20_000).map(|_| f(r) as f32).collect::<Vec<f32>>();
    let mut out = Vec::new();
    out.push(("normal", (0..3).map(|_| batch(&mut r, &|r| r.normal())).collect()));
    out.push((
        "laplace",
        (0..3)
            .map(|_| {
                batch(&mut r, &|r| {
                    let u = r.uniform() - 0.5;
                    -u.signum() * (1.0 - 2.0 * u.abs()).ln()
                })
            })
            .collect(),
    ));
    out.push(("uniform", (0..2).map(|_| batch(&mut r, &|r| 2.0 * r.uniform() - 1.0)).collect()));
    // Outlier channels: a normal bulk with 0.1% of values 30x larger, the pattern
    // of post-LayerNorm activations; the second batch has a larger maximum, so
    // the histogram grows.
    out.push((
        "outliers",
        (0..2).map(|k| batch(&mut r, &|r| if r.uniform() < 0.001 { 30.0 * (1 + k) as f64 * r.uniform() } else { r.normal() })).collect(),
    ));
    // ReLU-like: half exact zeros.
    out.push(("relu", (0..2).map(|_| batch(&mut r, &|r| r.normal().max(0.0))).collect()));
    out
}

#[test]
fn minmax_is_the_largest_magnitude() {
    for (name, batches) in distributions() {
        let mut h = Histogram::new();
        let mut max = 0f32;
        for b in &batches {
            h.add(b);
            max = b.iter().fold(max, |m, v| m.max(v.abs()));
        }
        assert_eq!(h.amax(Calibrator::MinMax), max as f64, "{name}");
        // Every value was counted once.
        let n: usize = batches.iter().map(Vec::len).sum();
        assert_eq!(h.counts.iter().sum::<f64>() as usize, n, "{name}");
    }
}

#[test]
fn entropy_and_percentile_match_the_numpy_reference() {
    let Some(py) = support::python() else {
        panic!("no venv at {}: run scripts/setup (the reference needs numpy)", support::deps().display());
    };
    let dists = distributions();
    let hists: Vec<Histogram> = dists
        .iter()
        .map(|(_, batches)| {
            let mut h = Histogram::new();
            for b in batches {
                h.add(b);
            }
            h
        })
        .collect();
    let req = serde_json::json!({
        "percentile": 99.9,
        "histograms": hists.iter().map(|h| serde_json::json!({"counts": h.counts, "width": h.width})).collect::<Vec<_>>(),
    });
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/calibration_reference.py");
    let mut child = std::process::Command::new(py)
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(req.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let want: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for (i, ((name, _), h)) in dists.iter().zip(&hists).enumerate() {
        let e = h.amax(Calibrator::Entropy);
        let p = h.amax(Calibrator::Percentile(99.9));
        let (we, wp) = (want["entropy"][i].as_f64().unwrap(), want["percentile"][i].as_f64().unwrap());
        println!("{name:9} bins {:5} max {:8.4}  entropy {e:.5} (numpy {we:.5})  p99.9 {p:.5} (numpy {wp:.5})", h.counts.len(), h.max);
        // Same algorithm: within one bin (float ties may pick a neighbouring candidate).
        assert!((e - we).abs() <= h.width * 1.0001, "{name}: entropy {e} vs {we}");
        assert!((p - wp).abs() <= h.width * 1.0001, "{name}: percentile {p} vs {wp}");
    }
    // Known facts: the normal's 99.9th percentile of |x| is about 3.29; entropy clips
    // the outlier distribution far below its maximum.
    let normal = &hists[0];
    assert!((normal.amax(Calibrator::Percentile(99.9)) - 3.29).abs() < 0.1);
    let outliers = &hists[3];
    assert!(outliers.amax(Calibrator::Entropy) < 0.5 * outliers.max);
}

#[test]
fn calibrator_names_parse() {
    assert_eq!("minmax".parse::<Calibrator>(), Ok(Calibrator::MinMax));
    assert_eq!("entropy".parse::<Calibrator>(), Ok(Calibrator::Entropy));
    assert_eq!("percentile".parse::<Calibrator>(), Ok(Calibrator::Percentile(99.99)));
    assert_eq!("percentile:99.9".parse::<Calibrator>(), Ok(Calibrator::Percentile(99.9)));
    assert!("percentile:120".parse::<Calibrator>().is_err());
    assert!("kl".parse::<Calibrator>().is_err());
}

#[test]
fn calibration_cache_is_tensorrt_text_and_reads_back() {
    let amax = vec![("input_ids".to_string(), 1.0f32), ("encoder.layer.0/ln_out".to_string(), 27.7f32)];
    let text = cache::calibration_cache(&amax, 101600);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("TRT-101600-EntropyCalibration2"));
    // 1/127 as f32 bits.
    assert_eq!(lines.next(), Some(format!("input_ids: {:08x}", (1.0f32 / 127.0).to_bits()).as_str()));
    let back = cache::parse_calibration_cache(&text).unwrap();
    assert_eq!(back[1].0, "encoder.layer.0/ln_out");
    assert_eq!(back[1].1, 27.7f32 / 127.0);
    assert!(cache::parse_calibration_cache("garbage").is_none());
}
