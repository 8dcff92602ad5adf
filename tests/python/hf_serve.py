"""Drives `trt serve --model-id` (a HuggingFace folder imported by the
server itself) with the real `openai` client and TEI's `/embed`, and checks
the answers against the references sentence-transformers wrote for the same
folder (tests/data/hf/references/<name>.json): the OpenAI route applies the
model's default prompt as `encode` does; `/embed` with `prompt_name` applies
that prompt, `""` none; an unknown prompt is a 4xx naming the prompts.

Started by tests/cli_hf.rs. Bounded: 60 s a request, 100 s in all.
"""

import argparse
import json
import time
import urllib.error
import urllib.request

import numpy as np
import openai

p = argparse.ArgumentParser()
p.add_argument("--http", required=True)
p.add_argument("--model", required=True)
p.add_argument("--reference", required=True)
args = p.parse_args()
DEADLINE = time.monotonic() + 100
ref = json.load(open(args.reference))
# Texts the server takes as they are (TEI and OpenAI refuse empty inputs).
keep = [i for i, t in enumerate(ref["texts"]) if t.strip()]
texts = [ref["texts"][i] for i in keep]


def ok(name):
    assert time.monotonic() < DEADLINE, "past the 100 s deadline"
    print(f"ok {name}", flush=True)


def close(got, want, what):
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)[keep]
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    cos = (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    diff = float(np.abs(got - want).max())
    assert cos.min() >= 0.9999 and diff <= 1e-4, f"{what}: worst cosine {cos.min()}, max diff {diff}"
    print(f"{what}: worst cosine {cos.min():.7f}, max abs diff {diff:.2e}", flush=True)


def post(path, body):
    req = urllib.request.Request(f"http://{args.http}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


client = openai.OpenAI(base_url=f"http://{args.http}/v1", api_key="unused", timeout=60, max_retries=0)
got = client.embeddings.create(model=args.model, input=texts)
close([d.embedding for d in got.data], ref["embeddings"], "openai embeddings.create (default prompt)")
ok("openai")

# TEI cuts long texts only when asked (its default is to refuse them).
for name, want in ref["embeddings_by_prompt"].items():
    status, body = post("/embed", {"inputs": texts, "prompt_name": name, "truncate": True})
    assert status == 200, (status, body)
    close(body, want, f"/embed prompt_name={name!r}")
ok("tei prompt_name")

status, body = post("/embed", {"inputs": texts[:1], "prompt_name": "nope"})
assert 400 <= status < 500 and "nope" in json.dumps(body) and "passage" in json.dumps(body), (status, body)
ok("unknown prompt refused")
