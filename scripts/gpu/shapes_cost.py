#!/usr/bin/env python3
"""What a model costs on ONNX Runtime's CUDA provider when every run has a
new shape, as a server's batches do, against one fixed shape: median and p90
per run, for each model given, optionally under environment settings that
steer ONNX Runtime's attention kernels (one process per setting).

    shapes_cost.py MODEL.onnx [MODEL.onnx ...] [--env "NAME=V NAME=V" ...]

Passes, in order, each shape new unless said: 128 x 64 (fixed, after a
warm-up), batch sizes 1-128 at length 64, lengths 8-128 at batch 128, lengths
that are multiples of 8 (then the same again), and batches of 100-128 rows x
lengths 8-72 (then the same again); seeded, right-padded. Plain session.run with numpy inputs: the same copies for every
model, so the figures compare models and settings, not our backend.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def run_one(models, runs):
    import numpy as np
    import onnxruntime as ort
    rng = np.random.default_rng(7)
    out = {}
    for path in models:
        s = ort.InferenceSession(path, providers=["CUDAExecutionProvider"])
        def feed(b, n):
            lens = rng.integers(1, n + 1, size=b)
            lens[0] = n
            mask = (np.arange(n)[None, :] < lens[:, None]).astype(np.int32)
            ids = (rng.integers(1000, 30000, size=(b, n)) * mask).astype(np.int32)
            return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        def timed(feeds):
            t = []
            for f in feeds:
                t0 = time.perf_counter()
                s.run(None, f)
                t.append((time.perf_counter() - t0) * 1e3)
            t.sort()
            return t[len(t) // 2], t[int(len(t) * 0.9)]
        fixed = [feed(128, 64) for _ in range(runs)]
        timed(fixed[:10])
        r = {"fixed_128x64": timed(fixed)}
        # Which dimension costs when new: the batch, the length, or both.
        r["new_batch"] = timed([feed(int(b), 64) for b in rng.permutation(np.arange(1, 129))[:runs]])
        r["new_len"] = timed([feed(128, int(n)) for n in rng.permutation(np.arange(8, 129))[:runs]])
        lens8 = [feed(128, int(n)) for n in range(8, 129, 8)]
        r["new_len_x8"] = timed(lens8)
        r["len_x8_again"] = timed(lens8)
        varied = [feed(int(rng.integers(100, 129)), int(rng.integers(8, 73))) for _ in range(runs)]
        r["varied"] = timed(varied)
        r["varied_again"] = timed(varied)
        out[os.path.basename(path)] = r
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--env", action="append", default=[""])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(run_one(a.models, a.runs)))
        return
    for setting in a.env:
        env = dict(os.environ)
        env.update(kv.split("=", 1) for kv in setting.split())
        r = subprocess.run([sys.executable, __file__, "--child", "--runs", str(a.runs), *a.models], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"[{setting or 'defaults'}] failed: {r.stderr[-800:]}")
            continue
        for model, v in json.loads(r.stdout.strip().splitlines()[-1]).items():
            cells = "  ".join(f"{k} p50 {p50:.2f} / p90 {p90:.2f} ms" for k, (p50, p90) in v.items())
            print(f"[{setting or 'defaults'}] {model}: {cells}")


if __name__ == "__main__":
    main()
