#!/usr/bin/env python3
"""Reference amax computations for trt-onnx's calibrators (tests/onnx_calibrate.rs).

A numpy port of pytorch-quantization's histogram calibrator maths
(pytorch_quantization/calib/histogram.py in NVIDIA/TensorRT: _compute_amax_entropy,
_compute_amax_percentile), written out again here so the Rust version is checked
against an independent implementation: same algorithm, different code.

Input (stdin, JSON):  {"percentile": P, "histograms": [{"counts": [...], "width": W}, ...]}
Output (stdout, JSON): {"entropy": [amax, ...], "percentile": [amax, ...]}
"""

import json
import sys

import numpy as np

LEVELS = 128  # signed 8-bit: 128 levels of |x|
START_BIN = 128


def kl(p, q):
    """scipy.stats.entropy(p, q): both normalised, 0 where p is 0, inf where q is 0 < p."""
    p = p / p.sum()
    q = q / q.sum()
    mask = p > 0
    if np.any(q[mask] == 0):
        return np.inf
    return float(np.sum(p[mask] * np.log(p[mask] / q[mask])))


def entropy_amax(counts, edges):
    bins = counts.astype(np.float64).copy()
    bins[0] = bins[1]
    divergences = []
    for i in range(START_BIN, len(bins) + 1):
        space = np.linspace(0, i, num=LEVELS + 1)
        level = np.digitize(np.arange(i), space) - 1
        nonzero = bins[:i] != 0
        sums = np.bincount(level[nonzero], weights=bins[:i][nonzero], minlength=LEVELS)
        members = np.bincount(level[nonzero], minlength=LEVELS)
        expanded = np.zeros(i)
        expanded[nonzero] = sums[level[nonzero]] / members[level[nonzero]]
        reference = bins[:i].copy()
        reference[-1] += bins[i:].sum()
        divergences.append(kl(reference, expanded) if expanded.sum() > 0 else np.inf)
    divergences = np.array(divergences)
    last_argmin = len(divergences) - 1 - int(np.argmin(divergences[::-1]))
    return float(edges[last_argmin + START_BIN])


def percentile_amax(counts, edges, percentile):
    cdf = np.cumsum(counts / counts.sum())
    return float(edges[np.searchsorted(cdf, percentile / 100)])


def main():
    req = json.load(sys.stdin)
    out = {"entropy": [], "percentile": []}
    for h in req["histograms"]:
        counts = np.array(h["counts"], dtype=np.float64)
        edges = np.arange(len(counts) + 1) * h["width"]
        out["entropy"].append(entropy_amax(counts, edges))
        out["percentile"].append(percentile_amax(counts, edges, req["percentile"]))
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
