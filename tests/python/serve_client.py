"""Drives a running `trt serve` with the real Triton client (PyPI tritonclient).

Started by tests/serve_client.rs, which lays out the repository (see there)
and starts the server on 127.0.0.1 with ephemeral ports. Every check prints
`ok <name>`; the first failure raises and the script exits non-zero. Every
loop is bounded in count and in time.
"""

import argparse
import concurrent.futures as cf
import http.client
import json
import os
import shutil
import struct
import sys
import time
import urllib.request

import numpy as np
import onnxruntime as ort
import tokenizers
import tritonclient.grpc as tg
import tritonclient.http as th
from tritonclient.utils import InferenceServerException
from triton_checks import expect, expect_error, ok

p = argparse.ArgumentParser()
p.add_argument("--http", required=True)
p.add_argument("--grpc", required=True)
p.add_argument("--metrics", required=True)
p.add_argument("--repo", required=True)
args = p.parse_args()

H = th.InferenceServerClient(args.http, connection_timeout=30, network_timeout=60)
G = tg.InferenceServerClient(args.grpc)
TEXTS = ["hello world", "A somewhat longer sentence, to be classified by the server.", "third"]
DEADLINE = time.monotonic() + 240  # the whole script, whatever happens


# --- Reference outputs: the same ONNX model through Python onnxruntime.
model_dir = os.path.join(args.repo, "minilm")
tok = tokenizers.Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
tok.enable_padding(pad_id=0, pad_token="[PAD]")
tok.enable_truncation(max_length=512)
sess = ort.InferenceSession(os.path.join(model_dir, "1", "model.onnx"), providers=["CPUExecutionProvider"])


def reference(texts):
    enc = tok.encode_batch(texts)
    feeds = {
        "input_ids": np.array([e.ids for e in enc], dtype=np.int32),
        "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int32),
        "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int32),
    }
    logits, hidden = sess.run(["logits", "last_hidden_state"], feeds)
    mask = feeds["attention_mask"][..., None].astype(np.float32)
    emb = (hidden * mask).sum(1) / mask.sum(1)
    return logits, emb / np.linalg.norm(emb, axis=1, keepdims=True)


REF_LOGITS, REF_EMB = reference(TEXTS)
texts_np = np.array([[t] for t in TEXTS], dtype=object)


def http_input(binary=True, data=texts_np):
    i = th.InferInput("text", list(data.shape), "BYTES")
    i.set_data_from_numpy(data, binary_data=binary)
    return i


def grpc_input(data=texts_np):
    i = tg.InferInput("text", list(data.shape), "BYTES")
    i.set_data_from_numpy(data)
    return i


# --- Health, readiness, and the TensorRT plan that cannot run here.
expect(H.is_server_live() and G.is_server_live(), "server live")
index = {(m["name"], m.get("version", "")): m for m in H.get_model_repository_index()}
plan = index[("plan", "1")]
expect(plan["state"] == "UNAVAILABLE", f"plan state {plan}")
# Why: no CUDA driver here, or (a server built without the tensorrt feature) no TensorRT at all.
expect("tensorrt" in plan["reason"] and ("CUDA" in plan["reason"] or "without TensorRT" in plan["reason"]), f"plan reason {plan['reason']!r}")
expect(not H.is_model_ready("plan") and not G.is_model_ready("plan"), "plan not ready")
# Triton's strict readiness: the server is ready when every loaded model is.
expect(not H.is_server_ready(), "server ready with an unavailable model")
ok("tensorrt_plan reported UNAVAILABLE with its reason: " + plan["reason"])
H.unload_model("plan")
expect(H.is_server_ready() and G.is_server_ready(), "server ready after unloading plan")
for m in ["minilm", "embed"]:
    expect(H.is_model_ready(m) and G.is_model_ready(m) and H.is_model_ready(m, "1"), f"{m} ready")
expect(not H.is_model_ready("minilm", "7"), "unknown version not ready")
ok("health and readiness (HTTP and gRPC)")

