"""Drives a `trt serve --model-repository` whose repository holds a HuggingFace
folder (no config.pbtxt: the server imports it) beside nothing else, with the
real Triton client (tritonclient.http): the model is ready, its derived config
names the text input and the logits, and the logits of the reference texts
equal those transformers computed (tests/data/hf/references/<name>.json).

Started by tests/cli_hf.rs. Bounded: 60 s a request.
"""

import argparse
import json

import numpy as np
import tritonclient.http as th

p = argparse.ArgumentParser()
p.add_argument("--http", required=True)
p.add_argument("--model", required=True)
p.add_argument("--reference", required=True)
args = p.parse_args()
ref = json.load(open(args.reference))

client = th.InferenceServerClient(args.http, network_timeout=60, connection_timeout=60)
assert client.is_model_ready(args.model), "the HuggingFace folder's model is not ready"
config = client.get_model_config(args.model)
assert [i["name"] for i in config["input"]] == ["text"], config
assert [o["name"] for o in config["output"]] == ["logits"], config
print("ok config", flush=True)

keep = [i for i, t in enumerate(ref["texts"]) if t.strip()][:8]
texts = np.array([[ref["texts"][i].encode()] for i in keep], dtype=object)
inp = th.InferInput("text", list(texts.shape), "BYTES")
inp.set_data_from_numpy(texts)
result = client.infer(args.model, [inp], outputs=[th.InferRequestedOutput("logits")])
got = result.as_numpy("logits")
want = np.asarray(ref["logits"], np.float32)[keep]
diff = float(np.abs(got - want).max())
assert got.shape == want.shape and diff <= 1e-4, f"logits: shape {got.shape} vs {want.shape}, max diff {diff}"
print(f"tritonclient infer: logits of {len(keep)} texts within {diff:.2e} of transformers", flush=True)
print("ok infer", flush=True)
