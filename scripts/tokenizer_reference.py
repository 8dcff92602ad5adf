#!/usr/bin/env python3
"""Reference encodings from the Python `tokenizers` package, for trt-nlp's tests.

Reads one JSON request on stdin, writes one JSON answer on stdout:

  request: {"tokenizer": "path/to/tokenizer.json", "texts": [...],
            "max_len": 128,
            "truncate": true,            # false: encode in full (no truncation)
            "pad_to_multiple_of": null,  # or 8, 16, 32, ...
            "pad_to_max": false,         # true: every row max_len long
            "add_special_tokens": true}
  answer:  {"seq_len": n, "lengths": [...],
            "input_ids": [[...]], "attention_mask": [[...]], "token_type_ids": [[...]]}

Padding and truncation are what a user of the Python package would write:
`enable_truncation(max_len)` and `enable_padding(...)` (pad id, pad type id and
pad token from the file), overriding the file's own settings. A bucketed length
that would exceed max_len is clamped to max_len, as trt-nlp documents.

Run with the venv made by scripts/setup: .deps/venv/bin/python.
"""
import json
import sys

from tokenizers import Tokenizer


def encode(tok, texts, max_len, truncate, multiple, pad_to_max, add_special_tokens):
    file_padding = tok.padding or {}
    pad = dict(
        pad_id=file_padding.get("pad_id", 0),
        pad_type_id=file_padding.get("pad_type_id", 0),
        pad_token=file_padding.get("pad_token", "[PAD]"),
    )
    if truncate:
        tok.enable_truncation(max_len)
    else:
        tok.no_truncation()
    if pad_to_max:
        tok.enable_padding(length=max_len, **pad)
    else:
        tok.enable_padding(pad_to_multiple_of=multiple, **pad)
    encodings = tok.encode_batch(texts, add_special_tokens=add_special_tokens)
    if truncate and encodings and len(encodings[0].ids) > max_len:
        tok.enable_padding(length=max_len, **pad)  # clamp a bucket to max_len
        encodings = tok.encode_batch(texts, add_special_tokens=add_special_tokens)
    return encodings


def main():
    req = json.load(sys.stdin)
    tok = Tokenizer.from_file(req["tokenizer"])
    encodings = encode(
        tok,
        req["texts"],
        req["max_len"],
        req.get("truncate", True),
        req.get("pad_to_multiple_of"),
        req.get("pad_to_max", False),
        req.get("add_special_tokens", True),
    )
    json.dump(
        {
            "seq_len": len(encodings[0].ids) if encodings else 0,
            "lengths": [sum(e.attention_mask) for e in encodings],
            "input_ids": [e.ids for e in encodings],
            "attention_mask": [e.attention_mask for e in encodings],
            "token_type_ids": [e.type_ids for e in encodings],
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
