#!/usr/bin/env python3
"""Qwen3-Embedding-0.6B-shaped throughput on the GPU test host: sentence-transformers FP16
(what users run) beside the graph `trt import --fp16` writes, on onnxruntime-gpu, on the
same texts and GPU, one process after the other.

The model: transformers' Qwen3Model with Qwen3-Embedding-0.6B's shape (28 layers, hidden
1024, 16 query heads and 8 key/value heads of 128, MLP 3072, RMSNorm, rotary theta 1e6),
random weights stored in bfloat16 as the real checkpoint is, wrapped in the
sentence-transformers modules of tests/data/hf/qwen3-embed (last-token pooling, Normalize,
left padding, EOS appended by the tokenizer's post-processor). The vocabulary is that
fixture's (480 tokens), not Qwen's 151,669: the embedding table's size does not change the
compute of a forward pass, and no real tokenizer can be fetched here.

Sides, each over the same TEXTS texts (random byte-level strings, 40-200 characters), batch 32,
after a warm-up pass:
  st    SentenceTransformer(folder, model_kwargs={"dtype": float16}).encode
  trt   `trt import --fp16` of the folder (plain), and `--fp16 --fused` (GroupQueryAttention,
        SkipSimplifiedLayerNormalization); Python `tokenizers` (the folder's tokenizer.json,
        padded right as trt-nlp's pipeline pads: the fused attention takes each row's length)
        + onnxruntime-gpu on the graph, inputs and outputs on the device
Printed: texts/s and tokens/s per side, the ratio, and the worst cosine between the two
sides' embeddings (both FP16).

Usage: qwen3_06b.py --trt BIN --fixture tests/data/hf/qwen3-embed --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import time

import numpy as np
import torch
import transformers

TEXTS, BATCH = 4096, 32


def make_folder(fixture, work):
    d = os.path.join(work, "qwen3-0.6b")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(fixture, d)
    for f in ["model.safetensors", "config.json"]:
        os.remove(os.path.join(d, f))
    with open(os.path.join(fixture, "config.json")) as fh:
        fields = json.load(fh)
    fields.update(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                  num_key_value_heads=8, head_dim=128, max_position_embeddings=32768,
                  layer_types=["full_attention"] * 28)
    for k in ["architectures", "transformers_version", "model_type", "dtype"]:
        fields.pop(k, None)
    cfg = transformers.Qwen3Config(**fields)
    torch.manual_seed(0)
    model = transformers.Qwen3Model(cfg).to(torch.bfloat16)
    model.save_pretrained(d)
    for f, key, value in [("tokenizer_config.json", "model_max_length", 512),
                          ("sentence_bert_config.json", "max_seq_length", 512),
                          ("1_Pooling/config.json", "embedding_dimension", 1024)]:
        p = os.path.join(d, f)
        with open(p) as fh:
            j = json.load(fh)
        j[key] = value
        with open(p, "w") as fh:
            json.dump(j, fh, indent=2)
    return d


def texts():
    rng = np.random.default_rng(0)
    alphabet = list("abcdefghijklmnopqrstuvwxyz      .,")
    return ["".join(rng.choice(alphabet, rng.integers(40, 201))) for _ in range(TEXTS)]


def st_side(folder, data):
    from sentence_transformers import SentenceTransformer
    m = SentenceTransformer(folder, device="cuda", model_kwargs={"dtype": torch.float16})
    m.encode(data[:256], batch_size=BATCH)
    torch.cuda.synchronize()
    t = time.perf_counter()
    out = m.encode(data, batch_size=BATCH, convert_to_numpy=True)
    torch.cuda.synchronize()
    return time.perf_counter() - t, out


def trt_side(imported, data):
    import onnxruntime as ort
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(imported, "tokenizer.json"))
    with open(os.path.join(imported, "trt_model.json")) as fh:
        desc = json.load(fh)
    tok.enable_truncation(desc.get("max_seq_length") or 512)
    tok.enable_padding(direction="right", pad_id=tok.token_to_id("<|endoftext|>"), pad_token="<|endoftext|>")
    sess = ort.InferenceSession(os.path.join(imported, "model.onnx"),
                                providers=[("CUDAExecutionProvider", {"device_id": 0})])
    names = [i.name for i in sess.get_inputs()]

    def run(batch):
        enc = tok.encode_batch(batch)
        ids = np.array([e.ids for e in enc], np.int32)
        mask = np.array([e.attention_mask for e in enc], np.int32)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        binding = sess.io_binding()
        for n in names:
            binding.bind_ortvalue_input(n, ort.OrtValue.ortvalue_from_numpy(feeds[n], "cuda", 0))
        binding.bind_output("embedding", "cuda", 0)
        sess.run_with_iobinding(binding)
        return binding.copy_outputs_to_cpu()[0], int(mask.sum())

    for i in range(0, 256, BATCH):
        run(data[i:i + BATCH])
    t = time.perf_counter()
    outs, tokens = [], 0
    for i in range(0, len(data), BATCH):
        o, n = run(data[i:i + BATCH])
        outs.append(o)
        tokens += n
    return time.perf_counter() - t, np.concatenate(outs), tokens


def arguments():
    """--trt BIN --fixture DIR --work DIR (this script's and scripts/qwen3_06b_cpu.py's)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--trt", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--work", required=True)
    return ap.parse_args()


def main():
    a = arguments()
    folder = make_folder(a.fixture, a.work)
    data = texts()
    imports = {}
    for form, extra in [("plain", []), ("fused", ["--fused"])]:
        imports[form] = os.path.join(a.work, f"qwen3-0.6b-trt-{form}")
        t = time.perf_counter()
        subprocess.run([a.trt, "import", folder, "-o", imports[form], "--fp16", *extra], check=True)
        print(f"trt import --fp16 {' '.join(extra)} in {time.perf_counter() - t:.1f} s", flush=True)
    st_s, st_out = st_side(folder, data)
    print(f"sentence-transformers FP16: {len(data) / st_s:.0f} texts/s ({st_s:.2f} s for {len(data)} texts, batch {BATCH})", flush=True)
    torch.cuda.empty_cache()
    for form, imported in imports.items():
        trt_s, trt_out, tokens = trt_side(imported, data)
        print(f"trt-hf {form} graph on onnxruntime-gpu: {len(data) / trt_s:.0f} texts/s, {tokens / trt_s:.0f} tokens/s "
              f"({trt_s:.2f} s, {tokens / len(data):.1f} tokens per text)", flush=True)
        cos = (st_out * trt_out).sum(1) / np.linalg.norm(st_out, axis=1) / np.linalg.norm(trt_out, axis=1)
        print(f"worst cosine, trt-hf {form} FP16 vs sentence-transformers FP16: {cos.min():.5f}")
        print(f"ratio_trt_hf_{form}_vs_sentence_transformers: {st_s / trt_s:.2f}", flush=True)


if __name__ == "__main__":
    main()
