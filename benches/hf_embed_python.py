#!/usr/bin/env python3
"""Python side of `cargo bench -p trt-nlp --bench hf_embed`: sentence-transformers' `encode`
on a folder, as its users call it (FP16 on CUDA: `model_kwargs={"dtype": torch.float16}`; FP32
on the CPU), over the texts file the Rust side writes, in batches of --batch. One warm-up pass,
then the best of --repeats; prints one JSON line with the seconds and the versions, and saves
the embeddings (.npy, float32) for the cosine check."""
import argparse
import json
import time

import numpy as np
import torch
from bench_texts import read_texts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folder", required=True)
    ap.add_argument("--texts", required=True)
    ap.add_argument("--save", required=True)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    a = ap.parse_args()
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    dtype = torch.float16 if a.device == "cuda" else torch.float32
    model = SentenceTransformer(a.folder, device=a.device, model_kwargs={"dtype": dtype})
    texts = read_texts(a.texts)

    def encode():
        out = model.encode(texts, batch_size=a.batch, convert_to_numpy=True)
        if a.device == "cuda":
            torch.cuda.synchronize()
        return out

    out = encode()
    best = float("inf")
    for _ in range(a.repeats):
        t = time.perf_counter()
        encode()
        best = min(best, time.perf_counter() - t)
    with open(a.save, "wb") as f:  # the path as given (np.save would add .npy to a name)
        np.save(f, out.astype(np.float32))
    print(json.dumps({"seconds": best, "texts": len(texts), "st_version": sentence_transformers.__version__,
                      "torch_version": torch.__version__}))


if __name__ == "__main__":
    main()
