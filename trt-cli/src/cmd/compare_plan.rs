//! The TensorRT side of `trt compare PLAN MODEL.onnx`: the plan run on GPU 0
//! batch by batch, and for `--layers` an engine rebuilt from the ONNX model
//! with its intermediate tensors marked as outputs.
//!
//! | step | what | needs a GPU |
//! |---|---|---|
//! | [`PlanSide::open`] | deserialize the plan on GPU 0; without one, or where TensorRT refuses it, the error says "no GPU TensorRT can execute on" and why | yes |
//! | [`PlanSide::run`] | one batch: token inputs in the engine's integer type, every output read back as f32 | yes |
//! | [`rebuild_marked`] | parse the ONNX model as `trt build` does (`--fp16` converts in memory), mark the float layer outputs the ONNX graph also has, build with the plan's optimization profiles | no (TensorRT-RTX) |
//! | [`PlanSide::layer_values`] | the rebuilt engine on the plan's GPU, one batch | yes |
//!
//! Why rebuild: a plan keeps only its own outputs, so its intermediate
//! tensors can be read only from an engine built with them as outputs. The
//! marks keep TensorRT from fusing across those tensors, so the rebuilt
//! engine can be closer to the ONNX model than the plan is; the plan's own
//! outputs are compared as they are.

use std::path::{Path, PathBuf};

use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn};
use trt::cuda::{Device, DeviceBuffer, Element, Stream};
use trt::{Bindings, DataType, Engine, ExecutionContext, ProfileSpec, Runtime, SerializedEngine};
use trt_onnx::dataset::{Batch, Outputs};
use trt_onnx::graph::Model;

use super::compare_layers;
use super::compare_report::SideInfo;
use crate::cmd::build;
use crate::error::{naming, CliError, Context, Result};
use crate::gpu;

/// How the plan was built, for the `--layers` rebuild (a plan does not record
/// its builder settings; its optimization profiles are read from it).
#[derive(Debug, Clone, Default)]
pub struct Rebuild {
    /// The plan was built with `trt build --fp16`.
    pub fp16: bool,
    /// `--opt-level`.
    pub opt_level: Option<i32>,
    /// `--workspace`, MiB.
    pub workspace_mib: Option<usize>,
}

impl Rebuild {
    /// The settings in words, for the report.
    pub fn describe(&self, profiles: usize) -> String {
        let mut s = format!("{profiles} optimization profile(s) read from the plan");
        if self.fp16 {
            s.push_str(", --fp16");
        }
        if let Some(l) = self.opt_level {
            s.push_str(&format!(", --opt-level {l}"));
        }
        if let Some(w) = self.workspace_mib {
            s.push_str(&format!(", --workspace {w}"));
        }
        s
    }
}

/// A device buffer of one I/O tensor, in its engine type.
enum Buffer {
    I32(DeviceBuffer<i32>),
    I64(DeviceBuffer<i64>),
    F32(DeviceBuffer<f32>),
    F16(DeviceBuffer<f16>),
    BF16(DeviceBuffer<bf16>),
}

impl Buffer {
    fn zeros(name: &str, dtype: DataType, len: usize, stream: &Stream) -> Result<Buffer> {
        Ok(match dtype {
            DataType::Int32 => Buffer::I32(DeviceBuffer::zeros(len, stream)?),
            DataType::Int64 => Buffer::I64(DeviceBuffer::zeros(len, stream)?),
            DataType::Float => Buffer::F32(DeviceBuffer::zeros(len, stream)?),
            DataType::Half => Buffer::F16(DeviceBuffer::zeros(len, stream)?),
            DataType::BF16 => Buffer::BF16(DeviceBuffer::zeros(len, stream)?),
            other => return Err(CliError::new(format!("tensor '{name}' has dtype {other}, which trt compare cannot read"))),
        })
    }

