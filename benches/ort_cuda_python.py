#!/usr/bin/env python3
"""Python onnxruntime-gpu with IO binding: the baseline of benches/ort_cuda.rs.

Same work per batch as the Rust backend on CUDA: the token tensors are copied
from host numpy arrays to the device (bind_cpu_input), the model runs, and
every output is copied back to the host (copy_outputs_to_cpu). Prints one
JSON line per shape: {"model", "batch", "seq", "p50_ms", "p99_ms", "runs"}.

Usage: ort_cuda_python.py MODEL.onnx --batches 1,8,32 --seq 128 --runs 100

With --serve it times on request instead, so the Rust side can take turns
with it shape by shape: each stdin line "BATCH RUNS" times RUNS batches of
that size (10 warm-up runs the first time a size is asked for) and prints
{"batch", "times_ms": [...]}; end of input ends it.
"""
import argparse
import json
import time

import numpy as np
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--batches", default="1,8,32,128,256")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--tf32", type=int, default=0, help="use_tf32 (the Rust side's default is 0: FP32 in FP32)")
    ap.add_argument("--serve", action="store_true", help="time on request (stdin), see above")
    args = ap.parse_args()
    session = ort.InferenceSession(args.model, providers=[("CUDAExecutionProvider", {"device_id": args.device, "use_tf32": args.tf32}), "CPUExecutionProvider"])
    assert session.get_providers()[0] == "CUDAExecutionProvider", session.get_providers()
    rng = np.random.default_rng(0)
    inputs = session.get_inputs()
    outputs = [o.name for o in session.get_outputs()]
    timers = {}
    for batch in [int(b) for b in args.batches.split(",")]:
        timers[batch] = make_timer(session, inputs, outputs, rng, batch, args)
    if args.serve:
        import sys
        for line in sys.stdin:
            batch, runs = (int(x) for x in line.split())
            print(json.dumps({"batch": batch, "times_ms": timers[batch](runs)}), flush=True)
        return
    for batch, timer in timers.items():
        times = sorted(timer(args.runs))
        print(json.dumps({"model": args.model, "batch": batch, "seq": args.seq, "p50_ms": times[len(times) // 2],
                          "p99_ms": times[min(len(times) - 1, int(len(times) * 0.99))], "runs": len(times)}), flush=True)


def make_timer(session, inputs, outputs, rng, batch, args):
    """A function that times n whole batches of this size (warming up on its first call)."""
    shape = (batch, args.seq)
    feeds = {}
    for i in inputs:
        dtype = np.int64 if "int64" in i.type else np.int32
        if i.name == "input_ids":
            feeds[i.name] = rng.integers(1000, 30000, size=shape).astype(dtype)
        elif i.name == "attention_mask":
            feeds[i.name] = np.ones(shape, dtype=dtype)
        else:
            feeds[i.name] = np.zeros(shape, dtype=dtype)
    io = session.io_binding()

    def once():
        for name, a in feeds.items():
            io.bind_cpu_input(name, a)
        for name in outputs:
            io.bind_output(name, "cuda", args.device)
        session.run_with_iobinding(io)
        return io.copy_outputs_to_cpu()

    warm = []

    def timer(n):
        if not warm:
            for _ in range(10):
                once()
            warm.append(True)
        times = []
        for _ in range(n):
            t = time.perf_counter()
            once()
            times.append((time.perf_counter() - t) * 1e3)
        return times

    return timer


if __name__ == "__main__":
    main()
