#!/usr/bin/env python3
"""Loopback soak of `trt serve`; run through scripts/soak.

Starts `trt serve` on 127.0.0.1 (ephemeral ports) over a repository of the
default model on ONNX Runtime, then for SECONDS sends a mixed load from a few
client threads: valid inference requests, malformed ones, oversize ones,
requests cancelled mid-flight (the socket closed half-way through the body, or
right after sending), while another thread unloads and reloads one model in a
cycle. Every few seconds it samples the server's RSS, open file descriptors and
thread count from /proc. Bounded: the load stops after SECONDS, every request
has a socket timeout (a timeout counts as a hung request), and the server must
exit within 30 s of SIGTERM.

Writes OUT/soak.csv (the samples), OUT/soak-summary.txt (figures at start,
after 1 minute and at the end; request counts by kind and outcome) and exits
non-zero when a valid request failed or hung, or the server died.
"""
import argparse
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

REQUEST_TIMEOUT = 30.0
WORDS = "the quick brown fox jumps over a lazy dog while servers keep their memory flat under load".split()


def sample(pid):
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    rss_kib = int(status["VmRSS"].split()[0])
    threads = int(status["Threads"])
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss_kib, fds, threads


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.failures = []

    def add(self, kind, outcome, detail=None):
        with self.lock:
            self.counts[(kind, outcome)] = self.counts.get((kind, outcome), 0) + 1
            if detail and len(self.failures) < 50:
                self.failures.append(f"{kind}: {outcome}: {detail}")


def infer_body(texts):
    return json.dumps({"inputs": [{"name": "text", "datatype": "BYTES", "shape": [len(texts), 1], "data": texts}]}).encode()


def post(host, port, path, body, headers=None):
    conn = http.client.HTTPConnection(host, port, timeout=REQUEST_TIMEOUT)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
        r = conn.getresponse()
        data = r.read()
        return r.status, data
    finally:
        conn.close()


def malformed(rng):
    choices = [
        b"{not json",
        b"",
        json.dumps({"inputs": "nope"}).encode(),
        json.dumps({"inputs": [{"name": "text", "datatype": "FP32", "shape": [1, 1], "data": [1.0]}]}).encode(),
        json.dumps({"inputs": [{"name": "text", "datatype": "BYTES", "shape": [2, 1], "data": ["only one"]}]}).encode(),
        json.dumps({"inputs": [{"name": "nope", "datatype": "BYTES", "shape": [1, 1], "data": ["x"]}]}).encode(),
        json.dumps({"inputs": [{"name": "text", "datatype": "BYTES", "shape": [-1, 1], "data": ["x"]}]}).encode(),
        json.dumps({"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1, 1], "data": ["x"]}],
                    "outputs": [{"name": "no_such_output"}]}).encode(),
        bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300))),
    ]
    return rng.choice(choices)


def cancelled(host, port, body, rng):
    """Sends a request and hangs up before the answer: half-way through the body, or right after it."""
    s = socket.create_connection((host, port), timeout=REQUEST_TIMEOUT)
    try:
        head = (f"POST /v2/models/embed/infer HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        if rng.random() < 0.5:
            s.sendall(head + body[: len(body) // 2])
        else:
            s.sendall(head + body)
            time.sleep(rng.random() * 0.05)
    finally:
        s.close()


def client(host, port, stop, stats, seed, max_request_bytes):
    rng = random.Random(seed)
    while not stop.is_set():
        kind = rng.choices(["valid", "malformed", "oversize", "cancelled", "valid_binary"], [55, 20, 8, 12, 5])[0]
        texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40))) for _ in range(rng.randint(1, 4))]
        try:
            if kind == "valid":
                status, data = post(host, port, "/v2/models/embed/infer", infer_body(texts))
                ok = status == 200 and len(json.loads(data)["outputs"]) >= 1
                stats.add(kind, "ok" if ok else f"http {status}", None if ok else data[:200])
            elif kind == "valid_binary":
                # Triton's binary tensor extension: JSON header, then the BYTES tensor (4-byte length + bytes per element).
                raw = b"".join(len(t.encode()).to_bytes(4, "little") + t.encode() for t in texts)
                head = json.dumps({"inputs": [{"name": "text", "datatype": "BYTES", "shape": [len(texts), 1],
                                               "parameters": {"binary_data_size": len(raw)}}]}).encode()
                status, data = post(host, port, "/v2/models/embed/infer", head + raw,
                                    {"Inference-Header-Content-Length": str(len(head))})
                stats.add("valid", "ok" if status == 200 else f"http {status}", None if status == 200 else data[:200])
            elif kind == "malformed":
                status, data = post(host, port, "/v2/models/embed/infer", malformed(rng))
                outcome = "4xx" if 400 <= status < 500 else f"http {status}"
                stats.add(kind, outcome, None if outcome == "4xx" else data[:200])
            elif kind == "oversize":
                body = infer_body(["x" * (max_request_bytes + 1024)])
                try:
                    status, data = post(host, port, "/v2/models/embed/infer", body)
                    outcome = "4xx" if 400 <= status < 500 else f"http {status}"
                except (ConnectionResetError, BrokenPipeError):
                    outcome = "closed"  # the server may hang up on a body over its limit
                stats.add(kind, outcome)
            else:
                cancelled(host, port, infer_body(texts), rng)
                stats.add(kind, "sent")
        except socket.timeout:
            stats.add(kind if kind != "valid_binary" else "valid", "hung")
        except (ConnectionError, OSError) as e:
            stats.add(kind if kind != "valid_binary" else "valid", f"error {type(e).__name__}", str(e))


