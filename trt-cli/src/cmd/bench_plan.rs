//! `trt bench PLAN` on TensorRT: latency percentiles, throughput, and the
//! split between host-to-device copies, the engine, and device-to-host
//! copies, measured with CUDA events around each part of every iteration.
//!
//! Inputs are filled once ([`Fill`]): token ids for integer inputs, 1 for
//! `attention_mask`, 0 for `token_type_ids`, zeros for float inputs. The first dynamic
//! dimension of each input is the batch (`--batch`), the others the sequence
//! length (`--seq`); both default to profile 0's opt shape.
//!
//! `--graphs` replays the engine as a CUDA graph
//! ([`ExecutionContext::capture_graph`]); if capture fails, the run says so and
//! falls back to ordinary enqueues. `--no-transfers` uploads inputs once and
//! times the engine alone.
//!
//! An ordinary enqueue keeps its buffers borrowed until it is waited for
//! ([`trt::Enqueued`]), so each iteration waits for the engine before the
//! download is enqueued; the event timings are unaffected, the wall-clock
//! throughput includes that one host synchronization.

use trt::cuda::{Device, DeviceBuffer, Element, Event, GraphResource, PinnedBuffer, Stream};
use trt::{Bindings, ContextGraph, DataType, ExecutionContext};

use super::bench_args::{Args, Fill, Measured};
use super::bench_report::{measure, Io, Report, Summary, TensorShape};
use crate::error::{CliError, Result};
use crate::gpu;
use crate::output;

/// Element types bench can fill: integers take the value, floats stay zero.
trait Value: Element {
    fn from_i64(v: i64) -> Self;
}

macro_rules! value {
    (int $($t:ty),*) => { $(impl Value for $t { fn from_i64(v: i64) -> Self { v as $t } })* };
    (zero $($t:ty),*) => { $(impl Value for $t { fn from_i64(_: i64) -> Self { <$t>::default() } })* };
}
value!(int i32, i64, i8, u8);
value!(zero f32, half::f16, half::bf16);
impl Value for bool {
    fn from_i64(v: i64) -> Self {
        v != 0
    }
}

/// One I/O tensor's host and device buffers.
trait Slot {
    fn upload(&mut self, stream: &Stream) -> trt::Result<()>;
    fn download(&mut self, stream: &Stream) -> trt::Result<()>;
    fn bind<'a>(&'a mut self, bindings: Bindings<'a>) -> trt::Result<Bindings<'a>>;
    fn resource(&mut self) -> &mut dyn GraphResource;
}

struct Typed<T: Element> {
    name: String,
    host: PinnedBuffer<T>,
    device: DeviceBuffer<T>,
}

impl<T: Element> Slot for Typed<T> {
    fn upload(&mut self, stream: &Stream) -> trt::Result<()> {
        Ok(self.device.copy_from_pinned(&mut self.host, stream)?)
    }
    fn download(&mut self, stream: &Stream) -> trt::Result<()> {
        Ok(self.device.copy_to_pinned(&mut self.host, stream)?)
    }
    fn bind<'a>(&'a mut self, bindings: Bindings<'a>) -> trt::Result<Bindings<'a>> {
        bindings.bind(&self.name, &mut self.device)
    }
    fn resource(&mut self) -> &mut dyn GraphResource {
        &mut self.device
    }
}

fn typed<T: Value>(name: &str, len: usize, fill: Fill, device: &Device, stream: &Stream) -> trt::Result<Box<dyn Slot>> {
    let data: Vec<T> = (0..len).map(|i| T::from_i64(fill.value(i))).collect();
    Ok(Box::new(Typed { name: name.to_owned(), host: PinnedBuffer::from_slice(device, &data)?, device: DeviceBuffer::zeros(len, stream)? }))
}

fn slot(name: &str, dtype: DataType, len: usize, fill: Fill, device: &Device, stream: &Stream) -> Result<Box<dyn Slot>> {
    let s = match dtype {
        DataType::Float => typed::<f32>(name, len, fill, device, stream),
        DataType::Half => typed::<half::f16>(name, len, fill, device, stream),
        DataType::BF16 => typed::<half::bf16>(name, len, fill, device, stream),
        DataType::Int32 => typed::<i32>(name, len, fill, device, stream),
        DataType::Int64 => typed::<i64>(name, len, fill, device, stream),
        DataType::Int8 => typed::<i8>(name, len, fill, device, stream),
        DataType::Uint8 => typed::<u8>(name, len, fill, device, stream),
        DataType::Bool => typed::<bool>(name, len, fill, device, stream),
        other => return Err(CliError::new(format!("tensor '{name}' has dtype {other}, which trt bench cannot allocate"))),
    };
    Ok(s?)
}

/// Times of one iteration, in milliseconds.
#[derive(Debug, Clone, Copy)]
struct Sample {
    h2d: f64,
    compute: f64,
    d2h: f64,
    total: f64,
}