# --- Server and model metadata, config.
meta = H.get_server_metadata()
expect(meta["name"] == "trt-serve", meta)
for ext in ["binary_tensor_data", "classification", "model_repository", "schedule_policy", "statistics"]:
    expect(ext in meta["extensions"], f"extension {ext} in {meta}")
expect(list(G.get_server_metadata().extensions) == meta["extensions"], "gRPC server metadata")
m = H.get_model_metadata("minilm")
expect(m["platform"] == "onnxruntime_onnx" and m["versions"] == ["1"], m)
expect(m["inputs"] == [{"name": "text", "datatype": "BYTES", "shape": [-1, 1]}], m)
expect(m["outputs"] == [{"name": "logits", "datatype": "FP32", "shape": [-1, 2]}], m)
gm = G.get_model_metadata("embed", "1")
expect([(o.name, list(o.shape)) for o in gm.outputs] == [("embedding", [-1, 384]), ("last_hidden_state", [-1, -1, 384])], gm)
c = H.get_model_config("minilm")
expect(c["max_batch_size"] == 8 and c["input"][0]["data_type"] == "TYPE_STRING", c)
expect(c["dynamic_batching"]["preferred_batch_size"] == [4, 8], c)
gc = G.get_model_config("minilm").config
expect(gc.max_batch_size == 8 and gc.input[0].name == "text" and list(gc.dynamic_batching.preferred_batch_size) == [4, 8], gc)
ok("server metadata, model metadata and config (HTTP and gRPC)")

# --- Inference: JSON and binary over HTTP, raw contents over gRPC, against the reference.
r = H.infer("minilm", [http_input(binary=False)], outputs=[th.InferRequestedOutput("logits", binary_data=False)])
expect("binary_data_size" not in json.dumps(r.get_response()), "JSON response holds binary data")
expect(np.allclose(r.as_numpy("logits"), REF_LOGITS, atol=1e-4), f"JSON logits {r.as_numpy('logits')} vs {REF_LOGITS}")
ok("HTTP infer, JSON tensors in and out; logits match Python onnxruntime")
r = H.infer("minilm", [http_input()], request_id="req-7")
expect(r.get_response()["id"] == "req-7" and r.get_response()["model_version"] == "1", r.get_response())
expect(np.allclose(r.as_numpy("logits"), REF_LOGITS, atol=1e-4), "binary logits")
ok("HTTP infer, binary tensor extension in and out")
r = G.infer("minilm", [grpc_input()])
expect(np.allclose(r.as_numpy("logits"), REF_LOGITS, atol=1e-4), "gRPC logits")
ok("gRPC infer, raw_input_contents / raw_output_contents")

# --- Embedder: the pooled, normalised embedding.
r = H.infer("embed", [http_input()], outputs=[th.InferRequestedOutput("embedding")])
emb = r.as_numpy("embedding")
expect(emb.shape == (3, 384) and np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5), emb.shape)
expect(np.allclose(emb, REF_EMB, atol=1e-4), "embedding vs mean-pooled reference")
longest = max(len(e.ids) for e in tok.encode_batch(TEXTS))
for model in ["embed", "embed_direct"]:
    r = G.infer(model, [grpc_input()], outputs=[tg.InferRequestedOutput("embedding"), tg.InferRequestedOutput("last_hidden_state")])
    expect(np.allclose(r.as_numpy("embedding"), REF_EMB, atol=1e-4), f"{model}: gRPC embedding")
    hs = r.as_numpy("last_hidden_state").shape
    expect(hs[0] == 3 and hs[2] == 384 and hs[1] >= longest, f"{model}: last_hidden_state {hs}, longest text {longest} tokens")
ok("embedder: mean-pooled L2-normalised embedding matches the reference, batched and direct (HTTP and gRPC)")

# --- Classification extension.
best = np.argmax(REF_LOGITS, axis=1)
r = H.infer("minilm", [http_input()], outputs=[th.InferRequestedOutput("logits", class_count=2)])
cls = r.as_numpy("logits")
expect(cls.shape == (3, 2), cls.shape)
for i, (row, b) in enumerate(zip(cls, best)):
    score, idx, label = row[0].decode().split(":")
    expect(int(idx) == b and label == f"LABEL_{b}", row)
    expect(abs(float(score) - REF_LOGITS[i][b]) < 1e-4, f"score {score} vs logit {REF_LOGITS[i][b]}")
