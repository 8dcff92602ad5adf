#!/usr/bin/env python3
"""Write all-MiniLM-L6-v2's weights stored as FP16 (45 MB instead of 91 MB), so that
they fit in one call to the GPU test host (64 MiB per call), where
scripts/make_default_model.py rebuilds the default model's graph from them (and trt-hf
imports the folder: its tokenizer and sentence-transformers files are copied beside them).

The FP32 model built there computes in FP32 like the default model; only its
weights are FP16-rounded (relative error <= 2^-11), so it is a model of the same
shape and cost, not bit-identical to .deps/models/minilm/model.onnx: benchmarks
that compare two executors on it stay fair (both sides run the same file).

Usage: pack_weights_f16.py --weights .deps/minilm --out .gpu/minilm-f16
"""
import argparse
import json
import os
import shutil
import struct

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(os.path.join(args.weights, "model.safetensors"), "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    out_header, chunks, offset = {}, [], 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        data = blob[8 + n + start : 8 + n + end]
        if info["dtype"] == "F32":
            data = np.frombuffer(data, dtype="<f4").astype("<f2").tobytes()
            info = dict(info, dtype="F16")
        out_header[name] = dict(info, data_offsets=[offset, offset + len(data)])
        chunks.append(data)
        offset += len(data)
    head = json.dumps(out_header).encode()
    head += b" " * (-len(head) % 8)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(chunks))
    # The tokenizer's and sentence-transformers' files too, so the folder is a whole
    # HuggingFace folder the importer reads (trt import, scripts/gpu/hf.sh).
    for extra in ("config.json", "tokenizer.json", "tokenizer_config.json", "modules.json", "sentence_bert_config.json",
                  "config_sentence_transformers.json", os.path.join("1_Pooling", "config.json")):
        if os.path.isfile(os.path.join(args.weights, extra)):
            os.makedirs(os.path.dirname(os.path.join(args.out, extra)), exist_ok=True)
            shutil.copyfile(os.path.join(args.weights, extra), os.path.join(args.out, extra))
    print(f"wrote {args.out}: {offset / 1e6:.1f} MB of weights")


if __name__ == "__main__":
    main()
