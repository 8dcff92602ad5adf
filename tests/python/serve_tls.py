"""TLS and CORS against a running `trt serve` started by tests/serve_tls.rs
with a certificate signed by a CA made in that test (openssl CLI). HTTP is
checked with Python's ssl + http.client, gRPC with the real Triton client
(tritonclient.grpc, ssl=True). With --mtls the server requires a client
certificate signed by the same CA. Every check prints `ok <name>`; the
first failure raises. Bounded: no loops.
"""

import argparse
import http.client
import json
import socket
import ssl

import numpy as np
import tritonclient.grpc as tg

p = argparse.ArgumentParser()
p.add_argument("--http", required=True)
p.add_argument("--grpc", required=True)
p.add_argument("--certs", required=True)
p.add_argument("--mtls", action="store_true")
args = p.parse_args()
CA = f"{args.certs}/ca.pem"
CLIENT = (f"{args.certs}/client.pem", f"{args.certs}/client.key")
host, port = args.http.rsplit(":", 1)
INFER = json.dumps({"inputs": [{"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": ["hello world"]}]})


def ok(name):
    print("ok", name, flush=True)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def https(method, path, body=None, headers=None, client_cert=True):
    ctx = ssl.create_default_context(cafile=CA)
    if client_cert:
        ctx.load_cert_chain(*CLIENT)
    c = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=30)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    out = (r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read())
    c.close()
    return out


def grpc(client_cert=True):
    kw = {"ssl": True, "root_certificates": CA}
    if client_cert:
        kw.update(private_key=CLIENT[1], certificate_chain=CLIENT[0])
    return tg.InferenceServerClient(args.grpc, **kw)


def grpc_infer(g):
    i = tg.InferInput("text", [1, 1], "BYTES")
    i.set_data_from_numpy(np.array([[b"hello world"]], dtype=object))
    return g.infer("m", [i]).as_numpy("logits")


status, _, _ = https("GET", "/v2/health/ready")
expect(status == 200, f"HTTPS ready: {status}")
status, headers, body = https("POST", "/v2/models/m/infer", INFER, {"Content-Type": "application/json"})
expect(status == 200 and json.loads(body)["outputs"][0]["name"] == "logits", f"HTTPS infer: {status} {body[:200]}")
h = np.array(json.loads(body)["outputs"][0]["data"], dtype=np.float32)
g = grpc()
expect(g.is_server_ready(), "gRPC over TLS: ready")
expect(np.allclose(grpc_infer(g).reshape(-1), h, atol=1e-5), "gRPC over TLS: logits equal HTTPS's")
ok("HTTPS and gRPC over TLS serve, with the CA made in the test")

# Plain HTTP on the TLS port gets no HTTP answer.
s = socket.create_connection((host, int(port)), timeout=10)
s.sendall(b"GET /v2/health/ready HTTP/1.1\r\nHost: t\r\n\r\n")
try:
    reply = s.recv(64)
except (ConnectionResetError, socket.timeout):
    reply = b""
expect(not reply.startswith(b"HTTP/1.1 200"), f"plain HTTP on the TLS port answered {reply!r}")
s.close()
ok("plain HTTP on the TLS port is refused")

if args.mtls:
    try:
        https("GET", "/v2/health/ready", client_cert=False)
        raise AssertionError("HTTPS without a client certificate was served")
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected):
        pass
    try:
        grpc(client_cert=False).is_server_ready()
        raise AssertionError("gRPC without a client certificate was served")
    except Exception as e:  # tritonclient wraps the channel error
        expect("UNAVAILABLE" in str(e) or "ssl" in str(e).lower() or "handshake" in str(e).lower(), f"gRPC without a client certificate: {e}")
    ok("mTLS: a client without a certificate signed by the client CA is refused (HTTPS and gRPC)")
else:
    pre = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "content-type,authorization"}
    status, headers, _ = https("OPTIONS", "/v2/models/m/infer", headers=pre)
    expect(status == 200 and headers.get("access-control-allow-origin") == "https://app.example", f"preflight: {status} {headers}")
    expect("authorization" in headers.get("access-control-allow-headers", "").lower(), f"preflight headers: {headers}")
    status, headers, _ = https("POST", "/v2/models/m/infer", INFER, {"Origin": "https://app.example", "Content-Type": "application/json"})
    expect(status == 200 and headers.get("access-control-allow-origin") == "https://app.example", f"CORS POST: {headers}")
    status, headers, _ = https("GET", "/v2/health/ready", headers={"Origin": "https://evil.example"})
    expect("access-control-allow-origin" not in headers, f"an origin not allowed got CORS headers: {headers}")
    ok("CORS: preflight and request from the allowed origin, nothing for another")
print("all checks passed", flush=True)
