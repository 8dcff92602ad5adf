#!/usr/bin/env python3
"""Whether ONNX Runtime itself aborts on a decoder graph trt-hf wrote: the Qwen3 fixture
imported by `trt import` (FP32), run three times by Python onnxruntime-gpu on CUDA and dropped,
with ONNX Runtime's own stream (`default`) or a caller's stream (`stream`, as trt-nlp passes one),
at verbose logging (node placement). Run on the GPU host from the repository root:
`probe_decoder_teardown.py default|stream` (needs $W/bin/trt; scripts/gpu/hf.sh's setup).
"""
import os, sys, subprocess, ctypes
import numpy as np, onnxruntime as ort
W = "/tmp/trt-ort-cuda"
out = W + "/q3"
subprocess.run([W + "/bin/trt", "import", "tests/data/hf/qwen3-embed", "-o", out], check=True)
so = ort.SessionOptions(); so.log_severity_level = 0
mode = sys.argv[1]
opts = {"device_id": 0}
if mode == "stream":
    import torch
    s = torch.cuda.Stream()
    opts["user_compute_stream"] = str(s.cuda_stream)
sess = ort.InferenceSession(out + "/model.onnx", so, providers=[("CUDAExecutionProvider", opts)])
ids = np.array([[5, 6, 7, 8, 9]], np.int32)
mask = np.ones_like(ids)
for i in range(3):
    r = sess.run(None, {"input_ids": ids, "attention_mask": mask})
print("ran", mode, [x.shape for x in r], flush=True)
del sess
print("dropped", mode, flush=True)
