//! `trt bench PLAN`: latency percentiles, throughput, and the split between
//! host-to-device copies, the engine, and device-to-host copies, measured
//! with CUDA events around each part of every iteration.
//!
//! Inputs are filled once: token ids (101..1000) for integer inputs, 1 for
//! `attention_mask`, 0 for `token_type_ids` (names as trt-nlp's
//! [`InputRole`] knows them), zeros for float inputs. The first dynamic
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

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use trt::cuda::{Device, DeviceBuffer, Element, Event, GraphResource, PinnedBuffer, Stream};
use trt::{Bindings, ContextGraph, DataType, ExecutionContext};
use trt_nlp::InputRole;

use crate::error::{CliError, Result};
use crate::gpu;
use crate::output::{self, emit};

/// Arguments of `trt bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plan to run.
    pub plan: PathBuf,

    /// Batch size: the first dynamic dimension of each input [default: profile 0's opt].
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..))]
    pub batch: Option<i64>,

    /// Sequence length: the other dynamic dimensions [default: profile 0's opt].
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..))]
    pub seq: Option<i64>,

    /// Timed iterations.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: u32,

    /// Untimed iterations first.
    #[arg(long, default_value_t = 20)]
    pub warmup: u32,

    /// Replay the engine as a CUDA graph.
    #[arg(long)]
    pub graphs: bool,

    /// Leave host-device copies out of the loop (inputs are uploaded once).
    #[arg(long)]
    pub no_transfers: bool,

    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,

    /// Per-layer profiling and weight streaming (cmd::bench_layers).
    #[command(flatten)]
    pub tooling: super::bench_layers::Flags,
}

/// What a value-filled input holds.
#[derive(Debug, Clone, Copy)]
enum Fill {
    TokenIds,
    Ones,
    Zeros,
}

impl Fill {
    fn for_input(name: &str) -> Fill {
        match InputRole::from_name(name) {
            Some(InputRole::AttentionMask) => Fill::Ones,
            Some(InputRole::TokenTypeIds) => Fill::Zeros,
            _ => Fill::TokenIds,
        }
    }

    fn value(self, i: usize) -> i64 {
        match self {
            Fill::TokenIds => 101 + ((i * 7919) % 899) as i64,
            Fill::Ones => 1,
            Fill::Zeros => 0,
        }
    }
}

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

/// The `q` quantile (nearest rank) of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn stats(values: impl Iterator<Item = f64>) -> serde_json::Value {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    json!({"p50": quantile(&v, 0.5), "p90": quantile(&v, 0.9), "p99": quantile(&v, 0.99), "mean": mean, "min": v[0], "max": v[v.len() - 1]})
}

/// `trt bench`.
pub fn run(args: Args) -> Result<()> {
    let plan = gpu::read_plan(&args.plan)?;
    let (device, gpu_name) = gpu::require("trt bench")?;
    let engine = gpu::load_engine(&args.plan, &plan, &device, &gpu_name)?;
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
        shapes.push((t.name.clone(), t.dtype, shape));
    }
    let mut inputs = Vec::new();
    for (name, dtype, shape) in &shapes {
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
        shapes.push((t.name.clone(), t.dtype, shape));
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
    let mut samples = Vec::with_capacity(args.iterations as usize);
    let mut wall = Duration::ZERO;
    for iteration in 0..args.warmup + args.iterations {
        let started = Instant::now();
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
        if iteration >= args.warmup {
            wall += started.elapsed();
            let ms = |a: usize, b: usize| events[a].elapsed_ms(&events[b]).map(f64::from);
            samples.push(Sample { h2d: ms(0, 1)?, compute: ms(1, 2)?, d2h: ms(2, 3)?, total: ms(0, 3)? });
        }
    }

    let layers = super::bench_layers::profile(&args.tooling, &mut context, |ctx| {
        let mut bindings = Bindings::new(&stream);
        for s in inputs.iter_mut().chain(outputs.iter_mut()) {
            bindings = s.bind(bindings)?;
        }
        ctx.enqueue(bindings)?.wait()?;
        Ok(())
    })?;

    let batch = shapes.first().and_then(|(_, _, s)| s.first().copied()).unwrap_or(1).max(1);
    let throughput = (args.iterations as f64 * batch as f64) / wall.as_secs_f64();
    let mut doc = json!({
        "plan": args.plan.display().to_string(),
        "gpu": gpu_name,
        "tensors": shapes.iter().map(|(n, d, s)| json!({"name": n, "dtype": d.to_string(), "shape": s})).collect::<Vec<_>>(),
        "iterations": args.iterations,
        "warmup": args.warmup,
        "cuda_graphs": graph.is_some(),
        "transfers": transfers,
        "latency_ms": stats(samples.iter().map(|s| s.total)),
        "compute_ms": stats(samples.iter().map(|s| s.compute)),
        "h2d_ms": stats(samples.iter().map(|s| s.h2d)),
        "d2h_ms": stats(samples.iter().map(|s| s.d2h)),
        "wall_ms_per_iteration": wall.as_secs_f64() * 1e3 / args.iterations as f64,
        "throughput_per_s": throughput,
        "notes": notes,
    });
    let mut layer_text = String::new();
    super::bench_layers::extend_report(layers.as_deref(), &engine, &mut doc, &mut layer_text);
    if args.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&doc).expect("JSON values serialize")));
        return Ok(());
    }
    let mut s = format!(
        "bench {} on {gpu_name}: {} iterations after {} warm-up, CUDA graphs {}, transfers {}\n",
        args.plan.display(),
        args.iterations,
        args.warmup,
        if graph.is_some() { "on" } else { "off" },
        if transfers { "timed" } else { "excluded" }
    );
    for (name, dtype, shape) in &shapes {
        s.push_str(&format!("  {name:<24} {dtype:<5} {}\n", output::shape(shape)));
    }
    for (label, key) in
        [("latency (ms)", "latency_ms"), ("  engine", "compute_ms"), ("  host->device", "h2d_ms"), ("  device->host", "d2h_ms")]
    {
        let v = &doc[key];
        s.push_str(&format!(
            "  {label:<16} p50 {:8.3}  p90 {:8.3}  p99 {:8.3}  mean {:8.3}\n",
            v["p50"].as_f64().unwrap_or(0.0),
            v["p90"].as_f64().unwrap_or(0.0),
            v["p99"].as_f64().unwrap_or(0.0),
            v["mean"].as_f64().unwrap_or(0.0)
        ));
    }
    s.push_str(&format!(
        "  throughput       {throughput:.1} samples/s (batch {batch}; {:.3} ms wall per iteration)\n",
        wall.as_secs_f64() * 1e3 / args.iterations as f64
    ));
    s.push_str(&layer_text);
    emit(&s);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&[3.0], 0.9), 3.0);
    }

    #[test]
    fn fills_follow_the_input_names() {
        assert!(matches!(Fill::for_input("attention_mask"), Fill::Ones));
        assert!(matches!(Fill::for_input("token_type_ids"), Fill::Zeros));
        assert!(matches!(Fill::for_input("whatever"), Fill::TokenIds));
        assert!((0..5000).map(|i| Fill::TokenIds.value(i)).all(|v| (101..1000).contains(&v)));
    }
}
