//! `trt bench MODEL` on ONNX Runtime: trt-nlp's backend
//! ([`OrtBackend`]) on the CPU or on CUDA device N, one session, timed
//! through the same [`Backend::run`] the classifier, the embedder and the
//! server call.
//!
//! Each iteration packs `--batch` rows of `--seq` token ids ([`Fill`], the
//! ids the TensorRT path uses; mask 1, type ids 0) into the backend's
//! buffers, runs the batch and reads the outputs back: on CUDA that is one
//! upload, the run and one download (IO binding), so the latency is what a
//! caller of the backend waits for. The tokenizer beside the model (or the
//! folder's) packs the rows; no text is tokenized inside the loop.

use std::path::Path;

use trt_nlp::backend::onnxruntime::{OrtBackend, OrtBackendOptions};
use trt_nlp::backend::{Backend, BackendOptions};
use trt_nlp::{ModelFolder, Padding, TokenRow, TokenizerPipeline};
use trt_onnx::runtime::Provider;

use super::bench_args::{Args, Fill, Measured};
use super::bench_report::{measure, Io, Report, Summary, TensorShape};
use crate::error::{naming, CliError, Result};

/// Rows and length when the flags do not say.
const DEFAULT_BATCH: i64 = 1;
const DEFAULT_SEQ: i64 = 128;

/// `trt bench` of the ONNX model `model` on `provider`.
pub fn run(args: &Args, model: &Path, provider: Provider) -> Result<Measured> {
    if args.no_transfers {
        return Err(CliError::new("--no-transfers is for TensorRT plans; ONNX Runtime's latency always includes its copies"));
    }
    #[cfg(feature = "tensorrt")]
    if args.tooling.profile_layers.is_some() || args.tooling.weight_budget.is_some() {
        return Err(CliError::new("--profile-layers and --weight-budget are for TensorRT plans"));
    }
    if args.graphs && provider == Provider::Cpu {
        return Err(CliError::new("--graphs needs --device cuda:N (CUDA graphs); ONNX Runtime on the CPU has none"));
    }
    let folder = ModelFolder::open(model).map_err(|e| naming(model, e))?;
    let (batch, seq) = (args.batch.unwrap_or(DEFAULT_BATCH) as usize, args.seq.unwrap_or(DEFAULT_SEQ) as usize);
    let mut options = BackendOptions::default()
        .with_instances(1)
        .with_max_batch(batch)
        .with_max_seq(seq)
        .with_onnxruntime(OrtBackendOptions::default().with_provider(provider));
    if let Some(p) = folder.max_positions {
        options.max_seq = options.max_seq.min(p);
    }
    if args.graphs {
        options.onnxruntime.cuda_graph_max_batch = batch;
    }
    let backend = OrtBackend::new(&folder.model, &options).map_err(|e| naming(&folder.model, e))?;
    let layout = backend.layout().clone();
    layout.check_batch(batch, seq).map_err(|e| naming(&folder.model, e))?;
    let pipeline =
        TokenizerPipeline::builder(layout.max_seq).min_len(layout.min_seq).padding(Padding::Longest).from_file(&folder.tokenizer)?;
    let rows = (0..batch)
        .map(|r| TokenRow::new((0..seq).map(|i| Fill::TokenIds.value(r * seq + i) as u32).collect(), None))
        .collect::<trt_nlp::Result<Vec<_>>>()?;

    let mut produced: Vec<TensorShape> = Vec::new();
    let timed = measure(args.warmup, args.iterations, || {
        let mut fill = |b: &mut trt_nlp::EncodedBatch<'_>| pipeline.pack(&rows, b);
        let mut read = |_: &trt_nlp::BatchLayout, outputs: &trt_nlp::backend::Outputs<'_>| {
            if produced.is_empty() {
                for (name, view) in outputs.iter() {
                    let dtype = layout.outputs.iter().find(|o| o.name == name).map(|o| o.dtype.to_string()).unwrap_or_default();
                    let shape = view.shape().iter().map(|&d| d as i64).collect();
                    produced.push(TensorShape { name: name.to_owned(), io: Io::Output, dtype, shape });
                }
            }
            Ok(())
        };
        backend.run(&mut fill, &mut read)?;
        Ok(())
    })?;

    let mut notes = Vec::new();
    if args.graphs && backend.cuda_graph_max_batch() == 0 {
        let note = "--graphs: ONNX Runtime cannot capture this model (not every node runs on its CUDA provider); batches ran at row buckets instead";
        eprintln!("note: {note}");
        notes.push(note.to_owned());
    }
    let mut shapes: Vec<TensorShape> = layout
        .inputs
        .iter()
        .map(|i| TensorShape { name: i.name.clone(), io: Io::Input, dtype: i.dtype.to_string(), shape: vec![batch as i64, seq as i64] })
        .collect();
    shapes.extend(produced);
    let device = match backend.cuda_device() {
        Some(d) => format!("cuda:{d}"),
        None => "cpu".to_owned(),
    };
    let report = Report {
        backend: backend.name().to_owned(),
        device,
        device_name: backend.provider().to_owned(),
        model: folder.model.display().to_string(),
        shapes,
        batch: batch as i64,
        iterations: args.iterations,
        warmup: args.warmup,
        cuda_graphs: backend.cuda_graph_max_batch() > 0,
        transfers: true,
        latency_ms: Summary::of(timed.wall_ms.iter().copied()),
        throughput_per_s: timed.throughput(batch as i64),
        wall_ms_per_iteration: timed.ms_per_iteration(),
        notes,
        detail: Default::default(),
    };
    Ok(Measured { report, stage_lines: String::new(), trailer: String::new() })
}
