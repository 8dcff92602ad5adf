"""Export a tiny, randomly initialised BERT classifier with PyTorch's ONNX exporter.

This is the "ONNX exported by PyTorch" that the CLI and parser tests build
(tests/data/torch_bert_tiny.onnx). It needs torch and transformers, which the
CI machine does not install (PyPI's torch is a 3 GB CUDA build), so the file is
committed; this script is how it was made (run on the GPU test host:
torch 2.11, transformers 5.17). No weights are downloaded: the model is built
from a config with a fixed seed.

    python scripts/export_torch_bert.py tests/data/torch_bert_tiny.onnx
"""
import sys

import torch
from transformers import BertConfig, BertForSequenceClassification

out = sys.argv[1] if len(sys.argv) > 1 else "torch_bert_tiny.onnx"
torch.manual_seed(0)
config = BertConfig(
    vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
    max_position_embeddings=128, num_labels=2, attn_implementation="eager",
)
model = BertForSequenceClassification(config).eval()
batch, seq = 2, 16
ids = torch.randint(0, 1000, (batch, seq), dtype=torch.int64)
mask = torch.ones(batch, seq, dtype=torch.int64)
types = torch.zeros(batch, seq, dtype=torch.int64)
dyn = {0: "batch", 1: "sequence"}
torch.onnx.export(
    model, (ids, mask, types), out, dynamo=False, opset_version=17,
    input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["logits"],
    dynamic_axes={"input_ids": dyn, "attention_mask": dyn, "token_type_ids": dyn, "logits": {0: "batch"}},
)
print(f"exported {out} with torch {torch.__version__}")
