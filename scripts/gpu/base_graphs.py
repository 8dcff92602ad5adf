#!/usr/bin/env python3
"""Model-only throughput of base-sized encoder graphs on the GPU test host, every
graph timed the same way (Python onnxruntime-gpu, CUDA provider, inputs and outputs
bound on the device, FP16), one process, side by side:

  export     torch.onnx.export of the transformers model (opset 17), converted to FP16
             by onnxruntime.transformers.float16 (keep_io_types)
  optimized  the same export after ONNX Runtime's transformer optimizer
             (onnxruntime.transformers.optimizer, model_type bert), then FP16
  trt-hf     `trt import --fp16` of the saved folder (the plain, TensorRT-parseable form)
  trt-hf-fused `trt import --fp16 --fused` (ONNX Runtime's fused operators)
  trt-hf-packed `trt import --fp16 --packed` (fused, the layers on the real tokens only)

With --tokenizer FILE (a BERT uncased tokenizer.json: all-MiniLM-L6-v2's has BERT-base's
30522-token vocabulary), each folder gets that tokenizer (truncation and padding taken
out) so the imports can be served (scripts/gpu/hf.sh serve); else a word-level stand-in.

Models: random weights made by transformers from the default MPNetConfig and
BertConfig (the MPNet-base and BERT-base shapes: 12 layers, hidden 768, 12 heads).
Shapes: (batch, tokens) in SHAPES; median of RUNS runs after WARMUP. The share of the
H200's 790 TFLOP/s dense FP16 uses 170 MFLOP per token (these shapes' dense work).

Usage (on the host, after ort-cuda.sh 0 and 2): base_graphs.py --trt BIN --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import time

import numpy as np
import onnxruntime as ort
import torch
from transformers import AutoModel, BertConfig, MPNetConfig

# (batch, tokens); "r" marks ragged rows: lengths drawn from 16..tokens (the same for
# every graph), padded to `tokens`, as a batch of real texts is.
SHAPES = [(1, 22), (32, 22), (128, 22), (128, 134), (256, 32), (128, "r134")]
WARMUP, RUNS = 10, 50
FLOP_PER_TOKEN = 170e6
PEAK = 790e12


def tokenizer_json(vocab):
    # The importer needs a tokenizer.json beside the weights; the bench feeds ids directly.
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
            "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None, "decoder": None,
            "model": {"type": "WordLevel", "vocab": {f"w{i}": i for i in range(vocab)}, "unk_token": "w0"}}


class Wrapped(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask):
        return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def export(model, path):
    ids = torch.ones(2, 16, dtype=torch.long)
    torch.onnx.export(Wrapped(model), (ids, ids), path, opset_version=17, dynamo=False,
                      input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                      dynamic_axes={"input_ids": {0: "b", 1: "s"}, "attention_mask": {0: "b", 1: "s"},
                                    "last_hidden_state": {0: "b", 1: "s"}})


def to_fp16(src, dst):
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16
    onnx.save(convert_float_to_float16(onnx.load(src), keep_io_types=True), dst)


def optimized(src, dst):
    from onnxruntime.transformers.optimizer import optimize_model
    m = optimize_model(src, model_type="bert", num_heads=12, hidden_size=768)
    m.convert_float_to_float16(keep_io_types=True)
    m.save_model_to_file(dst)
    return m.get_fused_operator_statistics()


def time_graph(path, vocab):
    opts = ort.SessionOptions()
    sess = ort.InferenceSession(path, opts, providers=[("CUDAExecutionProvider", {"device_id": 0}), "CPUExecutionProvider"])
    inputs = {i.name: i.type for i in sess.get_inputs()}
    rng = np.random.default_rng(0)
    out = {}
    for b, shape in SHAPES:
        ragged = isinstance(shape, str)
        s = int(shape[1:]) if ragged else shape
        lengths = np.random.default_rng(1).integers(16, s + 1, b) if ragged else np.full(b, s)
        mask = (np.arange(s)[None, :] < lengths[:, None])
        binding = sess.io_binding()
        for name, t in inputs.items():
            dtype = np.int64 if "int64" in t else np.int32
            if name == "input_ids":
                v = (rng.integers(5, vocab - 5, (b, s)) * mask).astype(dtype)
            elif name == "token_type_ids":
                v = np.zeros((b, s), dtype)
            else:
                v = mask.astype(dtype)
            binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(v, "cuda", 0))
        for o in sess.get_outputs():
            binding.bind_output(o.name, "cuda", 0)
        for _ in range(WARMUP):
            sess.run_with_iobinding(binding)
        times = []
        for _ in range(RUNS):
            t = time.perf_counter()
            sess.run_with_iobinding(binding)
            binding.synchronize_outputs()
            times.append(time.perf_counter() - t)
        med = float(np.median(times))
        # The peak share counts the real tokens: what the texts need done.
        real = int(lengths.sum())
        out[f"{b}x{shape}"] = {"ms": med * 1e3, "seq_per_s": b / med, "peak_share": real * FLOP_PER_TOKEN / med / PEAK}
    return out, sess.get_providers()


def profile(path, vocab, b, s, lengths=None, runs=10):
    """Where the host waits in a graph's runs: ONNX Runtime's own profiler over `runs` runs
    of one shape, its node times (`*_kernel_time`: each node's Compute timed on the host)
    summed per operator type (share of the total). CUDA runs asynchronously, so a node that
    waits for the device carries the kernels queued before it: this names where the host
    waits, not which kernel holds the GPU (that needs Nsight Systems or a CUPTI build)."""
    import glob
    import tempfile
    opts = ort.SessionOptions()
    opts.enable_profiling = True
    opts.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "p")
    sess = ort.InferenceSession(path, opts, providers=[("CUDAExecutionProvider", {"device_id": 0})])
    lengths = np.full(b, s) if lengths is None else lengths
    mask = (np.arange(s)[None, :] < lengths[:, None])
    feeds = {}
    for i in sess.get_inputs():
        dtype = np.int64 if "int64" in i.type else np.int32
        feeds[i.name] = {"input_ids": (np.random.default_rng(0).integers(5, vocab - 5, (b, s)) * mask).astype(dtype),
                         "token_type_ids": np.zeros((b, s), dtype)}.get(i.name, mask.astype(dtype))
    for _ in range(3 + runs):
        sess.run(None, feeds)
    trace = sess.end_profiling()
    with open(trace) as f:
        events = json.load(f)
    per_op = {}
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            op = e.get("args", {}).get("op_name", "?")
            per_op[op] = per_op.get(op, 0) + e.get("dur", 0)
    total = sum(per_op.values()) or 1
    return sorted(((op, t / total) for op, t in per_op.items()), key=lambda x: -x[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trt", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tokenizer")
    args = ap.parse_args()
    results = {}
    torch.manual_seed(0)
    for family, cfg in [("mpnet-base", MPNetConfig()), ("bert-base", BertConfig())]:
        d = os.path.join(args.work, family)
        shutil.rmtree(d, ignore_errors=True)
        model = AutoModel.from_config(cfg).eval()
        model.save_pretrained(os.path.join(d, "hf"))
        if args.tokenizer:
            with open(args.tokenizer) as f:
                tok = json.load(f)
            tok["truncation"], tok["padding"] = None, None
        else:
            tok = tokenizer_json(cfg.vocab_size)
        with open(os.path.join(d, "hf", "tokenizer.json"), "w") as f:
            json.dump(tok, f)
        graphs = {}
        raw = os.path.join(d, "export.onnx")
        export(model, raw)
        graphs["export"] = os.path.join(d, "export_fp16.onnx")
        to_fp16(raw, graphs["export"])
        graphs["optimized"] = os.path.join(d, "optimized_fp16.onnx")
        stats = optimized(raw, graphs["optimized"])
        print(f"{family}: ONNX Runtime's optimizer fused {stats}", flush=True)
        for name, extra in [("trt-hf", []), ("trt-hf-fused", ["--fused"]), ("trt-hf-packed", ["--packed"])]:
            out = os.path.join(d, name)
            t = time.perf_counter()
            subprocess.run([args.trt, "import", os.path.join(d, "hf"), "-o", out, "--fp16", *extra], check=True)
            print(f"{family}: trt import {' '.join(extra)} in {time.perf_counter() - t:.1f} s", flush=True)
            graphs[name] = os.path.join(out, "model.onnx")
        results[family] = {}
        for name, path in graphs.items():
            r, providers = time_graph(path, cfg.vocab_size)
            results[family][name] = r
            print(f"{family} {name} ({providers[0]}): " + ", ".join(
                f"{k} {v['seq_per_s']:.0f} seq/s ({v['ms']:.2f} ms, {100 * v['peak_share']:.1f}% of peak)" for k, v in r.items()), flush=True)
        for name, b, s_, ragged in [("trt-hf-fused", 128, 134, False), ("trt-hf-packed", 128, 134, True)]:
            lengths = np.random.default_rng(1).integers(16, s_ + 1, b) if ragged else None
            shares = profile(graphs[name], cfg.vocab_size, b, s_, lengths)
            print(f"{family} {name} {b}x{'r' if ragged else ''}{s_} host time by operator (profiler node times): " +
                  ", ".join(f"{op} {100 * x:.1f}%" for op, x in shares[:8]), flush=True)
        for best in ["trt-hf-fused", "trt-hf-packed"]:
            for shape in results[family][best]:
                f = results[family][best][shape]["seq_per_s"]
                others = [n for n in ["export", "optimized", "trt-hf", "trt-hf-fused"] if n != best]
                ratios = ", ".join(f"vs {n} {f / results[family][n][shape]['seq_per_s']:.2f}" for n in others)
                print(f"{family} {shape}: {best} {ratios}", flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
