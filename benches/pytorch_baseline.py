"""PyTorch baseline for benches/engine_vs_pytorch.rs: the same all-MiniLM-L6-v2
encoder (transformers BertModel from the setup folder's safetensors) plus a
384->2 linear head, FP16 on the GPU, eager mode. Prints one JSON line per batch
size: sequences per second and peak GPU memory.

    python benches/pytorch_baseline.py WEIGHTS_DIR SEQ ITERATIONS BATCH [BATCH ...]
"""
import json
import os
import sys

import torch
from transformers import BertConfig, BertModel

weights, seq, iterations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
batches = [int(b) for b in sys.argv[4:]]
device = torch.device("cuda")
if os.path.exists(os.path.join(weights, "model.safetensors")):
    model = BertModel.from_pretrained(weights, torch_dtype=torch.float16)
else:  # config only (timing does not depend on the weights' values)
    model = BertModel(BertConfig.from_pretrained(weights)).half()
model = model.to(device).eval()
head = torch.nn.Linear(model.config.hidden_size, 2).half().to(device)
for batch in batches:
    ids = torch.randint(1000, 2000, (batch, seq), device=device, dtype=torch.int64)
    mask = torch.ones_like(ids)
    types = torch.zeros_like(ids)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    with torch.inference_mode():
        for _ in range(5):  # warm-up
            out = model(input_ids=ids, attention_mask=mask, token_type_ids=types)
            head(out.pooler_output)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            out = model(input_ids=ids, attention_mask=mask, token_type_ids=types)
            head(out.pooler_output)
        end.record()
    torch.cuda.synchronize()
    ms = start.elapsed_time(end) / iterations
    print(json.dumps({"batch": batch, "ms_per_batch": ms, "seq_per_s": batch * 1000.0 / ms,
                      "peak_mib": torch.cuda.max_memory_allocated() / 2**20, "torch": torch.__version__}), flush=True)
