#!/usr/bin/env python3
"""Make the default model's pre-tokenized INT64 variant for the tensor-model
serving tests: the same graph and weights, with input_ids, attention_mask and
token_type_ids taken as int64 [batch, sequence] (what a client that tokenizes
itself, e.g. with Hugging Face tokenizers or transformers, sends to Triton)
and cast to the int32 the graph computes with.

Writes into --out:
  model.onnx      inputs int64 input_ids, attention_mask, token_type_ids [batch, sequence];
                  outputs as the default model's: logits [batch, 2], last_hidden_state [batch, sequence, 384]
  tokenizer.json  copied from --model's folder (the client's tokenizer)

Before the folder is replaced, onnxruntime runs both graphs on the same ids
and the outputs must be identical.

Usage: make_int64_model.py --model .deps/models/minilm --out .deps/models/minilm-int64
"""

import argparse
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

INPUTS = ["input_ids", "attention_mask", "token_type_ids"]


def widen(model):
    g = model.graph
    casts = []
    for i in g.input:
        if i.name not in INPUTS:
            continue
        inner = i.name + "_int32"
        for node in g.node:
            node.input[:] = [inner if x == i.name else x for x in node.input]
        casts.append(helper.make_node("Cast", [i.name], [inner], to=TensorProto.INT32, name="cast_" + i.name))
        i.type.tensor_type.elem_type = TensorProto.INT64
    for c in reversed(casts):
        g.node.insert(0, c)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="the default model's folder")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    src = os.path.join(args.model, "model.onnx")
    model = widen(onnx.load(src))
    onnx.checker.check_model(model)
    out = os.path.abspath(args.out)
    tmp = out + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    onnx.save(model, os.path.join(tmp, "model.onnx"))
    shutil.copy(os.path.join(args.model, "tokenizer.json"), tmp)

    rng = np.random.default_rng(7)
    ids = rng.integers(0, 30522, size=(3, 11)).astype(np.int64)
    mask = np.ones_like(ids)
    mask[1, 7:] = 0
    types = np.zeros_like(ids)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    wide = ort.InferenceSession(os.path.join(tmp, "model.onnx"), opts, providers=["CPUExecutionProvider"]).run(None, feeds)
    narrow = ort.InferenceSession(src, opts, providers=["CPUExecutionProvider"]).run(
        None, {k: v.astype(np.int32) for k, v in feeds.items()}
    )
    for a, b in zip(wide, narrow):
        if not np.array_equal(a, b):
            raise SystemExit("the int64 graph's outputs differ from the default model's")
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
