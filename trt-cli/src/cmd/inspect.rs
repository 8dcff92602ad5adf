//! `trt inspect (PLAN | MODEL.onnx) [--json] [--layers]`.
//!
//! An ONNX model is parsed by TensorRT's parser (no GPU needed): I/O tensors
//! with -1 for dynamic dimensions, and the layer count of the network. A plan
//! is deserialized (TensorRT needs a GPU it supports for that): engine I/O with
//! formats and per-profile ranges, device memory, layers, and the engine
//! inspector's layer information. `.onnx` files are models, `.plan`,
//! `.engine` and `.trt` files plans; anything else is tried as both.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use trt::{Builder, Engine, IoMode, Network, OnnxParser, ProfileSpec, TensorInfo};

use crate::error::{CliError, Result};
use crate::gpu;
use crate::output::{self, emit, Table};

/// Arguments of `trt inspect`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// An ONNX model or a TensorRT plan.
    pub file: PathBuf,

    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub json: bool,

    /// A plan: one row per engine layer (type, precision, tactic) from the engine
    /// inspector, parsed, instead of its raw JSON (details need `trt build --detailed-layers`).
    #[arg(long)]
    pub layers: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Onnx,
    Plan,
    Unknown,
}

fn kind(path: &Path) -> Kind {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("onnx") => Kind::Onnx,
        Some("plan" | "engine" | "trt") => Kind::Plan,
        _ => Kind::Unknown,
    }
}

/// `trt inspect`.
pub fn run(args: Args) -> Result<()> {
    let path = &args.file;
    let (text, doc) = match kind(path) {
        Kind::Onnx => onnx(path)?,
        Kind::Plan => plan(path, args.layers)?,
        Kind::Unknown => {
            std::fs::metadata(path).map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
            match onnx(path) {
                Ok(r) => r,
                Err(as_onnx) => plan(path, args.layers).map_err(|as_plan| {
                    CliError::new(format!(
                        "{} is neither an ONNX model nor a plan that loads here; as ONNX: {as_onnx}; as a plan: {as_plan}",
                        path.display()
                    ))
                })?,
            }
        }
    };
    if args.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&doc).expect("JSON values serialize")));
    } else {
        emit(&text);
    }
    Ok(())
}

/// An I/O table of network tensors, with the profile's min/opt/max per input when given.
pub fn io_table(inputs: &[TensorInfo], outputs: &[TensorInfo], profile: Option<&ProfileSpec>) -> Table {
    let mut headers = vec!["tensor", "mode", "dtype", "shape"];
    if profile.is_some() {
        headers.extend(["min", "opt", "max"]);
    }
    let mut table = Table::new(&headers);
    for (mode, list) in [("input", inputs), ("output", outputs)] {
        for t in list {
            let mut row = vec![t.name.clone(), mode.to_owned(), t.dtype.to_string(), output::shape(&t.dims)];
            if let Some(r) = profile.and_then(|p| p.ranges.get(&t.name)) {
                row.extend([output::dims(&r.min), output::dims(&r.opt), output::dims(&r.max)]);
            }
            table.row(row);
        }
    }
    table
}

/// [`io_table`] of a network.
pub fn network_table(network: &Network<'_>, profile: Option<&ProfileSpec>) -> Table {
    io_table(&network.inputs(), &network.outputs(), profile)
}

fn tensor_json(name: &str, mode: &str, dtype: trt::DataType, dims: &[i64]) -> Value {
    json!({
        "name": name,
        "mode": mode,
        "dtype": dtype.to_string(),
        "shape": dims,
        "dynamic_dims": output::dynamic_dims(dims),
    })
}

/// What TensorRT's parser makes of an ONNX model.
#[derive(Debug, Clone)]
pub struct OnnxInfo {
    /// The network's inputs (-1 for dynamic dimensions).
    pub inputs: Vec<TensorInfo>,
    /// The network's outputs.
    pub outputs: Vec<TensorInfo>,
    /// Layers of the network, before optimization.
    pub layers: usize,
}

impl OnnxInfo {
    /// Parse `path` (errors name the file).
    pub fn parse(builder: &Builder, path: &Path) -> Result<Self> {
        let network = OnnxParser::parse_file(builder, path)?;
        Ok(OnnxInfo { inputs: network.inputs(), outputs: network.outputs(), layers: network.layers().len() })
    }

    /// The names of the dynamic inputs.
    pub fn dynamic_inputs(&self) -> Vec<&str> {
        self.inputs.iter().filter(|i| i.is_dynamic()).map(|i| i.name.as_str()).collect()
    }

    /// The I/O table (with the profile's ranges when given) and the layer count.
    pub fn text(&self, profile: Option<&ProfileSpec>) -> String {
        let mut text = io_table(&self.inputs, &self.outputs, profile).render("  ");
        text.push_str(&format!("  layers  {} (network, before optimization)\n", self.layers));
        text
    }
}