r = G.infer("minilm", [grpc_input()], outputs=[tg.InferRequestedOutput("logits", class_count=1)])
expect([x[0].decode().split(":")[1] for x in r.as_numpy("logits")] == [str(b) for b in best], r.as_numpy("logits"))
ok("classification extension: score:index:label, top class as the reference's (HTTP and gRPC)")

# --- Dynamic batching: concurrent single-text requests share batches; timeouts apply.
def metric_now(line_start):
    text = urllib.request.urlopen(f"http://{args.metrics}/metrics", timeout=30).read().decode()
    return sum(float(l.split()[-1]) for l in text.splitlines() if l.startswith(line_start))


mv = '{model="minilm",version="1"}'
count0, exec0 = metric_now("nv_inference_count" + mv), metric_now("nv_inference_exec_count" + mv)


def single(i):
    c = tg.InferenceServerClient(args.grpc)
    t = TEXTS[i % len(TEXTS)]
    return c.infer("minilm", [grpc_input(np.array([[t]], dtype=object))]).as_numpy("logits")[0], i % len(TEXTS)


with cf.ThreadPoolExecutor(16) as pool:
    results = list(pool.map(single, range(48), timeout=120))
for logits, i in results:
    expect(np.allclose(logits, REF_LOGITS[i], atol=1e-4), f"batched logits of text {i}")
rows, execs = metric_now("nv_inference_count" + mv) - count0, metric_now("nv_inference_exec_count" + mv) - exec0
expect(rows == 48 and 0 < execs < rows, f"{rows} inferences in {execs} executions")
ok(f"dynamic batching: 48 concurrent single-text requests ran in {execs:.0f} batches, each row as the reference")

# --- Malformed requests: 4xx naming the problem, and the server still answers.
host, port = args.http.split(":")


def post(path, body, headers=None):
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", path, body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data


def expect_status(path, body, status, contains, headers=None):
    got, data = post(path, body, headers)
    expect(got == status, f"{path} {body[:80]!r}: status {got}, wanted {status}: {data[:200]!r}")
    msg = json.loads(data)["error"]
    expect(contains in msg, f"{msg!r} lacks {contains!r}")


def req(inputs, outputs=None):
    r = {"inputs": inputs}
    if outputs:
        r["outputs"] = outputs
    return json.dumps(r).encode()


text_in = {"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": ["x"]}
inf = "/v2/models/minilm/infer"
expect_status(inf, b"{not json", 400, "malformed JSON")
expect_status(inf, req([{**text_in, "datatype": "INT32", "data": [1]}]), 400, "expects BYTES")
expect_status(inf, req([{**text_in, "shape": [1]}]), 400, "expects [-1, 1]")
expect_status(inf, req([{**text_in, "name": "txt"}]), 400, "unknown input 'txt'")
expect_status(inf, req([text_in], [{"name": "nope"}]), 400, "unknown output 'nope'")
expect_status(inf, req([{**text_in, "shape": [2, 1]}]), 400, "1 data elements, the shape needs 2")
expect_status(inf, req([{**text_in, "shape": [9, 1], "data": ["x"] * 9}]), 400, "more than max_batch_size 8")
head = json.dumps({"inputs": [{"name": "text", "shape": [1, 1], "datatype": "BYTES", "parameters": {"binary_data_size": 9}}]}).encode()
expect_status(inf, head + struct.pack("<I", 50) + b"abcde", 400, "malformed BYTES data", {"Inference-Header-Content-Length": str(len(head))})
expect_status(inf, head + b"abc", 400, "more than the 3 binary bytes", {"Inference-Header-Content-Length": str(len(head))})
expect_status(inf, head, 400, "only", {"Inference-Header-Content-Length": str(len(head) + 10)})
expect_status("/v2/models/nope/infer", req([text_in]), 404, "unknown model 'nope'")
expect_status("/v2/models/minilm/versions/3/infer", req([text_in]), 404, "unknown version 3")
expect_status(inf, req([{**text_in, "data": ["y" * 70000]}]), 413, "more than the limit")
expect_status(inf, b" " * (2 << 20), 413, "request body")
expect_status("/v2/repository/models/..%2Fsecret/load", b"", 400, "not a model name")
expect_status("/v2/repository/models/%2E%2E/load", b"", 400, "not a model name")
expect_error(lambda: G.infer("minilm", [grpc_input()], model_version="x"), "StatusCode.INVALID_ARGUMENT", "not a version number", "gRPC bad version")
expect_error(lambda: G.infer("nope", [grpc_input()]), "StatusCode.NOT_FOUND", "unknown model", "gRPC unknown model")
# tonic refuses a message over the limit itself, with its own code (OUT_OF_RANGE), before decoding it.
expect_error(lambda: G.infer("minilm", [grpc_input(np.array([["x" * 2_000_000]], dtype=object))]), "StatusCode.OUT_OF_RANGE", "too large", "gRPC message over the limit")
bad = tg.InferInput("text", [1, 1], "INT32")
bad.set_data_from_numpy(np.array([[1]], dtype=np.int32))
expect_error(lambda: G.infer("minilm", [bad]), "StatusCode.INVALID_ARGUMENT", "expects BYTES", "gRPC wrong dtype")
expect(H.is_server_live() and np.allclose(H.infer("minilm", [http_input()]).as_numpy("logits"), REF_LOGITS, atol=1e-4), "still serving")
ok("malformed requests answered 4xx naming the problem (HTTP and gRPC); the server still serves")

