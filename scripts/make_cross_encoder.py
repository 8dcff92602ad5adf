#!/usr/bin/env python3
"""Build a small cross-encoder (reranker) for the serving tests from the
all-MiniLM-L6-v2 weights: the default model's encoder and pooler, and a seeded
random one-logit head (a sequence-classification model with one label, which
text-embeddings-inference treats as a reranker).

Writes into --out:
  model.onnx     BERT encoder + pooler + linear 384->1, FP32; int32 inputs
                 input_ids, attention_mask, token_type_ids [batch, sequence];
                 outputs logits [batch, 1], last_hidden_state [batch, sequence, 384]
  tokenizer.json copied unchanged from --weights
  config.json    the BERT config, architectures BertForSequenceClassification, one label

The scores mean nothing about relevance (the head is random); they are a
deterministic function of the pair, which is what the tests compare against a
Python reference (tokenizers + onnxruntime). The graph is checked against the
default model script's numpy forward pass before the folder is replaced.

Usage: make_cross_encoder.py --weights .deps/minilm --out .deps/models/cross-encoder
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np
import onnx
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_default_model as base  # noqa: E402  (the graph builder and numpy reference)

HEAD_SEED = 20261201
HEAD_STD = 0.5
PAIRS = [
    ("What is Deep Learning?", "Deep Learning is a branch of machine learning."),
    ("What is Deep Learning?", "The stock market fell sharply."),
    ("", "only a passage"),
    ("中文查询", "日本語のテキスト"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(os.path.join(args.weights, "config.json")) as f:
        cfg = json.load(f)
    w = base.load_safetensors(os.path.join(args.weights, "model.safetensors"))
    rng = np.random.default_rng(HEAD_SEED)
    head = {
        "pooler": (w["pooler.dense.weight"], w["pooler.dense.bias"]) if "pooler.dense.weight" in w else None,
        "classifier_weight": rng.normal(0.0, HEAD_STD, size=(cfg["hidden_size"], 1)).astype(np.float32),
        "classifier_bias": np.zeros(1, dtype=np.float32),
    }
    out = os.path.abspath(args.out)
    tmp = out + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    base.LABELS = ["LABEL_0"]  # the graph declares logits [batch, len(LABELS)]
    model = base.build_model(w, cfg, head, np.float32)
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(tmp, "model.onnx")
    onnx.save_model(model, path)
    shutil.copyfile(os.path.join(args.weights, "tokenizer.json"), os.path.join(tmp, "tokenizer.json"))
    out_cfg = dict(cfg, architectures=["BertForSequenceClassification"], id2label={"0": "LABEL_0"},
                   label2id={"LABEL_0": 0}, num_labels=1)
    with open(os.path.join(tmp, "config.json"), "w") as f:
        json.dump(out_cfg, f, indent=2)
        f.write("\n")

    tok = Tokenizer.from_file(os.path.join(args.weights, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=base.MAX_LENGTH)
    worst = 0.0
    for a, b in PAIRS:
        e = tok.encode(a, b)
        feeds = {k: np.array([v], dtype=np.int32) for k, v in
                 (("input_ids", e.ids), ("attention_mask", e.attention_mask), ("token_type_ids", e.type_ids))}
        logits, _ = base.run_ort(path, feeds)
        # The numpy reference takes no token types: compare on the token-type-0 path
        # (all zeros), which the ONNX graph computes from the same tables.
        feeds["token_type_ids"][:] = 0
        lz, _ = base.run_ort(path, feeds)
        _, ref = base.numpy_forward(w, cfg, head, np.array(e.ids, dtype=np.int64))
        worst = max(worst, float(np.abs(lz[0] - ref).max()))
        print(f"pair {a[:20]!r} / {b[:20]!r}: logit {float(logits[0][0]):.5f}")
    if worst > 1e-4:
        print(f"FAIL: logits vs numpy differ by {worst:.2e} (tol 1e-4)")
        shutil.rmtree(tmp, ignore_errors=True)
        sys.exit(1)
    print(f"ok: logits vs numpy max abs diff {worst:.2e}")
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)


if __name__ == "__main__":
    main()
