#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/seeds/<target>/).

Small valid graphs, one per operator family the parser has to handle (a few
hundred bytes each, so libFuzzer mutates them quickly), plus graphs that are
valid protobuf but wrong ONNX (a dangling input, a missing opset, an unknown
operator, external data that does not exist). The plan, timing-cache and engine-cache seeds are built from
those graphs by the `trt` command (`trt build`), the tokenizer seeds are texts
in the target's input format, and so are the server's (HTTP bodies, gRPC messages
written field by field, config.pbtxt texts). Run with the setup venv:
    cargo build -p trt-cli && .deps/venv/bin/python fuzz/make_seeds.py target/debug/trt
The output is committed; rerun only to change the seeds.
"""
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")
OUT = os.path.join(SEEDS, "onnx_parse")
F = TensorProto.FLOAT


def model(name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def w(name, shape, seed=0):
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def seeds():
    yield "add", model("add", [helper.make_node("Add", ["a", "b"], ["y"])],
                       [vi("a", F, [2, 3]), vi("b", F, [2, 3])], [vi("y", F, [2, 3])])
    yield "matmul_init_dynamic", model("mm", [helper.make_node("MatMul", ["x", "w"], ["y"])],
                                       [vi("x", F, ["batch", 4])], [vi("y", F, ["batch", 3])], [w("w", [4, 3])])
    yield "gemm_relu", model("gemm", [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1),
                                      helper.make_node("Relu", ["h"], ["y"])],
                             [vi("x", F, [1, 4])], [vi("y", F, [1, 2])], [w("w", [2, 4]), w("b", [2], 1)])
    yield "conv", model("conv", [helper.make_node("Conv", ["x", "k"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
                        [vi("x", F, [1, 1, 5, 5])], [vi("y", F, [1, 2, 5, 5])], [w("k", [2, 1, 3, 3])])
    shape = numpy_helper.from_array(np.array([3, 2], dtype=np.int64), "shape")
    yield "reshape_transpose", model("rt", [helper.make_node("Reshape", ["x", "shape"], ["r"]),
                                            helper.make_node("Transpose", ["r"], ["y"], perm=[1, 0])],
                                     [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], [shape])
    table = w("table", [10, 4])
    yield "gather_int32", model("gather", [helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)],
                                [vi("ids", TensorProto.INT32, ["batch", "seq"])], [vi("y", F, ["batch", "seq", 4])], [table])
    yield "layernorm_softmax", model("ln", [helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1),
                                            helper.make_node("Softmax", ["n"], ["y"], axis=-1)],
                                     [vi("x", F, [2, 4])], [vi("y", F, [2, 4])], [w("g", [4]), w("b", [4], 2)])
    yield "cast_shape_concat", model("csc", [helper.make_node("Shape", ["x"], ["s"]),
                                             helper.make_node("Concat", ["s", "s"], ["c"], axis=0),
                                             helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)],
                                     [vi("x", F, ["n", 2])], [vi("y", F, [4])])
    scale = numpy_helper.from_array(np.array(0.05, dtype=np.float32), "scale")
    zero = numpy_helper.from_array(np.array(0, dtype=np.int8), "zero")
    yield "qdq", model("qdq", [helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q"]),
                               helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["y"])],
                       [vi("x", F, [2, 2])], [vi("y", F, [2, 2])], [scale, zero])
    yield "fp16_add", model("h", [helper.make_node("Add", ["a", "a"], ["y"])],
                            [vi("a", TensorProto.FLOAT16, [4])], [vi("y", TensorProto.FLOAT16, [4])])
    # Valid protobuf, wrong ONNX.
    yield "dangling_input", model("bad", [helper.make_node("Add", ["a", "missing"], ["y"])],
                                  [vi("a", F, [2])], [vi("y", F, [2])])
    yield "unknown_op", model("bad", [helper.make_node("NoSuchOp", ["a"], ["y"])], [vi("a", F, [2])], [vi("y", F, [2])])
    yield "old_opset", model("old", [helper.make_node("Relu", ["a"], ["y"])], [vi("a", F, [2])], [vi("y", F, [2])], opset=1)
    ext = TensorProto(name="w", data_type=F, dims=[4, 3], data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", "48")):
        ext.external_data.add(key=k, value=v)
    yield "external_data_missing", model("ext", [helper.make_node("MatMul", ["x", "w"], ["y"])],
                                         [vi("x", F, [1, 4])], [vi("y", F, [1, 3])], [ext])
    body = helper.make_graph([helper.make_node("Identity", ["a"], ["o"])], "body", [], [vi("o", F, [2])])
    yield "if_subgraph", model("if", [helper.make_node("If", ["c"], ["y"], then_branch=body, else_branch=body)],
                               [vi("c", TensorProto.BOOL, []), vi("a", F, [2])], [vi("y", F, [2])])


def write(target, name, data):
    os.makedirs(os.path.join(SEEDS, target), exist_ok=True)
    with open(os.path.join(SEEDS, target, name), "wb") as f:
        f.write(data)
    print(f"{target}/{name} {len(data)} bytes")


def plan_seeds(trt):
    """Plans and timing caches from `trt build`, whole and cut short."""
    with tempfile.TemporaryDirectory() as tmp:
        plan, cache = os.path.join(tmp, "add.plan"), os.path.join(tmp, "add.timing")
        subprocess.run([trt, "build", os.path.join(OUT, "add.onnx"), "-o", plan, "--timing-cache", cache],
                       check=True, capture_output=True)
        plan, cache = open(plan, "rb").read(), open(cache, "rb").read()
    write("plan_deserialize", "add.plan", plan)
    for n in (16, 64, 256, 4096):
        write("plan_deserialize", f"add_first_{n}.plan", plan[:n])
    write("timing_cache", "empty_cpu_build.timing", cache)
    for n in (8, 24, 100):
        write("timing_cache", f"first_{n}.timing", cache[:n])
    # Engine cache entries: mode byte 0 (raw) = metadata JSON, 0x00, plan; a
    # small stand-in plan keeps the seed small (the reader never parses plans).
    small = plan[:1024]
    meta = {"plan_bytes": len(small), "plan_sha256": hashlib.sha256(small).hexdigest(), "model": "add.onnx",
            "tensorrt": "TensorRT-RTX 1.7.1", "target": "no-gpu", "settings": {"profiles": [], "workspace": None}}
    good = json.dumps(meta, indent=2).encode()
    write("engine_cache_meta", "raw_valid", b"\x00" + good + b"\x00" + small)
    write("engine_cache_meta", "raw_torn_meta", b"\x00" + good[: len(good) // 2] + b"\x00" + small)
    write("engine_cache_meta", "raw_torn_plan", b"\x00" + good + b"\x00" + small[:700])
    write("engine_cache_meta", "forged_exact", b"\x01\x00\xff\x00" + small[:200])
    write("engine_cache_meta", "forged_short", b"\x01\xff\xff\x01" + small[:200])


def tokenizer_seeds():
    """Header (see fuzz_targets/tokenizer_pipeline.rs), then texts split by 0xFF."""
    def seed(max_len_index, min_len, padding, bucket, flags, short_by, texts):
        head = struct.pack("<BHBBBH", max_len_index, min_len, padding, bucket, flags, short_by)
        return head + b"\xff".join(t.encode() for t in texts)
    texts = ["Hello, world!", "The quick brown fox jumps over the lazy dog.", "",
             "unaffable naïve café déjà vu", "中文分词 测试 日本語のテキスト", "emoji 🙂🚀 and \u200b zero width",
             "[CLS] [SEP] [PAD] [MASK] [UNK] look-alikes", "a" * 150, "   \t\n  ", "ALL CAPS and MiXeD 123,456.78"]
    write("tokenizer_pipeline", "longest_128", seed(9, 0, 0, 0, 0, 0, texts))
    write("tokenizer_pipeline", "bucket_8_two_threads_i64", seed(9, 0, 1, 8, 4 | 8 | 16, 0, texts))
    write("tokenizer_pipeline", "max_16_reject", seed(7, 0, 2, 0, 1, 0, texts[:4]))
    write("tokenizer_pipeline", "truncate_at_3", seed(2, 1, 0, 0, 16, 0, texts))
    write("tokenizer_pipeline", "no_special_min_len", seed(4, 5, 0, 0, 2, 0, texts))
    write("tokenizer_pipeline", "short_buffer", seed(9, 0, 2, 0, 32, 5, texts[:3]))
    write("tokenizer_pipeline", "long_text_512", seed(11, 0, 0, 0, 8, 0, [" ".join(["word"] * 600), "x"]))
    write("tokenizer_pipeline", "empty_batch", seed(9, 0, 0, 0, 0, 0, []))


def reader_seeds():
    """Graphs for trt-onnx's reader beyond the parser's: what its later steps
    (types, topological sort, initializer values) have to refuse or handle."""
    yield "cycle", model("cyc", [helper.make_node("Relu", ["b"], ["a"], name="r1"),
                                 helper.make_node("Relu", ["a"], ["b"], name="r2")], [], [vi("b", F, [2])])
    yield "out_of_order", model("ooo", [helper.make_node("Relu", ["h"], ["y"]), helper.make_node("Neg", ["x"], ["h"])],
                                [vi("x", F, [2])], [vi("y", F, [2])])
    c = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.ones([2], np.float32), "cv"))
    yield "constant_value_info", helper.make_model(
        helper.make_graph([c, helper.make_node("Add", ["x", "c"], ["y"])], "c", [vi("x", F, [2])], [vi("y", F, [2])],
                          value_info=[vi("c", F, [2])]), opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    typed = [TensorProto(name="f", data_type=F, dims=[2], float_data=[1.0, 2.0]),
             TensorProto(name="i", data_type=TensorProto.INT64, dims=[3], int64_data=[1, 2, 3]),
             TensorProto(name="h", data_type=TensorProto.FLOAT16, dims=[1], int32_data=[15360]),
             TensorProto(name="d", data_type=TensorProto.DOUBLE, dims=[1], double_data=[0.5]),
             TensorProto(name="short", data_type=F, dims=[4], raw_data=b"\0" * 12),
             TensorProto(name="negative", data_type=F, dims=[-1, 2], raw_data=b"\0" * 8),
             TensorProto(name="huge", data_type=TensorProto.INT8, dims=[1 << 40, 1 << 40], raw_data=b"\0")]
    yield "initializer_kinds", model("init", [helper.make_node("Add", ["x", "f"], ["y"])], [vi("x", F, [2])],
                                     [vi("y", F, [2])], typed)
    yield "no_ir_version", onnx.ModelProto(graph=helper.make_graph([], "g", [], []))


def kserve_seeds():
    """HTTP bodies: flags byte (bit 0: Inference-Header-Content-Length sent, bit 1: small
    limits), the header's value (u16 LE), then the body (fuzz_targets/kserve_http.rs)."""
    def seed(body, json_len=None, small=False):
        flags = (1 if json_len is not None else 0) | (2 if small else 0)
        return struct.pack("<BH", flags, json_len or 0) + body
    def elements(texts):
        return b"".join(struct.pack("<I", len(t)) + t for t in texts)
    texts = ["Hello, world!".encode(), "caf\u00e9 \u4e2d\u6587".encode()]
    j = json.dumps({"id": "1", "inputs": [{"name": "text", "shape": [2, 1], "datatype": "BYTES",
                                           "data": [t.decode() for t in texts]}]}).encode()
    write("kserve_http", "json_texts", seed(j))
    binary = elements(texts)
    head = json.dumps({"inputs": [{"name": "text", "shape": [2, 1], "datatype": "BYTES",
                                   "parameters": {"binary_data_size": len(binary)}}],
                       "outputs": [{"name": "embedding", "parameters": {"binary_data": True}}],
                       "parameters": {"binary_data_output": True, "priority": 1, "timeout": 100000}}).encode()
    write("kserve_http", "binary_texts", seed(head + binary, len(head)))
    floats = struct.pack("<4f", 1, 2, 3, 4)
    head = json.dumps({"inputs": [{"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": [["x"]]},
                                  {"name": "n", "shape": [2, 2], "datatype": "FP32",
                                   "parameters": {"binary_data_size": 16}}],
                       "outputs": [{"name": "last_hidden_state", "parameters": {"classification": 2}}]}).encode()
    write("kserve_http", "mixed_json_binary", seed(head + floats, len(head)))
    typed = json.dumps({"inputs": [{"name": t, "shape": [2], "datatype": t, "data": v} for t, v in (
        ("BOOL", [True, False]), ("INT8", [-128, 127]), ("UINT16", [0, 65535]), ("INT64", [-1, 2]),
        ("FP16", [0.5, 70000]), ("BF16", [1e-3, -2]), ("FP64", [1e308, -0.0]))]}).encode()
    write("kserve_http", "every_datatype", seed(typed, small=True))
    ids = struct.pack("<4q", 101, 7592, 2088, 102)
    head = json.dumps({"inputs": [{"name": "input_ids", "shape": [1, 4], "datatype": "INT64",
                                   "parameters": {"binary_data_size": len(ids)}},
                                  {"name": "attention_mask", "shape": [1, 4], "datatype": "INT64", "data": [[1, 1, 1, 1]]},
                                  {"name": "token_type_ids", "shape": [1, 4], "datatype": "INT64", "data": [0, 0, 0, 0]}],
                       "outputs": [{"name": "logits"}]}).encode()
    write("kserve_http", "tensor_ids", seed(head + ids, len(head)))
    write("kserve_http", "too_many_elements", seed(b'{"inputs":[{"name":"text","shape":[65,1],"datatype":"BYTES","data":[]}]}', small=True))


