//! `trt refit PLAN --weights model.onnx|model.safetensors [-o OUT]`: new
//! weights for a plan built with `trt build --refit`, by name, without
//! rebuilding (TensorRT's `IRefitter`), saved as a new plan.
//!
//! Weights are read first (no GPU needed): an ONNX model's initializers
//! (FP32, FP16 and INT64/INT32 kept in their type; external data beside the
//! model is read), or a safetensors file (F32, F16, BF16, I64, I32, I8). Then
//! the plan is deserialized (a GPU TensorRT executes on), every refittable
//! weight the file names is set, and the refit fails listing the engine's
//! weights the file does not have.

use std::path::{Path, PathBuf};

use trt::{HostData, Refitter};
use trt_onnx::graph::{tensor, Model};

use crate::error::{CliError, Context, Result};
use crate::gpu;
use crate::output::emit;

/// Arguments of `trt refit`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A plan built refittable (`trt build --refit`).
    pub plan: PathBuf,
    /// The new weights: an ONNX model or a .safetensors file.
    #[arg(long, value_name = "FILE")]
    pub weights: PathBuf,
    /// Where to write the refitted plan [default: PLAN with the extension .refit.plan].
    #[arg(short, long, value_name = "PLAN")]
    pub output: Option<PathBuf>,
    /// The GPU (CUDA device index) the plan is loaded and refitted on.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub device: u32,
}

/// One weight's values, in the element type the file stores.
#[derive(Debug, Clone, PartialEq)]
pub enum WeightData {
    /// f32.
    F32(Vec<f32>),
    /// f16.
    F16(Vec<half::f16>),
    /// bf16.
    BF16(Vec<half::bf16>),
    /// i32.
    I32(Vec<i32>),
    /// i64.
    I64(Vec<i64>),
    /// i8.
    I8(Vec<i8>),
}

impl WeightData {
    fn host(&self) -> HostData<'_> {
        match self {
            WeightData::F32(v) => HostData::F32(v),
            WeightData::F16(v) => HostData::F16(v),
            WeightData::BF16(v) => HostData::BF16(v),
            WeightData::I32(v) => HostData::I32(v),
            WeightData::I64(v) => HostData::I64(v),
            WeightData::I8(v) => HostData::I8(v),
        }
    }
}

/// Named weights read from a file, in file order.
pub type Weights = Vec<(String, WeightData)>;

/// Read `path` by its extension (`.onnx` or `.safetensors`).
pub fn read_weights(path: &Path) -> Result<Weights> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("onnx") => read_onnx(path),
        Some("safetensors") => {
            let bytes = std::fs::read(path).map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
            read_safetensors(&bytes).map_err(|e| CliError::new(format!("{}: {e}", path.display())))
        }
        _ => Err(CliError::new(format!("{}: expected weights in an .onnx or .safetensors file", path.display()))),
    }
}

fn read_onnx(path: &Path) -> Result<Weights> {
    let model = Model::load(path).about(path)?;
    let mut out = Vec::new();
    for t in &model.graph().initializer {
        let data = match t.data_type.unwrap_or_default() {
            tensor::FLOAT => WeightData::F32(tensor::to_f32(t).about(path)?.into_iter().collect()),
            // FP16 through f32 and back is exact.
            tensor::FLOAT16 => WeightData::F16(tensor::to_f32(t).about(path)?.into_iter().map(half::f16::from_f32).collect()),
            tensor::INT64 => WeightData::I64(tensor::to_i64(t).about(path)?.into_iter().collect()),
            tensor::INT32 => WeightData::I32(tensor::to_i64(t).about(path)?.into_iter().map(|v| v as i32).collect()),
            // Other types are never refittable weights of a TensorRT engine.
            _ => continue,
        };
        out.push((t.name.clone().unwrap_or_default(), data));
    }
    Ok(out)
}

/// The safetensors layout: an 8-byte little-endian header length, a JSON
/// header `{name: {"dtype", "shape", "data_offsets": [begin, end]}}` (plus an
/// optional `__metadata__`), then the data, offsets relative to its start.
pub fn read_safetensors(bytes: &[u8]) -> std::result::Result<Weights, String> {
    let len = bytes.get(..8).ok_or("shorter than a safetensors header")?;
    let len = usize::try_from(u64::from_le_bytes(len.try_into().expect("8 bytes"))).map_err(|_| "header length overflows")?;
    let header = bytes.get(8..8usize.checked_add(len).ok_or("header length overflows")?).ok_or("header runs past the end of the file")?;
    let data = &bytes[8 + len..];
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(header).map_err(|e| format!("the safetensors header is not a JSON object: {e}"))?;
    let mut entries = Vec::new();
    for (name, info) in &header {
        if name == "__metadata__" {
            continue;
        }
        let dtype = info["dtype"].as_str().ok_or_else(|| format!("tensor '{name}' has no dtype"))?;
        let offsets: Vec<usize> =
            info["data_offsets"].as_array().into_iter().flatten().filter_map(|v| v.as_u64()).map(|v| v as usize).collect();
        let [begin, end] = offsets[..] else { return Err(format!("tensor '{name}' has no [begin, end] data_offsets")) };
        let raw = data
            .get(begin..end)
            .filter(|_| begin <= end)
            .ok_or_else(|| format!("tensor '{name}': data_offsets {begin}..{end} outside the data"))?;
        let elements: u64 = info["shape"].as_array().into_iter().flatten().map(|d| d.as_u64().unwrap_or(0)).product();
        let width = match dtype {
            "F32" | "I32" => 4,
            "F16" | "BF16" => 2,
            "I64" => 8,
            "I8" => 1,
            other => return Err(format!("tensor '{name}' has dtype {other}, which trt refit does not read")),
        };
        if elements.checked_mul(width) != Some(raw.len() as u64) {
            return Err(format!("tensor '{name}': {} bytes for {elements} {dtype} elements", raw.len()));
        }
        let data = match dtype {
            "F32" => WeightData::F32(raw.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4"))).collect()),
            "I32" => WeightData::I32(raw.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().expect("4"))).collect()),
            "F16" => WeightData::F16(raw.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]])).collect()),
            "BF16" => WeightData::BF16(raw.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]])).collect()),
            "I64" => WeightData::I64(raw.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8"))).collect()),
            _ => WeightData::I8(raw.iter().map(|&b| b as i8).collect()),
        };
        entries.push((begin, name.clone(), data));
    }
    entries.sort_by_key(|(begin, _, _)| *begin);
    Ok(entries.into_iter().map(|(_, n, d)| (n, d)).collect())
}

