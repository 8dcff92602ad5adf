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

and, beside them, trt-hf-fused with ONNX Runtime's attention held to its unfused kernels
(the CUDA provider's sdpa_kernel option), what the attention kernel it picks is worth.
After every timing: the attention kernel ONNX Runtime picks per node
(ORT_ENABLE_ATTENTION_KERNEL_DEBUG_INFO) and, from torch.profiler (CUPTI), the kernels a
run holds the GPU with, by class (matrix products, attention, layer norms, ...) and the
largest by name, with the kernel time a run against its wall time.

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
import sys
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
# The CUDA provider's sdpa_kernel option is a bit set of the attention kernels it may
# pick; 16 is its unfused (MATH) path alone.
SDPA_MATH = 16
# Every kernel but cuDNN's flash attention (8).
SDPA_NO_CUDNN = 255 - 8


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


def session(path, provider_options=None):
    cuda = {"device_id": 0, **(provider_options or {})}
    return ort.InferenceSession(path, ort.SessionOptions(), providers=[("CUDAExecutionProvider", cuda), "CPUExecutionProvider"])


def bind(sess, vocab, b, s, lengths=None):
    """`b` rows of `s` tokens (`lengths` real ones each, the rest padding) bound on the
    device, inputs and outputs."""
    lengths = np.full(b, s) if lengths is None else lengths
    mask = (np.arange(s)[None, :] < lengths[:, None])
    binding = sess.io_binding()
    for i in sess.get_inputs():
        dtype = np.int64 if "int64" in i.type else np.int32
        if i.name == "input_ids":
            v = (np.random.default_rng(0).integers(5, vocab - 5, (b, s)) * mask).astype(dtype)
        elif i.name == "token_type_ids":
            v = np.zeros((b, s), dtype)
        else:
            v = mask.astype(dtype)
        binding.bind_ortvalue_input(i.name, ort.OrtValue.ortvalue_from_numpy(v, "cuda", 0))
    for o in sess.get_outputs():
        binding.bind_output(o.name, "cuda", 0)
    return binding


def shape_lengths(b, shape):
    ragged = isinstance(shape, str)
    s = int(shape[1:]) if ragged else shape
    return s, (np.random.default_rng(1).integers(16, s + 1, b) if ragged else np.full(b, s))


def time_graph(path, vocab, provider_options=None):
    out = {}
    sess = session(path, provider_options)
    for b, shape in SHAPES:
        s, lengths = shape_lengths(b, shape)
        binding = bind(sess, vocab, b, s, lengths)
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


def agreement(reference, path, vocab, provider_options=None, b=32, s=384):
    """How far a graph's outputs are from `reference`'s (the FP32 import) on `b` rows of
    16 to `s` tokens on CUDA: the worst cosine of a row's output (its real tokens only,
    where the output has a token axis) and the largest absolute difference."""
    lengths = np.random.default_rng(2).integers(16, s + 1, b)
    outs = []
    for p, options in [(reference, None), (path, provider_options)]:
        sess = session(p, options)
        binding = bind(sess, vocab, b, s, lengths)
        sess.run_with_iobinding(binding)
        outs.append({o.name: v.numpy().astype(np.float64) for o, v in zip(sess.get_outputs(), binding.get_outputs())})
    worst, diff = 1.0, 0.0
    for name, want in outs[0].items():
        got = outs[1][name]
        for r in range(b):
            w, g = (want[r, :lengths[r]], got[r, :lengths[r]]) if want.ndim == 3 else (want[r], got[r])
            w, g = w.ravel(), g.ravel()
            worst = min(worst, float(w @ g / (np.linalg.norm(w) * np.linalg.norm(g) + 1e-30)))
            diff = max(diff, float(np.abs(w - g).max()))
    return worst, diff


def kernel_class(name):
    n = name.lower()
    if any(k in n for k in ("fmha", "attention", "softmax", "sdpa")):
        return "attention"
    if any(k in n for k in ("gemm", "nvjet", "xmma", "cutlass", "cublas")):
        return "matrix products"
    if "layernorm" in n or "layer_norm" in n:
        return "layer norms"
    if "gelu" in n:
        return "gelu"
    if "transpose" in n or "addbias" in n:
        return "transposes"
    return "other"


def kernel_profile(path, vocab, b, s, lengths=None, runs=20, provider_options=None):
    """Which kernels hold the GPU: torch.profiler (Kineto over CUPTI) in this process
    records every kernel the device ran, ONNX Runtime's included, with its device time.
    Returns (wall ms a run, kernel ms a run, [(class, share)], [(kernel, share)])."""
    import tempfile
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    torch.cuda.init()
    sess = session(path, provider_options)
    binding = bind(sess, vocab, b, s, lengths)
    for _ in range(5):
        sess.run_with_iobinding(binding)
    binding.synchronize_outputs()
    with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
        t = time.perf_counter()
        for _ in range(runs):
            sess.run_with_iobinding(binding)
        binding.synchronize_outputs()
        wall = time.perf_counter() - t
    trace = os.path.join(tempfile.mkdtemp(), "trace.json")
    prof.export_chrome_trace(trace)
    with open(trace) as f:
        events = json.load(f).get("traceEvents", [])
    per = {}
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e:
            per[e["name"]] = per.get(e["name"], 0) + e["dur"]
    total = sum(per.values()) or 1
    classes = {}
    for name, t in per.items():
        c = kernel_class(name)
        classes[c] = classes.get(c, 0) + t
    top = sorted(per.items(), key=lambda x: -x[1])[:8]
    return (wall / runs * 1e3, total / runs / 1e3,
            sorted(((c, t / total) for c, t in classes.items()), key=lambda x: -x[1]),
            [(n[:110], t / total) for n, t in top])


def attention_kernels(path, vocab, b, s, provider_options=None):
    """ONNX Runtime's own account of which attention kernel each node picks at one
    shape (ORT_ENABLE_ATTENTION_KERNEL_DEBUG_INFO, printed by its CUDA provider), from a
    process of its own: the variable is read when the provider starts."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import base_graphs as g; "
            "import json; s = g.session(sys.argv[2], json.loads(sys.argv[6])); "
            "s.run_with_iobinding(g.bind(s, int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))")
    r = subprocess.run([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__)), path, str(vocab), str(b), str(s),
                        json.dumps(provider_options or {})],
                       env={**os.environ, "ORT_ENABLE_ATTENTION_KERNEL_DEBUG_INFO": "1"}, capture_output=True, text=True, timeout=120)
    import re
    lines = [re.sub(r"\x1b\[[0-9;]*m|Node=\S+ ", "", l).strip() for l in (r.stdout + r.stderr).splitlines() if "Operator=" in l]
    counts = {l: lines.count(l) for l in lines}
    return [f"{n} nodes: {l}" for l, n in sorted(counts.items())][:6] or [f"(no kernel line printed; exit {r.returncode})"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trt", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tokenizer")
    ap.add_argument("--families", default="mpnet-base,bert-base", help="comma-separated: mpnet-base, bert-base")
    ap.add_argument("--folders-only", action="store_true", help="write the folders and their fused and packed imports, time nothing")
    args = ap.parse_args()
    results = {}
    profiled = []
    torch.manual_seed(0)
    wanted = args.families.split(",")
    for family, cfg in [("mpnet-base", MPNetConfig()), ("bert-base", BertConfig())]:
        if family not in wanted:
            continue
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
        if args.folders_only:
            # The folder and its FP16 fused and packed imports, for serving (hf.sh sessions).
            for name, extra in [("trt-hf-fused", ["--fused"]), ("trt-hf-packed", ["--packed"])]:
                subprocess.run([args.trt, "import", os.path.join(d, "hf"), "-o", os.path.join(d, name), "--fp16", *extra], check=True)
            print(f"{family}: folder and imports in {d}", flush=True)
            continue
        graphs = {}
        raw = os.path.join(d, "export.onnx")
        export(model, raw)
        graphs["export"] = os.path.join(d, "export_fp16.onnx")
        to_fp16(raw, graphs["export"])
        graphs["optimized"] = os.path.join(d, "optimized_fp16.onnx")
        stats = optimized(raw, graphs["optimized"])
        print(f"{family}: ONNX Runtime's optimizer fused {stats}", flush=True)
        for name, extra in [("trt-hf", ["--fp16"]), ("trt-hf-fused", ["--fp16", "--fused"]), ("trt-hf-packed", ["--fp16", "--packed"]),
                            ("trt-hf-fp32", [])]:
            out = os.path.join(d, name)
            t = time.perf_counter()
            subprocess.run([args.trt, "import", os.path.join(d, "hf"), "-o", out, *extra], check=True)
            print(f"{family}: trt import {' '.join(extra)} in {time.perf_counter() - t:.1f} s", flush=True)
            graphs[name] = os.path.join(out, "model.onnx")
        reference = graphs.pop("trt-hf-fp32")
        for name, options in [("trt-hf", None), ("trt-hf-fused", None), ("trt-hf-fused", {"sdpa_kernel": str(SDPA_MATH)}),
                              ("trt-hf-packed", None)]:
            worst, diff = agreement(reference, graphs[name], cfg.vocab_size, options)
            print(f"{family} {name}{' (attention unfused)' if options else ''} FP16 against the FP32 import, 32 rows of 16-384 "
                  f"tokens: worst cosine {worst:.6f}, max abs diff {diff:.2e}", flush=True)
        results[family] = {}
        for name, path in graphs.items():
            r, providers = time_graph(path, cfg.vocab_size)
            results[family][name] = r
            print(f"{family} {name} ({providers[0]}): " + ", ".join(
                f"{k} {v['seq_per_s']:.0f} seq/s ({v['ms']:.2f} ms, {100 * v['peak_share']:.1f}% of peak)" for k, v in r.items()), flush=True)
        # The fused graph again with ONNX Runtime's attention held to its unfused kernels
        # (sdpa_kernel MATH): what the attention kernel it picks is worth, same run.
        r, _ = time_graph(graphs["trt-hf-fused"], cfg.vocab_size, {"sdpa_kernel": str(SDPA_MATH)})
        results[family]["trt-hf-fused-unfused-attention"] = r
        print(f"{family} trt-hf-fused, attention held unfused (sdpa_kernel {SDPA_MATH}): " + ", ".join(
            f"{k} {v['seq_per_s']:.0f} seq/s ({v['ms']:.2f} ms)" for k, v in r.items()), flush=True)
        # And with every attention kernel but cuDNN's, which ONNX Runtime prefers on this GPU.
        for name in ["trt-hf-fused", "trt-hf-packed"]:
            r, _ = time_graph(graphs[name], cfg.vocab_size, {"sdpa_kernel": str(SDPA_NO_CUDNN)})
            print(f"{family} {name}, attention without cuDNN (sdpa_kernel {SDPA_NO_CUDNN}): " + ", ".join(
                f"{k} {v['seq_per_s']:.0f} seq/s ({v['ms']:.2f} ms)" for k, v in r.items()), flush=True)
        profiled.append((family, graphs, cfg.vocab_size))
        for best in ["trt-hf-fused", "trt-hf-packed"]:
            for shape in results[family][best]:
                f = results[family][best][shape]["seq_per_s"]
                others = [n for n in ["export", "optimized", "trt-hf", "trt-hf-fused", "trt-hf-fused-unfused-attention"] if n != best]
                ratios = ", ".join(f"vs {n} {f / results[family][n][shape]['seq_per_s']:.2f}" for n in others)
                print(f"{family} {shape}: {best} {ratios}", flush=True)
    # Kernel-level records after every timing: the profiler's CUPTI hooks stay out of them.
    for family, graphs, vocab in profiled:
        for name, s_, options in [("trt-hf-fused", 134, None), ("trt-hf-fused", 22, None), ("trt-hf-packed", 134, None),
                                  ("trt-hf-fused", 134, {"sdpa_kernel": str(SDPA_NO_CUDNN)}),
                                  ("trt-hf-fused", 22, {"sdpa_kernel": str(SDPA_NO_CUDNN)})]:
            for line in attention_kernels(graphs[name], vocab, 128, s_, options):
                print(f"{family} {name}{' (without cuDNN)' if options else ''} 128x{s_} attention kernel: {line}", flush=True)
        for name, b, shape, options in [("export", 128, 134, None), ("optimized", 128, 134, None), ("trt-hf-fused", 128, 134, None),
                                        ("trt-hf-fused", 128, 134, {"sdpa_kernel": str(SDPA_MATH)}),
                                        ("trt-hf-fused", 128, 22, None), ("trt-hf-packed", 128, "r134", None)]:
            s_, lengths = shape_lengths(b, shape)
            tag = f"{family} {name}{' (attention unfused)' if options else ''} {b}x{shape}"
            try:
                wall, busy, classes, top = kernel_profile(graphs[name], vocab, b, s_, lengths, provider_options=options)
            except Exception as e:  # the timings above stand without it
                print(f"{tag} kernels: not profiled ({type(e).__name__}: {e})", flush=True)
                continue
            print(f"{tag} kernels: {busy:.2f} ms of kernel time in {wall:.2f} ms a run; by class: " +
                  ", ".join(f"{c} {100 * x:.1f}%" for c, x in classes), flush=True)
            for n, x in top:
                print(f"{tag} kernel {100 * x:5.1f}%  {n}", flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