def pb_varint(n):
    out = b""
    while True:
        b, n = n & 0x7f, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def pb(field, value):
    """One protobuf field: bytes/str length-delimited, int a varint."""
    if isinstance(value, int):
        return pb_varint(field << 3) + pb_varint(value)
    value = value.encode() if isinstance(value, str) else value
    return pb_varint(field << 3 | 2) + pb_varint(len(value)) + value


def grpc_seeds():
    """inference.ModelInferRequest messages written field by field
    (proto/inference.proto), after the flags byte (bit 0: small limits)."""
    def tensor(name, datatype, shape, contents=b""):
        packed = b"".join(pb_varint(d & (2 ** 64 - 1)) for d in shape)
        return pb(1, name) + pb(2, datatype) + pb(3, packed) + (pb(5, contents) if contents else b"")
    def param(key, field, v):
        return pb(1, key) + pb(2, pb_varint(field << 3) + pb_varint(v))
    texts = [b"Hello, world!", "caf\u00e9".encode()]
    contents = b"".join(pb(8, t) for t in texts)
    typed = pb(1, "minilm") + pb(3, "7") + pb(4, param("priority", 5, 1)) + pb(5, tensor("text", "BYTES", [2, 1], contents)) \
        + pb(6, pb(1, "embedding") + pb(2, param("classification", 2, 3)))
    write("grpc_infer", "typed_contents", b"\x00" + typed)
    raw = b"".join(struct.pack("<I", len(t)) + t for t in texts)
    write("grpc_infer", "raw_contents", b"\x00" + pb(1, "minilm") + pb(5, tensor("text", "BYTES", [2, 1])) + pb(7, raw))
    fp = pb(5, tensor("x", "FP32", [2], pb(6, struct.pack("<2f", 1, 2)))) + pb(5, tensor("text", "BYTES", [1, 1])) \
        + pb(7, b"") + pb(7, struct.pack("<I", 1) + b"a")
    write("grpc_infer", "two_inputs_small", b"\x01" + fp)
    ids = [tensor(n, "INT64", [2, 3]) for n in ("input_ids", "attention_mask", "token_type_ids")]
    write("grpc_infer", "tensor_ids", b"\x00" + b"".join(pb(5, t) for t in ids)
          + b"".join(pb(7, struct.pack("<6q", *v)) for v in ([101, 7592, 102, 101, 2088, 102], [1] * 6, [0] * 6)))
    write("grpc_infer", "negative_dim", b"\x00" + pb(5, tensor("text", "BYTES", [-1, 1])))


