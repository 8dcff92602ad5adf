"""Drives tensor models on a running `trt serve` with the real Triton client
(PyPI tritonclient), as a client that tokenizes itself does.

Started by tests/serve_tensor.rs, which lays out the repository (see there)
and starts the server on 127.0.0.1 with ephemeral ports and
--strict-readiness false. Every check prints `ok <name>`; the first failure
raises and the script exits non-zero. Every loop is bounded in count and time.
"""

import argparse
import concurrent.futures as cf
import os
import urllib.error
import urllib.request

import numpy as np
import onnxruntime as ort
import tokenizers
import tritonclient.grpc as tg
import tritonclient.http as th
from triton_checks import expect, expect_error, ok

p = argparse.ArgumentParser()
p.add_argument("--http", required=True)
p.add_argument("--grpc", required=True)
p.add_argument("--metrics", required=True)
p.add_argument("--repo", required=True)
args = p.parse_args()

H = th.InferenceServerClient(args.http, connection_timeout=30, network_timeout=60)
G = tg.InferenceServerClient(args.grpc)
TEXTS = ["hello world", "A somewhat longer sentence, tokenized by the client itself.", "third"]
NAMES = ["input_ids", "attention_mask", "token_type_ids"]


# --- The client's own tokenizer and the reference: Python onnxruntime on the same ids.
tok = tokenizers.Tokenizer.from_file(os.path.join(args.repo, "bert_ids", "tokenizer.json"))
tok.enable_padding(pad_id=0, pad_token="[PAD]")
tok.enable_truncation(max_length=512)
opts = ort.SessionOptions()
opts.intra_op_num_threads = 1
sess = ort.InferenceSession(os.path.join(args.repo, "bert_ids", "1", "model.onnx"), opts, providers=["CPUExecutionProvider"])
sess16 = ort.InferenceSession(os.path.join(args.repo, "fp16", "1", "model.onnx"), opts, providers=["CPUExecutionProvider"])
mlp = ort.InferenceSession(os.path.join(args.repo, "mlp", "1", "model.onnx"), opts, providers=["CPUExecutionProvider"])


def ids(texts, dtype=np.int64):
    enc = tok.encode_batch(texts)
    return {
        "input_ids": np.array([e.ids for e in enc], dtype=dtype),
        "attention_mask": np.array([e.attention_mask for e in enc], dtype=dtype),
        "token_type_ids": np.array([e.type_ids for e in enc], dtype=dtype),
    }


def reference(feeds):
    return dict(zip(["logits", "last_hidden_state"], sess.run(["logits", "last_hidden_state"], feeds)))


def http_inputs(feeds, binary=True):
    out = []
    for n in NAMES:
        a = feeds[n]
        i = th.InferInput(n, list(a.shape), {np.int64: "INT64", np.int32: "INT32"}[a.dtype.type])
        i.set_data_from_numpy(a, binary_data=binary)
        out.append(i)
    return out


def grpc_inputs(feeds):
    out = []
    for n in NAMES:
        a = feeds[n]
        i = tg.InferInput(n, list(a.shape), {np.int64: "INT64", np.int32: "INT32"}[a.dtype.type])
        i.set_data_from_numpy(a)
        out.append(i)
    return out


