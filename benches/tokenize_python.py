#!/usr/bin/env python3
"""Python side of `cargo bench -p trt-nlp --bench tokenize`.

Tokenizes the texts of --texts (one per line) with the Python `tokenizers`
package and packs them into the engine's layout: three int32 NumPy arrays
(input_ids, attention_mask, token_type_ids), [batch, longest] per batch,
truncated to --max-len. Prints one JSON line per method.

The baseline is meant to be the package's best realistic path, not a strawman:
the tokenizer is loaded once, truncation and padding are enabled in Rust
(`enable_truncation`, `enable_padding`: pad to the batch's longest), each
method is warmed up once, then timed in-process with time.perf_counter (best
of --repeats). Both `encode_batch` and `encode_batch_fast` (no offsets) are
measured; the caller takes the faster. Thread count comes from the
environment the caller sets (RAYON_NUM_THREADS, TOKENIZERS_PARALLELISM);
cpu_util (process CPU time / wall time) shows how many cores were really used.
"""
import argparse
import json
import time

import numpy as np
from bench_texts import read_texts
from tokenizers import Tokenizer


def pack(encodings):
    ids = np.array([e.ids for e in encodings], dtype=np.int32)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int32)
    types = np.array([e.type_ids for e in encodings], dtype=np.int32)
    return ids, mask, types


def run(encode, texts, batch):
    tokens = 0
    for start in range(0, len(texts), batch):
        _, mask, _ = pack(encode(texts[start : start + batch]))
        tokens += int(mask.sum())
    return tokens


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--texts", required=True)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    texts = read_texts(args.texts)

    tok = Tokenizer.from_file(args.tokenizer)
    tok.enable_truncation(args.max_len)
    pad = tok.padding or {}
    tok.enable_padding(pad_id=pad.get("pad_id", 0), pad_type_id=pad.get("pad_type_id", 0),
                       pad_token=pad.get("pad_token", "[PAD]"))

    for name in ("encode_batch", "encode_batch_fast"):
        encode = getattr(tok, name)
        run(encode, texts, args.batch)  # warm-up
        best = None
        for _ in range(args.repeats):
            wall0, cpu0 = time.perf_counter(), time.process_time()
            tokens = run(encode, texts, args.batch)
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            if best is None or wall < best[0]:
                best = (wall, cpu, tokens)
        wall, cpu, tokens = best
        print(json.dumps({
            "method": name,
            "texts_per_s": len(texts) / wall,
            "tokens_per_s": tokens / wall,
            "tokens": tokens,
            "cpu_util": cpu / wall,
        }), flush=True)


if __name__ == "__main__":
    main()