    fn bind<'a>(&'a mut self, name: &'a str, b: Bindings<'a>) -> trt::Result<Bindings<'a>> {
        match self {
            Buffer::I32(d) => b.bind(name, d),
            Buffer::I64(d) => b.bind(name, d),
            Buffer::F32(d) => b.bind(name, d),
            Buffer::F16(d) => b.bind(name, d),
            Buffer::BF16(d) => b.bind(name, d),
        }
    }

    /// The values as f32 (float tensors only).
    fn read_f32(&mut self, stream: &Stream) -> Result<Option<Vec<f32>>> {
        fn floats<T: Element>(d: &mut DeviceBuffer<T>, stream: &Stream, f: impl Fn(T) -> f32) -> Result<Option<Vec<f32>>> {
            Ok(Some(d.to_vec(stream)?.into_iter().map(f).collect()))
        }
        match self {
            Buffer::F32(d) => floats(d, stream, |v| v),
            Buffer::F16(d) => floats(d, stream, f16::to_f32),
            Buffer::BF16(d) => floats(d, stream, bf16::to_f32),
            Buffer::I32(_) | Buffer::I64(_) => Ok(None),
        }
    }
}

/// A plan deserialized on a GPU, with one execution context.
pub struct PlanSide {
    path: PathBuf,
    device: Device,
    gpu: String,
    engine: Engine,
    context: ExecutionContext,
    stream: Stream,
}

impl PlanSide {
    /// The plan at `path` on GPU 0.
    pub fn open(path: &Path) -> Result<PlanSide> {
        let plan = gpu::read_plan(path)?;
        let (device, gpu) = gpu::probe().map_err(|e| CliError::new(format!("{}: no GPU TensorRT can execute on: {e}", path.display())))?;
        Self::on(path, &plan, device, gpu)
    }

    fn on(path: &Path, plan: &SerializedEngine, device: Device, gpu: String) -> Result<PlanSide> {
        let engine = Runtime::new()?.deserialize_on(plan.as_bytes(), &device).map_err(|e| {
            CliError::new(format!("{}: no GPU TensorRT can execute on: {gpu} does not run this plan ({e})", path.display()))
        })?;
        let context = ExecutionContext::new(&engine)?;
        let stream = Stream::new(&device)?;
        Ok(PlanSide { path: path.to_path_buf(), device, gpu, engine, context, stream })
    }

    /// The plan and the GPU it runs on.
    pub fn info(&self) -> SideInfo {
        SideInfo { path: self.path.display().to_string(), backend: format!("tensorrt {} on {}", trt::header_version(), self.gpu) }
    }

    /// The engine's input names.
    pub fn inputs(&self) -> Vec<String> {
        self.engine.inputs().map(|t| t.name.clone()).collect()
    }

    /// The engine's float output names.
    pub fn outputs(&self) -> Vec<String> {
        self.engine.outputs().filter(|t| t.dtype.is_float()).map(|t| t.name.clone()).collect()
    }

    /// The plan's optimization profiles, every input's range in each.
    pub fn profiles(&self) -> Vec<ProfileSpec> {
        (0..self.engine.num_profiles())
            .map(|p| {
                self.engine.inputs().fold(ProfileSpec::new(), |spec, t| match t.profiles.get(p) {
                    Some(r) => spec.with(&t.name, r.clone()),
                    None => spec,
                })
            })
            .collect()
    }