def close(a, b, what, atol=1e-5):
    expect(a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}")
    expect(a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs {b.dtype}")
    err = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
    expect(err <= atol, f"{what}: max difference {err} over {atol}")
    return err


def metric(line_start):
    text = urllib.request.urlopen(f"http://{args.metrics}/metrics", timeout=30).read().decode()
    return sum(float(l.split()[-1]) for l in text.splitlines() if l.startswith(line_start))


# --- Readiness: the model that fails to load is not ready, with its reason; the rest serve.
expect(H.is_server_live() and G.is_server_live(), "server live")
expect(H.is_server_ready() and G.is_server_ready(), "server ready (--strict-readiness false) while 'broken' is not")
index = {(m["name"], m.get("version", "")): m for m in H.get_model_repository_index()}
broken = index[("broken", "1")]
expect(broken["state"] == "UNAVAILABLE", f"broken state {broken}")
expect("input 'input_ids': the config declares TYPE_INT32, the model takes TYPE_INT64" in broken["reason"], broken["reason"])
expect(not H.is_model_ready("broken") and not G.is_model_ready("broken"), "broken not ready")
gindex = {(m.name, m.version): m for m in G.get_model_repository_index().models}
expect(gindex[("broken", "1")].state == "UNAVAILABLE" and "TYPE_INT32" in gindex[("broken", "1")].reason, gindex[("broken", "1")])
plan = index[("plan_ids", "1")]
# Why: no CUDA driver here, or (a server built without the tensorrt feature) no TensorRT at all.
expect(plan["state"] == "UNAVAILABLE" and ("CUDA" in plan["reason"] or "without TensorRT" in plan["reason"]), f"plan_ids {plan}")
for m in ["bert_ids", "bert_auto", "bert_padded", "fp16", "mlp", "mlp_whole", "minilm"]:
    expect(H.is_model_ready(m) and G.is_model_ready(m), f"{m} ready")
    expect(index[(m, "1")]["state"] == "READY", index[(m, "1")])
expect_error(lambda: H.infer("broken", http_inputs(ids(TEXTS[:1]))), 503, "TYPE_INT32", "infer on the model that failed to load")
ok("a tensorrt_plan tensor model that cannot run here: " + plan["reason"])
ok("a model that fails to load is UNAVAILABLE with its reason (index, model ready: HTTP and gRPC); the server and the others stay ready")

# --- Metadata and config: declared, and completed from the model where the config lists none.
m = H.get_model_metadata("bert_ids")
expect(m["platform"] == "onnxruntime_onnx", m)
expect(m["inputs"] == [{"name": n, "datatype": "INT64", "shape": [-1, -1]} for n in NAMES], m)
expect(m["outputs"] == [{"name": "logits", "datatype": "FP32", "shape": [-1, 2]}, {"name": "last_hidden_state", "datatype": "FP32", "shape": [-1, -1, 384]}], m)
auto = H.get_model_metadata("bert_auto")
expect(auto["inputs"] == m["inputs"] and auto["outputs"] == m["outputs"], f"auto-completed metadata {auto}")
c = H.get_model_config("bert_auto")
expect([(i["name"], i["data_type"]) for i in c["input"]] == [(n, "TYPE_INT64") for n in NAMES], c)
gc = G.get_model_config("bert_auto").config
expect([o.name for o in gc.output] == ["logits", "last_hidden_state"], gc)
m16 = G.get_model_metadata("fp16")
expect([(i.name, i.datatype) for i in m16.inputs] == [(n, "INT32") for n in NAMES], m16)
expect([(o.name, o.datatype) for o in m16.outputs] == [("logits", "FP16"), ("last_hidden_state", "FP16")], m16)
ok("metadata and config: declared INT64 inputs; a config without tensors completed from the model (HTTP and gRPC)")

# --- INT64 ids over HTTP (binary and JSON) and gRPC, against onnxruntime on the same ids.
feeds = ids(TEXTS)
ref = reference(feeds)
worst = 0.0
for model in ["bert_ids", "bert_auto"]:
    r = H.infer(model, http_inputs(feeds), request_id="t-1")
    expect(r.get_response()["id"] == "t-1", r.get_response())
    for o in ["logits", "last_hidden_state"]:
        worst = max(worst, close(r.as_numpy(o), ref[o], f"{model} HTTP binary {o}"))
    r = H.infer(model, http_inputs(feeds, binary=False), outputs=[th.InferRequestedOutput("logits", binary_data=False)])
    expect(r.get_response()["outputs"][0]["datatype"] == "FP32" and "data" in r.get_response()["outputs"][0], r.get_response())
    worst = max(worst, close(r.as_numpy("logits"), ref["logits"], f"{model} HTTP JSON logits"))
    r = G.infer(model, grpc_inputs(feeds))
    for o in ["logits", "last_hidden_state"]:
        worst = max(worst, close(r.as_numpy(o), ref[o], f"{model} gRPC {o}"))
ok(f"INT64 input_ids/attention_mask/token_type_ids over HTTP (binary, JSON) and gRPC equal onnxruntime's outputs (max difference {worst:.2e})")

# --- Other element types: INT32 ids with FP16 outputs, FP32 features.
f32 = ids(TEXTS, np.int32)
ref16 = sess16.run(["logits", "last_hidden_state"], f32)
r = G.infer("fp16", grpc_inputs(f32))
# FP16 values: one unit in the last place of the largest is about 1e-2.
e16 = close(r.as_numpy("logits"), ref16[0], "fp16 gRPC logits", atol=1e-2)
e16 = max(e16, close(r.as_numpy("last_hidden_state"), ref16[1], "fp16 gRPC last_hidden_state", atol=1e-2))
r = H.infer("fp16", http_inputs(f32, binary=False), outputs=[th.InferRequestedOutput("logits", binary_data=False)])
# JSON carries FP16 values as numbers (widened exactly), which the client reads back as FP16.
e16 = max(e16, close(r.as_numpy("logits").astype(np.float16), ref16[0], "fp16 HTTP JSON logits", atol=1e-2))
x = np.random.default_rng(3).standard_normal((5, 64)).astype(np.float32)
ref_y = mlp.run(["y"], {"x": x})[0]
hx = th.InferInput("x", [5, 64], "FP32")
hx.set_data_from_numpy(x, binary_data=False)
r = H.infer("mlp", [hx])
close(r.as_numpy("y"), ref_y, "mlp HTTP JSON FP32", atol=1e-5)
gx = tg.InferInput("x", [5, 64], "FP32")
gx.set_data_from_numpy(x)
close(G.infer("mlp", [gx]).as_numpy("y"), ref_y, "mlp gRPC FP32", atol=1e-5)
# max_batch_size 0: the config's dims are the whole shape, [-1, 64] read from the model.
mw = H.get_model_metadata("mlp_whole")
expect(mw["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 64]}], mw)
gx = tg.InferInput("x", [5, 64], "FP32")
gx.set_data_from_numpy(x)
close(G.infer("mlp_whole", [gx]).as_numpy("y"), ref_y, "mlp_whole gRPC FP32", atol=1e-5)
r = H.infer("bert_ids", http_inputs(feeds), outputs=[th.InferRequestedOutput("logits", class_count=1)])
best = [int(row[0].decode().split(":")[1]) for row in r.as_numpy("logits")]
expect(best == list(np.argmax(ref["logits"], axis=1)), f"classification {best}")
ok(f"INT32 inputs with FP16 outputs (max difference {e16:.1e}), FP32 in and out (max_batch_size 8 and 0), classification of a tensor output")

# --- Dynamic batching: concurrent requests of one shape share batches; ragged ones batch apart.
mv = '{model="bert_ids",version="1"}'
count0, exec0 = metric("nv_inference_count" + mv), metric("nv_inference_exec_count" + mv)
same = ids(["every request has the same length"] * 1)
ragged_texts = ["short", "a little longer than that", "the longest of the ragged requests, by a few words", "mid length text"]
ragged = [ids([t]) for t in ragged_texts]
ref_same = reference(same)
ref_ragged = [reference(f) for f in ragged]


def single(i):
    c = tg.InferenceServerClient(args.grpc)
    f = same if i < 16 else ragged[i % len(ragged)]
    r = c.infer("bert_ids", grpc_inputs(f))
    return i, r.as_numpy("logits"), r.as_numpy("last_hidden_state")


with cf.ThreadPoolExecutor(16) as pool:
    results = list(pool.map(single, range(24), timeout=120))
for i, logits, hidden in results:
    want = ref_same if i < 16 else ref_ragged[i % len(ragged)]
    close(logits, want["logits"], f"batched request {i} logits")
    close(hidden, want["last_hidden_state"], f"batched request {i} last_hidden_state")
rows, execs = metric("nv_inference_count" + mv) - count0, metric("nv_inference_exec_count" + mv) - exec0
expect(rows == 24 and 0 < execs < rows, f"{rows} inferences in {execs} executions")
ok(f"dynamic batching: 24 concurrent requests (16 of one shape, 8 ragged) ran in {execs:.0f} batches, each as onnxruntime alone")

# --- Declared paddable: ragged requests share batches, padded to the longest; each gets what it gets alone.
pv = '{model="bert_padded",version="1"}'
count0, exec0 = metric("nv_inference_count" + pv), metric("nv_inference_exec_count" + pv)
pc = H.get_model_config("bert_padded")
expect(pc["parameters"]["unpad.last_hidden_state"] == {"string_value": "0=input_ids:0"}, pc.get("parameters"))
gpc = G.get_model_config("bert_padded").config
expect(gpc.parameters["pad.token_type_ids"].string_value == "0 along 0", gpc.parameters)
# Ragged lengths, one or two rows a request; the reference runs each request alone.
padded_texts = ragged_texts + ["one more", "and a last one that is longer than most of the others here"]
padded_feeds = [ids([t]) for t in padded_texts] + [ids(padded_texts[:2]), ids(padded_texts[3:5])]
ref_padded = [reference(f) for f in padded_feeds]


def padded_call(i):
    c = tg.InferenceServerClient(args.grpc)
    r = c.infer("bert_padded", grpc_inputs(padded_feeds[i % len(padded_feeds)]))
    return i, r.as_numpy("logits"), r.as_numpy("last_hidden_state")


with cf.ThreadPoolExecutor(16) as pool:
    results = list(pool.map(padded_call, range(24), timeout=120))
worst = 0.0
for i, logits, hidden in results:
    want = ref_padded[i % len(padded_feeds)]
    worst = max(worst, close(logits, want["logits"], f"padded request {i} logits"))
    worst = max(worst, close(hidden, want["last_hidden_state"], f"padded request {i} last_hidden_state (its own length)"))
sent = sum(padded_feeds[i % len(padded_feeds)]["input_ids"].shape[0] for i in range(24))
rows, execs = metric("nv_inference_count" + pv) - count0, metric("nv_inference_exec_count" + pv) - exec0
expect(rows == sent and 0 < execs < 24, f"{rows} inferences of {sent} rows in {execs} executions")
ok(f"paddable inputs: 24 concurrent ragged requests ({sent} rows, {len(set(f['input_ids'].shape[1] for f in padded_feeds))} lengths) ran in {execs:.0f} batches; outputs equal onnxruntime on each alone (max difference {worst:.1e})")

# --- Bad shapes and dtypes: 400 / INVALID_ARGUMENT naming the input.
one = ids(TEXTS[:1])
wrong_type = dict(one, attention_mask=one["attention_mask"].astype(np.int32))
expect_error(lambda: H.infer("bert_ids", http_inputs(wrong_type)), 400, "input 'attention_mask' has datatype INT32, the model expects INT64", "HTTP dtype")
expect_error(lambda: G.infer("bert_ids", grpc_inputs(wrong_type)), "StatusCode.INVALID_ARGUMENT", "input 'attention_mask' has datatype INT32", "gRPC dtype")
wrong_rank = dict(one, token_type_ids=one["token_type_ids"][None])
expect_error(lambda: H.infer("bert_ids", http_inputs(wrong_rank)), 400, "input 'token_type_ids' has shape [1, 1, ", "HTTP rank")
expect_error(lambda: G.infer("bert_ids", grpc_inputs(wrong_rank)), "StatusCode.INVALID_ARGUMENT", "input 'token_type_ids' has shape", "gRPC rank")
two = ids(TEXTS[:2])
rows_differ = dict(two, attention_mask=two["attention_mask"][:1])
expect_error(lambda: H.infer("bert_ids", http_inputs(rows_differ)), 400, "input 'attention_mask' has 1 rows but input 'input_ids' has 2", "HTTP rows")
nine = ids(TEXTS * 3)
expect_error(lambda: G.infer("bert_ids", grpc_inputs(nine)), "StatusCode.INVALID_ARGUMENT", "input 'input_ids' has 9 rows", "gRPC over max_batch_size")
# The mlp's second dimension is fixed at 64.
bad_x = th.InferInput("x", [2, 63], "FP32")
bad_x.set_data_from_numpy(np.zeros((2, 63), np.float32))
expect_error(lambda: H.infer("mlp", [bad_x]), 400, "input 'x' has shape [2, 63], the model expects [-1, 64]", "HTTP fixed dimension")
expect_error(lambda: G.infer("bert_ids", grpc_inputs(one)[:2]), "StatusCode.INVALID_ARGUMENT", "the request has no input 'token_type_ids'", "gRPC missing input")
expect_error(lambda: H.infer("bert_ids", http_inputs(one), outputs=[th.InferRequestedOutput("pooled")]), 400, "unknown output 'pooled'", "HTTP unknown output")
# The text model refuses tensors, and the tensor model texts.
t = th.InferInput("text", [1, 1], "BYTES")
t.set_data_from_numpy(np.array([["hello"]], dtype=object))
expect_error(lambda: H.infer("bert_ids", [t]), 400, "unknown input 'text'", "text sent to a tensor model")
# The routes that tokenize (TEI here) refuse a tensor model by name.
req = urllib.request.Request(f"http://{args.http}/models/bert_ids/embed", data=b'{"inputs": "hello"}', headers={"Content-Type": "application/json"})
try:
    urllib.request.urlopen(req, timeout=30)
    raise AssertionError("TEI /embed on a tensor model answered")
except urllib.error.HTTPError as e:
    body = e.read().decode()
    expect(e.code == 422 and "is a tensor model" in body, f"TEI on a tensor model: {e.code} {body}")
ok("bad dtypes, ranks, row counts, fixed dimensions and missing inputs: 400 / INVALID_ARGUMENT naming the input; TEI refuses a tensor model")

# --- The server keeps serving, the text model next to the tensor models included.
r = G.infer("bert_ids", grpc_inputs(feeds))
close(r.as_numpy("logits"), ref["logits"], "after the errors")
r = H.infer("minilm", [t])
expect(r.as_numpy("logits").shape == (1, 2), r.as_numpy("logits").shape)
close(r.as_numpy("logits"), reference(ids(["hello"]))["logits"], "text model logits vs the tensor model's reference", atol=1e-4)
ok("after the errors both the tensor models and the text model beside them answer")
print("all tensor-model checks passed", flush=True)
