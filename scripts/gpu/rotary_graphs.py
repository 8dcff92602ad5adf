#!/usr/bin/env python3
"""Model-only throughput of base-sized rotary graphs on the GPU test host: the graph
`trt import --fp16` writes (plain, TensorRT-parseable) beside `trt import --fp16 --fused`
(RotaryEmbedding + MultiHeadAttention for ModernBERT, GroupQueryAttention for Qwen3, and the
Skip(Simplified)LayerNormalization residual norms), and the transformers model itself in
FP16 on the same GPU (PyTorch, its default SDPA attention), one process, side by side.
Every ONNX graph is timed as scripts/gpu/base_graphs.py times them (Python onnxruntime-gpu,
CUDA provider, inputs and outputs bound on the device); PyTorch runs the same ids and mask.

Before timing, each FP16 graph is checked against the FP32 import on 32 rows of 16-384
tokens (the worst cosine of a row's output over its real tokens), and ONNX Runtime's choice
of attention kernel per node is printed for the fused graph.

Models: random weights made by transformers from ModernBertConfig() (ModernBERT-base: 22
layers, hidden 768, 12 heads, sliding window 128 on two layers of three), Qwen3-Embedding-
0.6B's shape (28 layers, hidden 1024, 16 query heads and 8 key/value heads of 128, MLP 3072),
its vocabulary cut to 32,000 tokens (the table's size does not change a pass's compute), and
gte-multilingual-base's (12 layers, hidden 768, gated GELU of 3072, rotary theta 160000; the
folder written here from tests/data/hf/gte-cls's config, as the host's transformers has no
GteModel, so no torch side), whose import also has a packed form (`--packed`: the layers on the
real tokens only).
The share of the H200's 790 TFLOP/s dense FP16 counts 2 FLOP per weight of the layers a
token (the attention scores not counted).

With --tokenizer FILE (a BERT uncased tokenizer.json: its ids fit both vocabularies), each
folder gets that tokenizer so the imports can be served (scripts/gpu/hf.sh rotary-serve); else
a word-level stand-in.

Usage (on the host, after ort-cuda.sh 0 and 2): rotary_graphs.py --trt BIN --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import time

import numpy as np
import torch
from transformers import AutoModel, ModernBertConfig, Qwen3Config

import base_graphs as bg

SHAPES = [(1, 22), (32, 22), (128, 22), (128, 134), (128, "r134")]


def families():
    qwen3 = Qwen3Config(vocab_size=32000, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                        num_key_value_heads=8, head_dim=128, max_position_embeddings=32768, rope_theta=1e6,
                        layer_types=["full_attention"] * 28)
    return [("modernbert-base", ModernBertConfig()), ("qwen3-0.6b", qwen3), ("gte-base", None)]


# gte-multilingual-base's shape (its vocabulary cut to BERT's). The host's transformers has no
# GteModel, so the folder is written here: tests/data/hf/gte-cls's config (which transformers
# wrote) at this size, and random weights under the names that checkpoint holds.
GTE = dict(vocab_size=30522, hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
           max_position_embeddings=8192)


def gte_folder(d):
    from safetensors.numpy import save_file
    with open("tests/data/hf/gte-cls/config.json") as f:
        config = json.load(f)
    config.update(GTE)
    h, inter, rng = GTE["hidden_size"], GTE["intermediate_size"], np.random.default_rng(0)
    normal = lambda *shape: (0.02 * rng.standard_normal(shape)).astype(np.float32)
    w = {"embeddings.word_embeddings.weight": normal(GTE["vocab_size"], h), "embeddings.token_type_embeddings.weight": normal(1, h),
         "embeddings.LayerNorm.weight": np.ones(h, np.float32), "embeddings.LayerNorm.bias": np.zeros(h, np.float32)}
    for i in range(GTE["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        w.update({f"{p}.attention.qkv_proj.weight": normal(3 * h, h), f"{p}.attention.qkv_proj.bias": normal(3 * h),
                  f"{p}.attention.o_proj.weight": normal(h, h), f"{p}.attention.o_proj.bias": normal(h),
                  f"{p}.mlp.up_gate_proj.weight": normal(2 * inter, h), f"{p}.mlp.down_proj.weight": normal(h, inter),
                  f"{p}.mlp.down_proj.bias": normal(h)})
        for ln in ["attn_ln", "mlp_ln"]:
            w.update({f"{p}.{ln}.weight": np.ones(h, np.float32), f"{p}.{ln}.bias": np.zeros(h, np.float32)})
    os.makedirs(d, exist_ok=True)
    save_file(w, os.path.join(d, "model.safetensors"))
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    embeddings = sum(v.size for k, v in w.items() if "embeddings" in k)
    return 2 * (sum(v.size for v in w.values()) - embeddings)


# The families with a packed form (the layers on the real tokens only).
PACKED = {"gte-base"}


def layer_flop_per_token(model):
    embeddings = sum(p.numel() for n, p in model.named_parameters() if "embed" in n)
    return 2 * (sum(p.numel() for p in model.parameters()) - embeddings)


def time_torch(model, vocab):
    """The transformers model in FP16 on the GPU at SHAPES, the same ids and mask."""
    out = {}
    m = model.half().cuda().eval()
    for b, shape in SHAPES:
        s, lengths = bg.shape_lengths(b, shape)
        mask = torch.tensor(np.arange(s)[None, :] < lengths[:, None], dtype=torch.long, device="cuda")
        ids = torch.tensor(np.random.default_rng(0).integers(5, vocab - 5, (b, s)), device="cuda") * mask
        with torch.inference_mode():
            for _ in range(bg.WARMUP):
                m(input_ids=ids, attention_mask=mask)
            torch.cuda.synchronize()
            times = []
            for _ in range(bg.RUNS):
                t = time.perf_counter()
                m(input_ids=ids, attention_mask=mask)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t)
        med = float(np.median(times))
        out[f"{b}x{shape}"] = {"ms": med * 1e3, "seq_per_s": b / med, "peak_share": int(lengths.sum()) * bg.FLOP_PER_TOKEN / med / bg.PEAK}
    m.cpu()
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trt", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--families", default="modernbert-base,qwen3-0.6b,gte-base")
    ap.add_argument("--tokenizer", help="a tokenizer.json for the folders (truncation and padding taken out), so they can be served")
    ap.add_argument("--folders-only", action="store_true", help="write the folders and their FP16 plain and fused imports, time nothing")
    args = ap.parse_args()
    bg.SHAPES = SHAPES
    results = {}
    torch.manual_seed(0)
    for family, cfg in families():
        if family not in args.families.split(","):
            continue
        d = os.path.join(args.work, family)
        shutil.rmtree(d, ignore_errors=True)
        if cfg is None:
            model, vocab = None, GTE["vocab_size"]
            bg.FLOP_PER_TOKEN = gte_folder(os.path.join(d, "hf"))
        else:
            model, vocab = AutoModel.from_config(cfg).eval(), vocab
            model.save_pretrained(os.path.join(d, "hf"))
            bg.FLOP_PER_TOKEN = layer_flop_per_token(model)
        if args.tokenizer:
            with open(args.tokenizer) as f:
                tok = json.load(f)
            tok["truncation"], tok["padding"] = None, None
        else:
            tok = bg.tokenizer_json(vocab)
        with open(os.path.join(d, "hf", "tokenizer.json"), "w") as f:
            json.dump(tok, f)
        if args.folders_only:
            # The folder and its FP16 imports, for serving (hf.sh rotary-serve).
            for name, extra in [("trt-hf", []), ("trt-hf-fused", ["--fused"])]:
                subprocess.run([args.trt, "import", os.path.join(d, "hf"), "-o", os.path.join(d, name), "--fp16", *extra], check=True)
            print(f"{family}: folder and imports in {d}", flush=True)
            continue
        print(f"{family}: {bg.FLOP_PER_TOKEN / 1e6:.0f} MFLOP a token in its layers", flush=True)
        graphs = {}
        forms = [("trt-hf", ["--fp16"]), ("trt-hf-fused", ["--fp16", "--fused"])]
        if family in PACKED:
            forms.append(("trt-hf-packed", ["--fp16", "--packed"]))
        for name, extra in forms + [("trt-hf-fp32", [])]:
            out = os.path.join(d, name)
            t = time.perf_counter()
            r = subprocess.run([args.trt, "import", os.path.join(d, "hf"), "-o", out, *extra], capture_output=True, text=True)
            print(f"{family}: trt import {' '.join(extra)} exit {r.returncode} in {time.perf_counter() - t:.1f} s {r.stderr.strip()[-300:]}",
                  flush=True)
            with open(os.path.join(out, "trt_model.json")) as f:
                print(f"{family} {name}: form {json.load(f)['form']}", flush=True)
            graphs[name] = os.path.join(out, "model.onnx")
        reference = graphs.pop("trt-hf-fp32")
        for name in graphs:
            worst, diff = bg.agreement(reference, graphs[name], vocab)
            print(f"{family} {name} FP16 against the FP32 import, 32 rows of 16-384 tokens: worst cosine {worst:.6f}, "
                  f"max abs diff {diff:.2e}", flush=True)
        for name in [n for n in ["trt-hf-fused", "trt-hf-packed"] if n in graphs]:
            for line in bg.attention_kernels(graphs[name], vocab, 128, 134):
                print(f"{family} {name} 128x134 attention kernel: {line}", flush=True)
        results[family] = {}
        for name, path in graphs.items():
            r, providers = bg.time_graph(path, vocab)
            results[family][name] = r
            print(f"{family} {name} ({providers[0]}): " + ", ".join(
                f"{k} {v['seq_per_s']:.0f} seq/s ({v['ms']:.2f} ms, {100 * v['peak_share']:.1f}% of peak)" for k, v in r.items()), flush=True)
        if model is not None:
            results[family]["torch"] = time_torch(model, vocab)
            print(f"{family} torch FP16 (transformers, {model.config._attn_implementation}): " + ", ".join(
                f"{k} {v['seq_per_s']:.0f} seq/s ({v['ms']:.2f} ms, {100 * v['peak_share']:.1f}% of peak)"
                for k, v in results[family]["torch"].items()), flush=True)
        else:
            print(f"{family} torch FP16: not run (the host's transformers has no GteModel)", flush=True)
        for best in [n for n in ["trt-hf-fused", "trt-hf-packed"] if n in graphs]:
            for shape in results[family][best]:
                f = results[family][best][shape]["seq_per_s"]
                others = [n for n in ["trt-hf", "trt-hf-fused", "torch"] if n != best and n in results[family]]
                print(f"{family} {shape}: {best} " + ", ".join(f"vs {n} {f / results[family][n][shape]['seq_per_s']:.2f}" for n in others),
                      flush=True)
        del model
    print(json.dumps(results))


if __name__ == "__main__":
    main()
