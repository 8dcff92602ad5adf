#!/usr/bin/env python3
"""The GPU peer of benches/serve_load.rs: the embedding server a Python user
writes instead of `trt serve`: FastAPI on uvicorn, transformers' `BertModel`
in FP16 on the GPU (eager, `torch.inference_mode()`), the fast `tokenizers`
tokenizer, and dynamic batching of its own (requests queue up; one batcher
task takes up to --max-batch of them, waiting at most --delay-us after the
first, runs them as one padded batch in a worker thread and answers each).

It speaks the part of KServe v2 the load generator sends, so the same client
and the same bodies measure both servers:
  GET  /v2/health/ready
  POST /v2/models/{name}/infer  {"inputs": [{"name": "text", "shape": [n, 1],
        "datatype": "BYTES", "data": [...]}], "outputs": [{"name": "embedding"}]}
answered with {"model_name", "outputs": [{"name": "embedding", "datatype":
"FP32", "shape": [n, dim], "data": [...]}]}: mean-pooled, L2-normalised.

Usage: serve_peer_torch.py --weights DIR --tokenizer tokenizer.json --port P
"""
import argparse
import asyncio
import threading

import numpy as np
import torch
import uvicorn
from fastapi import FastAPI, HTTPException, Request
from bench_texts import encode, padded_tokenizer
from transformers import BertModel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--max-batch", type=int, default=128)
    ap.add_argument("--delay-us", type=int, default=1000)
    ap.add_argument("--max-len", type=int, default=128)
    args = ap.parse_args()

    device = torch.device("cuda")
    model = BertModel.from_pretrained(args.weights, torch_dtype=torch.float16).to(device).eval()
    tok = padded_tokenizer(args.tokenizer, args.max_len)
    lock = threading.Lock()

    def embed(texts):
        ids, mask, _ = (torch.from_numpy(a) for a in encode(tok, texts, np.int64))
        with lock, torch.inference_mode():
            i, m = ids.to(device, non_blocking=True), mask.to(device, non_blocking=True)
            hidden = model(input_ids=i, attention_mask=m, token_type_ids=torch.zeros_like(i)).last_hidden_state
            mf = m.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mf).sum(dim=1).float() / mf.sum(dim=1).float().clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=1).cpu().numpy()

    embed(["warm up"] * 8)
    app = FastAPI()
    queue: asyncio.Queue = asyncio.Queue()

    async def batcher():
        loop = asyncio.get_running_loop()
        while True:
            items = [await queue.get()]
            deadline = loop.time() + args.delay_us / 1e6
            count = len(items[0][0])
            while count < args.max_batch:
                timeout = deadline - loop.time()
                if timeout <= 0:
                    break
                try:
                    item = await asyncio.wait_for(queue.get(), timeout)
                except asyncio.TimeoutError:
                    break
                items.append(item)
                count += len(item[0])
            texts = [t for item in items for t in item[0]]
            try:
                rows = await loop.run_in_executor(None, embed, texts)
            except Exception as e:  # answer every waiter, keep serving
                for _, fut in items:
                    fut.set_exception(e)
                continue
            start = 0
            for item_texts, fut in items:
                fut.set_result(rows[start : start + len(item_texts)])
                start += len(item_texts)

    @app.on_event("startup")
    async def start_batcher():
        asyncio.get_running_loop().create_task(batcher())

    @app.get("/v2/health/ready")
    async def ready():
        return {}

    @app.post("/v2/models/{name}/infer")
    async def infer(name: str, request: Request):
        body = await request.json()
        try:
            texts = [str(t) for t in body["inputs"][0]["data"]]
        except (KeyError, IndexError, TypeError):
            raise HTTPException(status_code=400, detail="expected inputs[0].data: a list of texts")
        if not texts:
            raise HTTPException(status_code=400, detail="no texts")
        fut = asyncio.get_running_loop().create_future()
        await queue.put((texts, fut))
        rows = await fut
        return {"model_name": name, "outputs": [{"name": "embedding", "datatype": "FP32", "shape": list(rows.shape),
                                                  "data": np.asarray(rows, dtype=np.float32).ravel().tolist()}]}

    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