def config_seeds():
    """config.pbtxt texts: the README's, Triton's other spellings, and every field trt serve reads."""
    readme = ('platform: "onnxruntime_onnx"\nmax_batch_size: 32\n'
              'input [ { name: "text" data_type: TYPE_STRING dims: [ 1 ] } ]\n'
              'output [ { name: "embedding" data_type: TYPE_FP32 dims: [ 384 ] } ]\n'
              'dynamic_batching { max_queue_delay_microseconds: 1000 }\n')
    write("config_pbtxt", "readme.pbtxt", readme.encode())
    full = ('name: "minilm"  # the folder\nbackend: "tensorrt"\nplatform: "tensorrt_plan"\nmax_batch_size: 0x10\n'
            'input { name: "text" data_type: TYPE_STRING dims: 1 }\n'
            'output < name: \'last_hidden_state\' data_type: TYPE_FP32 dims: [ -1, 384 ] >;\n'
            'output: { name: "emb" "edding" data_type: TYPE_FP32 dims: [384] reshape { shape: [1] } }\n'
            'dynamic_batching {\n  preferred_batch_size: [ 4, 8 ]\n  priority_levels: 3\n  default_priority_level: 2\n'
            '  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 5000 '
            'allow_timeout_override: true max_queue_size: 64 }\n}\n'
            'instance_group [ { count: 2 kind: KIND_CPU }, { count: 1 } ]\n'
            'version_policy: { specific { versions: [1, 3] } }\nparameters { key: "x" value { string_value: "y" } }\n')
    write("config_pbtxt", "every_field.pbtxt", full.encode())
    write("config_pbtxt", "latest_all.pbtxt", (readme + 'version_policy { latest { num_versions: 2 } }\n').encode())
    write("config_pbtxt", "bad_values.pbtxt", (readme.replace("32", "-4") + 'dynamic_batching { preferred_batch_size: 0 }\n').encode())


