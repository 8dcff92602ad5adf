#!/usr/bin/env python3
"""A model `trt serve --model-id` loads with no config: waits until the server at BASE is
ready, prints the instance groups, optimization and parameters it chose for MODEL, and
embeds one text through the TEI route. Usage: model_id_check.py BASE MODEL"""
import json
import sys
import time
import urllib.request

base, model = sys.argv[1], sys.argv[2]
for _ in range(300):
    try:
        urllib.request.urlopen(base + "/v2/health/ready", timeout=2)
        break
    except Exception:
        time.sleep(0.5)
config = json.load(urllib.request.urlopen(f"{base}/v2/models/{model}/config", timeout=10))
print("config:", json.dumps({k: config.get(k) for k in ["instance_group", "optimization", "parameters", "max_batch_size"]}))
req = urllib.request.Request(base + "/embed", data=json.dumps({"inputs": "A short text to embed."}).encode(),
                             headers={"content-type": "application/json"})
print("embed: vector of", len(json.load(urllib.request.urlopen(req, timeout=30))[0]), "values")