/// `trt refit`.
pub fn run(args: Args) -> Result<()> {
    let weights = read_weights(&args.weights)?;
    let output = args.output.clone().unwrap_or_else(|| args.plan.with_extension("refit.plan"));
    let plan = gpu::read_plan(&args.plan)?;
    let (device, gpu_name) = gpu::require_on("trt refit", args.device)?;
    let engine = gpu::load_engine(&args.plan, &plan, &device, &gpu_name)?;
    let mut refitter = Refitter::new(&engine).context(|| format!("{} (built with trt build --refit?)", args.plan.display()))?;
    let refittable = refitter.all_weights()?;
    let mut set = 0;
    let mut unused = Vec::new();
    for (name, data) in &weights {
        if refittable.iter().any(|r| r == name) {
            refitter.set_named_weights(name, data.host()).context(|| format!("weight '{name}' of {}", args.weights.display()))?;
            set += 1;
        } else {
            unused.push(name.as_str());
        }
    }
    let missing = refitter.missing_weights()?;
    if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().take(20).map(String::as_str).collect();
        return Err(CliError::new(format!(
            "{} lacks {} weight(s) the engine needs: {}{}",
            args.weights.display(),
            missing.len(),
            shown.join(", "),
            if missing.len() > shown.len() { ", ..." } else { "" }
        )));
    }
    let stream = trt::cuda::Stream::new(&device)?;
    refitter.refit_cuda_engine(&stream)?;
    engine.serialize()?.save(&output)?;
    let mut s = format!("refitted {} -> {}\n", args.plan.display(), output.display());
    s.push_str(&format!("  weights set   {set} of {} refittable, from {}\n", refittable.len(), args.weights.display()));
    if !unused.is_empty() {
        s.push_str(&format!("  not in engine {} (constants TensorRT folded or not refittable)\n", unused.len()));
    }
    emit(&s);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn safetensors(header: &str, data: &[u8]) -> Vec<u8> {
        let mut v = (header.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(header.as_bytes());
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn reads_safetensors_in_data_order() {
        let mut data = Vec::new();
        data.extend(1.5f32.to_le_bytes());
        data.extend((-2.0f32).to_le_bytes());
        data.extend(half::f16::from_f32(0.25).to_le_bytes());
        let header = r#"{"b": {"dtype": "F16", "shape": [1], "data_offsets": [8, 10]},
                         "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "__metadata__": {"format": "pt"}}"#;
        let w = read_safetensors(&safetensors(header, &data)).unwrap();
        assert_eq!(w[0], ("a".to_owned(), WeightData::F32(vec![1.5, -2.0])));
        assert_eq!(w[1], ("b".to_owned(), WeightData::F16(vec![half::f16::from_f32(0.25)])));
        for (header, why) in [
            (r#"{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}"#, "bytes for 3"),
            (r#"{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 80]}}"#, "outside the data"),
            (r#"{"a": {"dtype": "U16", "shape": [2], "data_offsets": [0, 4]}}"#, "U16"),
            ("[1]", "JSON object"),
        ] {
            let e = read_safetensors(&safetensors(header, &data)).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        assert!(read_safetensors(&[1, 2]).is_err());
        assert!(read_safetensors(&u64::MAX.to_le_bytes()).is_err());
    }

    #[test]
    fn reads_onnx_initializers_like_the_onnx_package() {
        let deps = crate::locate::deps_with("models/test/external_weights.onnx").unwrap();
        let model = deps.join("models/test/external_weights.onnx");
        let script = "import json, sys, onnx\nfrom onnx import numpy_helper as h\nm = onnx.load(sys.argv[1])\n\
print(json.dumps([[t.name, int(h.to_array(t).size), float(h.to_array(t).flat[0])] for t in m.graph.initializer]))";
        let out = std::process::Command::new(deps.join("venv/bin/python")).args(["-c", script]).arg(&model).output().expect("run python");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let expected: Vec<(String, usize, f64)> = serde_json::from_slice(&out.stdout).unwrap();
        let ours = read_weights(&model).unwrap();
        assert_eq!(ours.len(), expected.len());
        for ((name, data), (e_name, e_len, e_first)) in ours.iter().zip(&expected) {
            assert_eq!(name, e_name);
            let WeightData::F32(v) = data else { panic!("{name}: FP32 initializers stay FP32") };
            assert_eq!((v.len(), f64::from(v[0])), (*e_len, *e_first), "{name}");
        }
    }
}