def embed_api_seeds():
    """TEI and OpenAI request bodies: route byte and bounds byte, then the body
    (fuzz_targets/tei_request.rs, openai_request.rs)."""
    tei = {
        "embed": (0, b'{"inputs": ["What is Deep Learning?", [101, 7592, 102]], "normalize": true, "truncate": false, '
                     b'"truncation_direction": "Right", "dimensions": 64}'),
        "embed_all": (1, b'{"inputs": "a", "truncate": true, "truncation_direction": "Left"}'),
        "predict_batch": (2, b'{"inputs": [["a"], ["q", "p"]], "raw_scores": true}'),
        "rerank": (3, b'{"query": "q", "texts": ["a", "b"], "return_text": true, "truncate": true}'),
        "similarity": (4, b'{"inputs": {"source_sentence": "s", "sentences": ["a", "b"]}, "parameters": {"truncate": true}}'),
        "tokenize": (5, b'{"inputs": ["a b", "c"], "add_special_tokens": false}'),
        "decode": (6, b'{"ids": [[101, 102], [7592]], "skip_special_tokens": false}'),
        "token_classification": (7, b'{"inputs": ["Ann met Bo", "x"], "parameters": {"aggregation_strategy": "first", "ignore_labels": ["O"]}}'),
    }
    for name, (route, body) in tei.items():
        write("tei_request", name, bytes([route, 0]) + body)
    write("tei_request", "embed_small_bounds", bytes([0, 1]) + b'{"inputs": ["a", "b", "c"], "dimensions": 385}')
    openai = {
        "strings": (0, 255, b'{"input": ["a", "b"], "model": "minilm", "encoding_format": "float", "user": "u"}'),
        "token_lists": (0, 255, b'{"input": [[101, 102], [101, 7592, 102]], "model": "m", "encoding_format": "base64", "dimensions": 8}'),
        "small": (1, 7, b'{"input": "hello there", "model": "m", "dimensions": 9}'),
    }
    for name, (flags, width, body) in openai.items():
        write("openai_request", name, bytes([flags, width]) + body)


