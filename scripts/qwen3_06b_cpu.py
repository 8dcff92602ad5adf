#!/usr/bin/env python3
"""Qwen3-Embedding-0.6B-shaped on the CPU, in Rust, against sentence-transformers.

The folder is the one scripts/gpu/qwen3_06b.py makes (transformers' Qwen3Model in the real
model's shape, random weights stored in bfloat16, tests/data/hf/qwen3-embed's tokenizer and
sentence-transformers modules, max_seq_length 512). sentence-transformers encodes TEXTS texts in
FP32 on the CPU (the reference, written as JSON lines); `trt import` writes the FP32 graph and
`trt compare --reference` runs it on ONNX Runtime's CPU provider through trt-nlp and gates on
the worst cosine. Some texts run past 512 tokens, where both cut.

Needs torch, transformers and sentence-transformers (a throwaway venv; never in CI) and a built
`trt`. Usage: qwen3_06b_cpu.py --trt BIN --fixture tests/data/hf/qwen3-embed --work DIR
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu"))
from qwen3_06b import arguments, make_folder  # noqa: E402

TEXTS, BATCH = 48, 16


def texts():
    rng = np.random.default_rng(1)
    alphabet = list("abcdefghijklmnopqrstuvwxyz      .,")
    short = ["".join(rng.choice(alphabet, rng.integers(40, 401))) for _ in range(TEXTS - 4)]
    long = ["".join(rng.choice(alphabet, 3000)) for _ in range(4)]
    return short + long


def main():
    a = arguments()
    torch.set_num_threads(os.cpu_count())
    t = time.perf_counter()
    folder = make_folder(a.fixture, a.work)
    print(f"folder made by transformers {__import__('transformers').__version__} in {time.perf_counter() - t:.1f} s", flush=True)
    from sentence_transformers import SentenceTransformer, __version__ as st_version
    data = texts()
    m = SentenceTransformer(folder, device="cpu", model_kwargs={"dtype": torch.float32})
    tokens = [len(m.tokenize([x])["input_ids"][0]) for x in data]
    print(f"sentence-transformers {st_version}, FP32 on the CPU: max_seq_length {m.max_seq_length}; "
          f"{sum(n >= m.max_seq_length for n in tokens)} of {len(data)} texts cut at it", flush=True)
    t = time.perf_counter()
    ref = m.encode(data, batch_size=BATCH, convert_to_numpy=True)
    print(f"sentence-transformers encode: {time.perf_counter() - t:.1f} s for {len(data)} texts", flush=True)
    reference = os.path.join(a.work, "reference.jsonl")
    with open(reference, "w") as fh:
        for x, v in zip(data, ref):
            fh.write(json.dumps({"text": x, "embedding": [float(f) for f in v]}) + "\n")
    imported = os.path.join(a.work, "qwen3-0.6b-fp32")
    t = time.perf_counter()
    subprocess.run([a.trt, "import", folder, "-o", imported], check=True)
    print(f"trt import in {time.perf_counter() - t:.1f} s", flush=True)
    t = time.perf_counter()
    r = subprocess.run([a.trt, "compare", imported, "--reference", reference, "--backend", "onnxruntime",
                        "--min-cosine", "0.9999"])
    print(f"trt compare (load, tokenize, run on ONNX Runtime CPU, compare): {time.perf_counter() - t:.1f} s, exit {r.returncode}",
          flush=True)
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