/// `trt bench PLAN` on GPU `device`.
pub fn run(args: &Args, plan_path: &std::path::Path, device_index: u32) -> Result<Measured> {
    let plan = gpu::read_plan(plan_path)?;
    let (device, gpu_name) = gpu::require_on("trt bench", device_index)?;
    let engine = gpu::load_engine(plan_path, &plan, &device, &gpu_name)?;
    let stream = Stream::new(&device)?;
    let budget_note = super::bench_layers::before_context(&args.tooling, &engine)?;
    let mut context = ExecutionContext::new(&engine)?;

    let mut shapes = Vec::new();
    for t in engine.inputs() {
        if t.is_shape_tensor {
            return Err(CliError::new(format!("input '{}' is a shape tensor, which trt bench cannot fill", t.name)));
        }
        let opt = t.profiles.first().map(|r| r.opt.clone()).unwrap_or_else(|| t.shape.clone());
        let first_dynamic = t.shape.iter().position(|&d| d < 0);
        let shape: Vec<i64> = t
            .shape
            .iter()
            .enumerate()
            .map(|(i, &d)| match d {
                d if d >= 0 => d,
                _ if Some(i) == first_dynamic => args.batch.unwrap_or(opt[i]),
                _ => args.seq.unwrap_or(opt[i]),
            })
            .collect();
        context.set_input_shape(&t.name, &shape)?;
        shapes.push((t.name.clone(), Io::Input, t.dtype, shape));
    }
    let mut inputs = Vec::new();
    for (name, _, dtype, shape) in &shapes {
        inputs.push(slot(name, *dtype, shape.iter().product::<i64>() as usize, Fill::for_input(name), &device, &stream)?);
    }
    let mut outputs = Vec::new();
    for t in engine.outputs() {
        let shape = context.tensor_shape(&t.name)?;
        if shape.iter().any(|&d| d < 0) {
            return Err(CliError::new(format!(
                "output '{}' has a data-dependent shape {}; trt bench needs shapes known before running",
                t.name,
                output::shape(&shape)
            )));
        }
        outputs.push(slot(&t.name, t.dtype, shape.iter().product::<i64>() as usize, Fill::Zeros, &device, &stream)?);
        shapes.push((t.name.clone(), Io::Output, t.dtype, shape));
    }
    for s in inputs.iter_mut() {
        s.upload(&stream)?;
    }
    stream.synchronize()?;

    let mut notes: Vec<String> = budget_note.into_iter().collect();
    let mut graph: Option<ContextGraph> = None;
    if args.graphs {
        let mut bindings = Bindings::new(&stream);
        for s in inputs.iter_mut().chain(outputs.iter_mut()) {
            bindings = s.bind(bindings)?;
        }
        match context.capture_graph(bindings) {
            Ok(g) => graph = Some(g),
            Err(e) => {
                let note = format!("--graphs: capturing the engine failed ({e}); running ordinary enqueues instead");
                eprintln!("note: {note}");
                notes.push(note);
            }
        }
    }

    let transfers = !args.no_transfers;
    let events = [Event::new(&device)?, Event::new(&device)?, Event::new(&device)?, Event::new(&device)?];
    let timed = measure(args.warmup, args.iterations, || {
        events[0].record(&stream)?;
        if transfers {
            for s in inputs.iter_mut() {
                s.upload(&stream)?;
            }
        }
        events[1].record(&stream)?;
        match graph.as_mut() {
            Some(g) => {
                let mut used: Vec<&mut dyn GraphResource> = inputs.iter_mut().chain(outputs.iter_mut()).map(|s| s.resource()).collect();
                context.launch_graph(g, &stream, &mut used)?;
                events[2].record(&stream)?;
            }
            None => {
                let mut bindings = Bindings::new(&stream);
                for s in inputs.iter_mut().chain(outputs.iter_mut()) {
                    bindings = s.bind(bindings)?;
                }
                let enqueued = context.enqueue(bindings)?;
                events[2].record(&stream)?;
                enqueued.wait()?;
            }
        }
        if transfers {
            for s in outputs.iter_mut() {
                s.download(&stream)?;
            }
        }
        events[3].record(&stream)?;
        events[3].synchronize()?;
        let ms = |a: usize, b: usize| events[a].elapsed_ms(&events[b]).map(f64::from);
        Ok(Sample { h2d: ms(0, 1)?, compute: ms(1, 2)?, d2h: ms(2, 3)?, total: ms(0, 3)? })
    })?;

    let layers = super::bench_layers::profile(&args.tooling, &mut context, |ctx| {
        let mut bindings = Bindings::new(&stream);
        for s in inputs.iter_mut().chain(outputs.iter_mut()) {
            bindings = s.bind(bindings)?;
        }
        ctx.enqueue(bindings)?.wait()?;
        Ok(())
    })?;

    let batch = shapes.first().and_then(|(_, _, _, s)| s.first().copied()).unwrap_or(1).max(1);
    let samples = &timed.samples;
    let stages = [
        ("  engine", "compute_ms", Summary::of(samples.iter().map(|s| s.compute))),
        ("  host->device", "h2d_ms", Summary::of(samples.iter().map(|s| s.h2d))),
        ("  device->host", "d2h_ms", Summary::of(samples.iter().map(|s| s.d2h))),
    ];
    let mut detail = serde_json::Map::new();
    let mut text = String::new();
    for (label, key, summary) in &stages {
        detail.insert((*key).into(), serde_json::to_value(summary).expect("a summary serializes"));
        text.push_str(&summary.line(label));
    }
    let mut layer_text = String::new();
    let mut extra = serde_json::Value::Object(serde_json::Map::new());
    super::bench_layers::extend_report(layers.as_deref(), &engine, &mut extra, &mut layer_text);
    if let serde_json::Value::Object(m) = extra {
        detail.extend(m);
    }
    let report = Report {
        backend: "tensorrt".into(),
        device: format!("cuda:{device_index}"),
        device_name: gpu_name,
        model: plan_path.display().to_string(),
        shapes: shapes
            .iter()
            .map(|(n, io, d, s)| TensorShape { name: n.clone(), io: *io, dtype: d.to_string(), shape: s.clone() })
            .collect(),
        batch,
        iterations: args.iterations,
        warmup: args.warmup,
        cuda_graphs: graph.is_some(),
        transfers,
        latency_ms: Summary::of(samples.iter().map(|s| s.total)),
        throughput_per_s: timed.throughput(batch),
        wall_ms_per_iteration: timed.ms_per_iteration(),
        notes,
        detail,
    };
    Ok(Measured { report, stage_lines: text, trailer: layer_text })
}