/// The text and JSON reports of an ONNX model.
pub fn onnx(path: &Path) -> Result<(String, Value)> {
    let builder = Builder::new()?;
    let info = OnnxInfo::parse(&builder, path)?;
    let version = builder.library().version().to_string();
    let text = format!("ONNX model {} (parsed by {version})\n{}", path.display(), info.text(None));
    let tensors: Vec<Value> = info
        .inputs
        .iter()
        .map(|t| tensor_json(&t.name, "input", t.dtype, &t.dims))
        .chain(info.outputs.iter().map(|t| tensor_json(&t.name, "output", t.dtype, &t.dims)))
        .collect();
    let doc = json!({
        "file": path.display().to_string(),
        "kind": "onnx",
        "tensorrt": version,
        "tensors": tensors,
        "layers": info.layers,
    });
    Ok((text, doc))
}

/// The text and JSON reports of a plan (deserialized here); with `layers`,
/// the inspector's layers as a table and as parsed entries.
pub fn plan(path: &Path, layers: bool) -> Result<(String, Value)> {
    let plan = gpu::read_plan(path)?;
    let engine = gpu::deserialize_anywhere(path, &plan)?;
    if !layers {
        return engine_report(path, plan.len(), &engine);
    }
    let info = engine.layer_info()?;
    let mut text = format!("plan {} ({}): {} engine layers\n", path.display(), output::bytes(plan.len()), info.layers.len());
    text.push_str(&layers_table(&info).render("  "));
    let doc = json!({ "file": path.display().to_string(), "kind": "plan", "layers": info.layers, "bindings": info.bindings });
    Ok((text, doc))
}

/// One row per engine layer: name, type, precision, tactic (`-` where the plan has no details).
pub fn layers_table(info: &trt::EngineInfo) -> Table {
    let mut table = Table::new(&["layer", "type", "precision", "tactic"]);
    for l in &info.layers {
        let tactic = match l {
            trt::EngineLayer::Detailed(d) => d.tactic.clone(),
            trt::EngineLayer::Name(_) => None,
        };
        table.row(vec![
            l.name().to_owned(),
            l.layer_type().unwrap_or("-").to_owned(),
            l.precision().unwrap_or_else(|| "-".to_owned()),
            tactic.unwrap_or_else(|| "-".to_owned()),
        ]);
    }
    table
}

/// The text and JSON reports of a deserialized engine.
pub fn engine_report(path: &Path, plan_bytes: usize, engine: &Engine) -> Result<(String, Value)> {
    let device_memory = engine.device_memory_size()?;
    let layers = engine.num_layers()?;
    let layer_info = engine.layer_info_json()?;
    let layer_info: Value = serde_json::from_str(&layer_info).unwrap_or(Value::String(layer_info));
    let profiles = engine.num_profiles();

    let mut headers = vec!["tensor".to_owned(), "mode".into(), "dtype".into(), "shape".into(), "format".into()];
    headers.extend((0..profiles).map(|p| format!("profile {p} min / opt / max")));
    let mut table = Table::new(&headers.iter().map(String::as_str).collect::<Vec<_>>());
    let mut tensors = Vec::new();
    for t in engine.io_tensors() {
        let mode = match t.mode {
            IoMode::Input => "input",
            IoMode::Output => "output",
        };
        let mut row = vec![t.name.clone(), mode.to_owned(), t.dtype.to_string(), output::shape(&t.shape), t.format.clone()];
        row.extend(t.profiles.iter().map(|r| format!("{} / {} / {}", output::dims(&r.min), output::dims(&r.opt), output::dims(&r.max))));
        table.row(row);
        let mut j = tensor_json(&t.name, mode, t.dtype, &t.shape);
        let fields = j.as_object_mut().expect("tensor_json is an object");
        fields.insert("format".into(), json!(t.format));
        fields.insert("shape_tensor".into(), json!(t.is_shape_tensor));
        fields.insert(
            "profiles".into(),
            json!(t.profiles.iter().map(|r| json!({"min": r.min, "opt": r.opt, "max": r.max})).collect::<Vec<_>>()),
        );
        tensors.push(j);
    }
    let mut text = format!("plan {} ({})\n", path.display(), output::bytes(plan_bytes));
    text.push_str(&table.render("  "));
    text.push_str(&format!("  profiles       {profiles}\n  device memory  {}\n  layers         {layers}\n", output::bytes(device_memory)));
    text.push_str("  layer information (engine inspector):\n");
    let pretty = serde_json::to_string_pretty(&layer_info).expect("JSON values serialize");
    for line in pretty.lines() {
        text.push_str(&format!("    {line}\n"));
    }
    let doc = json!({
        "file": path.display().to_string(),
        "kind": "plan",
        "tensorrt": trt::Library::load()?.version().to_string(),
        "plan_bytes": plan_bytes,
        "tensors": tensors,
        "profiles": profiles,
        "device_memory_bytes": device_memory,
        "layers": layers,
        "layer_info": layer_info,
    });
    Ok((text, doc))
}
