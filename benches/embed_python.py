#!/usr/bin/env python3
"""Python side of `cargo bench -p trt-nlp --bench embed_cpu`: texts in,
L2-normalised mean-pooled embeddings out, with the Python `tokenizers`
package, `onnxruntime` and numpy, as a competent user writes it.

Same model, texts (one per line of --texts), thread count, batch size and
maximum length as the Rust side. The session is made once (intra-op threads
= --threads, inter-op 1, all graph optimizations, CPU provider); the tokenizer
pads each batch to its longest text and truncates at --max-len. Two orders:
`in_order` (batches in input order) and `length_sorted` (texts sorted by
length first, results put back in order: what sentence-transformers' encode
does). Each is warmed up once, then the best of --repeats is printed as one
JSON line.
"""
import argparse
import json
import time

import numpy as np
import onnxruntime as ort
from bench_texts import encode, padded_tokenizer, read_texts


def embed(session, tok, texts, batch, order):
    out = [None] * len(texts)
    tokens = 0
    for start in range(0, len(texts), batch):
        idx = order[start : start + batch]
        ids, mask, types = encode(tok, [texts[i] for i in idx], np.int32)
        hidden = session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask,
                                                     "token_type_ids": types})[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        for row, i in zip(pooled, idx):
            out[i] = row
        tokens += int(mask.sum())
    return np.stack(out), tokens


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--texts", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--save", help="write the length-sorted run's embeddings here (.npy)")
    args = ap.parse_args()

    texts = read_texts(args.texts)
    tok = padded_tokenizer(args.tokenizer, args.max_len)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])

    orders = {
        "in_order": list(range(len(texts))),
        "length_sorted": sorted(range(len(texts)), key=lambda i: len(texts[i])),
    }
    for name, order in orders.items():
        emb, _ = embed(session, tok, texts, args.batch, order)  # warm-up
        best = None
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            emb, tokens = embed(session, tok, texts, args.batch, order)
            wall = time.perf_counter() - t0
            if best is None or wall < best[0]:
                best = (wall, tokens)
        if args.save and name == "length_sorted":
            np.save(args.save, emb.astype(np.float32))
        print(json.dumps({"order": name, "texts_per_s": len(texts) / best[0], "tokens": best[1],
                          "onnxruntime": ort.__version__}), flush=True)


if __name__ == "__main__":
    main()
