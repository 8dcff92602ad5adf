#!/usr/bin/env python3
"""Reference encodings of text pairs (and left-truncated texts) from the Python
`tokenizers` package, for trt-nlp's tests.

Reads one JSON request on stdin, writes one JSON answer on stdout:

  request: {"tokenizer": "path/to/tokenizer.json",
            "pairs": [["first", "second"], ...],   # or "texts": ["...", ...]
            "max_len": 128,
            "truncate": true,                 # false: encode in full
            "strategy": "longest_first",      # or only_first, only_second
            "direction": "right"}             # or left
  answer:  {"rows": [{"ids": [...], "type_ids": [...]} or {"error": "..."}, ...]}

Each item is encoded on its own (`encode`, not `encode_batch`), so that an
item `tokenizers` refuses (a segment too short for `only_first`, say) gives an
error for that item alone. The file's own padding is turned off and
truncation set as a user of the package would: `enable_truncation(max_len,
strategy=..., direction=...)`.

Run with the venv made by scripts/setup: .deps/venv/bin/python.
"""
import json
import sys

from tokenizers import Tokenizer


def main():
    req = json.load(sys.stdin)
    tok = Tokenizer.from_file(req["tokenizer"])
    tok.no_padding()
    if req.get("truncate", True):
        tok.enable_truncation(req["max_len"], strategy=req.get("strategy", "longest_first"), direction=req.get("direction", "right"))
    else:
        tok.no_truncation()
    items = [tuple(p) for p in req["pairs"]] if "pairs" in req else [(t,) for t in req["texts"]]
    rows = []
    for item in items:
        try:
            e = tok.encode(*item)
            rows.append({"ids": e.ids, "type_ids": e.type_ids})
        except Exception as err:  # tokenizers raises plain Exception subclasses
            rows.append({"error": str(err)})
    json.dump({"rows": rows}, sys.stdout)


if __name__ == "__main__":
    main()