# --- Repository: unload drains and refuses, load brings it back.
H.unload_model("embed")
expect(not H.is_model_ready("embed"), "embed unloaded")
idx = {m["name"]: m for m in H.get_model_repository_index()}
expect(idx["embed"]["state"] == "UNAVAILABLE" and idx["embed"]["reason"] == "unloaded", idx["embed"])
expect_error(lambda: H.infer("embed", [http_input()]), 503, "unloaded", "infer on unloaded")
G.load_model("embed")
expect(H.is_model_ready("embed") and G.is_model_ready("embed"), "embed reloaded")
expect(np.allclose(H.infer("embed", [http_input()], outputs=[th.InferRequestedOutput("embedding")]).as_numpy("embedding"), REF_EMB, atol=1e-4), "embed after reload")
expect_error(lambda: H.load_model("absent"), 404, "unknown model 'absent'", "load of a missing model")
ok("repository index / load / unload (HTTP and gRPC)")

# --- A version switch under concurrent traffic: zero failed requests.
switch_dir = os.path.join(args.repo, "switch")
stop = time.monotonic() + 60
versions_seen = []  # list.append is atomic under the GIL
failures = []
switched = []


def traffic(_):
    client = tg.InferenceServerClient(args.grpc)
    n = after = 0
    # Bounded: 400 requests, 60 s, or 20 requests once the switch is done.
    while n < 400 and time.monotonic() < stop and after < 20:
        try:
            r = client.infer("switch", [grpc_input(texts_np[:1])])
            versions_seen.append(r.get_response().model_version)
        except Exception as e:  # every failure is counted; none is expected
            failures.append(repr(e))
        n += 1
        after += bool(switched)
    return n


with cf.ThreadPoolExecutor(8) as pool:
    futs = [pool.submit(traffic, w) for w in range(8)]
    time.sleep(1.0)
    before = len(versions_seen)
    os.makedirs(os.path.join(switch_dir, "2"))
    os.symlink(os.path.realpath(os.path.join(switch_dir, "1", "model.onnx")), os.path.join(switch_dir, "2", "model.onnx"))
    H.load_model("switch")
    switched.append(True)
    sent = sum(f.result(timeout=120) for f in futs)
