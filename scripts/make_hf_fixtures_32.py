#!/usr/bin/env python3
"""Make small HuggingFace model folders of the newer families (ModernBERT, Qwen3 embedding and reranker, a
BERT token classifier, a SPLADE sparse encoder) and the reference outputs the real libraries compute from
them, for the Rust HuggingFace-folder importer's tests. A companion of make_hf_fixtures.py: same
conventions (tiny random-weight models with a large weight spread, small deterministic tokenizers trained
here on the same built-in corpus, the same 16 texts including empty, unicode and three texts longer than
the length limit, the same reference JSON layout), and its helpers are imported from there.

Folders written under --out (each by the libraries themselves: transformers `save_pretrained`,
sentence-transformers `SentenceTransformer.save` / `SparseEncoder.save`):

  modernbert-mean     ModernBertModel (3 layers: global, local (sliding window 8), global attention) +
                      sentence-transformers mean pooling + Normalize, max_seq_length 48; a byte-level BPE
                      tokenizer with ModernBERT's [CLS]/[SEP]/[PAD]/[MASK]/[UNK] specials at the end of the
                      vocabulary and a `[CLS] $A [SEP]` post-processor.
  qwen3-embed         Qwen3Model (grouped-query attention 4 heads / 2 KV heads, head_dim 8, q_norm/k_norm)
                      + last-token pooling + Normalize, max_seq_length 64, prompts as Qwen3-Embedding ships
                      them; a Qwen2-style byte-level BPE whose post-processor appends <|endoftext|>;
                      padding_side left.
  qwen3-embed-bf16    the same weights stored in bfloat16; references from the bf16 weights run in float32.
  qwen3-reranker      Qwen3ForCausalLM scored as the Qwen3-Reranker model card does: P("yes") from a softmax
                      over the "yes"/"no" logits at the last position of a chat-formatted prompt, left padded.
  bert-ner            BertForTokenClassification (O, B-/I-PER, ORG, LOC) and the token-classification
                      pipeline's output for every aggregation strategy.
  splade              BertForMaskedLM (tied embeddings) in a sentence-transformers SparseEncoder
                      (MLMTransformer + SpladePooling max/relu): max over tokens of log(1 + relu(logits)).

References go to references/<name>.json; every number in them is computed by transformers /
sentence-transformers / torch on the folder as written (reloaded from disk), nothing by hand except the
cross-checks, which only assert.

Usage:
  HF_HUB_OFFLINE=1 python scripts/make_hf_fixtures_32.py --out tests/data/hf [--only NAME ...]
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# First: importing make_hf_fixtures sets HF_HUB_OFFLINE before transformers is imported, one torch thread,
# quiet logs.
from make_hf_fixtures import (  # noqa: E402
    CORPUS,
    HEADS,
    HIDDEN,
    INTERMEDIATE,
    PAIRS,
    TEXTS,
    VOCAB_SIZE,
    WEIGHT_STD,
    bert_tokenizer,
    check_autotokenizer,
    check_tokenizer_json,
    f32list,
    make_config,
    min_pairwise_cos_distance,
    randomize,
    save_hf,
    tidy,
    train_byte_level_bpe,
    unpadded_ids,
    versions,
    write_json,
)
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors import safe_open  # noqa: E402
from sentence_transformers import SentenceTransformer, SparseEncoder  # noqa: E402
from sentence_transformers.sentence_transformer import modules as st_models  # noqa: E402
from sentence_transformers.sparse_encoder import modules as sparse_models  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors  # noqa: E402
from tokenizers import models as tok_models  # noqa: E402

# ---------------------------------------------------------------------------
# Prompts and templates (verbatim from the Qwen3-Embedding / Qwen3-Reranker model cards)
# ---------------------------------------------------------------------------

QWEN3_EMBED_PROMPTS = {
    "query": "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:",
    "document": "",
}
RERANK_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"
RERANK_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
)
RERANK_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
RERANK_TEMPLATE = "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}"
RERANK_MAX_LENGTH = 160  # the card's max_length (8192 there, for a model of 40960 positions)
RERANK_MAX_POSITIONS = 256

# The Qwen tokenizer also learns from the prompt texts (as a real vocabulary knows those words), with the
# chat special tokens left out, and from answers on their own line so that "yes" and "no" (no leading
# space, as they follow "</think>\n\n") are single tokens.
QWEN_EXTRA_CORPUS = [
    RERANK_PREFIX.replace("<|im_start|>", "").replace("<|im_end|>", "")
    + RERANK_TEMPLATE.format(instruction=RERANK_INSTRUCTION, query="what is it", doc="it is")
    + RERANK_SUFFIX.replace("<|im_start|>", "").replace("<|im_end|>", "").replace("<think>", "").replace(
        "</think>", ""
    )
    + "yes",
    QWEN3_EMBED_PROMPTS["query"],
    "yes\nno\nyes\nno\n",
]

# ---------------------------------------------------------------------------
# Tokenizers
# ---------------------------------------------------------------------------

MODERNBERT_SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]


def modernbert_tokenizer(model_max_length):
    """As ModernBERT's (the OLMo / GPT-NeoX byte-level BPE): GPT-2's ByteLevel pre-tokenizer, no normalizer,
    the specials appended after the BPE vocabulary ([MASK] with lstrip), `[CLS] $A [SEP]` post-processor,
    tokenizer class PreTrainedTokenizerFast, no token_type_ids."""
    vocab, merges = train_byte_level_bpe([], vocab_size=VOCAB_SIZE - len(MODERNBERT_SPECIALS))
    tok = Tokenizer(tok_models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(
        [AddedToken(t, special=True, normalized=False, lstrip=(t == "[MASK]")) for t in MODERNBERT_SPECIALS]
    )
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        model_max_length=model_max_length,
        model_input_names=["input_ids", "attention_mask"],
        clean_up_tokenization_spaces=True,
    )


def qwen_tokenizer(model_max_length, append_eos, padding_side):
    """As Qwen2/Qwen3's: NFC, the Qwen2 split regex + ByteLevel (no regex), byte symbols first, then the
    merges, then <|endoftext|> <|im_start|> <|im_end|> (special) and <think> </think> (added, not special);
    pad <|endoftext|>, eos <|im_end|>, no bos, no unk. append_eos: the post-processor appends <|endoftext|>
    (as Qwen3-Embedding's tokenizer.json); otherwise Qwen3's ByteLevel post-processor, which adds nothing."""
    vocab, merges = train_byte_level_bpe(
        [],
        corpus=CORPUS + QWEN_EXTRA_CORPUS,
        vocab_size=VOCAB_SIZE - 5,
        pre_tokenizer=pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(
                    Regex(transformers.models.qwen2.tokenization_qwen2.PRETOKENIZE_REGEX),
                    behavior="isolated",
                    invert=False,
                ),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        ),
        normalizer=normalizers.NFC(),
    )
    tok = transformers.Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        model_max_length=model_max_length,
        padding_side=padding_side,
    )
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.add_tokens(["<think>", "</think>"])
    tok.eos_token = "<|im_end|>"
    eot = tok.convert_tokens_to_ids("<|endoftext|>")
    if append_eos:
        tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
            single="$A:0 <|endoftext|>:0",
            pair="$A:0 <|endoftext|>:0 $B:1 <|endoftext|>:1",
            special_tokens=[("<|endoftext|>", eot)],
        )
    else:
        tok.backend_tokenizer.post_processor = processors.ByteLevel(
            add_prefix_space=False, trim_offsets=False, use_regex=False
        )
    for t in ("yes", "no"):
        if t not in tok.get_vocab():
            raise SystemExit(f"qwen tokenizer: {t!r} is not a single token")
    return tok


def tokenizer_json_summary(folder):
    tj = json.load(open(os.path.join(folder, "tokenizer.json"), encoding="utf-8"))
    return {
        "model": tj["model"]["type"],
        "normalizer": tj["normalizer"],
        "pre_tokenizer": tj["pre_tokenizer"],
        "post_processor": tj["post_processor"],
        "decoder": tj["decoder"]["type"] if tj["decoder"] else None,
        "added_tokens": [
            {k: a[k] for k in ("id", "content", "special", "lstrip", "rstrip", "normalized")} for a in tj["added_tokens"]
        ],
    }


def folder_files(folder):
    out = []
    for root, _dirs, files in os.walk(folder):
        for f in files:
            out.append(os.path.relpath(os.path.join(root, f), folder))
    return sorted(out)


def safetensors_index(path):
    """name -> "DTYPE [shape]" of every tensor in a safetensors file, e.g. "F32 [480, 32]"."""
    out = {}
    with safe_open(path, framework="pt") as f:
        for k in sorted(f.keys()):
            sl = f.get_slice(k)
            out[k] = f"{sl.get_dtype()} {list(sl.get_shape())}"
    return out


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def check_prompted_ids(st, texts, prompt, name):
    """The prompt is simply prepended to the text before tokenization."""
    a = unpadded_ids(st.preprocess(texts, prompt=prompt))
    b = unpadded_ids(st.preprocess([prompt + t for t in texts]))
    if a != b:
        raise SystemExit(f"{name}: the prompt is not simply prepended to the text")
    return a


# ---------------------------------------------------------------------------
# 1. ModernBERT + mean pooling
# ---------------------------------------------------------------------------

MODERNBERT = dict(layers=3, global_every=2, local_attention=8, max_pos=64, global_theta=160000.0, local_theta=10000.0)


def make_modernbert(out, tmp):
    name = "modernbert-mean"
    folder = os.path.join(out, name)
    hf_dir = os.path.join(tmp, name + "-hf")
    tok = modernbert_tokenizer(MODERNBERT["max_pos"])
    cfg = transformers.ModernBertConfig(
        vocab_size=len(tok),
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=MODERNBERT["layers"],
        num_attention_heads=HEADS,
        max_position_embeddings=MODERNBERT["max_pos"],
        global_attn_every_n_layers=MODERNBERT["global_every"],
        local_attention=MODERNBERT["local_attention"],
        global_rope_theta=MODERNBERT["global_theta"],
        local_rope_theta=MODERNBERT["local_theta"],
        initializer_range=WEIGHT_STD,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.cls_token_id,
        eos_token_id=tok.sep_token_id,
        cls_token_id=tok.cls_token_id,
        sep_token_id=tok.sep_token_id,
    )
    model = randomize(transformers.ModernBertModel(cfg), 401)
    model.eval()
    save_hf(model, tok, hf_dir)
    check_autotokenizer(hf_dir, tok, TEXTS)

    torch.manual_seed(401)
    st = SentenceTransformer(
        modules=[
            st_models.Transformer(hf_dir, max_seq_length=48),
            st_models.Pooling(HIDDEN, pooling_mode="mean"),
            st_models.Normalize(),
        ],
        device="cpu",
    )
    if os.path.exists(folder):
        shutil.rmtree(folder)
    st.save(folder, create_model_card=False)
    tidy(folder)

    st = SentenceTransformer(folder, device="cpu")
    st.eval()
    am = st[0].auto_model
    max_len = st.max_seq_length
    ids = unpadded_ids(st.preprocess(TEXTS))
    check_tokenizer_json(folder, TEXTS, ids, max_len)
    check_autotokenizer(folder, tok, TEXTS)
    emb = st.encode(TEXTS, convert_to_numpy=True)
    if not np.array_equal(emb, st.encode(TEXTS[::-1], convert_to_numpy=True)[::-1]):
        raise SystemExit(f"{name}: encode is not repeatable")

    # Cross-checks (asserted, not recorded): eager attention gives the same; the local window matters
    # exactly for texts longer than local_attention // 2 + 1 tokens; the hub's legacy config keys
    # (global_attn_every_n_layers, global/local_rope_theta) load to the same layer types and thetas.
    eager = SentenceTransformer(folder, device="cpu", model_kwargs={"attn_implementation": "eager"})
    if not np.allclose(eager.encode(TEXTS, convert_to_numpy=True), emb, atol=1e-5):
        raise SystemExit(f"{name}: eager and {am.config._attn_implementation} attention differ")
    wide = SentenceTransformer(folder, device="cpu")
    wide[0].auto_model.config.local_attention = 10_000  # every layer sees everything
    wide_emb = wide.encode(TEXTS, convert_to_numpy=True)
    half = MODERNBERT["local_attention"] // 2
    for i, t_ids in enumerate(ids):
        differs = not np.allclose(wide_emb[i], emb[i], atol=1e-6)
        if differs != (len(t_ids) > half + 1):
            raise SystemExit(f"{name}: text {i} ({len(t_ids)} tokens): window effect {differs}")
    saved_cfg = read_json(os.path.join(folder, "config.json"))
    legacy = {k: v for k, v in saved_cfg.items() if k not in ("layer_types", "rope_parameters")}
    legacy.update(global_attn_every_n_layers=MODERNBERT["global_every"],
                  global_rope_theta=MODERNBERT["global_theta"], local_rope_theta=MODERNBERT["local_theta"])
    lcfg = transformers.ModernBertConfig.from_dict(legacy)
    if lcfg.layer_types != am.config.layer_types or lcfg.rope_parameters != am.config.rope_parameters:
        raise SystemExit(f"{name}: the legacy config keys do not load to the same layer types / rope")

    long_texts = sum(1 for t in ids if len(t) > half + 1)
    print(f"{name}: max_seq_length={max_len} layer_types={am.config.layer_types} attn={am.config._attn_implementation}"
          f" texts past the window={long_texts} min pairwise cosine distance={min_pairwise_cos_distance(emb):.4f}")
    ref = {
        "name": name,
        "family": am.config.model_type,
        "layout": "st5",
        "kind": "embedding",
        "versions": versions(),
        "max_seq_length": max_len,
        "pooling": ["mean"],
        "normalize": True,
        "attn_implementation": am.config._attn_implementation,
        "layer_types": list(am.config.layer_types),
        "local_attention": am.config.local_attention,
        "sliding_window_rule": "sliding_attention layers: query i attends key j iff |i - j| <= local_attention // 2 "
        "(and j is not padding); full_attention layers: every non-padding j",
        "rope_parameters": am.config.rope_parameters,
        "head_dim": HIDDEN // HEADS,
        "hidden_activation": am.config.hidden_activation,
        "norm_eps": am.config.norm_eps,
        "config_legacy_equivalent": {
            "global_attn_every_n_layers": MODERNBERT["global_every"],
            "local_attention": MODERNBERT["local_attention"],
            "global_rope_theta": MODERNBERT["global_theta"],
            "local_rope_theta": MODERNBERT["local_theta"],
        },
        "weights": safetensors_index(os.path.join(folder, "model.safetensors")),
        "tokenizer": tokenizer_json_summary(folder),
        "texts": TEXTS,
        "input_ids": ids,
        "embeddings": f32list(emb),
    }
    write_json(os.path.join(out, "references", name + ".json"), ref)


# ---------------------------------------------------------------------------
# 2. Qwen3 embedding (float32 and bfloat16 storage)
# ---------------------------------------------------------------------------


def qwen3_config(tok, max_position_embeddings=128):
    return transformers.Qwen3Config(
        vocab_size=len(tok),
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        hidden_act="silu",
        max_position_embeddings=max_position_embeddings,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        attention_bias=False,
        initializer_range=WEIGHT_STD,
        pad_token_id=tok.pad_token_id,
        bos_token_id=None,
        eos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
    )


def build_qwen3_st(hf_dir, folder, dtype):
    torch.manual_seed(501)
    transformer = st_models.Transformer(hf_dir, max_seq_length=64, model_kwargs={"dtype": dtype})
    st = SentenceTransformer(
        modules=[transformer, st_models.Pooling(HIDDEN, pooling_mode="lasttoken"), st_models.Normalize()],
        device="cpu",
        prompts=dict(QWEN3_EMBED_PROMPTS),
        default_prompt_name=None,
        similarity_fn_name="cosine",
    )
    if os.path.exists(folder):
        shutil.rmtree(folder)
    st.save(folder, create_model_card=False)
    tidy(folder)


def qwen3_embed_reference(name, folder, tok, model_kwargs, extra):
    st = SentenceTransformer(folder, device="cpu", model_kwargs=model_kwargs)
    st.eval()
    am = st[0].auto_model
    if am.dtype != torch.float32:
        raise SystemExit(f"{name}: ran in {am.dtype}, not float32")
    max_len = st.max_seq_length
    check_autotokenizer(folder, tok, TEXTS)
    feats = st.preprocess(TEXTS)
    mask = feats["attention_mask"]
    if not (mask[:, -1] == 1).all() or (mask[:, 0] == 0).sum() == 0:
        raise SystemExit(f"{name}: sentence-transformers did not pad on the left")
    ids = unpadded_ids(feats)
    eot = tok.convert_tokens_to_ids("<|endoftext|>")
    if any(t[-1] != eot for t in ids):
        raise SystemExit(f"{name}: not every text ends with <|endoftext|>")
    check_tokenizer_json(folder, TEXTS, ids, max_len)
    q_prompt = st.prompts["query"]
    q_ids = check_prompted_ids(st, TEXTS, q_prompt, name)
    check_tokenizer_json(folder, [q_prompt + t for t in TEXTS], q_ids, max_len)
    emb = st.encode(TEXTS, convert_to_numpy=True)
    q_emb = st.encode(TEXTS, prompt_name="query", convert_to_numpy=True)
    if not np.array_equal(emb, st.encode(TEXTS, prompt_name="document", convert_to_numpy=True)):
        raise SystemExit(f"{name}: the empty document prompt changed the embeddings")
    # Left padding shifts the positions of a text by its padding, which RoPE does not see: one text at a
    # time gives the same embeddings.
    single = np.stack([st.encode([t], convert_to_numpy=True)[0] for t in TEXTS])
    if not np.allclose(single, emb, atol=1e-5):
        raise SystemExit(f"{name}: batched (left padded) and one-by-one embeddings differ")
    print(f"{name}: max_seq_length={max_len} dtype={am.dtype} min pairwise cosine distance="
          f"{min_pairwise_cos_distance(emb):.4f} (query prompt {min_pairwise_cos_distance(q_emb):.4f})")
    ref = {
        "name": name,
        "family": am.config.model_type,
        "layout": "st5",
        "kind": "embedding",
        "versions": versions(),
        "max_seq_length": max_len,
        "pooling": ["lasttoken"],
        "normalize": True,
        "padding_side": st.tokenizer.padding_side,
        "eos_appended_by_post_processor": "<|endoftext|>",
        "eos_id": eot,
        "pad_id": st.tokenizer.pad_token_id,
        "tokenizer_eos_token": st.tokenizer.eos_token,
        "truncation": "the text is cut to max_seq_length - 1 tokens, then <|endoftext|> is appended",
        "prompts": st.prompts,
        "default_prompt_name": st.default_prompt_name,
        "similarity_fn_name": st.similarity_fn_name,
        "rope_parameters": am.config.rope_parameters,
        "num_attention_heads": am.config.num_attention_heads,
        "num_key_value_heads": am.config.num_key_value_heads,
        "head_dim": am.config.head_dim,
        "rms_norm_eps": am.config.rms_norm_eps,
        "hidden_act": am.config.hidden_act,
    }
    ref.update(extra)
    ref.update({
        "weights": safetensors_index(os.path.join(folder, "model.safetensors")),
        "tokenizer": tokenizer_json_summary(folder),
        "texts": TEXTS,
        "input_ids": ids,
        "embeddings": f32list(emb),
        "input_ids_by_prompt": {"query": q_ids, "document": ids},
        "embeddings_by_prompt": {"query": f32list(q_emb), "document": f32list(emb)},
    })
    return ref


def make_qwen3_embed(out, tmp):
    name = "qwen3-embed"
    folder = os.path.join(out, name)
    folder16 = os.path.join(out, name + "-bf16")
    hf_dir = os.path.join(tmp, name + "-hf")
    hf_dir16 = os.path.join(tmp, name + "-bf16-hf")
    tok = qwen_tokenizer(131072, append_eos=True, padding_side="left")
    model = randomize(transformers.Qwen3Model(qwen3_config(tok)), 501)
    model.eval()
    save_hf(model, tok, hf_dir)
    check_autotokenizer(hf_dir, tok, TEXTS)
    build_qwen3_st(hf_dir, folder, torch.float32)
    ref = qwen3_embed_reference(name, folder, tok, None, {"weights_dtype": "float32"})
    write_json(os.path.join(out, "references", name + ".json"), ref)

    # The same weights in bfloat16.
    model16 = transformers.Qwen3Model.from_pretrained(hf_dir, dtype=torch.float32).to(torch.bfloat16)
    save_hf(model16, tok, hf_dir16)
    build_qwen3_st(hf_dir16, folder16, torch.bfloat16)
    stored = safetensors_index(os.path.join(folder16, "model.safetensors"))
    if {v.split()[0] for v in stored.values()} != {"BF16"}:
        raise SystemExit(f"{name}-bf16: model.safetensors is not all BF16: {stored}")
    with safe_open(os.path.join(folder, "model.safetensors"), framework="pt") as f32, safe_open(
        os.path.join(folder16, "model.safetensors"), framework="pt"
    ) as f16:
        for k in f32.keys():
            if not torch.equal(f32.get_tensor(k).to(torch.bfloat16), f16.get_tensor(k)):
                raise SystemExit(f"{name}-bf16: {k} is not the float32 weight rounded to bfloat16")
    default_dtype = str(SentenceTransformer(folder16, device="cpu")[0].auto_model.dtype)
    ref16 = qwen3_embed_reference(
        name + "-bf16",
        folder16,
        tok,
        {"torch_dtype": torch.float32},
        {
            "weights_dtype": "bfloat16",
            "computed_in": "float32 (SentenceTransformer(folder, model_kwargs={'torch_dtype': torch.float32}): "
            "the bfloat16 weights upcast exactly)",
            "default_load_dtype": default_dtype,
        },
    )
    e32 = np.asarray(ref["embeddings"])
    e16 = np.asarray(ref16["embeddings"])
    print(f"{name}-bf16: min cosine to the float32 folder's embeddings {float((e32 * e16).sum(1).min()):.5f}")
    write_json(os.path.join(out, "references", name + "-bf16.json"), ref16)


# ---------------------------------------------------------------------------
# 3. Qwen3 reranker (the Qwen3-Reranker model card's recipe)
# ---------------------------------------------------------------------------


def make_qwen3_reranker(out):
    name = "qwen3-reranker"
    folder = os.path.join(out, name)
    tok = qwen_tokenizer(131072, append_eos=False, padding_side="right")
    cfg = qwen3_config(tok, RERANK_MAX_POSITIONS)
    model = randomize(transformers.Qwen3ForCausalLM(cfg), 601)
    if os.path.exists(folder):
        shutil.rmtree(folder)
    save_hf(model, tok, folder)
    tidy(folder)

    check_autotokenizer(folder, tok, TEXTS)
    # --- the model card's code, on the folder ---
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, padding_side="left")
    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    token_false_id = tokenizer.convert_tokens_to_ids("no")
    token_true_id = tokenizer.convert_tokens_to_ids("yes")
    max_length = RERANK_MAX_LENGTH
    prefix_tokens = tokenizer.encode(RERANK_PREFIX, add_special_tokens=False)
    suffix_tokens = tokenizer.encode(RERANK_SUFFIX, add_special_tokens=False)

    def format_instruction(instruction, query, doc):
        return RERANK_TEMPLATE.format(instruction=instruction, query=query, doc=doc)

    def process_inputs(pairs):
        inputs = tokenizer(
            pairs, padding=False, truncation="longest_first", return_attention_mask=False,
            max_length=max_length - len(prefix_tokens) - len(suffix_tokens),
        )
        for i, ele in enumerate(inputs["input_ids"]):
            inputs["input_ids"][i] = prefix_tokens + ele + suffix_tokens
        inputs = tokenizer.pad(inputs, padding=True, return_tensors="pt", max_length=max_length)
        return inputs

    @torch.no_grad()
    def compute_logits(inputs):
        batch_scores = model(**inputs).logits[:, -1, :]
        true_vector = batch_scores[:, token_true_id]
        false_vector = batch_scores[:, token_false_id]
        batch_scores = torch.stack([false_vector, true_vector], dim=1)
        yes_no = batch_scores.clone()
        batch_scores = torch.nn.functional.log_softmax(batch_scores, dim=1)
        scores = batch_scores[:, 1].exp().tolist()
        return scores, yes_no

    pairs = [tuple(p) for p in PAIRS]
    formatted = [format_instruction(RERANK_INSTRUCTION, q, d) for q, d in pairs]
    inputs = process_inputs(formatted)
    scores, yes_no = compute_logits(inputs)
    # --- end of the model card's code ---

    if inputs["attention_mask"][:, -1].min() != 1:
        raise SystemExit(f"{name}: not left padded")
    ids = unpadded_ids(inputs)
    # The same ids from tokenizer.json alone (content truncated on its own, then prefix/suffix around it).
    tj = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tj.no_padding()
    tj.no_truncation()
    content_max = max_length - len(prefix_tokens) - len(suffix_tokens)
    if tj.encode(RERANK_PREFIX, add_special_tokens=False).ids != prefix_tokens or tj.encode(
        RERANK_SUFFIX, add_special_tokens=False
    ).ids != suffix_tokens:
        raise SystemExit(f"{name}: tokenizer.json prefix/suffix ids differ")
    tj.enable_truncation(content_max)
    got = [prefix_tokens + tj.encode(f).ids + suffix_tokens for f in formatted]
    if got != ids:
        raise SystemExit(f"{name}: tokenizer.json ids differ from the card's")
    # The batch is left padded; one pair at a time (no padding) gives the same scores.
    single = [compute_logits(process_inputs([f]))[0][0] for f in formatted]
    if not np.allclose(single, scores, atol=1e-5):
        raise SystemExit(f"{name}: batched and one-by-one scores differ")
    yes_no = yes_no.numpy()
    expect = 1.0 / (1.0 + np.exp(-(yes_no[:, 1].astype(np.float64) - yes_no[:, 0])))
    if not np.allclose(expect, scores, atol=1e-6):
        raise SystemExit(f"{name}: scores are not sigmoid(yes - no)")
    truncated = sum(1 for f in formatted if len(tokenizer(f)["input_ids"]) > content_max)
    print(f"{name}: yes={token_true_id} no={token_false_id} prefix={len(prefix_tokens)} suffix={len(suffix_tokens)} "
          f"content max={content_max} truncated pairs={truncated} scores={np.round(scores, 4).tolist()}")
    tok_cfg = read_json(os.path.join(folder, "tokenizer_config.json"))
    ref = {
        "name": name,
        "family": model.config.model_type,
        "layout": "transformers",
        "kind": "reranker",
        "versions": versions(),
        "max_seq_length": max_length,
        "recipe": "Qwen3-Reranker model card: AutoTokenizer(padding_side='left'), AutoModelForCausalLM; "
        "content = template.format(instruction, query, doc) tokenized with add_special_tokens (adds nothing "
        "here) and truncation='longest_first' to max_length - len(prefix_ids) - len(suffix_ids); "
        "input = prefix_ids + content + suffix_ids; left padded batch; logits at the last position; "
        "score = softmax([no, yes])[1] = sigmoid(yes - no)",
        "padding_side": "left (given to AutoTokenizer.from_pretrained; the folder's tokenizer_config has "
        + repr(tok_cfg.get("padding_side")) + ")",
        "instruction": RERANK_INSTRUCTION,
        "prefix": RERANK_PREFIX,
        "template": RERANK_TEMPLATE,
        "suffix": RERANK_SUFFIX,
        "prefix_ids": prefix_tokens,
        "suffix_ids": suffix_tokens,
        "content_max_length": content_max,
        "yes_token": "yes",
        "no_token": "no",
        "yes_id": token_true_id,
        "no_id": token_false_id,
        "pad_id": tokenizer.pad_token_id,
        "rope_parameters": model.config.rope_parameters,
        "tie_word_embeddings": model.config.tie_word_embeddings,
        "num_attention_heads": model.config.num_attention_heads,
        "num_key_value_heads": model.config.num_key_value_heads,
        "head_dim": model.config.head_dim,
        "rms_norm_eps": model.config.rms_norm_eps,
        "weights": safetensors_index(os.path.join(folder, "model.safetensors")),
        "tokenizer": tokenizer_json_summary(folder),
        "pairs": [list(p) for p in pairs],
        "formatted": formatted,
        "input_ids": ids,
        "yes_logits": [float(v) for v in yes_no[:, 1]],
        "no_logits": [float(v) for v in yes_no[:, 0]],
        "scores": [float(np.float32(v)) for v in scores],
    }
    write_json(os.path.join(out, "references", name + ".json"), ref)


# ---------------------------------------------------------------------------
# 4. BERT token classification (NER pipeline)
# ---------------------------------------------------------------------------

NER_LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]
NER_STRATEGIES = ["none", "simple", "first", "max", "average"]
NER_TEXTS = [
    "Angela Merkel met Emmanuel Macron in Paris.",
    "Jacqueline Okonkwo works for Microsoft in Seattle, Washington.",
    "Dr. Hiroshi Tanaka (Sony Corp.) visited São Paulo!",
    "The United Nations headquarters is in New York City.",
    "Zoë Šimková-Brontë flew from Zürich to Kraków.",
    "Barack Obama, Michelle Obama and Joe Biden spoke at Harvard University.",
    "Apple Inc. and Google LLC compete; Tim Cook & Sundar Pichai lead them.",
    "北京 is the capital of China, said Li Wei.",
    "",
    "no entities here, just lowercase words and numbers 42 3.14",
    "Ludwig van Beethoven was born in Bonn, moved to Vienna, and wrote music for Prince Lichnowsky, "
    "Archduke Rudolph of Austria and Count Razumovsky, whose palace stood near the Danube in Vienna. "
    "Later, Johannes Brahms and Richard Wagner admired him in Leipzig and Dresden.",
]

# How transformers' TokenClassificationPipeline (the version in "versions") turns scores into entities, as
# read from its source and checked against the recorded output.
NER_AGGREGATION = {
    "none": "one entity per non-special token whose argmax label is not O: entity = the label, score = its "
    "probability, index = the token's position (with [CLS] at 0), word = the vocabulary token (## kept; an "
    "[UNK] token's word is the text's characters text[start:end]), start/end = the token's character offsets",
    "simple": "every non-special token labelled as in none (O included), then grouped in order: a token joins the "
    "previous group iff its tag (the label without B-/I-; a label without a prefix counts as I-) equals the "
    "group's tag and it is not B-; entity_group = the tag, score = mean of the tokens' scores, word = "
    "convert_tokens_to_string(the tokens' words), start = first start, end = last end; O groups dropped",
    "first/max/average": "tokens first grouped into words: a token is a subword (joins the previous word) iff "
    "len(its vocabulary string) != end - start (so ## pieces join, and an [UNK] token never does); first: the "
    "argmax label of the word's first token and its probability; max: the token whose highest probability is "
    "largest decides label and score; average: argmax of the mean of the tokens' probability vectors, score = "
    "that mean; word = convert_tokens_to_string(pieces); then words grouped exactly as simple groups tokens "
    "(O words take part in the grouping and are dropped after)",
    "convert_tokens_to_string": "tokenizer.json's WordPiece decoder (prefix ##, cleanup true): each token after the "
    "first gets a separating space unless it starts with ## (the ## is dropped; a leading ## piece keeps it), "
    "and the cleanup runs on each token with its space, so a '.', '?', '!' or ',' token is glued to the previous "
    "one (the other cleanup rules need several tokens and never fire): '- bronte', '( sony', 'paris.', "
    "'bonn,'; words are lowercased and accent-stripped, except [UNK] words, which are the text's characters",
    "truncation": "the pipeline truncates at the tokenizer's model_max_length (no stride): tokens past it are "
    "never labelled",
}


def make_bert_ner(out):
    name = "bert-ner"
    folder = os.path.join(out, name)
    tok = bert_tokenizer(64)
    cfg = make_config("bert", tok)
    cfg.num_labels = len(NER_LABELS)
    cfg.id2label = dict(enumerate(NER_LABELS))
    cfg.label2id = {v: k for k, v in cfg.id2label.items()}
    model = randomize(transformers.BertForTokenClassification(cfg), 701).eval()
    with torch.no_grad():
        # Random hidden states share a large common part, so one label would win everywhere. Centre the
        # classifier on the mean hidden state of the texts' tokens and scale it up, so that labels win
        # clearly and differently from token to token, and favour "O" so that it wins about a third of the
        # time (entities with gaps between them).
        hidden = []
        for t in NER_TEXTS:
            e = tok(t, truncation=True, return_tensors="pt", return_special_tokens_mask=True)
            h = model.bert(input_ids=e["input_ids"]).last_hidden_state[0]
            hidden.append(h[e["special_tokens_mask"][0] == 0])
        mean = torch.cat(hidden).mean(0)
        model.classifier.weight.mul_(6.0)
        model.classifier.bias.copy_(-model.classifier.weight @ mean)
        model.classifier.bias[0] += 1.5
    if os.path.exists(folder):
        shutil.rmtree(folder)
    save_hf(model, tok, folder)
    tidy(folder)

    tok = check_autotokenizer(folder, tok, NER_TEXTS)
    model = transformers.AutoModelForTokenClassification.from_pretrained(folder).eval()
    max_len = tok.model_max_length
    enc = [tok(t, truncation=True, return_offsets_mapping=True, return_special_tokens_mask=True) for t in NER_TEXTS]
    ids = [e["input_ids"] for e in enc]
    check_tokenizer_json(folder, NER_TEXTS, ids, max_len)
    logits = []
    with torch.no_grad():
        for e in enc:
            logits.append(model(input_ids=torch.tensor([e["input_ids"]])).logits[0].numpy())
    results = {}
    for s in NER_STRATEGIES:
        pipe = transformers.pipeline(
            "token-classification", model=folder, tokenizer=folder, aggregation_strategy=s, device="cpu"
        )
        res = [pipe(t) for t in NER_TEXTS]
        if res[NER_TEXTS.index("")] != []:
            raise SystemExit(f"{name}: entities in the empty text")
        rows = []
        for r in res:
            row = []
            for ent in r:
                e = {}
                for k in ("entity", "entity_group", "score", "index", "word", "start", "end"):
                    if k in ent:
                        v = ent[k]
                        e[k] = float(np.float32(v)) if k == "score" else (int(v) if k in ("index", "start", "end") else v)
                row.append(e)
            rows.append(row)
        results[s] = rows
        nonempty = sum(1 for r in rows if r)
        print(f"{name}: {s}: {sum(len(r) for r in rows)} entities, {nonempty}/{len(rows)} texts with some")
        if nonempty < len(NER_TEXTS) - 2:
            raise SystemExit(f"{name}: {s}: too few texts with entities")
    argmax = [NER_LABELS[int(i)] for lg in logits for i in lg.argmax(1)]
    print(f"{name}: argmax label counts " + str({lab: argmax.count(lab) for lab in NER_LABELS}))
    ref = {
        "name": name,
        "family": model.config.model_type,
        "layout": "transformers",
        "kind": "token-classification",
        "versions": versions(),
        "max_seq_length": max_len,
        "truncation": True,
        "id2label": {str(k): v for k, v in model.config.id2label.items()},
        "ignore_labels": ["O"],
        "weights": safetensors_index(os.path.join(folder, "model.safetensors")),
        "scores": "softmax over the labels of each token's logits (float32, numpy)",
        "strategies": NER_STRATEGIES,
        "aggregation": NER_AGGREGATION,
        "texts": NER_TEXTS,
        "input_ids": ids,
        "offsets": [[list(o) for o in e["offset_mapping"]] for e in enc],
        "special_tokens_mask": [e["special_tokens_mask"] for e in enc],
        "logits": [f32list(lg) for lg in logits],
        "entities": results,
    }
    write_json(os.path.join(out, "references", name + ".json"), ref)


# ---------------------------------------------------------------------------
# 5. SPLADE (sentence-transformers SparseEncoder)
# ---------------------------------------------------------------------------

SPLADE_MLM_BIAS_SHIFT = -3.0  # lowers every MLM logit so that relu keeps few of them (sparse vectors)


def make_splade(out, tmp):
    name = "splade"
    folder = os.path.join(out, name)
    hf_dir = os.path.join(tmp, name + "-hf")
    tok = bert_tokenizer(64)
    cfg = make_config("bert", tok)
    model = randomize(transformers.BertForMaskedLM(cfg), 801)
    with torch.no_grad():
        model.cls.predictions.bias.add_(SPLADE_MLM_BIAS_SHIFT)
    if model.cls.predictions.decoder.weight.data_ptr() != model.bert.embeddings.word_embeddings.weight.data_ptr():
        raise SystemExit(f"{name}: the MLM decoder is not tied to the word embeddings")
    model.eval()
    save_hf(model, tok, hf_dir)
    check_autotokenizer(hf_dir, tok, TEXTS)

    torch.manual_seed(801)
    mlm = sparse_models.MLMTransformer(hf_dir, max_seq_length=48)
    se = SparseEncoder(
        modules=[mlm, sparse_models.SpladePooling(pooling_strategy="max", activation_function="relu",
                                                  embedding_dimension=len(tok))],
        device="cpu",
    )
    if os.path.exists(folder):
        shutil.rmtree(folder)
    se.save(folder, create_model_card=False)
    tidy(folder)

    check_autotokenizer(folder, tok, TEXTS)
    se = SparseEncoder(folder, device="cpu")
    se.eval()
    max_len = se.max_seq_length
    feats = se.preprocess(TEXTS)
    ids = unpadded_ids(feats)
    check_tokenizer_json(folder, TEXTS, ids, max_len)
    dense = se.encode(TEXTS, convert_to_tensor=True, convert_to_sparse_tensor=False).cpu().numpy().astype(np.float32)
    sparse = se.encode(TEXTS)  # the default: a torch sparse COO tensor
    if not np.array_equal(sparse.to_dense().cpu().numpy(), dense):
        raise SystemExit(f"{name}: sparse and dense encode differ")
    # The formula on transformers' own logits.
    hf = transformers.AutoModelForMaskedLM.from_pretrained(folder).eval()
    with torch.no_grad():
        logits = hf(input_ids=feats["input_ids"], attention_mask=feats["attention_mask"],
                    token_type_ids=feats.get("token_type_ids")).logits
        mask = feats["attention_mask"].unsqueeze(-1).to(logits.dtype)
        formula = torch.log1p(torch.relu(logits * mask)).amax(dim=1).numpy()
    if not np.allclose(formula, dense, atol=1e-5):
        raise SystemExit(f"{name}: SparseEncoder.encode is not max(log1p(relu(logits)) * mask)")
    vectors, nnz = [], []
    for row in dense:
        idx = np.nonzero(row)[0]
        vectors.append({"indices": [int(i) for i in idx], "values": [float(v) for v in row[idx]]})
        nnz.append(int(len(idx)))
    print(f"{name}: max_seq_length={max_len} vocab={dense.shape[1]} non-zeros per text={nnz}")
    modules = read_json(os.path.join(folder, "modules.json"))
    ref = {
        "name": name,
        "family": se[0].auto_model.config.model_type,
        "layout": "st5",
        "kind": "sparse-embedding",
        "versions": versions(),
        "max_seq_length": max_len,
        "modules": [m["type"] for m in modules],
        "files": folder_files(folder),
        "pooling_strategy": "max",
        "activation_function": "relu",
        "formula": "v[t] = max over positions p with attention_mask[p] = 1 of log(1 + relu(mlm_logits[p][t])) "
        "(padding positions contribute 0)",
        "vocab_size": int(dense.shape[1]),
        "tie_word_embeddings": se[0].auto_model.config.tie_word_embeddings,
        "weights": safetensors_index(os.path.join(folder, "model.safetensors")),
        "texts": TEXTS,
        "input_ids": ids,
        "nnz": nnz,
        "sparse": vectors,
    }
    write_json(os.path.join(out, "references", name + ".json"), ref)


NAMES = ["modernbert-mean", "qwen3-embed", "qwen3-reranker", "bert-ner", "splade"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder, e.g. tests/data/hf")
    ap.add_argument("--only", nargs="*", default=None, choices=NAMES, help="make only these names")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "references"), exist_ok=True)
    torch.manual_seed(0)
    np.random.seed(0)

    def wanted(n):
        return args.only is None or n in args.only

    with tempfile.TemporaryDirectory() as tmp:
        if wanted("modernbert-mean"):
            make_modernbert(out, tmp)
        if wanted("qwen3-embed"):
            make_qwen3_embed(out, tmp)
        if wanted("qwen3-reranker"):
            make_qwen3_reranker(out)
        if wanted("bert-ner"):
            make_bert_ner(out)
        if wanted("splade"):
            make_splade(out, tmp)


if __name__ == "__main__":
    main()