    /// Runs one batch and returns the outputs called `names` as f32.
    pub fn run(&mut self, batch: &Batch, names: &[&str]) -> Result<Outputs> {
        let mut inputs = Vec::new();
        for (name, values) in &batch.inputs {
            let t = self.engine.io_tensor(name).about(&self.path)?;
            if t.is_shape_tensor {
                return Err(naming(&self.path, format!("input '{name}' is a shape tensor, which trt compare cannot fill")));
            }
            let shape: Vec<i64> = values.shape().iter().map(|&d| d as i64).collect();
            self.context
                .set_input_shape(name, &shape)
                .map_err(|e| naming(&self.path, format!("{e}; keep --batch and --max-len within the plan's profile")))?;
            let flat: Vec<i64> = values.iter().copied().collect();
            let buffer = match t.dtype {
                DataType::Int32 => {
                    Buffer::I32(DeviceBuffer::from_slice(&flat.iter().map(|&v| v as i32).collect::<Vec<_>>(), &self.stream)?)
                }
                DataType::Int64 => Buffer::I64(DeviceBuffer::from_slice(&flat, &self.stream)?),
                other => return Err(naming(&self.path, format!("input '{name}' is {other}; token inputs must be int32 or int64"))),
            };
            inputs.push((name.clone(), buffer));
        }
        let mut outputs = Vec::new();
        for t in self.engine.outputs() {
            if t.is_shape_tensor || t.on_host {
                return Err(naming(
                    &self.path,
                    format!("output '{}' is a shape tensor (on the host), which trt compare cannot read", t.name),
                ));
            }
            let shape = self.context.tensor_shape(&t.name)?;
            if shape.iter().any(|&d| d < 0) {
                return Err(naming(&self.path, format!("output '{}' has a data-dependent shape {shape:?}", t.name)));
            }
            let len = shape.iter().product::<i64>().max(1) as usize;
            let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
            outputs.push((t.name.clone(), dims, Buffer::zeros(&t.name, t.dtype, len, &self.stream)?));
        }
        let mut bindings = Bindings::with_capacity(&self.stream, inputs.len() + outputs.len());
        for (name, b) in inputs.iter_mut() {
            bindings = b.bind(name, bindings)?;
        }
        for (name, _, b) in outputs.iter_mut() {
            bindings = b.bind(name, bindings)?;
        }
        self.context.enqueue(bindings)?.wait()?;
        let mut result = Vec::new();
        for name in names {
            let (_, dims, b) = outputs
                .iter_mut()
                .find(|(n, _, _)| n == name)
                .ok_or_else(|| naming(&self.path, format!("the engine has no output '{name}'")))?;
            let values = b.read_f32(&self.stream)?.ok_or_else(|| naming(&self.path, format!("output '{name}' is not a float tensor")))?;
            let n: usize = dims.iter().product();
            let a = ArrayD::from_shape_vec(IxDyn(dims), values[..n].to_vec()).map_err(|e| CliError::new(e.to_string()))?;
            result.push(((*name).to_owned(), a));
        }
        Ok(result)
    }

    /// `--layers`: an engine rebuilt from `model` (the ONNX file the plan was
    /// built from: the reference `onnx` was loaded from, or `--built-from`)
    /// with every intermediate float tensor both name as an output, run on `batch` on this plan's GPU. Returns the names in
    /// `onnx`'s topological order, their values, and how the engine was built.
    pub fn layer_values(&self, model: &Path, onnx: &Model, rebuild: &Rebuild, batch: &Batch) -> Result<(Vec<String>, Outputs, String)> {
        let profiles = self.profiles();
        let (plan, names) = rebuild_marked(model, rebuild, &profiles, &compare_layers::onnx_float_tensors(onnx))?;
        let how = format!("TensorRT tensors from an engine rebuilt from {} ({})", model.display(), rebuild.describe(profiles.len()));
        let mut side = PlanSide::on(model, &plan, self.device.clone(), self.gpu.clone())?;
        let wanted: Vec<&str> = names.iter().map(String::as_str).collect();
        let values = side.run(batch, &wanted)?;
        Ok((names, values, how))
    }
}

