#!/usr/bin/env python3
"""Writes the seed corpora and dictionaries of the importer's fuzz targets:
fuzz/seeds/safetensors_weights/ (small safetensors files: F32, F16, BF16, an
integer tensor, metadata, an empty one, a zero-sized tensor, a header that
claims more data than there is) and fuzz/seeds/hf_folder/ (the first byte
picks the file, the rest is that file of a committed fixture under
tests/data/hf/). Run from the repository root with any Python 3 with numpy:
    .deps/venv/bin/python fuzz/make_hf_seeds.py
The output is committed; rerun only to change the seeds.
"""
import json
import os
import struct

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)))
SEEDS = os.path.join(ROOT, "seeds")
FIXTURES = os.path.join(ROOT, "..", "tests", "data", "hf")
# The order the hf_folder target picks its file by.
FILES = ["config.json", "modules.json", "1_Pooling/config.json", "sentence_bert_config.json",
         "config_sentence_transformers.json", "tokenizer_config.json"]


def safetensors(tensors, meta=None):
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if meta:
        header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + data


def main():
    out = os.path.join(SEEDS, "safetensors_weights")
    os.makedirs(out, exist_ok=True)
    f32 = np.arange(6, dtype="<f4").tobytes()
    f16 = np.arange(4, dtype="<f2").tobytes()
    bf16 = (np.arange(4, dtype="<f4").view("<u4") >> 16).astype("<u2").tobytes()
    seeds = {
        "f32.safetensors": safetensors({"embeddings.word_embeddings.weight": ("F32", [2, 3], f32)}),
        "mixed.safetensors": safetensors({"a": ("F16", [4], f16), "b": ("BF16", [2, 2], bf16),
                                          "c": ("I64", [1], struct.pack("<q", 7))}, {"format": "pt"}),
        "empty.safetensors": safetensors({}),
        "zero_dim.safetensors": safetensors({"z": ("F32", [0, 3], b"")}),
        "lying.safetensors": safetensors({"x": ("F32", [1000000, 1000], b"")}),
    }
    for name, b in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(b)

    out = os.path.join(SEEDS, "hf_folder")
    os.makedirs(out, exist_ok=True)
    for fixture in ["bert-hub", "bert-st5", "bert-multi", "mpnet-mean", "distilbert-cls", "roberta-cross-encoder", "xlmr-cls2"]:
        for k, f in enumerate(FILES):
            path = os.path.join(FIXTURES, fixture, f)
            if os.path.isfile(path):
                with open(path, "rb") as src, open(os.path.join(out, f"{fixture}-{f.replace('/', '_')}"), "wb") as dst:
                    dst.write(bytes([k]) + src.read())

    dicts = os.path.join(ROOT, "dicts")
    tokens = ["dtype", "shape", "data_offsets", "__metadata__", "F32", "F16", "BF16", "I64", "U8", "BOOL", "F64"]
    with open(os.path.join(dicts, "safetensors.dict"), "w") as f:
        f.write("".join(f'"{t}"\n' for t in tokens))
    tokens = ["model_type", "bert", "roberta", "xlm-roberta", "camembert", "distilbert", "mpnet", "electra", "architectures",
              "ForSequenceClassification", "hidden_size", "dim", "num_attention_heads", "num_hidden_layers",
              "intermediate_size", "max_position_embeddings", "vocab_size", "type_vocab_size", "layer_norm_eps",
              "hidden_act", "gelu_new", "relu", "pad_token_id", "id2label", "num_labels", "problem_type",
              "multi_label_classification", "embedding_size", "relative_attention_num_buckets", "position_embedding_type",
              "type", "path", "sentence_transformers.models.Pooling", "sentence_transformers.models.Dense",
              "sentence_transformers.models.Normalize", "pooling_mode", "pooling_mode_mean_tokens", "pooling_mode_cls_token",
              "pooling_mode_max_tokens", "pooling_mode_lasttoken", "pooling_mode_weightedmean_tokens", "lasttoken",
              "weightedmean", "include_prompt", "max_seq_length", "do_lower_case", "prompts", "default_prompt_name",
              "activation_fn", "torch.nn.modules.activation.Sigmoid", "model_max_length", "padding_side", "1e30", "null",
              "true", "false", "-1", "1e308"]
    with open(os.path.join(dicts, "hf_config.dict"), "w") as f:
        f.write("".join(f'"{t}"\n' for t in tokens))


if __name__ == "__main__":
    main()
