"""API keys against a running `trt serve`, with the real Triton client
(PyPI tritonclient, HTTP and gRPC) sending `Authorization: Bearer` headers.

Started by tests/serve_auth.rs with `--api-key-file` (KEY) and
`--admin-api-key` (ADMIN) over one model, `m`. Every check prints
`ok <name>`; the first failure raises. Bounded: no loops.
"""

import argparse
import urllib.error
import urllib.request

import numpy as np
import tritonclient.grpc as tg
import tritonclient.http as th
from tritonclient.utils import InferenceServerException

p = argparse.ArgumentParser()
p.add_argument("--http", required=True)
p.add_argument("--grpc", required=True)
p.add_argument("--metrics", required=True)
p.add_argument("--key", required=True)
p.add_argument("--admin", required=True)
args = p.parse_args()

H = th.InferenceServerClient(args.http, connection_timeout=30, network_timeout=60)
G = tg.InferenceServerClient(args.grpc)
KEY = {"Authorization": f"Bearer {args.key}"}
ADMIN = {"Authorization": f"Bearer {args.admin}"}
WRONG = {"Authorization": "Bearer not-the-key"}
GKEY = {"authorization": f"Bearer {args.key}"}
GADMIN = {"authorization": f"Bearer {args.admin}"}
GWRONG = {"authorization": "Bearer not-the-key"}
texts = np.array([[b"hello world"]], dtype=object)


def ok(name):
    print("ok", name, flush=True)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def refused(fn, status, what):
    try:
        fn()
    except InferenceServerException as e:
        expect(str(e.status()) == str(status), f"{what}: status {e.status()!r}, wanted {status!r} ({e.message()})")
        expect(args.key not in e.message() and args.admin not in e.message(), f"{what}: the message shows a key")
        expect("API key" in e.message(), f"{what}: message {e.message()!r} does not name the API key")
        return
    raise AssertionError(f"{what}: not refused")


def http_infer(headers):
    i = th.InferInput("text", [1, 1], "BYTES")
    i.set_data_from_numpy(texts)
    return H.infer("m", [i], headers=headers)


def grpc_infer(headers):
    i = tg.InferInput("text", [1, 1], "BYTES")
    i.set_data_from_numpy(texts)
    return G.infer("m", [i], headers=headers)


# Health is open (probes carry no key); so are metrics.
expect(H.is_server_live() and H.is_server_ready() and H.is_model_ready("m"), "HTTP health without a key")
expect(G.is_server_live() and G.is_server_ready() and G.is_model_ready("m"), "gRPC health without a key")
with urllib.request.urlopen(f"http://{args.metrics}/metrics", timeout=30) as r:
    expect(r.status == 200 and r.headers.get("Content-Type", "").startswith("text/plain"), "metrics without a key")
ok("health and metrics open without a key")

# Inference: 401 / UNAUTHENTICATED without the key or with a wrong one.
refused(lambda: http_infer(None), 401, "HTTP infer without a key")
refused(lambda: http_infer(WRONG), 401, "HTTP infer with a wrong key")
refused(lambda: H.get_model_metadata("m"), 401, "HTTP metadata without a key")
refused(lambda: grpc_infer(None), "StatusCode.UNAUTHENTICATED", "gRPC infer without a key")
refused(lambda: grpc_infer(GWRONG), "StatusCode.UNAUTHENTICATED", "gRPC infer with a wrong key")
req = urllib.request.Request(f"http://{args.http}/v2/models/m/infer", data=b"{}", method="POST")
try:
    urllib.request.urlopen(req, timeout=30)
    raise AssertionError("raw POST without a key was not refused")
except urllib.error.HTTPError as e:
    expect(e.code == 401 and e.headers.get("WWW-Authenticate") == "Bearer", f"raw POST: {e.code} {dict(e.headers)}")
ok("inference refused without the key or with a wrong one (HTTP 401, gRPC UNAUTHENTICATED)")

h = http_infer(KEY).as_numpy("logits")
g = grpc_infer(GKEY).as_numpy("logits")
expect(h.shape == (1, 2) and np.allclose(h, g, atol=1e-5), f"outputs with the key: {h} / {g}")
expect(H.get_model_metadata("m", headers=KEY)["name"] == "m", "HTTP metadata with the key")
ok("inference with the key (HTTP and gRPC agree)")

# Repository routes need the admin key; the inference key is not enough.
refused(lambda: H.unload_model("m", headers=KEY), 401, "HTTP unload with the inference key")
refused(lambda: H.get_model_repository_index(), 401, "HTTP index without a key")
refused(lambda: G.unload_model("m", headers=GKEY), "StatusCode.UNAUTHENTICATED", "gRPC unload with the inference key")
expect(H.is_model_ready("m"), "m still loaded after the refused unloads")
H.unload_model("m", headers=ADMIN)
expect(not H.is_model_ready("m"), "m unloaded with the admin key")
G.load_model("m", headers=GADMIN)
expect(G.is_model_ready("m"), "m loaded again with the admin key (gRPC)")
expect([e["name"] for e in H.get_model_repository_index(headers=ADMIN)] == ["m"], "index with the admin key")
ok("repository routes need the admin key (HTTP and gRPC)")
print("all checks passed", flush=True)