/// Builds `model` as `trt build` does with `rebuild`'s settings and
/// `profiles`, with every float layer output whose name is among
/// `onnx_names` marked as an output. Returns the plan and the marked names,
/// in the order of `onnx_names`.
pub fn rebuild_marked(
    model: &Path,
    rebuild: &Rebuild,
    profiles: &[ProfileSpec],
    onnx_names: &[String],
) -> Result<(SerializedEngine, Vec<String>)> {
    let builder = trt::Builder::new()?;
    let flag = rebuild.fp16.then_some("--fp16");
    let network = build::parse(&builder, model, rebuild.fp16, cfg!(trt_weakly_typed) && rebuild.fp16)?;
    let floats: Vec<String> = network.layer_outputs().into_iter().filter(|l| l.is_float_activation()).map(|l| l.tensor.name).collect();
    let names = compare_layers::matched(onnx_names, &floats);
    if names.is_empty() {
        return Err(naming(model, "no intermediate float tensor of the ONNX model has a TensorRT layer output of the same name"));
    }
    network.mark_outputs(&names).about(model)?;
    let mut config = builder.config()?;
    build::apply_precision(flag, &mut config)?;
    if let Some(mib) = rebuild.workspace_mib {
        config.set_workspace(build::workspace_bytes(mib)?)?;
    }
    if let Some(level) = rebuild.opt_level {
        config.set_optimization_level(level)?;
    }
    for spec in profiles {
        config.add_profile(spec.clone()).about(model)?;
    }
    let plan = builder.build(&network, &config).map_err(|e| build::explain(model, &network, e))?;
    Ok((plan, names))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minilm() -> PathBuf {
        crate::locate::deps_with("models/minilm/model.onnx").unwrap().join("models/minilm/model.onnx")
    }

    fn profile() -> ProfileSpec {
        let names = ["input_ids", "attention_mask", "token_type_ids"];
        ProfileSpec::new().with_all(&names, trt::ShapeRange::new(&[1, 1], &[4, 16], &[8, 32]))
    }

    #[test]
    fn the_layers_rebuild_marks_the_tensors_both_sides_name_and_builds_in_fp32_and_fp16() {
        let path = minilm();
        let onnx = Model::load(&path).unwrap();
        let onnx_names = compare_layers::onnx_float_tensors(&onnx);
        for fp16 in [false, true] {
            let rebuild = Rebuild { fp16, opt_level: Some(0), ..Rebuild::default() };
            let (plan, names) = rebuild_marked(&path, &rebuild, &[profile()], &onnx_names).unwrap();
            println!("fp16 {fp16}: {} of {} ONNX float tensors marked; plan {} bytes", names.len(), onnx_names.len(), plan.len());
            // In the ONNX graph's order, and most of its tensors (the parser
            // folds a few, e.g. constants, into weights).
            assert_eq!(names, compare_layers::matched(&onnx_names, &names));
            assert!(names.len() * 10 >= onnx_names.len() * 8, "{} of {}", names.len(), onnx_names.len());
            for n in ["embeddings/word/Gather_out", "logits", "last_hidden_state"] {
                assert!(names.iter().any(|m| m == n), "{n}");
            }
            assert!(plan.len() > 10_000_000);
        }
        // Built from another file than the reference (`--built-from`): the
        // Python-made FP16 model names its tensors as the FP32 one does.
        let fp16 = path.with_file_name("model_fp16.onnx");
        let (_, names) = rebuild_marked(&fp16, &Rebuild { opt_level: Some(0), ..Rebuild::default() }, &[profile()], &onnx_names).unwrap();
        println!("from model_fp16.onnx: {} of {} marked", names.len(), onnx_names.len());
        assert!(names.len() * 10 >= onnx_names.len() * 8, "{} of {}", names.len(), onnx_names.len());
    }

    #[test]
    fn a_plan_without_a_gpu_is_refused_with_the_reason() {
        if gpu::probe().is_ok() {
            println!("skipped: this machine has a GPU, so the plan may load; the refusal is checked where there is none");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (plan, _) = rebuild_marked(&minilm(), &Rebuild::default(), &[profile()], &["logits".to_owned()]).unwrap();
        let path = dir.path().join("m.plan");
        plan.save(&path).unwrap();
        let err = PlanSide::open(&path).err().expect("no GPU here").to_string();
        assert!(err.contains("no GPU TensorRT can execute on") && err.contains("m.plan"), "{err}");
    }
}
