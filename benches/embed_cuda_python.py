#!/usr/bin/env python3
"""Python side of `cargo bench -p trt-nlp --bench embed_cuda`: texts in,
L2-normalised mean-pooled embeddings out on the GPU, written as a competent
user writes it, two ways:

- `--mode onnxruntime`: the Python `tokenizers` package, `onnxruntime-gpu`
  (CUDA provider, FP32 in FP32: use_tf32 0) with numpy inputs and outputs,
  numpy pooling;
- `--mode torch`: the same tokenizer, transformers' `BertModel` in FP16 on
  the GPU, eager, `torch.inference_mode()`, pooling and normalisation on the
  GPU, one copy of the embeddings back to the host per batch.

Each batch is padded to its longest text and truncated at --max-len. Two
orders: `in_order` and `length_sorted` (sorted by length first, results put
back in order: what sentence-transformers' encode does). Each is warmed up
once; the best of --repeats is printed as one JSON line. With --single N the
first N texts are then embedded one at a time (the one-request latency):
median and p99 in ms. --save writes the length-sorted embeddings (.npy).
"""
import argparse
import json
import time

import numpy as np
from bench_texts import encode, padded_tokenizer, read_texts


def make_onnxruntime(args):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    providers = [("CUDAExecutionProvider", {"device_id": 0, "use_tf32": 0}), "CPUExecutionProvider"]
    session = ort.InferenceSession(args.model, so, providers=providers)
    assert session.get_providers()[0] == "CUDAExecutionProvider", session.get_providers()
    names = {i.name for i in session.get_inputs()}
    int64 = any("int64" in i.type for i in session.get_inputs())

    def run(ids, mask, types):
        dt = np.int64 if int64 else np.int32
        feeds = {"input_ids": ids.astype(dt), "attention_mask": mask.astype(dt), "token_type_ids": types.astype(dt)}
        hidden = session.run(["last_hidden_state"], {k: v for k, v in feeds.items() if k in names})[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden.astype(np.float32) * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)

    return run, "onnxruntime " + ort.__version__, lambda: None


def make_torch(args):
    import torch
    from transformers import BertModel

    device = torch.device("cuda")
    model = BertModel.from_pretrained(args.weights, torch_dtype=torch.float16).to(device).eval()

    def run(ids, mask, types):
        with torch.inference_mode():
            i = torch.from_numpy(ids).to(device, non_blocking=True)
            m = torch.from_numpy(mask).to(device, non_blocking=True)
            t = torch.from_numpy(types).to(device, non_blocking=True)
            hidden = model(input_ids=i, attention_mask=m, token_type_ids=t).last_hidden_state
            mf = m.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mf).sum(dim=1).float() / mf.sum(dim=1).float().clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, dim=1)
            return pooled.cpu().numpy()

    def peak():
        return torch.cuda.max_memory_allocated() / 2**20

    return run, "torch " + torch.__version__ + " fp16 eager", peak


def embed(run, tok, texts, batch, order):
    out = [None] * len(texts)
    for start in range(0, len(texts), batch):
        idx = order[start : start + batch]
        ids, mask, types = encode(tok, [texts[i] for i in idx], np.int64)
        for row, i in zip(run(ids, mask, types), idx):
            out[i] = row
    return np.stack(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["onnxruntime", "torch"], required=True)
    ap.add_argument("--model", help="ONNX file (onnxruntime)")
    ap.add_argument("--weights", help="folder with config.json and model.safetensors (torch)")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--texts", required=True)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--single", type=int, default=0)
    ap.add_argument("--save")
    args = ap.parse_args()

    texts = read_texts(args.texts)
    tok = padded_tokenizer(args.tokenizer, args.max_len)
    run, what, peak = (make_onnxruntime if args.mode == "onnxruntime" else make_torch)(args)

    orders = {
        "in_order": list(range(len(texts))),
        "length_sorted": sorted(range(len(texts)), key=lambda i: len(texts[i])),
    }
    for name, order in orders.items():
        emb = embed(run, tok, texts, args.batch, order)  # warm-up
        best = None
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            emb = embed(run, tok, texts, args.batch, order)
            wall = time.perf_counter() - t0
            best = wall if best is None else min(best, wall)
        if args.save and name == "length_sorted":
            np.save(args.save, emb.astype(np.float32))
        print(json.dumps({"mode": args.mode, "what": what, "order": name, "texts_per_s": len(texts) / best,
                          "peak_mib": peak()}), flush=True)
    if args.single:
        singles = texts[: args.single]
        for t in singles[:20]:
            embed(run, tok, [t], 1, [0])
        times = []
        for t in singles:
            t0 = time.perf_counter()
            embed(run, tok, [t], 1, [0])
            times.append((time.perf_counter() - t0) * 1e3)
        times.sort()
        print(json.dumps({"mode": args.mode, "what": what, "order": "single", "p50_ms": times[len(times) // 2],
                          "p99_ms": times[min(len(times) - 1, int(len(times) * 0.99))], "runs": len(times)}), flush=True)


if __name__ == "__main__":
    main()
