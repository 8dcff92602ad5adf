"""Drives a running `trt serve` through its TEI and OpenAI routes with the
real clients: the `openai` package (`embeddings.create`, float, base64 and
`dimensions`), `huggingface_hub`'s `InferenceClient` (`feature_extraction`,
`sentence_similarity`, `text_classification`), and plain HTTP for `/rerank`,
`/predict` pairs, `/tokenize`, `/decode`, `/info`, `/health`; every result is
compared with Python tokenizers + onnxruntime on the same model files.
Then bad input for every route: the route's error shape and status, and the
server still answers.

Started by tests/serve_embed_clients.rs (repository: `embed`, the default
model with an `embedding` output; `rerank`, the cross-encoder of
scripts/make_cross_encoder.py). Every check prints `ok <name>`; the first
failure raises. Bounded: every request has a 60 s timeout and the script a
240 s deadline.
"""

import argparse
import base64
import json
import os
import time
import urllib.error
import urllib.request

import numpy as np
import onnxruntime as ort
import openai
import tokenizers
from huggingface_hub import InferenceClient

p = argparse.ArgumentParser()
p.add_argument("--http", required=True)
p.add_argument("--repo", required=True)
p.add_argument("--metrics", required=True)
args = p.parse_args()
BASE = f"http://{args.http}"
DEADLINE = time.monotonic() + 240
TEXTS = ["hello world", "A somewhat longer sentence, to be embedded by the server.", "中文分词测试", ""]
QUERY = "What is Deep Learning?"
PASSAGES = ["Deep Learning is a branch of machine learning.", "The stock market fell sharply.", "", "日本語のテキスト"]