def cycler(host, port, stop, stats, period):
    """Unloads and reloads the model `cycle` while traffic runs, and sends it requests."""
    rng = random.Random(7)
    loaded = True
    next_switch = time.time() + period
    while not stop.is_set():
        if time.time() >= next_switch:
            path = f"/v2/repository/models/cycle/{'unload' if loaded else 'load'}"
            try:
                status, data = post(host, port, path, b"{}")
                stats.add("unload" if loaded else "load", "ok" if status == 200 else f"http {status}", data[:200])
                if status == 200:
                    loaded = not loaded
            except socket.timeout:
                stats.add("unload" if loaded else "load", "hung")
            next_switch = time.time() + period
        try:
            status, _ = post(host, port, "/v2/models/cycle/infer", infer_body(["cycling " + rng.choice(WORDS)]))
            stats.add("cycle_infer", "ok" if status == 200 else ("4xx/503" if status in (400, 404, 503) else f"http {status}"))
        except socket.timeout:
            stats.add("cycle_infer", "hung")
        time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trt", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--sample-every", type=float, default=5.0)
    ap.add_argument("--cycle-every", type=float, default=15.0)
    ap.add_argument("--max-request-bytes", type=int, default=1 << 20)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    server = subprocess.Popen(
        [a.trt, "serve", "--model-repository", a.repo, "--host", "127.0.0.1", "--http-port", "0", "--grpc-port", "0",
         "--metrics-port", "0", "--threads", "1", "--max-request-bytes", str(a.max_request_bytes),
         "--model-control-mode", "explicit", "--load-model", "*"],
        stdout=subprocess.PIPE, stderr=open(os.path.join(a.out, "server.stderr"), "wb"), text=True)
    line = ""
    deadline = time.time() + 180
    while time.time() < deadline and server.poll() is None:
        line = server.stdout.readline()
        if line.startswith("trt serve: http="):
            break
    if not line.startswith("trt serve: http="):
        server.kill()
        sys.exit(f"trt serve did not become ready within 180 s (see {a.out}/server.stderr)")
    http_addr = line.split()[2].split("=", 1)[1]
    host, port = http_addr.rsplit(":", 1)
    port = int(port)
    stats, stop = Stats(), threading.Event()
    samples = []
    t0 = time.time()
    samples.append((0.0, *sample(server.pid)))
    threads = [threading.Thread(target=client, args=(host, port, stop, stats, i, a.max_request_bytes), daemon=True)
               for i in range(a.clients)]
    threads.append(threading.Thread(target=cycler, args=(host, port, stop, stats, a.cycle_every), daemon=True))
    for t in threads:
        t.start()
    died = False
    while time.time() - t0 < a.seconds:
        time.sleep(a.sample_every)
        if server.poll() is not None:
            died = True
            break
        samples.append((time.time() - t0, *sample(server.pid)))
    stop.set()
    for t in threads:
        t.join(REQUEST_TIMEOUT + 5)
    hung_threads = sum(t.is_alive() for t in threads)
    if not died:
        time.sleep(2)  # let cancelled requests settle before the last sample
        samples.append((time.time() - t0, *sample(server.pid)))
        server.send_signal(signal.SIGTERM)
        try:
            exit_code = server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            exit_code = "did not exit within 30 s of SIGTERM"
    else:
        exit_code = f"died during the soak with {server.returncode}"
    with open(os.path.join(a.out, "soak.csv"), "w") as f:
        f.write("seconds,rss_kib,fds,threads\n")
        for s in samples:
            f.write(f"{s[0]:.1f},{s[1]},{s[2]},{s[3]}\n")

    def at(t):
        return min(samples, key=lambda s: abs(s[0] - t))

    valid_ok = stats.counts.get(("valid", "ok"), 0)
    valid_bad = sum(n for (k, o), n in stats.counts.items() if k == "valid" and o != "ok")
    hung = sum(n for (k, o), n in stats.counts.items() if o == "hung") + hung_threads
    wrong = sum(n for (k, o), n in stats.counts.items() if k in ("malformed", "oversize") and o not in ("4xx", "closed"))
    lines = [f"trt serve soak: {a.seconds} s, {a.clients} clients + 1 load/unload cycler, 127.0.0.1, samples every {a.sample_every} s"]
    for label, s in (("start", samples[0]), ("after 1 min", at(60)), ("end", samples[-1])):
        lines.append(f"{label:>12}: t={s[0]:6.1f}s  RSS {s[1] / 1024:8.1f} MiB  fds {s[2]:4d}  threads {s[3]:4d}")
    half = [s for s in samples if s[0] >= samples[-1][0] / 2]
    lines.append(f"second half: RSS {min(s[1] for s in half) / 1024:.1f}-{max(s[1] for s in half) / 1024:.1f} MiB, "
                 f"fds {min(s[2] for s in half)}-{max(s[2] for s in half)}, threads {min(s[3] for s in half)}-{max(s[3] for s in half)}")
    for (k, o), n in sorted(stats.counts.items()):
        lines.append(f"  {k:>12} {o:<24} {n}")
    lines.append(f"valid requests: {valid_ok} ok, {valid_bad} failed; hung requests: {hung}; "
                 f"malformed/oversize answered other than 4xx: {wrong}; server exit: {exit_code}")
    lines += ["failure: " + f for f in stats.failures[:20]]
    summary = "\n".join(lines)
    with open(os.path.join(a.out, "soak-summary.txt"), "w") as f:
        f.write(summary + "\n")
    print(summary)
    sys.exit(1 if (died or valid_bad or hung or wrong or exit_code != 0) else 0)


if __name__ == "__main__":
    main()