expect(not failures, f"{len(failures)} failed requests during the switch: {failures[:3]}")
expect(before > 0 and "1" in versions_seen and versions_seen[-1] == "2", f"versions seen: {sorted(set(versions_seen))}")
idx = [(m["name"], m.get("version")) for m in H.get_model_repository_index()]
expect(("switch", "2") in idx and ("switch", "1") not in idx, idx)
expect(G.infer("switch", [grpc_input(texts_np[:1])]).get_response().model_version == "2", "latest is 2")
ok(f"version switch under traffic: {sent} requests from 8 threads, 0 failed; version 1 answered {versions_seen.count('1')}, version 2 {versions_seen.count('2')}")

# --- Overload: a version whose queue holds one request answers the rest at once.
long_text = np.array([[" ".join(["overload"] * 300)]], dtype=object)


def one(_):
    try:
        tg.InferenceServerClient(args.grpc).infer("busy", [grpc_input(long_text)])
        return "ok"
    except InferenceServerException as e:
        return e.status()


with cf.ThreadPoolExecutor(16) as pool:
    outcomes = list(pool.map(one, range(16), timeout=120))
rejected = outcomes.count("StatusCode.UNAVAILABLE")
expect(set(outcomes) <= {"ok", "StatusCode.UNAVAILABLE"}, outcomes)
expect(rejected >= 1 and outcomes.count("ok") >= 1, outcomes)
with cf.ThreadPoolExecutor(16) as pool:
    def one_http(_):
        try:
            th.InferenceServerClient(args.http).infer("busy", [http_input(data=long_text)])
            return 200
        except InferenceServerException as e:
            return int(e.status())
    http_outcomes = list(pool.map(one_http, range(16), timeout=120))
expect(set(http_outcomes) <= {200, 503} and 503 in http_outcomes, http_outcomes)
ok(f"overload: {rejected}/16 gRPC requests UNAVAILABLE at once, {http_outcomes.count(503)}/16 HTTP 503, the rest served")

# Schedule-policy timeout: behind three long requests (one batch of one row each), 1 ms in the queue is too long.
with cf.ThreadPoolExecutor(3) as pool:
    ahead = [pool.submit(one, i) for i in range(3)]
    time.sleep(0.05)
    expect_error(lambda: H.infer("busy", [http_input(data=texts_np[:1])], timeout=1000), 503, "timed out", "queue timeout of 1 ms")
    expect(all(f.result(timeout=60) == "ok" for f in ahead), [f.result() for f in ahead])
ok("schedule-policy timeout: a request 1 ms in the queue behind a busy model answers 503")
expect(H.is_server_live() and G.infer("busy", [grpc_input(texts_np[:1])]).as_numpy("logits").shape == (1, 2), "busy serves again")

# --- Metrics under Triton's names.
text = urllib.request.urlopen(f"http://{args.metrics}/metrics", timeout=30).read().decode()
def metric(line_start):
    vals = [float(l.split()[-1]) for l in text.splitlines() if l.startswith(line_start)]
    return sum(vals)
expect(metric('nv_inference_request_success{model="minilm",version="1"}') >= 5, "success count")
expect(metric('nv_inference_request_failure{model="busy",reason="REJECTED",version="1"}') >= 1, "rejected count")
for name in ["nv_inference_count", "nv_inference_exec_count", "nv_inference_queue_duration_us", "nv_inference_compute_infer_duration_us", "trt_serve_tokenize_duration_us"]:
    expect(metric(name + '{model="minilm",version="1"}') > 0, name)
ok("metrics at /metrics under Triton's names, tokenization time included")

st = H.get_inference_statistics("minilm")["model_stats"][0]
expect(st["version"] == "1" and 0 < st["execution_count"] <= st["inference_count"], st)
expect(st["inference_stats"]["success"]["count"] >= 5 and st["inference_stats"]["compute_infer"]["ns"] > 0 and st["last_inference"] > 0, st)
gst = G.get_inference_statistics("minilm", "1").model_stats[0]
expect(gst.inference_count >= st["inference_count"] and gst.inference_stats.queue.count >= 5, gst)
expect(len(H.get_inference_statistics()["model_stats"]) >= 5, "statistics of every served version")
ok("statistics extension: per-version counts and durations (HTTP and gRPC)")
expect(time.monotonic() < DEADLINE, "ran past the script's deadline")
print("all checks passed", flush=True)