def ok(name):
    assert time.monotonic() < DEADLINE, "the checks ran past their 240 s deadline"
    print(f"ok {name}", flush=True)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def post(path, body, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def get(path):
    try:
        with urllib.request.urlopen(BASE + path, timeout=60) as r:
            body = r.read()
            return r.status, json.loads(body) if body else None
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def cos(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def session(name):
    d = os.path.join(args.repo, name)
    tok = tokenizers.Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=512)
    return tok, ort.InferenceSession(os.path.join(d, "1", "model.onnx"), providers=["CPUExecutionProvider"])


def feeds(e):
    return {k: np.array([v], dtype=np.int32) for k, v in
            (("input_ids", e.ids), ("attention_mask", e.attention_mask), ("token_type_ids", e.type_ids))}


EMB_TOK, EMB = session("embed")
CE_TOK, CE = session("rerank")


def ref_embedding(text, dims=None):
    (hidden,) = EMB.run(["last_hidden_state"], feeds(EMB_TOK.encode(text)))
    v = hidden[0].mean(0).astype(np.float64)
    if dims:
        v = v[:dims]
    return v / np.linalg.norm(v)


def ref_logit(a, b=None):
    (logits,) = CE.run(["logits"], feeds(CE_TOK.encode(a, b) if b is not None else CE_TOK.encode(a)))
    return float(logits[0][0])


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


REF = [ref_embedding(t) for t in TEXTS]

# --- openai: embeddings.create (its default asks for base64 and decodes it), float, base64, dimensions.
client = openai.OpenAI(base_url=BASE + "/v1", api_key="unused", max_retries=0, timeout=60)
r = client.embeddings.create(model="embed", input=TEXTS)
expect([d.index for d in r.data] == list(range(len(TEXTS))), "openai: indices in order")
worst = min(cos(d.embedding, ref) for d, ref in zip(r.data, REF))
expect(worst >= 0.99999, f"openai default (base64 decoded by the client): cosine {worst}")
tokens = sum(len(EMB_TOK.encode(t).ids) for t in TEXTS)
expect(r.usage.prompt_tokens == tokens and r.usage.total_tokens == tokens, f"openai usage {r.usage} vs {tokens} tokens")
ok(f"openai embeddings.create: {len(TEXTS)} texts, min cosine {worst:.7f}, usage {tokens} tokens")
r = client.embeddings.create(model="embed", input=TEXTS[:2], encoding_format="float")
worst = min(cos(d.embedding, ref) for d, ref in zip(r.data, REF))
expect(worst >= 0.99999 and len(r.data[0].embedding) == 384, f"openai float: cosine {worst}")
ok("openai encoding_format=float")
r = client.embeddings.create(model="embed", input=TEXTS[0], encoding_format="base64")
v = np.frombuffer(base64.b64decode(r.data[0].embedding), dtype="<f4")
expect(len(v) == 384 and cos(v, REF[0]) >= 0.99999, "openai base64: little-endian f32")
ok("openai encoding_format=base64 is little-endian f32")
for dims in (64, 128):
    r = client.embeddings.create(model="embed", input=TEXTS[:2], dimensions=dims, encoding_format="float")
    for d, t in zip(r.data, TEXTS):
        e = np.asarray(d.embedding)
        expect(len(e) == dims and abs(np.linalg.norm(e) - 1) < 1e-5, f"dimensions {dims}: length and norm")
        expect(cos(e, ref_embedding(t, dims)) >= 0.99999, f"dimensions {dims}: truncated then renormalised")
ok("openai dimensions 64 and 128: truncated, renormalised, equal to the reference")
ids = EMB_TOK.encode(TEXTS[1]).ids
r = client.embeddings.create(model="embed", input=[ids], encoding_format="float")
expect(cos(r.data[0].embedding, REF[1]) >= 0.99999, "openai token-id input")
ok("openai token-id input embeds like its text")
models = client.models.list()
expect(sorted(m.id for m in models.data) == ["embed", "rerank"], f"models.list: {models.data}")
ok("openai models.list names the repository's models")
try:
    client.embeddings.create(model="no-such-model", input="x")
    raise AssertionError("an unknown model was accepted")
except openai.NotFoundError as e:
    expect(e.body["code"] == "model_not_found" and e.body["param"] == "model", f"unknown model body {e.body}")
ok("openai unknown model: 404 model_not_found")
for bad, param in (({"input": "x", "model": "embed", "dimensions": 0}, "dimensions"),
                   ({"input": "x", "model": "embed", "dimensions": 385}, "dimensions"),
                   ({"input": [], "model": "embed"}, "input")):
    try:
        client.embeddings.create(**bad)
        raise AssertionError(f"accepted {bad}")
    except openai.BadRequestError as e:
        expect(e.body["type"] == "invalid_request_error" and e.body["param"] == param, f"{bad}: {e.body}")
ok("openai dimensions 0 / above the width and empty input: 400 invalid_request_error naming the param")

# --- huggingface_hub InferenceClient against the TEI routes.
hf = InferenceClient(model=BASE + "/models/embed/embed", timeout=60)
got = hf.feature_extraction(TEXTS)
worst = min(cos(g, ref) for g, ref in zip(got, REF))
expect(got.shape == (len(TEXTS), 384) and worst >= 0.99999, f"feature_extraction: {got.shape}, cosine {worst}")
ok(f"huggingface_hub feature_extraction: min cosine {worst:.7f}")
sims = InferenceClient(model=BASE + "/models/embed/similarity", timeout=60).sentence_similarity(TEXTS[0], TEXTS[1:])
want = [float(REF[0] @ r) for r in REF[1:]]
expect(np.allclose(sims, want, atol=1e-5), f"sentence_similarity {sims} vs {want}")
ok("huggingface_hub sentence_similarity equals the reference cosines")
tc = InferenceClient(model=BASE + "/models/rerank/predict", timeout=60).text_classification(PASSAGES[0])
tc = tc if isinstance(tc, list) else [tc]
expect(tc[0].label == "LABEL_0" and abs(tc[0].score - sigmoid(ref_logit(PASSAGES[0]))) < 1e-5, f"text_classification {tc}")
ok("huggingface_hub text_classification: the cross-encoder's sigmoid score")

# --- /rerank, /predict pairs: order and logits equal tokenizers + onnxruntime.
status, ranks = post("/models/rerank/rerank", {"query": QUERY, "texts": PASSAGES, "raw_scores": True, "return_text": True})
expect(status == 200, f"rerank: {status} {ranks}")
logits = [ref_logit(QUERY, t) for t in PASSAGES]
order = sorted(range(len(PASSAGES)), key=lambda i: -logits[i])
expect([r["index"] for r in ranks] == order, f"rerank order {ranks} vs {order}")
expect(all(abs(r["score"] - logits[r["index"]]) < 1e-5 and r["text"] == PASSAGES[r["index"]] for r in ranks), f"rerank logits {ranks} vs {logits}")
ok(f"rerank: order and logits equal the Python reference (order {order})")
status, ranks = post("/models/rerank/rerank", {"query": QUERY, "texts": PASSAGES})
expect(status == 200 and all(abs(r["score"] - sigmoid(logits[r["index"]])) < 1e-5 and "text" not in r for r in ranks), f"rerank scores {ranks}")
ok("rerank without raw_scores: sigmoid scores, no text")
status, preds = post("/models/rerank/predict", {"inputs": [[QUERY, PASSAGES[0]], [PASSAGES[1]]], "raw_scores": True})
expect(status == 200 and abs(preds[0][0]["score"] - logits[0]) < 1e-5 and abs(preds[1][0]["score"] - ref_logit(PASSAGES[1])) < 1e-5, f"predict {preds}")
ok("predict: a batch of a pair and a single text, logits equal the reference")

# --- /embed with Matryoshka dimensions and normalize, /tokenize, /decode, /info, /health.
status, emb = post("/models/embed/embed", {"inputs": TEXTS[1], "dimensions": 32})
expect(status == 200 and len(emb[0]) == 32 and cos(emb[0], ref_embedding(TEXTS[1], 32)) >= 0.99999, f"embed dimensions: {status}")
ok("embed dimensions 32")
status, toks = post("/models/embed/tokenize", {"inputs": [TEXTS[0]]})
want = EMB_TOK.encode(TEXTS[0])
expect(status == 200 and [t["id"] for t in toks[0]] == want.ids and toks[0][0]["special"], f"tokenize {toks}")
status, texts = post("/models/embed/decode", {"ids": want.ids})
expect(status == 200 and texts == [EMB_TOK.decode(want.ids)], f"decode {texts}")
ok("tokenize and decode equal tokenizers'")
status, info = get("/models/rerank/info")
expect(status == 200 and "reranker" in info["model_type"] and info["max_input_length"] > 0, f"info {info}")
expect(get("/health")[0] == 200 and get("/models/embed/health")[0] == 200, "health")
ok("info and health")

# --- Bad input for every route: TEI's {error, error_type} and status; the server keeps serving.
LONG = "word " * 700
BIG = "x" * (10 << 20)
bad = [
    ("/models/embed/embed", None, b"{not json", 400),
    ("/models/embed/embed", {"inputs": 3}, None, 422),
    ("/models/embed/embed", {"inputs": []}, None, 422),
    ("/models/embed/embed", {"inputs": ["a"] * 9}, None, 413),
    ("/models/embed/embed", {"inputs": LONG}, None, 413),
    ("/models/embed/embed", {"inputs": "x", "dimensions": 0}, None, 422),
    ("/models/embed/embed", {"inputs": "x", "dimensions": 385}, None, 422),
    ("/models/embed/embed", {"inputs": BIG}, None, 413),
    ("/models/nope/embed", {"inputs": "x"}, None, 404),
    ("/embed", {"inputs": "x"}, None, 404),  # two models: the root names neither
    ("/models/embed/embed_all", {"inputs": "x", "truncate": "yes"}, None, 422),
    ("/models/rerank/predict", {"inputs": ["a", "b", "c"]}, None, 422),
    ("/models/rerank/predict", {"inputs": [[LONG, "b"]]}, None, 413),
    ("/models/rerank/rerank", {"query": "q", "texts": []}, None, 422),
    ("/models/rerank/rerank", {"query": 1, "texts": ["a"]}, None, 422),
    ("/models/rerank/rerank", {"query": "q", "texts": ["a"] * 9}, None, 413),
    ("/models/rerank/rerank", {"query": "q", "texts": [LONG]}, None, 413),
    ("/models/embed/rerank", {"query": "q", "texts": ["a"]}, None, 422),  # an embedder has no logits
    ("/models/embed/similarity", {"inputs": "x"}, None, 422),
    ("/models/embed/tokenize", {"inputs": [1]}, None, 422),
    ("/models/embed/decode", {"ids": ["a"]}, None, 422),
]
for path, body, raw, want in bad:
    status, err = post(path, body, raw)
    expect(status == want, f"{path} {str(body)[:60]}: status {status}, expected {want} ({err})")
    expect(isinstance(err, dict) and isinstance(err.get("error"), str) and isinstance(err.get("error_type"), str), f"{path}: TEI error shape {err}")
ok(f"TEI routes: {len(bad)} bad requests answered 4xx with {{error, error_type}}")
for body, raw, want in (({"input": "x", "model": "embed", "encoding_format": "hex"}, None, 400), (None, b"[", 400),
                        ({"input": LONG, "model": "embed"}, None, 400), ({"input": BIG, "model": "embed"}, None, 400),
                        ({"input": ["a"] * 9, "model": "embed"}, None, 400), ({"input": "x"}, None, 400)):
    status, err = post("/v1/embeddings", body, raw)
    expect(status == want and set(err["error"]) == {"message", "type", "param", "code"}, f"/v1/embeddings {str(body)[:60]}: {status} {err}")
ok("OpenAI route: bad requests answered 400 with {error: {message, type, param, code}}")
r = client.embeddings.create(model="embed", input=TEXTS[0], encoding_format="float")
expect(cos(r.data[0].embedding, REF[0]) >= 0.99999, "after the bad requests")
ok("the server still serves after every bad request")

text = urllib.request.urlopen(f"http://{args.metrics}/metrics", timeout=30).read().decode()
def metric(line_start):
    vals = [float(l.rsplit(" ", 1)[1]) for l in text.splitlines() if l.startswith(line_start)]
    return vals[0] if vals else 0.0
for model, route in (("embed", "openai_embeddings"), ("embed", "tei_embed"), ("embed", "tei_similarity"), ("rerank", "tei_rerank"), ("rerank", "tei_predict")):
    expect(metric(f'trt_serve_route_request_count{{model="{model}",outcome="success",route="{route}",version="1"}}') >= 1, f"route metric {route}")
expect(metric('trt_serve_route_request_count{model="embed",outcome="success",route="openai_embeddings",version="1"}') >= 7, "openai request count: every successful create")
expect(metric('nv_inference_request_success{model="embed",version="1"}') >= 10, "embedding-route requests in the model's Triton counters")
ok("metrics count each route (trt_serve_route_request_count) and the model's Triton counters include them")