def traceparent_seeds():
    """traceparent header values (fuzz_targets/traceparent.rs): the W3C example,
    unsampled, a later version with more after it, and invalid ones."""
    ids = "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"
    values = {
        "example": "00-" + ids + "-01",
        "unsampled": "00-" + ids + "-00",
        "later_version": "cc-" + ids + "-09-extra",
        "version_ff": "ff-" + ids + "-01",
        "zero_trace_id": "00-" + "0" * 32 + "-00f067aa0ba902b7-01",
        "uppercase": "00-" + ids.upper() + "-01",
        "too_long": "00-" + ids + "-01-",
    }
    for name, value in values.items():
        write("traceparent", name, value.encode())


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, m in seeds():
        data = m.SerializeToString()
        with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
            f.write(data)
        print(f"onnx_parse/{name}.onnx {len(data)} bytes")
        # trt-onnx's own reader gets the same graphs, and those of reader_seeds().
        write("onnx_reader", name + ".onnx", data)
    for name, m in reader_seeds():
        write("onnx_reader", name + ".onnx", m.SerializeToString())
    tokenizer_seeds()
    kserve_seeds()
    grpc_seeds()
    config_seeds()
    embed_api_seeds()
    traceparent_seeds()
    if len(sys.argv) > 1:
        plan_seeds(sys.argv[1])


if __name__ == "__main__":
    main()
